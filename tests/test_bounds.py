"""Tests of rapier_app.sim.bounds: hand-computed bounds and bound <= every CCT."""

import math

import pytest

from rapier_app.core.model import make_coflow
from rapier_app.core.workload import scenario, synthetic
from rapier_app.scheduling import make_scheduler
from rapier_app.sim import simulate
from rapier_app.sim.bounds import avg_cct_lower_bound, coflow_lower_bound, coflow_lower_bounds
from topologies import fat_tree

MB = 1e6  # bytes


def test_fig1_bounds_hand_computed():
    # Fig. 1: two 100 Mbit/s paths S->D.  a = 40 + 100 Mbit -> 140/200 = 0.7 s,
    # b = 60 + 100 Mbit -> 160/200 = 0.8 s.
    topo, coflows = scenario("fig1")
    b = coflow_lower_bounds(topo, coflows)
    assert b["a"] == pytest.approx(0.7, rel=1e-9)
    assert b["b"] == pytest.approx(0.8, rel=1e-9)
    assert avg_cct_lower_bound(topo, coflows) == pytest.approx(0.75, rel=1e-9)


def test_single_path_closed_form():
    # k=4 fat-tree: h1 and h2 share edge switch e1, one path each way, 1 Gbit/s.
    t = fat_tree(4)
    c = make_coflow("x", 0.0, [("h1", "h2", 125 * MB), ("h1", "h2", 125 * MB)])
    assert coflow_lower_bound(t, c) == pytest.approx(2.0, rel=1e-9)  # 2000 Mbit / 1 Gbit/s


def test_receiver_bottleneck_with_multipath():
    # h1 (pod 1) and h5 (pod 2) both send 1000 Mbit to h2: the LP spreads the
    # cross-pod flow, but h2's access link carries 2000 Mbit at 1 Gbit/s -> 2 s.
    t = fat_tree(4)
    c = make_coflow("x", 0.0, [("h1", "h2", 125 * MB), ("h5", "h2", 125 * MB)])
    assert coflow_lower_bound(t, c) == pytest.approx(2.0, rel=1e-6)
    # A lone cross-pod flow cannot beat its 1 Gbit/s access link either: 1 s.
    c1 = make_coflow("y", 0.0, [("h5", "h2", 125 * MB)])
    assert coflow_lower_bound(t, c1) == pytest.approx(1.0, rel=1e-6)


def test_fractional_split_beats_single_path():
    t = fat_tree(4, hosts_per_edge=4)
    flows = [(f"h{i}", f"h{i + 8}", 125 * MB) for i in range(1, 9)]
    c = make_coflow("x", 0.0, flows)
    # h1..h8 are pod 1 (edges e1, e2), h9..h16 pod 2: 8 x 1000 Mbit leave pod 1 over
    # 2 edges x 2 uplinks x 1 Gbit/s = 4 Gbit/s -> 2 s.
    assert coflow_lower_bound(t, c) == pytest.approx(2.0, rel=1e-6)


def test_empty_average_raises():
    with pytest.raises(ValueError):
        avg_cct_lower_bound(fat_tree(4), [])


@pytest.mark.parametrize("seed", [1, 2])
def test_bound_below_every_scheduler(seed):
    t = fat_tree(4)
    coflows = synthetic(t, 5, 6, 0.05, sizes="uniform:1,5", seed=seed)
    bounds = coflow_lower_bounds(t, coflows)
    for name in ["baseline", "routing-only", "scheduling-only", "rapier"]:
        res = simulate(t, coflows, make_scheduler(name, t, seed=seed))
        for r in res.coflows:
            assert r.cct_s >= bounds[r.coflow_id] * (1 - 1e-6), (name, r.coflow_id)
        assert res.ccts.mean() >= avg_cct_lower_bound(t, coflows) * (1 - 1e-6)
    assert all(math.isfinite(v) and v > 0 for v in bounds.values())
