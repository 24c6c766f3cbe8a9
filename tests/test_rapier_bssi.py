"""``rapier-bssi``: RAPIER's joint routing with Sincronia's BSSI order (issue 12).

On a big switch every flow has one path, so routing is trivial and the coflow order
of rapier-bssi's full pass with ``order="bssi"`` must be exactly Sincronia's BSSI
order on the same remaining demands (Sincronia Algorithm 1, ``seeds.bssi_order``);
with ``order="best"`` (the default) it is the lowest open-shop cost order among
BSSI's, the greedy minimum-completion one and SEBF's (``scheduling.orders``).
"""

import random

import pytest

from rapier_app.core.model import CoflowState, InfoPolicy, make_coflow
from rapier_app.scheduling import make_scheduler
from topologies import build_topology

MB = 1e6


@pytest.mark.parametrize("seed", range(8))
def test_order_is_bssi_on_a_big_switch(seed):
    rnd = random.Random(seed)
    topo = build_topology("bigswitch:5")
    specs = []
    for k in range(5):
        flows = [(*rnd.sample(topo.hosts, 2), rnd.choice([50, 100, 300, 700]) * MB)
                 for _ in range(rnd.randint(1, 4))]
        specs.append(make_coflow(f"c{k}", 0.0, flows))
    states = [CoflowState(s, InfoPolicy(True)) for s in specs]
    got = make_scheduler("rapier-bssi", topo, order="bssi").schedule(0.0, states).order
    sin = make_scheduler("sincronia-immediate", topo)
    want = [c.coflow_id for c in sin.order(states)]
    assert got == want


def test_bssi_and_minimum_cct_first_disagree_by_hand():
    # Gbit.  A = {h1->h2 5}; B = {h1->h3 4, h4->h5 6}.  Port loads: h1 up 9 (A 5 +
    # B 4), h4 up 6, h5 down 6, h2 down 5, h3 down 4.  BSSI: the bottleneck is h1
    # up; of the coflows on it, the one with the most there per unit weight (A, 5
    # against 4) goes last: B, A.  Algorithm 1: A alone needs 5 s, B 6 s (h4 up):
    # A, B.  Open-shop cost (one coflow after the other on every port): B, A ->
    # B done at 6 s (h4 up), A at 9 s (h1 up): 15 s; A, B -> 5 + 9 = 14 s, so
    # order="best" takes A, B (the greedy minimum-completion order; SEBF agrees).
    topo = build_topology("bigswitch:5")
    specs = [make_coflow("A", 0, [("h1", "h2", 625 * MB)]),
             make_coflow("B", 0, [("h1", "h3", 500 * MB), ("h4", "h5", 750 * MB)])]
    states = [CoflowState(s, InfoPolicy(True)) for s in specs]
    bssi = make_scheduler("rapier-bssi", topo, order="bssi")
    assert bssi.schedule(0.0, states).order == ["B", "A"]
    assert make_scheduler("rapier", topo).schedule(0.0, states).order == ["A", "B"]
    best = make_scheduler("rapier-bssi", topo)
    sched = best.schedule(0.0, states)
    assert sched.order == ["A", "B"]
    assert best.stats["order_sebf"] == 1 and best.stats["order_greedy"] == 0

    # CCTs (1 Gbit/s): BSSI's order finishes B at 6 s and A at 4 + 5 = 9 s (7.5 s
    # average); the chosen order finishes A at 5 s and B at 5 + 4 = 9 s (7.0 s).
    from rapier_app.sim import simulate
    for sch, want in ((make_scheduler("rapier-bssi", topo, order="bssi"), {"A": 9.0, "B": 6.0}),
                      (make_scheduler("rapier-bssi", topo), {"A": 5.0, "B": 9.0})):
        res = simulate(topo, specs, sch)
        assert {r.coflow_id: round(r.cct_s, 6) for r in res.coflows} == want


def test_order_parameter_is_checked():
    from rapier_app.scheduling import SchedulerError
    with pytest.raises(SchedulerError, match="order"):
        make_scheduler("rapier-bssi", build_topology("bigswitch:3"), order="sebf")


def test_rank_lp_parameter_is_checked():
    from rapier_app.scheduling import SchedulerError
    with pytest.raises(SchedulerError, match="rank_lp: must be 'exact' or 'fast'"):
        make_scheduler("rapier-bssi", build_topology("fattree:4"), rank_lp="glop")
    assert make_scheduler("rapier-bssi", build_topology("fattree:4")).rank_lp == "fast"


@pytest.mark.parametrize("spec,seed", [("vl2:4,4", 0), ("vl2:4,4", 4), ("vl2:4,4", 7),
                                       ("fattree:4", 2)])
def test_rank_lp_fast_changes_the_ranking_solves_only(spec, seed):
    """``rank_lp="fast"`` on 12 coflows of 2-9 flows: the isolation LPs of the ranking
    are the certified greedy placements (``lp_certified``), and the LPs behind the
    coflows ahead stay the simplex's.  On these instances both rankings give the
    same order, and the pass's routes and rates are those of ``rank_lp="exact"`` to
    the bit.  (Were the ranking's greedy routes reused behind the coflows ahead, as
    the exact ranking's are, the first three would differ: measured.)"""
    from rapier_app.core.workload import synthetic

    topo = build_topology(spec)
    cfs = synthetic(topo, 12, 9, 0.0, sizes="uniform:1,50", seed=seed)
    out = {}
    for rank_lp in ("exact", "fast"):
        s = make_scheduler("rapier-bssi", topo, rank_lp=rank_lp)
        states = [CoflowState(c, InfoPolicy(True)) for c in cfs]
        sch = s.schedule(0.0, states)
        out[rank_lp] = (sch.order, {f: (a.path, a.rate_bps.hex()) for f, a in
                                    sch.allocations.items()}, dict(s.stats))
    assert out["exact"][2]["lp_certified"] == 0
    assert out["fast"][2]["lp_certified"] >= 6
    assert out["exact"][0] == out["fast"][0]
    assert out["exact"][1] == out["fast"][1]
