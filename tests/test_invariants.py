"""Every scheduler on random workloads, through the independent checker
(rapier_app/sim/checker.py): no link above capacity, valid paths, bytes conserved
by the logged rates, no flow or coflow faster than its bounds, the simulator's CCTs
equal to the recomputed ones, no idle capacity beside a waiting flow for the
schedulers that declare work conservation; seeded runs reproduce exactly."""

import pytest

from rapier_app.core.workload import synthetic
from rapier_app.scheduling import make_scheduler, scheduler_names
from rapier_app.sim import SimulationError, simulate
from rapier_app.sim.checker import (check_schedule, declared_interval, declared_level,
                                    isolation_bound)
from rapier_app.core.model import Allocation, Schedule
from rapier_app.scheduling import Scheduler
from topologies import build_topology

CASES = [("fattree:4", 6, 8, 0.05, 3), ("vl2:4,4,2", 5, 6, 0.1, 4), ("leafspine:3,3,3", 4, 5, 0.0, 5)]


@pytest.mark.parametrize("name", scheduler_names())
@pytest.mark.parametrize("spec,n,width,ia,seed", CASES)
def test_invariants(name, spec, n, width, ia, seed):
    topo = build_topology(spec)
    coflows = synthetic(topo, n, width, ia, "uniform:1,20", seed=seed)
    sched = make_scheduler(name, topo, seed=seed)
    log = []
    r1 = simulate(topo, coflows, sched, event_log=log)
    assert len(r1.coflows) == n
    ccts = {r.coflow_id: r.cct_s for r in r1.coflows}
    rep = check_schedule(topo, coflows, log, level=declared_level(sched), ccts=ccts,
                         decision_interval=declared_interval(sched))
    assert rep.ok, rep.summary()
    # every CCT at or above its isolation bound (host access links at line rate),
    # and some coflow strictly slower than alone (these workloads contend)
    iso = {c.coflow_id: isolation_bound(topo, c) for c in coflows}
    assert all(ccts[k] >= iso[k] * (1 - 1e-9) for k in iso)
    assert any(ccts[k] > iso[k] * 1.01 for k in iso)
    # the flow records agree with the recomputed finish times
    assert {f.flow_id: f.finish_s for f in r1.flows} == pytest.approx(rep.flow_finish_s,
                                                                      abs=1e-9)
    r2 = simulate(topo, coflows, make_scheduler(name, topo, seed=seed))
    assert [(r.coflow_id, r.cct_s) for r in r1.coflows] == [(r.coflow_id, r.cct_s) for r in r2.coflows]


class _Greedy(Scheduler):
    """A broken scheduler: every flow at full line rate on its first path."""

    def schedule(self, now, coflows):
        return Schedule({f.flow_id: Allocation(self.candidates(f)[0], 1e9)
                         for c in coflows for f in c.active_flows()})


class _Idle(Scheduler):
    def schedule(self, now, coflows):
        return Schedule({})


class _Teleport(Scheduler):
    def schedule(self, now, coflows):
        return Schedule({f.flow_id: Allocation((f.src, "c1", f.dst), 1.0)
                         for c in coflows for f in c.active_flows()})


def test_simulator_fails_loudly_on_over_capacity():
    topo = build_topology("fattree:4")
    coflows = synthetic(topo, 1, 8, 0.0, "const:1", seed=1)
    with pytest.raises(SimulationError, match="capacity: link .* carries"):
        simulate(topo, coflows, _Greedy(topo))


def test_simulator_fails_on_deadlock_and_bad_path():
    topo = build_topology("fattree:4")
    coflows = synthetic(topo, 1, 2, 0.0, "const:1", seed=1)
    with pytest.raises(SimulationError, match="deadlock"):
        simulate(topo, coflows, _Idle(topo))
    with pytest.raises(SimulationError, match="does not exist"):
        simulate(topo, coflows, _Teleport(topo))


def test_exact_timeline_single_flow():
    # 125 MB at 1 Gbit/s = exactly 1 s; a second flow arriving at 0.5 s halves the rate.
    from rapier_app.core.model import make_coflow
    topo = build_topology("bigswitch:3")
    cfs = [make_coflow("1", 0.0, [("h1", "h2", 125e6)]),
           make_coflow("2", 0.5, [("h1", "h3", 62.5e6)])]
    r = simulate(topo, cfs, make_scheduler("baseline", topo))
    got = {x.coflow_id: (x.finish_s, x.cct_s) for x in r.coflows}
    # t in [0,0.5): 62.5 MB sent; then both at 0.5 Gbit/s: each needs 1 s more -> 1.5 s
    assert got["1"][0] == pytest.approx(1.5)
    assert got["2"][1] == pytest.approx(1.0)
