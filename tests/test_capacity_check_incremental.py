"""The simulator's capacity check between exact sums (issue 16): link loads kept up
to date from the flows whose rate changed, an exact sum every EXACT_CHECK_EVERY
events and whenever the kept load says a link is over.  A violation that appears
late, on a flow whose rate rises while the others keep theirs, is still refused at
the event it happens, and the reported maximum utilisation is the exact one to
1e-12.

Units: bytes (MB = 1e6), bit/s (G = 1e9), seconds.
"""

import pytest

from rapier_app.core.model import Allocation, Schedule, make_coflow
from rapier_app.core.workload import synthetic
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling import Scheduler
from rapier_app.sim import SimulationError, simulate
from rapier_app.sim import simulator as simmod
from topologies import build_topology

MB = 1e6
G = 1e9


class _LateOver(Scheduler):
    """Broken on purpose, late: each of h1's 40 flows gets 1/40 of its 1 Gbit/s
    uplink; after ``bad_after`` decisions the first live flow also gets what the
    finished flows left plus 0.6 % of the link, while every other rate stays as it
    was (one flow's rate changes: only the kept loads see it before an exact sum)."""

    bad_after = 0
    reschedule_on = "flow"

    def __init__(self, topo):
        super().__init__(topo)
        self.calls = 0

    def schedule(self, now, coflows):
        self.calls += 1
        fl = [f for c in coflows for f in c.active_flows()]
        out = {}
        for i, f in enumerate(fl):
            r = 1e9 / 40
            if i == 0 and self.calls > self.bad_after:
                r += 1e9 / 40 * (40 - len(fl)) + 0.006e9
            out[f.flow_id] = Allocation(self.candidates(f)[0], r)
        return Schedule(out)


def _many_small():
    # 40 flows of 1..40 MB from h1 under fair sharing: one completion per event
    return [make_coflow("A", 0, [("h1", f"h{2 + i % 3}", (i + 1) * MB) for i in range(40)])]


@pytest.mark.parametrize("every", [1, 1000])
def test_a_late_violation_on_one_flow_is_refused_at_its_event(monkeypatch, every):
    monkeypatch.setattr(simmod, "EXACT_CHECK_EVERY", every)
    topo = build_topology("bigswitch:5")
    s = _LateOver(topo)
    s.bad_after = 25
    with pytest.raises(SimulationError, match=r"capacity: link h1->s1 carries 1\.00\d*e\+09"):
        simulate(topo, _many_small(), s)
    assert s.calls == 26  # refused at the first bad decision, not at a later exact sum
    ok = _LateOver(topo)
    ok.bad_after = 10**9
    assert len(simulate(topo, _many_small(), ok).coflows) == 1


@pytest.mark.parametrize("name", ["rapier", "scheduling-only", "fair"])
def test_kept_loads_give_the_exact_decisions_and_maximum(monkeypatch, name):
    # fat-tree k=4: work conservation moves flows between candidate paths, so the
    # kept loads see path changes as well as rate changes and finishes
    topo = build_topology("fattree:4")
    cfs = synthetic(topo, 10, 12, 0.05, sizes="uniform:1,30", seed=5)
    out = {}
    for every in (1, 1000):
        monkeypatch.setattr(simmod, "EXACT_CHECK_EVERY", every)
        res = simulate(topo, cfs, make_scheduler(name, topo), record_flows=True)
        out[every] = res
    a, b = out[1], out[1000]
    assert a.events == b.events > 50
    assert [(r.coflow_id, r.cct_s) for r in a.coflows] == [(r.coflow_id, r.cct_s) for r in b.coflows]
    assert b.max_link_utilisation == pytest.approx(a.max_link_utilisation, rel=1e-12)
    assert a.max_link_utilisation <= 1 + 1e-9
