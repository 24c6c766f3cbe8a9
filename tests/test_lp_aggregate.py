"""LP (4) on commodities (solve_lp4_aggregated) has the per-flow LP's optimum and
expands to a feasible, optimal per-flow solution."""

import numpy as np
import pytest

from rapier_app.core.model import CoflowState, InfoPolicy
from rapier_app.core.workload import scenario, synthetic
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling.rapier.lp4 import solve_lp4, solve_lp4_aggregated
from rapier_app.sim import simulate
from topologies import fat_tree, leaf_spine

BITS = 8.0


def _inputs(topo, coflow):
    flows = CoflowState(coflow, InfoPolicy(True)).active_flows()
    vols = [f.spec.size_bytes * BITS for f in flows]
    paths = [topo.candidate_paths(f.src, f.dst) for f in flows]
    mats = [np.array([topo.path_links(p) for p in ps]) for ps in paths]
    return vols, paths, mats


@pytest.mark.parametrize("seed", range(6))
def test_same_optimum_and_optimal_expansion(seed):
    # k=4 fat-tree with 4 hosts per edge: many flows share an (edge, edge) pair
    topo = fat_tree(4, hosts_per_edge=4)
    cf = synthetic(topo, 1, 40, 0.0, sizes="uniform:1,50", seed=seed)[0]
    vols, paths, mats = _inputs(topo, cf)
    cap = topo.capacity.astype(float)
    if seed % 2:  # residual capacities: some links partly used
        rng = np.random.default_rng(seed)
        cap = cap * rng.uniform(0.3, 1.0, cap.shape)
    a_flow, _, _, _ = solve_lp4(topo, vols, paths, cap)
    got = solve_lp4_aggregated(vols, mats, cap)
    assert got is not None
    a_agg, ms, _, _, n_comm = got
    assert n_comm < len(vols)
    assert a_agg == pytest.approx(a_flow, rel=1e-7)
    # the expansion is a solution of the per-flow LP (4) with that alpha
    load = np.zeros(len(cap))
    for v, m, mat in zip(vols, ms, mats):
        assert m.sum() == pytest.approx(a_agg, rel=1e-9)  # (4b)
        assert (m >= -1e-12).all()  # (4c)
        for k in range(mat.shape[0]):
            load[mat[k]] += v * m[k]
    assert (load <= cap * (1 + 1e-7) + 1e-6).all()  # (4a)


def test_nothing_to_aggregate_returns_none():
    # Fig. 1: the sender has two uplinks, so each flow is a commodity of its own
    topo, coflows = scenario("fig1")
    vols, _, mats = _inputs(topo, coflows[0])
    assert solve_lp4_aggregated(vols, mats, topo.capacity.astype(float)) is None


def test_hand_computed_leaf_spine():
    # 2 leaves x 2 spines, 2 hosts per leaf, 1 Gbit/s: h1 -> h3 and h2 -> h4, 2 Gbit
    # each.  Host links carry 2 Gbit at 1 Gbit/s (alpha <= 0.5); leaf1 -> leaf2 has two
    # spine paths, 4 Gbit over 2 Gbit/s (alpha <= 0.5): alpha = 0.5, CCT 2 s, and
    # only by using both spines, one flow each.
    from rapier_app.core.model import make_coflow

    topo = leaf_spine(2, 2, 2)
    h = topo.hosts
    cf = make_coflow("c", 0.0, [(h[0], h[2], 2e9 / 8), (h[1], h[3], 2e9 / 8)])
    vols, _, mats = _inputs(topo, cf)
    a, ms, _, _, n_comm = solve_lp4_aggregated(vols, mats, topo.capacity.astype(float))
    assert n_comm == 1
    assert a == pytest.approx(0.5)
    # each spine path's quota is 2 Gbit: the first flow fills path 0, the second path 1
    assert ms[0] == pytest.approx([0.5, 0.0])
    assert ms[1] == pytest.approx([0.0, 0.5])


def test_rapier_aggregated_keeps_invariants():
    topo = fat_tree(4, hosts_per_edge=4)
    cfs = synthetic(topo, 6, 30, 0.05, sizes="uniform:1,20", seed=5)
    res = simulate(topo, cfs, make_scheduler("rapier", topo, aggregate=True))
    assert len(res.coflows) == 6
    assert res.bytes_delivered == pytest.approx(res.bytes_offered)
    assert res.max_link_utilisation <= 1 + 1e-6
    s = make_scheduler("rapier", topo, aggregate=True)
    states = [CoflowState(c, InfoPolicy(True)) for c in cfs]
    sched = s.schedule(0.0, states)
    assert s.stats["lp_solves"] > 0
    assert len(sched.allocations) == sum(len(c.flows) for c in cfs)


def test_bad_aggregate_threshold_names_the_field():
    from rapier_app.scheduling import SchedulerError

    with pytest.raises(SchedulerError, match="aggregate_min_paths"):
        make_scheduler("rapier", fat_tree(4), aggregate_min_paths=-1)


@pytest.mark.parametrize("seed", range(6))
def test_compiled_expansion_equals_numpy_expansion(seed, monkeypatch):
    # the compiled expansion (krapier.expand_commodities_kernel) gives the numpy
    # code's rows bit for bit: equal volumes (stable order), zero volumes,
    # commodities with one path and partly used links included
    from rapier_app import kernels

    topo = fat_tree(4, hosts_per_edge=4)
    cf = synthetic(topo, 1, 60, 0.0, sizes="uniform:1,4", seed=seed)[0]
    vols, paths, mats = _inputs(topo, cf)
    vols = [float(int(v / 8e6)) * 8e6 for v in vols]  # whole MB: many equal volumes
    vols[seed] = 0.0
    cap = topo.capacity.astype(float)
    if seed % 2:
        cap = cap * np.random.default_rng(seed).uniform(0.3, 1.0, cap.shape)
    out = []
    for on in (False, True):
        monkeypatch.setattr(kernels, "ENABLED", on)
        a, ms, _, _, _ = solve_lp4_aggregated(vols, mats, cap)
        out.append((a, [np.asarray(m).tobytes() for m in ms]))
    assert out[0] == out[1]
    assert len({len(m) for m in out[1][1]}) > 1  # paths per flow differ (1, 2, 4)


@pytest.mark.parametrize("seed", range(5))
def test_commodities_of_survivors_equal_a_fresh_grouping(seed):
    # commodities_subset (carried over when flows finish) = lp4_commodities of the
    # survivors' matrices: same members, numbering, inner paths and host links
    from rapier_app.scheduling.rapier.lp4 import commodities_subset, lp4_commodities

    topo = fat_tree(4, hosts_per_edge=4)
    cf = synthetic(topo, 1, 60, 0.0, seed=seed)[0]
    _, _, mats = _inputs(topo, cf)
    cm = lp4_commodities(mats)
    rng = np.random.default_rng(seed)
    for p_keep in (0.9, 0.5, 0.1):
        keep = rng.random(len(mats)) < p_keep
        got = commodities_subset(cm, keep)
        want = lp4_commodities([m for m, k in zip(mats, keep) if k])
        if want is None:
            assert got is None
            continue
        assert got.members == want.members and got.lp_rows == want.lp_rows
        assert got.comm_of.tolist() == want.comm_of.tolist()
        assert got.host_first.tolist() == want.host_first.tolist()
        assert got.host_last.tolist() == want.host_last.tolist()
        assert [a.tobytes() for a in got.inner] == [a.tobytes() for a in want.inner]
    assert commodities_subset(cm, np.zeros(len(mats), bool)) is None
