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
