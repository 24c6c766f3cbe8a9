"""When the simulator calls the scheduler: at every flow completion ("flow") or only
at coflow arrivals and completions ("coflow", RAPIER Section IV-C), hand-computed."""

import pytest

from rapier_app.core.model import Schedule, make_coflow
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling import Scheduler
from rapier_app.sim import SimulationError, simulate
from topologies import build_topology

GBIT = 1e9  # bigswitch port speed, bit/s
MB = 1e6 / 8  # bytes in one Mbit


class HalfRate(Scheduler):
    """Every active flow gets half a port (0.5 Gbit/s) on its only path; records the
    times it is called."""

    name = "half-rate"

    def __init__(self, topology, mode):
        super().__init__(topology)
        self.reschedule_on = mode
        self.calls = []

    def schedule(self, now, coflows):
        self.calls.append(now)
        flows = [f for c in coflows for f in c.active_flows()]
        return Schedule.from_vectors(flows, [self.ecmp_path(f) for f in flows],
                                     [GBIT / 2] * len(flows))


def _workload():
    # coflow x: 250 Mbit (0.5 s at 0.5 Gbit/s) and 1000 Mbit (2.0 s), from h1;
    # coflow y arrives at 1.0 s: 250 Mbit from h3 (0.5 s).
    return [make_coflow("x", 0.0, [("h1", "h2", 250 * MB), ("h1", "h4", 1000 * MB)]),
            make_coflow("y", 1.0, [("h3", "h2", 250 * MB)])]


@pytest.mark.parametrize("mode,calls", [
    ("flow", [0.0, 0.5, 1.0, 1.5]),  # every flow completion and the arrival
    ("coflow", [0.0, 1.0, 1.5]),  # 0.5 s: a flow of x finishes, no decision
])
def test_decision_points(mode, calls):
    topo = build_topology("bigswitch:4")
    s = HalfRate(topo, mode)
    res = simulate(topo, _workload(), s)
    assert s.calls == pytest.approx(calls)
    fin = {r.flow_id: r.finish_s for r in res.flows}
    # flows finish at their own times in both modes
    assert sorted(fin.values()) == pytest.approx([0.5, 1.5, 2.0])
    assert {r.coflow_id: r.cct_s for r in res.coflows} == pytest.approx({"x": 2.0, "y": 0.5})
    assert res.bytes_delivered == pytest.approx(res.bytes_offered)
    assert res.events == len(calls)


def test_override_and_bad_value():
    topo = build_topology("bigswitch:4")
    s = HalfRate(topo, "coflow")
    simulate(topo, _workload(), s, reschedule_on="flow")
    assert s.calls == pytest.approx([0.0, 0.5, 1.0, 1.5])
    with pytest.raises(SimulationError, match="reschedule_on"):
        simulate(topo, _workload(), HalfRate(topo, "flow"), reschedule_on="packet")
    typo = HalfRate(topo, "flow")
    typo.reads_progress = "coflows"
    with pytest.raises(SimulationError, match="reads_progress.*'coflows'"):
        simulate(topo, _workload(), typo)


def test_defaults_follow_the_papers():
    topo = build_topology("bigswitch:4")
    # RAPIER and Varys: a full pass at coflow events, work conservation alone at
    # every other flow completion (issue 12), so every scheme decides per flow
    for name in ("rapier", "scheduling-only", "baseline", "routing-only", "fair", "aalo",
                 "sincronia"):
        assert make_scheduler(name, topo).reschedule_on == "flow"


def test_no_deadlock_when_no_coflow_can_finish():
    """A coflow with a flow that has no bandwidth cannot complete; the next flow
    completion then becomes a decision point, as in "flow" mode."""

    class Starve(HalfRate):
        def schedule(self, now, coflows):
            self.calls.append(now)
            flows = [f for c in coflows for f in c.active_flows()]
            # the larger flow only gets bandwidth once it is alone
            rates = [0.0 if (len(flows) > 1 and f.spec.size_bytes > 300 * MB) else GBIT / 2
                     for f in flows]
            return Schedule.from_vectors(flows, [self.ecmp_path(f) for f in flows], rates)

    topo = build_topology("bigswitch:4")
    s = Starve(topo, "coflow")
    res = simulate(topo, _workload()[:1], s)
    assert s.calls == pytest.approx([0.0, 0.5])
    assert res.coflows[0].cct_s == pytest.approx(2.5)


class CoflowTotals(HalfRate):
    """HalfRate that reads only coflow totals (``reads_progress = "coflow"``) and
    records, per call, each coflow's ``bytes_sent`` and its flows' own counters."""

    def __init__(self, topology, reads):
        super().__init__(topology, "flow")
        self.reads_progress = reads
        self.seen = []

    def schedule(self, now, coflows):
        self.seen.append((now, {c.coflow_id: c.bytes_sent for c in coflows},
                          {f.flow_id: f.bytes_sent for c in coflows for f in c.flows}))
        return super().schedule(now, coflows)


def test_coflow_totals_without_per_flow_counters():
    topo = build_topology("bigswitch:4")
    s = CoflowTotals(topo, "coflow")
    res = simulate(topo, _workload(), s)
    assert res.bytes_delivered == pytest.approx(res.bytes_offered)
    totals = [(t, tot) for t, tot, _ in s.seen]
    # 0.5 Gbit/s per flow (MB here is one Mbit in bytes): by 0.5 s x has sent
    # 2 x 250 Mbit; at 1.0 s its short flow is done (250) and the long one has 500;
    # at 1.5 s the long one has 750 and y has finished
    assert [t for t, _ in totals] == pytest.approx([0.0, 0.5, 1.0, 1.5])
    assert totals[0][1] == {"x": 0.0}
    assert totals[1][1] == pytest.approx({"x": 500 * MB})
    assert totals[2][1] == pytest.approx({"x": 750 * MB, "y": 0.0})
    assert totals[3][1] == pytest.approx({"x": 1000 * MB})  # y is done and gone
    # the unfinished long flow's own counter is not written (finished flows' are)
    per_flow = s.seen[2][2]
    assert per_flow["x/1"] == 0.0
    assert per_flow["x/0"] == pytest.approx(250 * MB)
    # the same totals as summing every flow's counter in the "bytes" mode
    s2 = CoflowTotals(topo, "bytes")
    simulate(topo, _workload(), s2)
    for (_, a, _), (_, b, _) in zip(s.seen, s2.seen):
        assert a == pytest.approx(b)
