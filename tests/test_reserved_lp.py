"""LP (4) on the capacity left by the coflows ahead (``route_on="reserved"``).

(4a) becomes sum v m + alpha * B_l <= C_l: with t = 1/alpha, link l carries the B_l
bits committed ahead of the coflow and the coflow's own by time t.  Hand values on
RAPIER Fig. 1 (two 100 Mbit/s paths S-Mu-D and S-Md-D).
"""

import numpy as np
import pytest

from rapier_app.core.model import CoflowState, InfoPolicy
from rapier_app.core.workload import scenario
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling.rapier.lp4 import solve_lp4, solve_lp4_reference

MBIT = 1e6
UP = ("S", "Mu", "D")
DOWN = ("S", "Md", "D")


def _fig1_reserved():
    topo, _ = scenario("fig1")
    B = np.zeros(len(topo.capacity))
    B[topo.path_links(UP)] = 40 * MBIT     # a/0 routed on Mu
    B[topo.path_links(DOWN)] = 100 * MBIT  # a/1 routed on Md
    return topo, B


def test_reserved_lp_hand_value_and_reference_build():
    # Coflow b (60 + 100 Mbit) behind a's 40 Mbit on Mu and 100 Mbit on Md: the two
    # paths must carry 300 Mbit in all at 200 Mbit/s: t = 1.5 s, alpha = 2/3 1/s.
    topo, B = _fig1_reserved()
    vols = [60 * MBIT, 100 * MBIT]
    paths = [[UP, DOWN], [UP, DOWN]]
    a1, m1, _, _ = solve_lp4(topo, vols, paths, topo.capacity, reserved_bits=B)
    a2, m2, _, _ = solve_lp4_reference(topo, vols, paths, topo.capacity, reserved_bits=B)
    assert a1 == pytest.approx(2 / 3, rel=1e-9)
    assert a2 == pytest.approx(2 / 3, rel=1e-9)
    # no reservation: 160 Mbit on 200 Mbit/s, alpha = 1.25
    a0, _, _, _ = solve_lp4(topo, vols, paths, topo.capacity)
    assert a0 == pytest.approx(1.25, rel=1e-9)


def test_rounding_behind_the_reservation_picks_the_optimal_routes():
    # Integral: b/1 (100) with a/0 on Mu (140), b/0 (60) with a/1 on Md (160):
    # t = 1.6 s, the optimum of Fig. 1(c).  The other routing gives 2.0 s.
    topo, B = _fig1_reserved()
    _, specs = scenario("fig1")
    s = make_scheduler("rapier", topo)
    c = CoflowState(specs[1], InfoPolicy(True))
    plan = s.minimum_cct(c, topo.capacity - B * 0, B)
    assert plan.routes == {"b/0": DOWN, "b/1": UP}
    assert plan.t_s == pytest.approx(1.6, rel=1e-12)


def test_bad_route_on_and_tie_break_are_refused():
    from rapier_app.scheduling import SchedulerError

    topo, _ = scenario("fig1")
    with pytest.raises(SchedulerError, match="route_on"):
        make_scheduler("rapier", topo, route_on="empty")
    with pytest.raises(SchedulerError, match="tie_break"):
        make_scheduler("rapier", topo, tie_break="random")
    with pytest.raises(SchedulerError, match="wc"):
        make_scheduler("rapier-bssi", topo, wc="fifo")
