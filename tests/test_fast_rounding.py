"""rapier-ls: the improved rounding never loses to argmax and stays within the LP."""

import numpy as np
import pytest

from rapier_app.core.model import CoflowState, InfoPolicy, make_coflow
from rapier_app.core.workload import scenario, synthetic
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling.rapier.lp4 import fixed_route_alpha, solve_lp4
from rapier_app.scheduling.rapier.routes import greedy_routes, improved_routes, local_search_routes
from rapier_app.sim import simulate
from topologies import fat_tree


def _flows(c):
    return CoflowState(c, InfoPolicy(True)).active_flows()


def test_fig1_optimum_kept():
    t, c = scenario("fig1")
    assert np.allclose(simulate(t, c, make_scheduler("rapier-ls", t)).ccts, [1.0, 1.6])


def test_local_search_fixes_a_bad_start():
    # Two equal 1000 Mbit flows h1 -> h5 (pods differ on k=4): both start on the same
    # path (alpha = 0.5 /s); moving one to a disjoint path doubles alpha to 1 /s.
    t = fat_tree(4)
    c = make_coflow("x", 0.0, [("h1", "h5", 125e6), ("h1", "h5", 125e6)])
    fl = _flows(c)
    vols = [1e9, 1e9]
    paths = [t.candidate_paths("h1", "h5")] * 2
    bad = {f.flow_id: paths[0][0] for f in fl}
    assert fixed_route_alpha(t, fl, bad, t.capacity, vols) == pytest.approx(0.5)
    good = local_search_routes(t, fl, vols, paths, bad, t.capacity)
    # h1's access link (1 Gbit/s) carries both flows: alpha is 0.5 at best
    assert fixed_route_alpha(t, fl, good, t.capacity, vols) == pytest.approx(0.5)
    c2 = make_coflow("y", 0.0, [("h1", "h5", 125e6), ("h2", "h6", 125e6)])
    fl2 = _flows(c2)
    p2 = [t.candidate_paths("h1", "h5"), t.candidate_paths("h2", "h6")]
    same = {fl2[0].flow_id: p2[0][0], fl2[1].flow_id: p2[1][0]}  # share e1's first uplink
    assert fixed_route_alpha(t, fl2, same, t.capacity, vols) == pytest.approx(0.5)
    fixed = local_search_routes(t, fl2, vols, p2, same, t.capacity)
    assert fixed_route_alpha(t, fl2, fixed, t.capacity, vols) == pytest.approx(1.0)
    assert fixed_route_alpha(t, fl2, greedy_routes(t, fl2, vols, p2, t.capacity),
                             t.capacity, vols) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(6))
def test_improved_between_argmax_and_lp(seed):
    t = fat_tree(4)
    c = synthetic(t, 1, 12, 0.0, sizes="uniform:1,100", seed=seed)[0]
    fl = _flows(c)
    vols = [f.size_bytes * 8 for f in c.flows]
    paths = [t.candidate_paths(f.src, f.dst) for f in c.flows]
    lp_alpha, ms, _, _ = solve_lp4(t, vols, paths, t.capacity)
    am = {f.flow_id: ps[int(np.argmax(m))] for f, ps, m in zip(fl, paths, ms)}
    a0 = fixed_route_alpha(t, fl, am, t.capacity, vols)
    a1 = fixed_route_alpha(t, fl, improved_routes(t, fl, vols, paths, am, t.capacity),
                           t.capacity, vols)
    assert a0 <= a1 * (1 + 1e-12)
    assert a1 <= lp_alpha * (1 + 1e-9)


@pytest.mark.parametrize("seed", [1, 2])
def test_rapier_ls_fast_equals_plain(seed):
    t = fat_tree(4)
    coflows = synthetic(t, 5, 6, 0.02, sizes="uniform:1,8", seed=seed)
    a = simulate(t, coflows, make_scheduler("rapier-ls", t, seed=seed))
    b = simulate(t, coflows, make_scheduler("rapier-ls", t, seed=seed, fast=False))
    assert np.array_equal(a.ccts, b.ccts)


def test_spread_routes_takes_ecmp_only_when_it_loses_nothing():
    # leaf-spine 2x2, h1, h2 on l1 and h3, h4 on l2; two 1 Gbit flows cross l1 -> l2.
    from rapier_app.scheduling.rapier.routes import spread_routes
    from topologies import build_topology
    t = build_topology("leafspine:2,2,2")
    fl = _flows(make_coflow("x", 0.0, [("h1", "h3", 125e6), ("h2", "h4", 125e6)]))
    vols = [1e9, 1e9]
    usable = [t.candidate_paths("h1", "h3"), t.candidate_paths("h2", "h4")]
    via = {(f.flow_id, s): next(p for p in ps if p[2] == s)
           for f, ps in zip(fl, usable) for s in ("s1", "s2")}
    both_s1 = {f.flow_id: via[(f.flow_id, "s1")] for f in fl}
    split = {fl[0].flow_id: via[(fl[0].flow_id, "s1")], fl[1].flow_id: via[(fl[1].flow_id, "s2")]}
    other = {fl[0].flow_id: via[(fl[0].flow_id, "s2")], fl[1].flow_id: via[(fl[1].flow_id, "s1")]}

    def ecmp_of(routes):
        return lambda f: routes[f.flow_id]

    # ECMP split (alpha 1 /s) beats a base that stacks both on s1 (alpha 0.5 /s)
    assert spread_routes(t, fl, vols, usable, both_s1, t.capacity, ecmp_of(split)) == split
    # ECMP stacking both on s1 loses against a split base: the base stands
    assert spread_routes(t, fl, vols, usable, split, t.capacity, ecmp_of(both_s1)) == split
    # equal alpha: the tie goes to ECMP
    assert spread_routes(t, fl, vols, usable, split, t.capacity, ecmp_of(other)) == other


def test_rapier_spread_keeps_the_fig1_optimum():
    t, c = scenario("fig1")
    assert np.allclose(simulate(t, c, make_scheduler("rapier-spread", t)).ccts, [1.0, 1.6])


def _fabric_bound(t, rng, max_width, paths_of):
    """A random one-coflow case for the local search: (flows, per-flow candidate
    paths from ``paths_of(flow)``, volumes in bits with repeats for ties, random
    capacities in bit/s with the access links 8x faster: the fabric is the
    bottleneck)."""
    c = synthetic(t, 1, int(rng.integers(3, max_width)), 0.0, sizes="uniform:1,20",
                  seed=int(rng.integers(1 << 30)))[0]
    fl = _flows(c)
    paths = [paths_of(f) for f in fl]
    vols = np.array([float(rng.choice([8e6, 16e6, 1e6 * rng.integers(1, 100)]))
                     for _ in fl])
    cap = t.capacity * rng.choice([0.25, 0.5, 1.0], size=len(t.capacity))
    for ps in paths:
        for p in ps:
            ls = t.path_links(p)
            cap[[ls[0], ls[-1]]] = 8 * t.capacity[[ls[0], ls[-1]]]
    return fl, paths, vols, cap


@pytest.mark.parametrize("topology,seed", [("fattree:4", 0), ("fattree:4", 1),
                                           ("vl2:4,4,2", 2), ("fattree:6", 3)])
def test_local_search_kernel_makes_the_numpy_moves(topology, seed, monkeypatch):
    # compiled local search (krapier.local_search_kernel) = the numpy loop, move for
    # move: same routes from random starts on random capacities (some links at zero,
    # equal volumes for ties), and the search does move flows
    from rapier_app import kernels
    from topologies import build_topology
    t = build_topology(topology)
    rng = np.random.default_rng(seed)
    moved = 0
    for trial in range(12):
        fl, paths, vols, cap = _fabric_bound(t, rng, 40,
                                             lambda f: t.candidate_paths(f.src, f.dst))
        start = {f.flow_id: ps[int(rng.integers(len(ps)))] for f, ps in zip(fl, paths)}
        if trial % 3 == 0:
            cap[rng.integers(len(cap))] = 0.0
        lim = None if trial % 4 else int(rng.integers(0, 5))
        monkeypatch.setattr(kernels, "ENABLED", False)
        want = local_search_routes(t, fl, vols, paths, start, cap, max_moves=lim)
        monkeypatch.setattr(kernels, "ENABLED", True)
        got = local_search_routes(t, fl, vols, paths, start, cap, max_moves=lim)
        assert got == want
        moved += sum(got[f.flow_id] != start[f.flow_id] for f in fl)
    assert moved > 0


@pytest.mark.parametrize("seed", [4, 5])
def test_local_search_on_padded_blocks_makes_the_numpy_moves(seed, monkeypatch):
    # candidate paths of two lengths (path slack 2 on fattree:4): the compiled search
    # on padded path blocks (local_search_index, sentinel link L) = the numpy loop
    # over per-path link lists, from random starts, with moves
    from rapier_app import kernels
    from rapier_app.scheduling.pathcache import pair_paths
    from rapier_app.scheduling.rapier.routes import local_search_index
    t = fat_tree(4).set_path_slack(2)
    rng = np.random.default_rng(seed)
    moved = 0
    for trial in range(10):
        fl, paths, vols, cap = _fabric_bound(t, rng, 30,
                                             lambda f: pair_paths(t, f.src, f.dst).paths)
        assert any(len(ps[0]) < len(ps[-1]) for ps in paths)
        Ms = [pair_paths(t, f.src, f.dst).padded for f in fl]
        npaths = np.array([M.shape[0] for M in Ms], np.int64)
        nhops = np.array([M.shape[1] for M in Ms], np.int64)
        off = np.zeros(len(Ms), np.int64)
        np.cumsum((npaths * nhops)[:-1], out=off[1:])
        blocks = (off, npaths, nhops, np.concatenate([M.ravel() for M in Ms]))
        k0 = np.array([int(rng.integers(len(ps))) for ps in paths], np.int64)
        start = {f.flow_id: ps[k] for f, ps, k in zip(fl, paths, k0.tolist())}
        monkeypatch.setattr(kernels, "ENABLED", False)
        want = local_search_routes(t, fl, vols, paths, start, cap)
        got = local_search_index(vols, blocks, k0.copy(), cap, 4 * len(fl))
        assert {f.flow_id: ps[k] for f, ps, k in zip(fl, paths, got.tolist())} == want
        moved += int((got != k0).sum())
    assert moved > 0
