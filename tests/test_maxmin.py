"""Max-min fair sharing against hand-computed allocations."""

import numpy as np
import pytest

from rapier_app.core.model import make_coflow
from rapier_app.scheduling import make_scheduler, max_min_fair
from rapier_app.sim import simulate
from topologies import big_switch


def test_two_link_chain():
    # link A cap 10, link B cap 4; f1 on A, f2 on A+B, f3 on B.
    # B is the bottleneck: f2 = f3 = 2; f1 takes the rest of A: 8.
    rates = max_min_fair([np.array([0]), np.array([0, 1]), np.array([1])], np.array([10.0, 4.0]))
    assert rates == pytest.approx([8.0, 2.0, 2.0])


def test_demand_caps_and_weights():
    links = [np.array([0])] * 3
    rates = max_min_fair(links, np.array([9.0]), demand=np.array([1.0, np.inf, np.inf]))
    assert rates == pytest.approx([1.0, 4.0, 4.0])
    rates = max_min_fair(links[:2], np.array([9.0]), weights=np.array([1.0, 2.0]))
    assert rates == pytest.approx([3.0, 6.0])


def test_baseline_on_big_switch_hand_computed():
    # h1->h4, h1->h5, h1->h7, h2->h4 on a 1 Gbit/s big switch.  h1's ingress port is
    # shared by 3 flows (1/3 each); h4's egress carries h1->h4 (1/3) and h2->h4, which
    # gets the remaining 2/3.
    topo = big_switch(7)
    cf = make_coflow("x", 0.0, [("h1", "h4", 1e6), ("h1", "h5", 1e6), ("h1", "h7", 1e6),
                                ("h2", "h4", 1e6)])
    sched = make_scheduler("baseline", topo)
    from rapier_app.core.model import CoflowState, InfoPolicy
    state = CoflowState(cf, InfoPolicy(True))
    s = sched.schedule(0.0, [state])
    r = {k: a.rate_bps for k, a in s.allocations.items()}
    assert r["x/0"] == pytest.approx(1e9 / 3)
    assert r["x/1"] == pytest.approx(1e9 / 3)
    assert r["x/2"] == pytest.approx(1e9 / 3)
    assert r["x/3"] == pytest.approx(2e9 / 3)


def _reference_max_min(flow_links, cap, dem, w):
    """Textbook progressive filling (Bertsekas-Gallager 6.5.2), recomputing every
    link's load per step: slow and obviously right."""
    n = len(flow_links)
    rate = np.zeros(n)
    frozen = np.array([len(l) == 0 and not np.isfinite(d) for l, d in zip(flow_links, dem)])
    res = cap.astype(float).copy()
    while not frozen.all():
        act = [i for i in range(n) if not frozen[i]]
        wl = np.zeros(len(cap))
        for i in act:
            wl[flow_links[i]] += w[i]
        with np.errstate(divide="ignore"):
            share = np.where(wl > 0, res / np.where(wl > 0, wl, 1), np.inf)
        inc = min(share.min(), min((dem[i] - rate[i]) / w[i] for i in act))
        for i in act:
            rate[i] += inc * w[i]
        res -= inc * wl
        sat = set(np.flatnonzero((wl > 0) & (res <= 1e-9 * np.maximum(cap, 1))).tolist())
        for i in act:
            if rate[i] >= dem[i] * (1 - 1e-12) or sat & set(flow_links[i].tolist()):
                frozen[i] = True
    return rate


@pytest.mark.parametrize("seed", range(40))
def test_matches_textbook_progressive_filling(seed):
    # random flows over 1-10 links with random capacities, demands and weights
    rng = np.random.default_rng(seed)
    n, L = int(rng.integers(1, 40)), int(rng.integers(1, 10))
    links = [rng.choice(L, int(rng.integers(1, min(L, 5) + 1)), replace=False) for _ in range(n)]
    cap = rng.uniform(0.5, 10, L)
    dem = np.where(rng.random(n) < 0.3, rng.uniform(0.1, 5, n), np.inf)
    w = rng.uniform(0.5, 3, n) if seed % 2 else np.ones(n)
    got = max_min_fair(links, cap, dem, None if seed % 2 == 0 else w)
    want = _reference_max_min(links, cap, dem, w)
    assert got == pytest.approx(want, rel=1e-7, abs=1e-9)
    load = np.zeros(L)
    for l, r in zip(links, got):
        load[l] += r
    assert (load <= cap * (1 + 1e-9)).all()
