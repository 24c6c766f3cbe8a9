"""Hand-computed schedules where the suite had only pinned outputs (issue 17).

* RAPIER Algorithm 1's order on a case where picking the minimum CCT and the maximum
  differ (Fig. 1 is a tie and cannot tell them apart).
* Varys (``scheduling-only``): MADD rates of two coflows, and a case where work
  conservation at the full pass changes a CCT.

Every run is also passed through the independent checker.  Units: MB = 1e6 bytes,
links 1 Gbit/s, times in seconds (1 Gbit takes 1 s).
"""

import pytest

from rapier_app.core.model import CoflowState, InfoPolicy, make_coflow
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling import SchedulerError
from rapier_app.sim import simulate
from rapier_app.sim.checker import check_schedule, declared_level
from topologies import build_topology

MB = 1e6
RAPIERS = ["rapier", "rapier-bssi", "rapier-isolated", "rapier-residual", "rapier-ls",
           "rapier-spread"]


def run(name, topo, cfs):
    """(CCT per coflow id, event log); the run must pass the checker."""
    s = make_scheduler(name, topo)
    log = []
    res = simulate(topo, cfs, s, event_log=log)
    ccts = {r.coflow_id: r.cct_s for r in res.coflows}
    rep = check_schedule(topo, cfs, log, level=declared_level(s), ccts=ccts)
    assert rep.ok, rep.summary()
    return ccts, log


def one_uplink_case():
    # Three coflows of one flow each, all out of h1 (its uplink is the only shared
    # link): A 0.8 Gbit, B 2.4 Gbit, C 1.6 Gbit.  Isolation T: A 0.8, B 2.4, C 1.6.
    return build_topology("bigswitch:4"), [
        make_coflow("A", 0, [("h1", "h2", 100 * MB)]),
        make_coflow("B", 0, [("h1", "h3", 300 * MB)]),
        make_coflow("C", 0, [("h1", "h4", 200 * MB)])]


@pytest.mark.parametrize("name", RAPIERS)
def test_algorithm1_picks_the_minimum_cct_first(name):
    # Alg. 1 picks the smallest T: A (0.8 s) at the full uplink; behind A, C's T is
    # 0.8 + 1.6 = 2.4 s and B's 0.8 + 2.4 = 3.2 s: C next, then B.  h1's uplink is
    # full with A, so B and C get no rate (alpha = 0) and work conservation has
    # nothing to hand out.  CCTs: A 0.8, C 2.4, B 4.8 (mean 2.667).  Picking the
    # maximum instead (B, C, A) gives B 2.4, C 4.0, A 4.8 (mean 3.733).
    topo, cfs = one_uplink_case()
    s = make_scheduler(name, topo)
    pol = InfoPolicy(True)
    sched = s.schedule(0.0, [CoflowState(c, pol) for c in cfs])
    if name in ("rapier-isolated", "rapier-residual"):
        # T on the residual capacity: behind A both B and C have T = inf (h1 up is
        # full), a tie kept in arrival order; only the first pick is the minimum
        assert sched.order == ["A", "B", "C"]
    else:
        assert sched.order == ["A", "C", "B"]
    ccts, log = run(name, topo, cfs)
    assert ccts == pytest.approx({"A": 0.8, "B": 4.8, "C": 2.4}, abs=1e-9)
    first = dict(zip(log[0].flow_ids, log[0].rates_bps.tolist()))
    assert first == pytest.approx({"A/0": 1e9, "B/0": 0.0, "C/0": 0.0})


# Varys (scheduling-only) on bigswitch:5, 1 Gbit/s ports; each case: its coflows,
# the decision times and the rates of every decision, the CCTs.
VARYS_CASES = {
    # A: h1->h2 0.8 Gbit, h1->h3 0.8 Gbit: Gamma_A = 1.6 s (h1 up).  B: h4->h2 3.2
    # Gbit: Gamma_B = 3.2 s.  SEBF: A, B.  MADD A: each flow 0.8 / 1.6 = 0.5 Gbit/s;
    # residual h1 up 0, h2 down 0.5.  MADD B on the residual: Gamma'_B = max(3.2 /
    # 1.0 (h4 up), 3.2 / 0.5 (h2 down)) = 6.4 s: 0.5 Gbit/s.  Work conservation:
    # every flow crosses a full link (h1 up; h2 down).  A ends at 1.6 s; B has 3.2 -
    # 0.8 = 2.4 Gbit left, alone at 1 Gbit/s: ends at 4.0 s.
    "madd-rates": (
        [("A", [("h1", "h2", 100), ("h1", "h3", 100)]), ("B", [("h4", "h2", 400)])],
        [0.0, 1.6], [{"A/0": 0.5e9, "A/1": 0.5e9, "B/0": 0.5e9}, {"B/0": 1e9}],
        {"A": 1.6, "B": 4.0}),
    # A: h1->h2 6.4 Gbit, h3->h4 0.8 Gbit: Gamma_A = 6.4 s.  B: h3->h5 3.2 Gbit:
    # Gamma_B = 3.2 s.  SEBF: B, A.  MADD B: 1 Gbit/s (h3 up full).  A/1 crosses h3's
    # full uplink: Gamma'_A infinite, no MADD rate for A.  Work conservation (SEBF
    # order) gives A/0 the free h1 up / h2 down: 1 Gbit/s.  At 3.2 s B ends; A/0 has
    # 3.2 Gbit left, A/1 0.8: MADD 1.0 and 0.25, work conservation tops A/1 up to
    # 1.0: A/1 ends at 4.0 s, A/0 at 6.4 s.  Without work conservation A/0 would wait
    # until 3.2 s: A = 9.6 s.
    "wc-at-full-pass": (
        [("A", [("h1", "h2", 800), ("h3", "h4", 100)]), ("B", [("h3", "h5", 400)])],
        [0.0, 3.2, 4.0], [{"A/0": 1e9, "A/1": 0.0, "B/0": 1e9}, {"A/0": 1e9, "A/1": 1e9},
                          {"A/0": 1e9}],
        {"A": 6.4, "B": 3.2}),
}


@pytest.mark.parametrize("case", sorted(VARYS_CASES))
def test_varys_hand_cases(case):
    spec, times, rates, want = VARYS_CASES[case]
    cfs = [make_coflow(cid, 0, [(s, d, mb * MB) for s, d, mb in fl]) for cid, fl in spec]
    ccts, log = run("scheduling-only", build_topology("bigswitch:5"), cfs)
    assert [r.t_s for r in log] == pytest.approx(times)
    assert [dict(zip(r.flow_ids, r.rates_bps.tolist())) for r in log] == \
        [pytest.approx(r) for r in rates]
    assert ccts == pytest.approx(want, abs=1e-9)


def test_algorithm1_starvation_guard():
    # bigswitch:3.  B: h1->h2 3.2 Gbit at 0; A0..A3: h1->h3 0.4 Gbit at 0, 0.4, 0.8,
    # 1.2 s.  Each A is the minimum CCT when it arrives and takes h1's whole uplink
    # for 0.4 s (ending as the next arrives), so B never gets a rate.  With
    # delta_s = 1 s (Alg. 1 lines 7-10), at 1.2 s B has waited 1.2 s > 1 s and is
    # scheduled first: B ends at 1.2 + 3.2 = 4.4 s, A3 behind it at 4.8 s (CCT 3.6).
    # Without the guard (delta_s huge): A3 ends at 1.6 s, B at 4.8 s.
    topo = build_topology("bigswitch:3")
    cfs = [make_coflow("B", 0, [("h1", "h2", 400 * MB)])] + [
        make_coflow(f"A{k}", 0.4 * k, [("h1", "h3", 50 * MB)]) for k in range(4)]
    for delta, want in [(1.0, {"B": 4.4, "A3": 3.6}), (1e9, {"B": 4.8, "A3": 0.4})]:
        s = make_scheduler("rapier", topo, delta_s=delta)
        log = []
        res = simulate(topo, cfs, s, event_log=log)
        ccts = {r.coflow_id: r.cct_s for r in res.coflows}
        assert check_schedule(topo, cfs, log, level=declared_level(s), ccts=ccts).ok
        assert ccts == pytest.approx({"A0": 0.4, "A1": 0.4, "A2": 0.4, **want}, abs=1e-9)


def test_rapier_alg3_order_paper_vs_pick():
    # bigswitch:4, 1 Gbit/s = 125 MB/s.  A at 0: h4->h3 400 MB, h2->h4 400 MB
    # (isolation 3.2 s).  B at 0: h2->h1 100 MB, h1->h3 200 MB (1.6 s).  C at 0.2 s:
    # h2->h4 100 MB (0.8 s).  Starvation guard off.
    # t = 0: Algorithm 1 picks B (1.6 s < 3.2 s): h1->h3 1 Gbit/s, h2->h1 0.5 Gbit/s;
    # A's h4->h3 finds h3 down full: T_A = inf, A unscheduled.  Leftover: h2 up 0.5.
    #  * "paper" (line 2: non-increasing minimal CCT, A first): A's h2->h4 takes
    #    h2 up's 0.5 Gbit/s; B's h2->h1 stays at 0.5 Gbit/s and has 87.5 MB left at
    #    0.2 s.  C (0.8 s) is picked first and takes h2 up until 1.0 s; B's h2->h1
    #    then needs 0.7 s: B ends at 1.7 s.
    #  * "pick" (Algorithm 1's order, B first, as Varys): B's h2->h1 gets 1 Gbit/s,
    #    has 75 MB left at 0.2 s and ends at 1.0 + 0.6 = 1.6 s, with h1->h3.
    # A ends at 4.8 s and C at 1.0 s (CCT 0.8 s) either way: averages 2.4333 vs 2.4 s.
    topo = build_topology("bigswitch:4")
    cfs = [make_coflow("A", 0, [("h4", "h3", 400 * MB), ("h2", "h4", 400 * MB)]),
           make_coflow("B", 0, [("h2", "h1", 100 * MB), ("h1", "h3", 200 * MB)]),
           make_coflow("C", 0.2, [("h2", "h4", 100 * MB)])]
    want = {"paper": {"A": 4.8, "B": 1.7, "C": 0.8}, "pick": {"A": 4.8, "B": 1.6, "C": 0.8}}
    for order, cct in want.items():
        s = make_scheduler("rapier", topo, seed=1, delta_s=1e9, wc_order=order)
        res = simulate(topo, cfs, s, record_flows=False)
        assert {r.coflow_id: r.cct_s for r in res.coflows} == pytest.approx(cct, abs=1e-9)
    varys = simulate(topo, cfs, make_scheduler("scheduling-only", topo), record_flows=False)
    assert {r.coflow_id: r.cct_s for r in varys.coflows} == pytest.approx(want["pick"])
    with pytest.raises(SchedulerError, match="wc_order"):
        make_scheduler("rapier", topo, wc_order="largest")
