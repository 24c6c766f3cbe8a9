"""The seed schedulers as their papers wrote them (issue 16).

Every expected value is computed by hand in the comments; units are bytes, bit/s
and seconds.  Each test fails on the code before issue 16.
"""

from fractions import Fraction as F

import numpy as np
import pytest

from topologies import build_topology
from rapier_app.core.model import CoflowState, InfoPolicy, make_coflow
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling.seeds.passes import MIB

GBPS = 1e9


def states(specs, clairvoyant=False):
    pol = InfoPolicy(clairvoyant)
    return [CoflowState(s, pol) for s in specs]


def rates(out):
    return {fid: a.rate_bps for fid, a in out.allocations.items()}


# ---------------------------------------------------------------------------------
# Aalo, Pseudocode 1: weighted rounds "while Fabric is not saturated"
# ---------------------------------------------------------------------------------
def aalo_three_queues():
    """A in Q1 (weight 3), B in Q2 (weight 2), C in Q3 (weight 1) on bigswitch:4
    (K=3, Q1hi = 10 MiB, E = 10; bytes sent put B and C in their queues)."""
    specs = [make_coflow("A", 0.0, [("h1", "h3", 1e12), ("h1", "h4", 1e12)]),
             make_coflow("B", 0.0, [("h2", "h1", 1e12), ("h1", "h4", 1e12)]),
             make_coflow("C", 0.0, [("h2", "h4", 1e12)])]
    st = states(specs)
    st[1].flows[0].bytes_sent = 10 * MIB
    st[2].flows[0].bytes_sent = 100 * MIB
    return st


def test_aalo_weighted_rounds_until_saturated():
    # Links (1 Gbit/s = 1): up1, up2 (senders), dn1, dn3, dn4 (receivers).
    # Round 1, shares by weight among the queues with a flow on the link:
    #   up1: A 3/5, B 2/5;  up2: B 2/3, C 1/3;  dn4: A 1/2, B 1/3, C 1/6;
    #   dn3: A 1; dn1: B 1.
    #   A: both flows on up1 -> 0.3 each.  B: B/0 = min(2/3, 1) = 2/3,
    #   B/1 = min(2/5, 1/3) = 1/3.  C: min(1/3, 1/6) = 1/6.
    #   Free: up1 1/15, up2 1/6, dn4 1/5, dn1 1/3, dn3 7/10.
    # Round 2 (all three queues still grow): up1: A 1/25, B 2/75; up2: B 1/9,
    #   C 1/18; dn4: A 1/10, B 1/15, C 1/30.  A: +1/50 each -> 0.32.
    #   B/0 + 1/9 -> 7/9; B/1 + 2/75 -> 0.36; C + 1/30 -> 1/5.
    #   Free: up1 0 (saturated), up2 1/45, dn4 3/25, dn1 2/9.
    # Round 3: A and B/1 cross up1 (saturated); B (B/0) and C share up2 2:1:
    #   B/0 + 2/135 -> 107/135; C + 1/135 -> 28/135.  up2 saturated: done.
    topo = build_topology("bigswitch:4")
    sch = make_scheduler("aalo", topo, K=3, delta=0.0)
    r = rates(sch.schedule(0.0, aalo_three_queues()))
    assert r["A/0"] == pytest.approx(0.32 * GBPS, rel=1e-12)
    assert r["A/1"] == pytest.approx(0.32 * GBPS, rel=1e-12)
    assert r["B/0"] == pytest.approx(float(F(107, 135)) * GBPS, rel=1e-12)
    assert r["B/1"] == pytest.approx(0.36 * GBPS, rel=1e-12)
    assert r["C/0"] == pytest.approx(float(F(28, 135)) * GBPS, rel=1e-12)
    assert sch.rounds_max == 3 and sch.rounds_capped == 0


def test_aalo_two_rounds_then_strict_is_the_old_reading():
    # rounds=2 keeps the pre-issue-16 behaviour: after round 2 the 1/45 left on up2
    # goes by strict priority to B (Q2) ahead of C (Q3): B/0 = 7/9 + 1/45 = 0.8,
    # C stays at 1/5.
    topo = build_topology("bigswitch:4")
    r = rates(make_scheduler("aalo", topo, K=3, delta=0.0, rounds=2)
              .schedule(0.0, aalo_three_queues()))
    assert r["B/0"] == pytest.approx(0.8 * GBPS, rel=1e-12)
    assert r["C/0"] == pytest.approx(0.2 * GBPS, rel=1e-12)


# ---------------------------------------------------------------------------------
# Philae: pilots never more than 1 % of a coflow's flows (one for a small coflow)
# ---------------------------------------------------------------------------------
def test_philae_pilot_count_bounded_by_one_percent():
    topo = build_topology("bigswitch:30")
    senders = [f"h{i}" for i in range(1, 21)]
    receivers = [f"h{i}" for i in range(21, 31)]
    # 20 senders x 10 receivers = 200 flows: floor(0.01 * 200) = 2 pilots (1 %),
    # from 2 different senders (min(#senders, #receivers) would be 10, i.e. 5 %).
    spec = make_coflow("W", 0.0, [(s, d, 1e9) for s in senders for d in receivers])
    st = states([spec])
    sch = make_scheduler("philae", topo)
    pil = sch.choose_pilots(st[0], st)
    assert len(pil) == 2
    assert len({fid.split("/")[1] for fid in pil}) == 2
    by_id = {f.flow_id: f for f in st[0].flows}
    assert len({by_id[fid].src for fid in pil}) == 2
    assert [sch.pilot_count(n, 50) for n in (1, 99, 100, 199, 200, 1000)] == [1, 1, 1, 1, 2, 10]
    assert sch.pilot_count(1000, 3) == 3  # at most one per sender


def test_philae_small_shuffle_one_pilot_cct():
    # 2 x 2 shuffle of 1 MiB flows on bigswitch:4, d = 1 MiB * 8 / 1 Gbit/s.
    # One pilot (4 flows < 100): h1->h3 runs alone, [0, d].  Then the other three
    # run max-min: h2's uplink and h4's downlink carry two flows each -> 0.5 Gbit/s
    # for all three, 2d more: CCT = 3d.  (Two pilots, min(2, 2), gave h1->h3 and
    # h2->h4 in [0, d], then h1->h4 and h2->h3 in [d, 2d]: CCT 2d.)
    from rapier_app.sim import simulate
    topo = build_topology("bigswitch:4")
    spec = make_coflow("S", 0.0, [(s, d, MIB) for s in ("h1", "h2") for d in ("h3", "h4")])
    res = simulate(topo, [spec], make_scheduler("philae", topo, decision_interval=0))
    d = MIB * 8 / GBPS
    assert res.coflows[0].cct_s == pytest.approx(3 * d, rel=1e-9)
    # with the default decision interval of 10 ms the pilot's completion at d is
    # acted on at 10 ms (h1's uplink idles meanwhile): CCT = 10 ms + 2d
    res = simulate(topo, [spec], make_scheduler("philae", topo))
    assert res.coflows[0].cct_s == pytest.approx(0.010 + 2 * d, rel=1e-9)


# ---------------------------------------------------------------------------------
# OPTAS: tiny/large from a modelled send buffer (Section IV)
# ---------------------------------------------------------------------------------
def test_optas_send_buffer_detects_large_flow_at_line_rate_fill():
    # B: two 10 MiB flows h2->h3 at t=0 (0.5 Gbit/s each, sharing h2's uplink); C: one
    # 1 MiB flow h2->h3 at t=4 ms.  d = 1 MiB * 8 / 1 Gbit/s = 8.388608 ms.
    # Buffer model (sndbuf = threshold = 1 MiB, filled at 1 Gbit/s): B's flows have
    # written min(10 MiB, t * 1 Gbit/s, sent + 1 MiB) = 1 MiB at t = d, and more just
    # after -> B is large at d (+1 ns: "larger than").  C (1 MiB, never above the
    # threshold) is then the tiny FIFO head: runs alone [d, 2d] -> CCT 2d - 4 ms.
    # (Before issue 16 B became large only when a flow had *sent* 1 MiB, at 2d, and
    # C ran [2d, 3d].)  B: 1 MiB by d, nothing in [d, 2d], 19 MiB at 1 Gbit/s after.
    from rapier_app.sim import simulate
    topo = build_topology("bigswitch:4")
    specs = [make_coflow("B", 0.0, [("h2", "h3", 10 * MIB), ("h2", "h3", 10 * MIB)]),
             make_coflow("C", 0.004, [("h2", "h3", MIB)])]
    d = MIB * 8 / GBPS
    res = simulate(topo, specs, make_scheduler("optas", topo))
    cct = {r.coflow_id: r.cct_s for r in res.coflows}
    assert cct["C"] == pytest.approx(2 * d - 0.004, abs=1e-8)
    assert cct["B"] == pytest.approx(21 * d, abs=1e-8)
    old = simulate(topo, specs, make_scheduler("optas", topo, buffer_model=False))
    assert {r.coflow_id: r.cct_s for r in old.coflows}["C"] == pytest.approx(
        3 * d - 0.004, abs=1e-8)


def test_optas_send_buffer_model_values():
    # At t = 20 ms a 10 MiB flow that has sent nothing has written
    # min(10 MiB, 20 ms * 1 Gbit/s = 2.384 MiB, 0 + 1 MiB) = 1 MiB: not above the
    # threshold (it must send first); after sending 1 byte: 1 MiB + 1 > 1 MiB.  A
    # 1 MiB flow never reports more than 1 MiB.
    topo = build_topology("bigswitch:3")
    st = states([make_coflow("X", 0.0, [("h1", "h2", 10 * MIB), ("h1", "h3", MIB)])])
    sch = make_scheduler("optas", topo)
    g = sch.group(st[0])
    assert sch.seen_bytes(g, 0.020).tolist() == [MIB, MIB]
    st[0].flows[0].bytes_sent = 1.0
    assert sch.seen_bytes(g, 0.020).tolist() == [MIB + 1.0, MIB]
    assert sch.seen_bytes(g, 0.004).tolist() == [0.004 * GBPS / 8, 0.004 * GBPS / 8]


# ---------------------------------------------------------------------------------
# Sincronia, Section 4.1: ordered coflows leave the unordered set for good
# ---------------------------------------------------------------------------------
def test_sincronia_ordered_coflows_keep_their_place():
    # bigswitch:2, 1 Gbit/s, epochs of 1 s then 2 s.  X: h1->h2, 1.5 s of data at
    # t=0; Y: h1->h2, 0.3 s of data at t=0.5.
    # Epoch 0 [0, 1): LP over {X}: 1.5 x <= 1 -> x = 2/3 >= 1/2, X ordered.  Y
    #   arrives at 0.5 as an orphan behind X (same ports): waits.
    # Epoch 1 at t=1: the unordered set is {Y} (X was removed from it): Y is
    #   selected and appended after X.  X ends at 1.5, Y runs [1.5, 1.8]:
    #   CCT X = 1.5, Y = 1.3.
    # (Re-selecting among all live coflows, the pre-issue-16 reading, put both in
    # epoch 1's BSSI order, Y (0.3 s left) before X (0.5 s left): Y [1, 1.3],
    # X ends at 1.8: CCTs 1.8 and 0.8.)
    from rapier_app.sim import simulate
    topo = build_topology("bigswitch:2")
    byte_s = GBPS / 8
    specs = [make_coflow("X", 0.0, [("h1", "h2", 1.5 * byte_s)]),
             make_coflow("Y", 0.5, [("h1", "h2", 0.3 * byte_s)])]
    for rates_ in ("greedy", "maxmin"):
        res = simulate(topo, specs, make_scheduler("sincronia", topo, epoch_s=1.0,
                                                   rates=rates_))
        cct = {r.coflow_id: r.cct_s for r in res.coflows}
        assert cct["X"] == pytest.approx(1.5, rel=1e-9)
        assert cct["Y"] == pytest.approx(1.3, rel=1e-9)
    old = simulate(topo, specs, make_scheduler("sincronia", topo, epoch_s=1.0,
                                               sets="reselect"))
    cct = {r.coflow_id: r.cct_s for r in old.coflows}
    assert cct["X"] == pytest.approx(1.8, rel=1e-9)
    assert cct["Y"] == pytest.approx(0.8, rel=1e-9)


# ---------------------------------------------------------------------------------
# Sincronia Algorithm 2: the faster greedy decides exactly as the full rescan
# ---------------------------------------------------------------------------------
def test_greedy_rates_equals_rescan_bit_for_bit():
    import numpy as np
    from rapier_app.scheduling.seeds.passes import _greedy_rates_rescan, greedy_rates
    rng = np.random.default_rng(0)
    for _ in range(200):
        L, n, W = int(rng.integers(3, 30)), int(rng.integers(0, 200)), int(rng.integers(1, 5))
        cap = np.concatenate([rng.choice([1e9, 1e10, 4e8], L), [np.inf]])
        P = rng.integers(0, L, (n, W))
        pad = rng.random((n, W)) < 0.3
        pad[:, 0] = False
        P[pad] = L
        res = cap * rng.choice([1, 1, 0.5, 1e-12], L + 1)
        res[-1] = np.inf
        tol = np.concatenate([1e-9 * cap[:L], [0.0]])
        r1, r2 = res.copy(), res.copy()
        assert np.array_equal(greedy_rates(P, r1, tol), _greedy_rates_rescan(P, r2, tol))
        assert np.array_equal(r1, r2)
    # hand case: a 2x2 shuffle on 4 ports (links 0,1 up; 2,3 down), 1 Gbit/s:
    # rows (0,2), (0,3), (1,2), (1,3) -> rows 0 and 3 take the full rate.
    P = np.array([[0, 2], [0, 3], [1, 2], [1, 3]])
    res = np.array([1e9] * 4 + [np.inf])
    tol = np.array([1.0] * 4 + [0.0])
    assert greedy_rates(P, res, tol).tolist() == [1e9, 0.0, 0.0, 1e9]


@pytest.mark.parametrize("compiled", [True, False])
def test_aalo_rounds_that_change_nothing_end_at_once_with_the_capped_rates(compiled,
                                                                          monkeypatch):
    # bigswitch:4 (links: up1..up4 = 0..3, dn1..dn4 = 4..7, 1 Gbit/s, tol = 1 bit/s):
    # A (queue 1) sends h1 -> h3 and B (queue 2) h2 -> h3, equal weights.  dn3 has
    # R = 1.5 bit/s free: above tol, so both flows can grow and both queues are
    # present on it, but each queue's share is R / 2 = 0.75 bit/s <= tol, so
    # neither flow is active in a filling.  No rate or residual changes in a round:
    # a fixed point.  Before, the pass ran the 200-round cap (each round a copy of
    # the first), then the strict pass gave A the 1.5 bit/s and B nothing.  Now
    # the pass ends after round 2 with the same rates, bit for bit.
    from rapier_app import kernels
    from rapier_app.scheduling.seeds.group import _Group
    from rapier_app.scheduling.seeds.passes import MAX_WEIGHTED_ROUNDS

    monkeypatch.setattr(kernels, "ENABLED", compiled)
    topo = build_topology("bigswitch:4")
    sch = make_scheduler("aalo", topo)
    L = sch._L
    up1, up2 = topo.link_ids[("h1", "s1")], topo.link_ids[("h2", "s1")]
    dn3 = topo.link_ids[("s1", "h3")]
    A = _Group([None], [None], np.array([[up1, dn3]]), L, np.arange(1), 0.0)
    B = _Group([None], [None], np.array([[up2, dn3]]), L, np.arange(1), 0.0)
    res = sch.fresh_residual()
    assert sch._tol[dn3] == 1.0
    res[dn3] = 1.5
    rates_ = {id(A): np.zeros(1), id(B): np.zeros(1)}
    done = sch.weighted_pass([(1.0, [(A, None)]), (1.0, [(B, None)])], res, rates_)
    assert rates_[id(A)][0] == 1.5 and rates_[id(B)][0] == 0.0
    assert res[dn3] == 0.0 and res[up1] == 1e9 - 1.5 and res[up2] == 1e9
    assert done == 2 < MAX_WEIGHTED_ROUNDS
    assert sch.rounds_stalled == 1 and sch.rounds_capped == 0
