"""The compiled kernels (rapier_app/kernels/) give bit for bit
the rates and residuals of the numpy code they replace (issue 16)."""

import numpy as np
import pytest

from rapier_app import kernels
from rapier_app.kernels import alloc as kalloc
from rapier_app.kernels import rapier as krapier
from rapier_app.kernels import sim as ksim
from rapier_app.kernels import sincronia as ksincronia
from rapier_app.kernels import weighted as kweighted
from rapier_app.scheduling import SchedulerError
from rapier_app.scheduling.seeds.passes import (_greedy_rates_rescan, _waterfill_incremental,
                                                _waterfill_plain, waterfill)


def test_numba_is_installed_and_used():
    # setup.py installs numba: a fresh install runs the compiled kernels
    assert kernels.numba is not None
    assert kernels.ENABLED


def test_rapier_kernels_setting_is_checked_by_name():
    assert kernels._enabled("numba") is True
    assert kernels._enabled("numpy") is False
    with pytest.raises(ValueError, match="RAPIER_KERNELS"):
        kernels._enabled("fast")


def random_case(rng, zero_caps=True):
    """(P, capacities + dummy inf, tolerances) of a random padded link matrix."""
    L = int(rng.integers(3, 40))
    m = int(rng.integers(1, 250))
    W = int(rng.integers(1, 5))
    P = np.full((m, W), L, dtype=np.int64)
    for i in range(m):
        k = int(rng.integers(1, min(W, L) + 1))
        P[i, :k] = rng.choice(L, size=k, replace=False)
    kinds = [1e9, 1e10, 0.0] if zero_caps else [1e9, 1e10, 1e8]
    cap = np.concatenate([rng.choice(kinds, size=L, p=[.7, .2, .1]) * rng.random(L),
                          [np.inf]])
    tol = np.concatenate([1e-9 * np.maximum(cap[:L], 1.0), [0.0]])
    if rng.random() < 0.2:  # a few links already over-used (negative residual)
        cap[:L][rng.random(L) < 0.1] = -1.0
    return P, cap, tol


@pytest.mark.parametrize("seed", range(4))
def test_waterfill_kernel_bit_identical(seed):
    rng = np.random.default_rng(seed)
    for _ in range(150):
        P, cap, tol = random_case(rng)
        r0, r1, r2 = cap.copy(), cap.copy(), cap.copy()
        a = _waterfill_plain(P, r0, tol)
        b = _waterfill_incremental(P, r1, tol)
        k = np.zeros(P.shape[0])
        assert kalloc.waterfill_kernel(P, r2, tol, k) == 0
        assert a.tobytes() == k.tobytes() and b.tobytes() == k.tobytes()
        assert r0.tobytes() == r2.tobytes() and r1.tobytes() == r2.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_greedy_kernel_bit_identical(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(150):
        P, cap, tol = random_case(rng)
        r0, r1 = cap.copy(), cap.copy()
        a = _greedy_rates_rescan(P, r0, tol)
        k = np.zeros(P.shape[0])
        ksincronia.greedy_kernel(P, r1, tol, k)
        assert a.tobytes() == k.tobytes() and r0.tobytes() == r1.tobytes()


def test_waterfill_kernel_hand_case_and_partly_used_links():
    # links 0 (1 bit/s free) and 1 (3 bit/s): flows {0}, {0,1}, {1}, {1}: max-min
    # gives 0.5, 0.5 on link 0, then 1.25 each to the two flows left on link 1
    res = np.array([1.0, 3.0, np.inf])
    tol = np.array([1e-9, 1e-9, 0.0])
    P = np.array([[0, 2], [0, 1], [1, 2], [1, 2]])
    r = np.zeros(4)
    kalloc.waterfill_kernel(P, res, tol, r)
    assert r.tolist() == [0.5, 0.5, 1.25, 1.25]
    assert res[:2].tolist() == [0.0, 0.0]
    # a flow crossing a saturated link gets nothing, the others are not held by it
    res = np.array([0.0, 2.0, np.inf])
    r = np.zeros(2)
    kalloc.waterfill_kernel(np.array([[0, 1], [1, 2]]), res, tol, r)
    assert r.tolist() == [0.0, 2.0]


def test_waterfill_flow_without_links_is_an_error():
    # only the dummy link: no capacity bounds the flow
    with pytest.raises(SchedulerError, match="crosses no link"):
        waterfill(np.array([[2, 2]]), np.array([1.0, 1.0, np.inf]),
                  np.array([1e-9, 1e-9, 0.0]))


def _passes(enabled, monkeypatch, seed):
    """Rates, residual and round counts of a random weighted pass and strict pass on
    a fat-tree, with the compiled kernels on or off."""
    from rapier_app.scheduling.seeds.base import _SeedScheduler
    from rapier_app.scheduling.seeds.group import _Group
    from topologies import build_topology

    monkeypatch.setattr(kernels, "ENABLED", enabled)
    topo = build_topology("fattree:4")
    s = _SeedScheduler(topo)
    rng = np.random.default_rng(seed)
    L = s._L
    groups = []
    for c in range(int(rng.integers(2, 9))):
        n = int(rng.integers(1, 80))
        P = np.full((n, s._width), L, dtype=np.int64)
        for i in range(n):
            k = int(rng.integers(1, s._width + 1))
            P[i, :k] = rng.choice(L, size=k, replace=False)
        groups.append(_Group([None] * n, [None] * n, P, L, np.arange(n), 0.0))
    res = s.fresh_residual()
    res[:L] *= rng.choice([1.0, 0.5, 0.0], size=L, p=[.7, .2, .1])
    rates = {id(g): np.zeros(g.n) for g in groups}
    cut = int(rng.integers(1, len(groups) + 1))
    queues = [(10.0, [(g, None) for g in groups[:cut]]),
              (3.0, [(g, None) for g in groups[cut:]])]
    queues = [q for q in queues if q[1]]
    rounds = None if seed % 2 else 1 + seed % 3
    done = s.weighted_pass(queues, res, rates, rounds)
    s.strict_pass([(g, None) for g in groups], res, rates)
    return ([rates[id(g)].tobytes() for g in groups], res.tobytes(), done,
            s.rounds_max, s.rounds_capped)


@pytest.mark.parametrize("seed", range(12))
def test_compiled_passes_equal_numpy_passes(seed, monkeypatch):
    assert _passes(True, monkeypatch, seed) == _passes(False, monkeypatch, seed)


@pytest.mark.parametrize("name", ["aalo", "philae", "optas", "sincronia", "fifo",
                                  # maxmin_flat_kernel: every decision point
                                  "baseline", "routing-only",
                                  # the spread tie-break's compiled placement
                                  "rapier", "rapier-bssi",
                                  # rapier-ls's and rapier-spread's roundings on
                                  # path blocks (improved_index, spread_index)
                                  "rapier-ls", "rapier-spread"])
def test_schedulers_decide_the_same_with_and_without_kernels(name, monkeypatch,
                                                            slack=0):
    from rapier_app.core.workload import synthetic
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate
    from topologies import build_topology

    topo = build_topology("fattree:4")
    if slack:
        topo.set_path_slack(slack)
        ps = topo.candidate_paths("h1", "h16")
        assert len(ps[0]) < len(ps[-1])  # paths of two lengths: padded path blocks
    out = []
    for enabled in (True, False):
        monkeypatch.setattr(kernels, "ENABLED", enabled)
        cfs = synthetic(topo, 25, 12, 0.02, "pareto:0.5,1.3", seed=3)
        res = simulate(topo, cfs, make_scheduler(name, topo))
        out.append([(c.coflow_id, c.cct_s.hex()) for c in res.coflows])
    assert out[0] == out[1]


@pytest.mark.parametrize("name", ["rapier", "rapier-ls", "rapier-spread"])
def test_rapier_roundings_the_same_with_and_without_kernels_on_slack_paths(name,
                                                                           monkeypatch):
    # candidate paths up to 2 hops longer than the shortest: padded path blocks
    test_schedulers_decide_the_same_with_and_without_kernels(name, monkeypatch, slack=2)


def test_sincronia_demand_matrix_equal_with_and_without_kernels(monkeypatch):
    from rapier_app.core.model import CoflowState, InfoPolicy
    from rapier_app.core.workload import synthetic
    from rapier_app.scheduling import make_scheduler
    from topologies import build_topology

    topo = build_topology("fattree:4")
    specs = synthetic(topo, 15, 9, 0.02, "pareto:0.5,1.3", seed=5)
    out = []
    for enabled in (True, False):
        monkeypatch.setattr(kernels, "ENABLED", enabled)
        sch = make_scheduler("sincronia", topo)
        cfs = [CoflowState(s, InfoPolicy()) for s in specs]
        for k, c in enumerate(cfs):  # some progress, one flow finished
            for j, f in enumerate(c.flows):
                f.bytes_sent = f.size_bytes * ((k + j) % 4) / 4
            c.flows[0].finish_s = 0.1
            c.flows[0].bytes_sent = c.flows[0].size_bytes
            c._invalidate(False)
        D = sch.demand_matrix(cfs)
        assert D.shape == (len(cfs), topo.capacity.shape[0]) and D.sum() > 0
        out.append(D.tobytes())
    assert out[0] == out[1]


def _flat_case(rng):
    """(lens, lidx, capacities) of random paths, some flows without links, some
    links at zero or negative capacity and some paths crossing a link twice."""
    L = int(rng.integers(2, 40))
    n = int(rng.integers(1, 300))
    lens = rng.integers(0, 5, size=n).astype(np.int64)
    if rng.random() < 0.7:
        lens[lens == 0] = 1
    lidx = rng.integers(0, L, size=int(lens.sum())).astype(np.int64)
    cap = rng.choice([1e9, 1e10, 0.0], size=L, p=[.7, .2, .1]) * rng.random(L)
    if rng.random() < 0.2:
        cap[rng.random(L) < 0.1] = -1.0
    return lens, lidx, cap


@pytest.mark.parametrize("seed", range(6))
def test_maxmin_flat_kernel_bit_identical(seed, monkeypatch):
    # baseline, fair and routing-only call max_min_fair_flat at every decision point
    from rapier_app.scheduling.maxmin import max_min_fair_flat
    rng = np.random.default_rng(300 + seed)
    for _ in range(200):
        lens, lidx, cap = _flat_case(rng)
        monkeypatch.setattr(kernels, "ENABLED", False)
        a = max_min_fair_flat(lens, lidx, cap)
        monkeypatch.setattr(kernels, "ENABLED", True)
        b = max_min_fair_flat(lens, lidx, cap)
        assert a.tobytes() == b.tobytes()


def test_maxmin_flat_kernel_hand_case():
    # two flows on link 0 (10 bit/s), one of them also on link 1 (2 bit/s), a third
    # alone on link 1: link 1 splits 2 into 1 + 1, the first flow takes the other 9
    from rapier_app.scheduling.maxmin import max_min_fair_flat
    assert kernels.ENABLED
    r = max_min_fair_flat(np.array([1, 2, 1]), np.array([0, 0, 1, 1]),
                          np.array([10.0, 2.0]))
    assert r.tolist() == [9.0, 1.0, 1.0]


@pytest.mark.parametrize("seed", range(4))
def test_compact_in_place_equals_masked_copy(seed):
    # groups drop finished flows by moving the later rows up in place
    from rapier_app.scheduling.seeds.passes import _IN_PLACE_MAX, _compact

    rng = np.random.default_rng(seed)
    for _ in range(300):
        n = int(rng.integers(1, 80))
        k = int(rng.integers(0, min(n, _IN_PLACE_MAX + 4) + 1))
        pos = np.sort(rng.choice(n, k, replace=False))
        keep = np.ones(n, dtype=bool)
        keep[pos] = False
        for a in (rng.integers(0, 50, (n, 3)), rng.random(n)):
            want = a[keep].copy()
            got = _compact(a.copy(), pos)
            assert got.dtype == a.dtype and np.array_equal(got, want)
            assert got.flags.c_contiguous


def test_demand_row_kernel_bit_identical_to_the_stacked_formula():
    from rapier_app.scheduling.seeds.passes import BITS

    rng = np.random.default_rng(7)
    for _ in range(200):
        n, L, W = int(rng.integers(1, 40)), int(rng.integers(2, 30)), 3
        P = rng.integers(0, L + 1, (n, W)).astype(np.int64)  # L: the dummy link
        sent = rng.random(3 * n) * 1e6
        idx = rng.choice(3 * n, n, replace=False).astype(np.int64)
        sizes = rng.random(n) * 1e6
        sizes[::5] = sent[idx[::5]]          # finished exactly: -0.0 / 0.0
        want = np.zeros((1, L))
        ksincronia.demand_kernel(P, np.array([0, n], np.int64),
                                 np.maximum(sizes - sent[idx], 0.0) * BITS, L, want)
        got = np.zeros(L)
        ksincronia.demand_row_kernel(P, idx, sizes, sent, BITS, L, got)
        assert got.tobytes() == want[0].tobytes()


@pytest.mark.parametrize("topology", ["fattree:4", "bigswitch:12"])
def test_sincronia_kept_demand_rows_are_the_recomputed_ones(topology, monkeypatch):
    # demand_matrix keeps a coflow's row while its group is unchanged and it was
    # given no bandwidth: at every decision, the kept rows must be what a fresh
    # computation gives, to the bit, and some rows must have been kept
    from rapier_app.core.workload import synthetic
    from rapier_app.scheduling import make_scheduler
    from rapier_app.scheduling.seeds.sincronia import Sincronia
    from rapier_app.sim import simulate
    from topologies import build_topology

    topo = build_topology(topology)
    stats = {"calls": 0, "kept": 0}
    orig = Sincronia.demand_matrix

    def checked(self, coflows):
        kept = sum(1 for c in coflows if (e := self._dcache.get(c.coflow_id)) is not None
                   and e[0] is self.group(c))
        D = orig(self, coflows)
        fresh = self._demand_rows([self.group(c) for c in coflows])
        assert D.tobytes() == fresh.tobytes()
        stats["calls"] += 1
        stats["kept"] += kept
        return D

    orig_octs = Sincronia.octs

    def checked_octs(self, coflows):
        # the orphans' OCTs, kept with the rows: the fresh rows' maxima
        kept = sum(1 for c in coflows if (e := self._dcache.get(c.coflow_id)) is not None
                   and e[0] is self.group(c))
        o = orig_octs(self, coflows)
        fresh = self._demand_rows([self.group(c) for c in coflows])
        assert o == fresh.max(axis=1).tolist()
        stats["calls"] += 1
        stats["kept"] += kept
        return o

    monkeypatch.setattr(Sincronia, "demand_matrix", checked)
    monkeypatch.setattr(Sincronia, "octs", checked_octs)
    cfs = synthetic(topo, 30, 10, 0.01, "pareto:0.5,1.3", seed=6)
    res = simulate(topo, cfs, make_scheduler("sincronia", topo))
    assert len(res.coflows) == 30
    assert stats["calls"] > 50 and stats["kept"] > 0


def test_philae_kept_contention_counts_are_the_recomputed_ones(monkeypatch):
    # Philae reuses its contention counts while no coflow's access-link row
    # changed: at every decision they must be the counts from scratch
    from rapier_app.core.workload import synthetic
    from rapier_app.scheduling import make_scheduler
    from rapier_app.scheduling.seeds.philae import Philae
    from rapier_app.sim import simulate
    from topologies import build_topology

    topo = build_topology("bigswitch:12")
    stats = {"calls": 0, "reused": 0}
    orig = Philae._contention

    def checked(self, coflows):
        before = self._cont
        got = orig(self, coflows)
        if before is not None and self._cont[2] is before[2]:
            stats["reused"] += 1
        stats["calls"] += 1
        # from scratch: coflows sharing a first or last link of an active flow
        ports = [set(self.group(c).ports[0].tolist()) | set(self.group(c).ports[1].tolist())
                 for c in coflows]
        fresh = {c.coflow_id: sum(1 for q in ports if q & p) for c, p in zip(coflows, ports)}
        assert got == fresh
        return got

    monkeypatch.setattr(Philae, "_contention", checked)
    cfs = synthetic(topo, 25, 10, 0.02, "pareto:0.5,1.3", seed=8)
    res = simulate(topo, cfs, make_scheduler("philae", topo))
    assert len(res.coflows) == 25 and stats["calls"] > 50 and stats["reused"] > 0


@pytest.mark.parametrize("seed", range(3))
def test_csr_drop_equals_the_index_of_the_compacted_rows(seed):
    # a group's link index is carried over when flows finish: dropping rows from it
    # must give exactly the counting sort of the compacted rows (duplicates of the
    # dummy link included)
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n, L, W = int(rng.integers(1, 60)), int(rng.integers(1, 20)), int(rng.integers(1, 4))
        P = rng.integers(0, L + 1, (n, W)).astype(np.int64)
        pos = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
        keep = np.ones(n, dtype=bool)
        keep[pos] = False
        lp, rw = kalloc.group_csr(P, L + 1)
        got = kalloc.csr_drop(lp, rw, pos, n)
        want = kalloc.group_csr(np.ascontiguousarray(P[keep]), L + 1)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("name", ["aalo", "philae", "fifo", "optas"])
def test_kept_link_indexes_are_the_rebuilt_ones(name, monkeypatch):
    # the compiled passes read each group's link index kept across decisions and
    # carried over through csr_drop when flows finish: at every pass it must equal
    # the index built from the group's rows, and some must have been carried over
    from rapier_app.core.workload import synthetic
    from rapier_app.scheduling import make_scheduler
    from rapier_app.scheduling.seeds.base import _SeedScheduler
    from rapier_app.sim import simulate
    from topologies import build_topology

    from rapier_app.scheduling.seeds.group import _Group

    topo = build_topology("bigswitch:12")
    stats = {"calls": 0, "carried": 0}
    orig = _Group.csr
    seen = {}

    def checked(g, nl):
        # every read of a group's index (stacking, or the kept stacks' update)
        if g._csr is not None and id(g) not in seen:
            stats["carried"] += 1  # kept from before this group's first pass
        seen[id(g)] = g
        lp, rw = orig(g, nl)
        want = kalloc.group_csr(np.ascontiguousarray(g.P, dtype=np.int64), nl)
        assert np.array_equal(lp, want[0]) and np.array_equal(rw, want[1])
        stats["calls"] += 1
        return lp, rw

    monkeypatch.setattr(_Group, "csr", checked)
    assert _SeedScheduler.group  # the groups are made and filtered there
    cfs = synthetic(topo, 25, 10, 0.02, "pareto:0.5,1.3", seed=8)
    res = simulate(topo, cfs, make_scheduler(name, topo))
    assert len(res.coflows) == 25 and stats["calls"] > 50 and stats["carried"] > 0


@pytest.mark.parametrize("name,topology", [("aalo", "bigswitch:12"), ("philae", "bigswitch:12"),
                                           ("aalo", "fattree:4"), ("philae", "fattree:4")])
def test_weighted_pass_memo_gives_the_full_computation(name, topology, monkeypatch):
    # the compiled weighted pass reuses a coflow's round-1 scan and filling from the
    # last pass over the same rows: at every pass of a whole run, the rates, the
    # residual and the round count must be those of the numpy method on the same
    # inputs, bit for bit, and some rows must have been served from the memo
    from rapier_app.core.workload import synthetic
    from rapier_app.scheduling import make_scheduler
    from rapier_app.scheduling.seeds.base import _SeedScheduler
    from rapier_app.sim import simulate
    from topologies import build_topology

    topo = build_topology(topology)
    orig = _SeedScheduler.weighted_pass
    stats = {"passes": 0}

    def checked(self, queues, residual, rates, rounds=None):
        r2, rates2 = residual.copy(), {k: v.copy() for k, v in rates.items()}
        monkeypatch.setattr(kernels, "ENABLED", False)
        try:
            want = orig(self, queues, r2, rates2, rounds)
        finally:
            monkeypatch.setattr(kernels, "ENABLED", True)
        got = orig(self, queues, residual, rates, rounds)
        assert got == want and residual.tobytes() == r2.tobytes()
        assert all(rates[k].tobytes() == rates2[k].tobytes() for k in rates)
        stats["passes"] += 1
        return got

    monkeypatch.setattr(_SeedScheduler, "weighted_pass", checked)
    s = make_scheduler(name, topo)
    cfs = synthetic(topo, 30, 12, 0.01, "pareto:0.5,1.3", seed=5)
    res = simulate(topo, cfs, s)
    assert len(res.coflows) == 30 and stats["passes"] > 50
    assert s.memo_rows[0] > 0 and s.memo_rows[1] > 0


def _random_rows(rng, n, W, L):
    """``n`` padded link rows of width ``W``: 1..W distinct links below the dummy
    ``L`` each, the rest ``L``."""
    P = np.full((n, W), L, dtype=np.int64)
    for i in range(n):
        k = int(rng.integers(1, W + 1))
        P[i, :k] = rng.choice(L, size=k, replace=False)
    return P


def _stacked_checked(orig, on_call):
    """A stand-in for ``_SeedScheduler._stacked`` (``orig``) that asserts, at every
    call, that the kept inputs it returns are what a full rebuild gives (rows,
    bounds, link indexes and, for the weighted pass, memo records; a record with
    flag 0 is not read, only its flag and levels), after calling ``on_call(self,
    kind, groups, the kept entry before the call, its groups)``."""
    def checked(self, k, gs, nl, memo=False):
        P0, gptr0, _ = self._stack(gs, None, False)
        lptrs0, rows0 = self._stack_csr(gs, nl)
        memo0 = self._stack_memo(gs, gptr0, nl) if memo else None
        before = self._stacks.get(k)
        old_gs = list(before[0]) if before is not None else None
        P, gptr, lptrs, rows_all, rec = orig(self, k, gs, nl, memo)
        on_call(self, k, gs, before, old_gs)
        assert P.tobytes() == P0.tobytes() and P.shape == P0.shape
        assert gptr.tolist() == gptr0.tolist()
        assert lptrs.tobytes() == lptrs0.tobytes() and rows_all.tobytes() == rows0.tobytes()
        if memo:
            assert rec[0].tolist() == memo0[0].tolist()
            assert rec[6].tobytes() == memo0[6].tobytes()
            has = rec[0] != 0
            for a, b in zip(rec[1:6], memo0[1:6]):
                assert a[has].tobytes() == b[has].tobytes()
        else:
            assert rec is None
        return P, gptr, lptrs, rows_all, rec
    return checked


@pytest.mark.parametrize("name,topology,kind", [
    ("aalo", "bigswitch:12", "weighted"), ("philae", "bigswitch:12", "weighted"),
    ("aalo", "fattree:4", "weighted"), ("fifo", "bigswitch:12", "strict"),
    ("sincronia-maxmin", "fattree:4", "strict"), ("optas", "bigswitch:12", "joint")])
def test_kept_pass_inputs_are_the_rebuilt_ones(name, topology, kind, monkeypatch):
    # the compiled passes' stacked inputs are kept between calls and updated in
    # place when flows finished (_SeedScheduler._stacked): at every call they must
    # be what a full rebuild gives (rows, bounds, link indexes and, for the
    # weighted pass, memo records; the records of a group without one are not
    # read, only its flag and levels), and most calls must have been served by the
    # update
    from rapier_app.core.workload import synthetic
    from rapier_app.scheduling import make_scheduler
    from rapier_app.scheduling.seeds.base import _SeedScheduler
    from rapier_app.sim import simulate
    from topologies import build_topology

    topo = build_topology(topology)
    orig = _SeedScheduler._stacked
    stats = {"calls": 0, "kept": 0}

    def seen(self, k, gs, before, old_gs):
        if k == kind:
            stats["calls"] += 1
            stats["kept"] += before is not None and self._stacks[k] is before

    checked = _stacked_checked(orig, seen)

    monkeypatch.setattr(_SeedScheduler, "_stacked", checked)
    cfs = synthetic(topo, 30, 12, 0.01, "pareto:0.5,1.3", seed=5)
    # a decision at every flow completion (few flows finish between two calls)
    kw = {"decision_interval": 0} if name in ("aalo", "philae") else {}
    res = simulate(topo, cfs, make_scheduler(name, topo, **kw))
    assert len(res.coflows) == 30 and stats["calls"] > 50
    assert stats["kept"] > stats["calls"] // 2


@pytest.mark.parametrize("name,kind", [("aalo", "weighted"), ("fifo", "strict")])
def test_kept_pass_inputs_when_several_coflows_lose_flows_at_once(name, kind,
                                                                  monkeypatch):
    # hand case for _SeedScheduler._stacked's update with several filtered groups in
    # one call: four coflows on disjoint ports, each with three flows in parallel,
    # of 1, 2 and 3 MB for the first two and 1.5, 2.5 and 3.5 MB for the others, so
    # that two coflows lose a flow at the same instant while the two after them
    # keep theirs (they move up), and then the other way round; the kept inputs
    # must equal a full rebuild, and such calls must have used the update
    from rapier_app.core.model import make_coflow
    from rapier_app.scheduling import make_scheduler
    from rapier_app.scheduling.seeds.base import _SeedScheduler
    from rapier_app.sim import simulate
    from topologies import build_topology

    topo = build_topology("bigswitch:12")
    h = topo.hosts
    cfs = [make_coflow(f"c{i}", 0.0, [(h[3 * i], h[3 * i + 1], 1e6 + 5e5 * (i // 2)),
                                      (h[3 * i + 1], h[3 * i + 2], 2e6 + 5e5 * (i // 2)),
                                      (h[3 * i + 2], h[3 * i], 3e6 + 5e5 * (i // 2))])
           for i in range(4)]
    orig = _SeedScheduler._stacked
    seen = []

    def record(self, k, gs, before, old_gs):
        if k == kind and old_gs is not None and len(old_gs) == len(gs):
            seen.append((sum(a is not b for a, b in zip(old_gs, gs)),
                         self._stacks[k] is before))

    checked = _stacked_checked(orig, record)

    monkeypatch.setattr(_SeedScheduler, "_stacked", checked)
    res = simulate(topo, cfs, make_scheduler(name, topo))
    assert len(res.coflows) == 4
    assert (2, True) in seen  # two filtered in one call, served by the update


@pytest.mark.parametrize("seed", range(4))
def test_simulator_sums_compiled_equal_bincount(seed):
    # the simulator's link-load update for changed rates and its bytes-per-coflow
    # update, compiled: bit for bit np.bincount's sums in the same order
    from rapier_app.sim.state import link_load as _link_load

    rng = np.random.default_rng(seed)
    for _ in range(100):
        nflows, W, nl = int(rng.integers(1, 60)), int(rng.integers(1, 5)), int(rng.integers(1, 30))
        glob_P = rng.integers(0, nl, (nflows, W)).astype(np.int64)
        glob_len = rng.integers(0, W + 1, nflows).astype(np.int64)
        m = int(rng.integers(0, nflows + 1))
        act_idx = rng.choice(nflows, m, replace=False).astype(np.int64)
        prev = rng.choice([0.0, 1e9, 3.3e8], m) * rng.random(m)
        w = np.where(rng.random(m) < 0.5, prev, rng.random(m) * 1e9)
        load = rng.random(nl) * 1e10
        want = load.copy()
        ch = np.flatnonzero(w != prev)
        if ch.size:
            want += _link_load(glob_P, glob_len, act_idx[ch], w[ch] - prev[ch], nl)
        got = load.copy()
        assert ksim.load_change_kernel(glob_P, glob_len, act_idx, w, prev, got) == ch.size
        assert got.tobytes() == want.tobytes()
        C = int(rng.integers(1, 10))
        cof_of = rng.integers(0, C, nflows).astype(np.int64)
        sent_g = rng.random(m) * 1e9
        new_sent = sent_g + rng.random(m) * 1e7
        cs = rng.random(C) * 1e9
        want = cs + np.bincount(cof_of[act_idx], weights=new_sent - sent_g, minlength=C)
        ksim.coflow_sent_kernel(cof_of, act_idx, new_sent, sent_g, cs)
        assert cs.tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_joint_kernel_equals_waterfill_over_the_stacked_rows(seed):
    # OPTAS's joint max-min over all large coflows reads each coflow's kept link
    # index instead of building one over every row: same rates and residuals
    rng = np.random.default_rng(seed)
    for _ in range(150):
        L, W = int(rng.integers(2, 25)), int(rng.integers(1, 5))
        sizes = rng.integers(0, 30, int(rng.integers(1, 6)))
        gptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        P = np.full((int(gptr[-1]), W), L, np.int64)
        for i in range(P.shape[0]):
            k = int(rng.integers(1, min(W, L) + 1))
            P[i, :k] = rng.choice(L, size=k, replace=False)
        res = np.concatenate([rng.random(L) * 1e9 * rng.choice([1.0, 0.0], L, p=[.85, .15]),
                              [np.inf]])
        tol = np.concatenate([np.full(L, 1e-3), [0.0]])
        cs = [kalloc.group_csr(np.ascontiguousarray(P[gptr[g]:gptr[g + 1]]), L + 1)
              for g in range(len(sizes))]
        lptrs = np.stack([c[0] for c in cs])
        rows_all = np.concatenate([c[1] for c in cs])
        r1, rate1 = res.copy(), np.zeros(P.shape[0])
        r2, rate2 = res.copy(), np.zeros(P.shape[0])
        assert kalloc.waterfill_kernel(P, r1, tol, rate1) == 0
        assert kalloc.joint_kernel(P, gptr, r2, tol, rate2, lptrs, rows_all) == 0
        assert rate1.tobytes() == rate2.tobytes() and r1.tobytes() == r2.tobytes()


@pytest.mark.parametrize("seed", range(3))
def test_argmax_rows_is_the_per_row_argmax(seed):
    # the vectorised argmax rounding: first maximum per row, ties included
    rng = np.random.default_rng(seed)
    ms = [rng.integers(0, 3, int(rng.integers(1, 7))).astype(float) for _ in range(300)]
    want = [int(np.argmax(m)) for m in ms]
    assert krapier.argmax_rows(ms).tolist() == want
    assert krapier.argmax_rows(ms + [np.array([1.0, np.nan])]) is None
    assert krapier.argmax_rows(ms + [np.zeros(0)]) is None


def _rapier_arrays(topology, seed):
    from rapier_app.core.model import CoflowState, InfoPolicy
    from rapier_app.core.workload import synthetic
    from rapier_app.scheduling import make_scheduler
    from topologies import build_topology

    topo = build_topology(topology)
    s = make_scheduler("rapier", topo)
    c = synthetic(topo, 1, 40, 0.0, seed=seed)[0]
    return topo, s._coflow_arrays(CoflowState(c, InfoPolicy(True)))


@pytest.mark.parametrize("topology", ["fattree:4", "vl2:4,4,2", "fig1"])
def test_any_room_and_route_gather_compiled_equal_numpy(topology, monkeypatch):
    # any_room on the path blocks = the reduceat over the candidate rows; the
    # route links gathered from the blocks = route_arrays from the path tuples
    topo, e = _rapier_arrays(topology, 1)
    rng = np.random.default_rng(0)
    L = len(topo.capacity)
    for _ in range(20):
        res = topo.capacity * rng.choice([1.0, 0.3, 0.0], size=L, p=[.5, .3, .2])
        monkeypatch.setattr(kernels, "ENABLED", False)
        want = e.any_room(res)
        monkeypatch.setattr(kernels, "ENABLED", True)
        got = e.any_room(res)
        assert got.tolist() == want.tolist()
        kidx = np.array([int(rng.integers(0, len(c))) for c in e.cand], np.int64)
        routes = {f: c[k] for f, c, k in zip(e.fids, e.cand, kidx.tolist())}
        monkeypatch.setattr(kernels, "ENABLED", False)
        p0, l0, n0 = e.route_arrays(routes, topo)
        monkeypatch.setattr(kernels, "ENABLED", True)
        p1, l1, n1 = e.route_arrays(routes, topo, kidx)
        assert p0 == p1 and l0.tolist() == l1.tolist() and n0.tolist() == n1.tolist()
    assert not all(e.any_room(np.zeros(L)))


def test_path_block_kernels_hand_case_with_padding():
    # links 0..4, sentinel 5: flow 0 has paths [0, 1] (padded) and [2, 3, 4],
    # flow 1 the single path [4]
    off = np.array([0, 6], np.int64)
    npaths = np.array([2, 1], np.int64)
    nhops = np.array([3, 1], np.int64)
    mflat = np.array([0, 1, 5, 2, 3, 4, 4], np.int64)
    lens = np.empty(2, np.int64)
    lidx = krapier.gather_routes_kernel(off, nhops, np.array([0, 0], np.int64), mflat, 5, lens)
    assert lidx.tolist() == [0, 1, 4] and lens.tolist() == [2, 1]
    lidx = krapier.gather_routes_kernel(off, nhops, np.array([1, 0], np.int64), mflat, 5, lens)
    assert lidx.tolist() == [2, 3, 4, 4] and lens.tolist() == [3, 1]
    capx = np.array([10.0] * 5 + [np.inf])
    vol = np.array([5.0, 3.0])
    order = np.array([0, 1], np.int64)
    load, out = np.zeros(6), np.zeros(2, np.int64)
    # both paths of flow 0 reach 0.5: the first wins; the sentinel is never loaded
    krapier.greedy_place_kernel(order, vol, off, npaths, nhops, mflat, load, capx, out)
    assert out.tolist() == [0, 0] and load.tolist() == [5, 5, 0, 0, 3, 0]
    load = np.array([10.0, 0, 0, 0, 0, 0])  # 10 bits reserved on link 0: 1.5 vs 0.8
    krapier.greedy_place_kernel(order, vol, off, npaths, nhops, mflat, load, capx, out)
    assert out.tolist() == [1, 0] and load.tolist() == [10, 0, 5, 5, 8, 0]
    room = np.empty(2, bool)
    rx = np.array([1.0, 0.0, 1.0, 1.0, 1.0, np.inf])
    krapier.any_room_kernel(off, npaths, nhops, mflat, rx, room)
    assert room.tolist() == [True, True]
    rx[4] = np.nan  # NaN is no room, as in the numpy reduceat
    krapier.any_room_kernel(off, npaths, nhops, mflat, rx, room)
    assert room.tolist() == [False, False]
    load = np.zeros(5)
    krapier.route_load_kernel(vol, off, nhops, np.array([1, 0], np.int64), mflat, 5, load)
    assert load.tolist() == [0, 0, 5, 5, 8]


@pytest.mark.parametrize("topology", ["fattree:4", "vl2:4,4,2", "fig1"])
def test_all_links_from_path_blocks_equal_unique_of_the_paths(topology, monkeypatch):
    # _CoflowArrays.all_links from the path blocks (krapier.mark_blocks_kernel) =
    # np.unique of the candidate paths' links, fresh and after flows finish
    got = {}
    for on in (False, True):
        monkeypatch.setattr(kernels, "ENABLED", on)
        topo, e = _rapier_arrays(topology, 2)
        keep = [j < 2 for j in range(e.n)]
        sub = e.subset([f for f, k in zip(e.act, keep) if k],
                       tuple(f for f, k in zip(e.fids, keep) if k), keep)
        got[on] = (e.all_links.tolist(), sub.all_links.tolist())
    assert got[True] == got[False]
    if topology != "fig1":  # two flows of Fig. 1 cross all of its 8 links
        assert len(got[True][1]) < len(got[True][0])  # the survivors use fewer links


@pytest.mark.parametrize("seed", range(6))
def test_simulator_event_pass_compiled_equals_numpy(seed):
    # the simulator's per-event vector work (sending mask, sticky look, selection,
    # time to finish, link loads, counters advanced, finished flows dropped),
    # compiled: bit for bit the numpy expressions of rapier_app.sim.steps
    from rapier_app.sim.state import link_load as _link_load

    rng = np.random.default_rng(100 + seed)
    for _ in range(60):
        nflows, W, nl = int(rng.integers(1, 80)), int(rng.integers(1, 5)), int(rng.integers(1, 30))
        glob_P = rng.integers(0, nl, (nflows, W)).astype(np.int64)
        glob_len = rng.integers(0, W + 1, nflows).astype(np.int64)
        m = int(rng.integers(0, nflows + 1))
        act_idx = np.sort(rng.choice(nflows, m, replace=False)).astype(np.int64)
        size = rng.random(nflows) * 1e8 + 1.0
        sent = size * rng.choice([0.0, 0.3, 1.0, 1.2], nflows)  # some past their size
        rate_pos = rng.choice([0.0, -1.0, 1e9, 3e8], m) * rng.random(m)
        prev = np.where(rng.random(m) < 0.5, rate_pos, rng.random(m) * 1e9)
        # sending mask and the sticky paths' look positions
        pos, look = ksim.sim_look_kernel(rate_pos, act_idx, glob_len)
        want_pos = ~(rate_pos <= 0)
        assert pos.tolist() == want_pos.tolist()
        assert look.tolist() == np.flatnonzero(want_pos & ~(glob_len[act_idx] > 0)).tolist()
        pos[look[:1]] = False  # a flow the path check stopped
        load = rng.random(nl) * 1e10
        want_load = load.copy()
        sel, rate, gsel, sent_g, ttf, w, bad, tmin = ksim.sim_select_kernel(
         pos, rate_pos, act_idx, size, sent, glob_P, glob_len, prev, load)
        want_sel = np.flatnonzero(pos)
        assert sel.tolist() == want_sel.tolist() and bad == -1
        assert gsel.tolist() == act_idx[want_sel].tolist()
        want_w = np.where(pos, rate_pos, 0.0)
        assert w.tobytes() == want_w.tobytes()
        ch = np.flatnonzero(want_w != prev)
        if ch.size:
            want_load += _link_load(glob_P, glob_len, act_idx[ch], want_w[ch] - prev[ch], nl)
        assert load.tobytes() == want_load.tobytes()
        want_ttf = np.maximum(size[gsel] - sent[gsel], 0.0) * 8.0 / rate_pos[want_sel]
        assert ttf.tobytes() == want_ttf.tobytes() and sent_g.tobytes() == sent[gsel].tobytes()
        assert tmin == (want_ttf.min() if want_ttf.size else np.inf)
        # counters advanced by dt and the flows finished within it
        dt = float(tmin) if np.isfinite(tmin) and sel.size else 0.5
        thresh = dt * (1 + 1e-9) + 1e-12
        want_new = sent_g + rate * dt / 8.0
        want_fin = np.flatnonzero(ttf <= thresh)
        want_new[want_fin] = size[gsel[want_fin]]
        want_sent = sent.copy()
        want_sent[gsel] = want_new
        if ttf.size > 1:  # a flow exactly at the threshold finishes
            ttf[-1] = thresh
            want_fin = np.flatnonzero(ttf <= thresh)
            want_new = sent_g + rate * dt / 8.0
            want_new[want_fin] = size[gsel[want_fin]]
            want_sent[gsel] = want_new
        new, fin = ksim.sim_advance_kernel(gsel, rate, sent_g, ttf, size, sent, dt, thresh)
        assert new.tobytes() == want_new.tobytes() and fin.tolist() == want_fin.tolist()
        assert sent.tobytes() == want_sent.tobytes()
        drop = sel[fin]
        keep = np.ones(m, bool)
        keep[drop] = False
        want_idx, want_w = act_idx[keep], w[keep]
        n = ksim.drop_positions_kernel(act_idx, drop)
        assert act_idx[:n].tolist() == want_idx.tolist()
        n = ksim.drop_positions_kernel(w, drop)
        assert w[:n].tobytes() == want_w.tobytes()


def test_simulator_event_pass_reports_the_first_bad_rate():
    # a NaN or infinite rate of a sending flow: its position is reported (the
    # simulator raises naming the flow), the first one in position order
    rate_pos = np.array([0.0, 1e9, np.inf, np.nan, 2e9])
    act = np.arange(5, dtype=np.int64)
    pos, look = ksim.sim_look_kernel(rate_pos, act, np.ones(5, np.int64))
    assert pos.tolist() == [False, True, True, True, True] and look.size == 0
    out = ksim.sim_select_kernel(pos, rate_pos, act, np.full(5, 8.0), np.zeros(5),
                                 np.zeros((5, 1), np.int64), np.ones(5, np.int64),
                                 np.zeros(5), np.zeros(1))
    assert out[6] == 2
    # hand case: 8 bytes left at 64 bit/s take 1 s; 4 of 8 sent at 32 bit/s, 1 s
    sel, rate, gsel, sent_g, ttf, w, bad, tmin = ksim.sim_select_kernel(
     np.array([True, False, True]), np.array([64.0, 5.0, 32.0]),
     np.array([0, 1, 2], np.int64), np.array([8.0, 8.0, 8.0]),
     np.array([0.0, 0.0, 4.0]), np.zeros((3, 1), np.int64), np.ones(3, np.int64),
     np.zeros(3), np.zeros(1))
    assert ttf.tolist() == [1.0, 1.0] and tmin == 1.0 and w.tolist() == [64.0, 0.0, 32.0]


@pytest.mark.parametrize("seed", range(8))
def test_greedy_group_by_group_with_skips_equals_the_stacked_greedy(seed, monkeypatch):
    # Sincronia's joint greedy pass run group by group, skipping the groups whose
    # first (or last) links are all saturated: bit for bit greedy_rates over the
    # stacked rows, and the skip test does skip groups on a saturated fabric
    from rapier_app.scheduling.seeds.base import _SeedScheduler
    from rapier_app.scheduling.seeds.group import _Group
    from rapier_app.scheduling.seeds.passes import greedy_rates
    from topologies import build_topology

    topo = build_topology("bigswitch:12")
    s = _SeedScheduler(topo)
    rng = np.random.default_rng(seed)
    L = s._L
    groups = []
    for c in range(int(rng.integers(4, 30))):
        n = int(rng.integers(1, 40))
        P = np.full((n, s._width), L, dtype=np.int64)
        P[:, 0] = rng.integers(0, 12, n)            # ingress ports
        P[:, 1] = 12 + rng.integers(0, 12, n)       # egress ports
        groups.append(_Group([None] * n, [None] * n, P, L, np.arange(n), 0.0))
    res = s.fresh_residual()
    res[:L] *= rng.choice([1.0, 0.4, 0.0], size=L, p=[.5, .3, .2])
    want_res = res.copy()
    want = greedy_rates(np.concatenate([g.P for g in groups]), want_res, s._tol)
    calls = []
    visited = []
    orig = ksincronia.greedy_group_kernel

    def counted(P, *a):
        calls.append(1)
        visited.append((orig(P, *a), P.shape[0]))
        return visited[-1][0]

    monkeypatch.setattr(ksincronia, "greedy_group_kernel", counted)
    rates = {id(g): np.zeros(g.n) for g in groups}
    s.joint_pass(groups, res, rates, greedy_rates)
    got = np.concatenate([rates[id(g)] for g in groups])
    assert got.tobytes() == want.tobytes() and res.tobytes() == want_res.tobytes()
    assert 0 < len(calls) < len(groups)  # some groups were skipped, not all


def test_greedy_group_kernel_stops_exactly_when_the_ends_are_blocked():
    # one group's greedy rows, stopping once all its first (or last) links are
    # saturated: bit for bit greedy_kernel (rates added to a zeroed slice, the same
    # residuals), the scratch marks left at 0, and the stop does happen
    rng = np.random.default_rng(42)
    stopped = 0
    for _ in range(300):
        nl = int(rng.integers(4, 30))
        L = nl
        n = int(rng.integers(1, 80))
        W = int(rng.integers(2, 4))
        P = np.full((n, W), L, dtype=np.int64)
        half = max(1, nl // 2)
        P[:, 0] = rng.integers(0, half, n)
        P[:, W - 1] = rng.integers(half - 1 if half > 1 else 0, nl, n)
        if W == 3:  # some rows with a middle link, some with a repeated one
            mid = rng.integers(0, nl, n)
            P[:, 1] = np.where(rng.random(n) < .5, mid, L)
        P[rng.random(n) < .05, W - 1] = L  # a few one-link rows
        residual = np.append(rng.choice([1e9, 4e8, 1e3, 0.0], size=nl), np.inf)
        tol = np.append(np.full(nl, 10.0), 0.0)
        want_res = residual.copy()
        want = np.zeros(n)
        ksincronia.greedy_kernel(P, want_res, tol, want)
        last = np.array([row[row < L][-1] for row in P], dtype=np.int64)
        first = np.unique(P[:, 0])
        lastu = np.unique(last)
        got = np.zeros(n)
        mark = np.zeros(nl + 1, dtype=np.int8)
        res = residual.copy()
        seen = ksincronia.greedy_group_kernel(P, res, tol, got, first, lastu, mark)
        assert got.tobytes() == want.tobytes() and res.tobytes() == want_res.tobytes()
        assert not mark.any() and 0 <= seen <= n
        stopped += seen < n
    assert stopped > 30


@pytest.mark.parametrize("seed", range(8))
def test_waterfill_from_kept_counts_equals_testing_every_alive_row(seed):
    # the weighted pass's rounds >= 2 fill a group from its kept per-link counts of
    # alive rows (kweighted._waterfill_kept), visiting only the rows of links whose
    # share is within tolerance; the rates and the share left must be those of
    # testing every alive row (kweighted._waterfill_alive), bit for bit
    rng = np.random.default_rng(100 + seed)
    nl, W = 40, 3
    L = nl - 1
    kept_paths = 0
    ends_blocked = 0
    for _ in range(30):
        n = int(rng.integers(1, 60))
        P = _random_rows(rng, n, W, L)
        gptr = np.array([0, n], dtype=np.int64)
        lptr, rows = kalloc.group_csr(P, nl)
        lptrs = lptr.reshape(1, -1)
        alive_rows = np.flatnonzero(rng.random(n) < 0.8)
        alive = np.zeros(n, np.int64)
        alive[:alive_rows.size] = alive_rows
        # the kept path's list also holds rows killed since its last compaction
        # (kweighted._compact_alive), and its alive rows carry the stamps of earlier
        # fillings (any value below this filling's epoch ep)
        ep = 7
        stamp = np.full(n, kalloc.DEAD, np.int32)
        stamp[alive_rows] = rng.integers(0, ep, alive_rows.size)
        killed = np.flatnonzero(rng.random(n) < 0.1)
        listed = np.union1d(alive_rows, killed).astype(np.int64)
        stale = np.zeros(n, np.int64)
        stale[:listed.size] = listed
        gcnt = np.zeros((1, nl), np.int64)
        for i in alive_rows:
            for lk in P[i]:
                gcnt[0, lk] += 1
        share = rng.uniform(0.0, 10.0, nl)
        share[rng.random(nl) < 0.1] = 0.0  # some links within tolerance
        if rng.random() < 0.3:  # every alive row's first link within tolerance
            share[P[alive_rows, 0]] = 0.0
        share[L] = np.inf
        tol = np.full(nl, 1e-9)
        tol[L] = 0.0
        gend = np.zeros((1, 2, nl), np.int64)
        kweighted._count_ends(P, gptr, 0, alive, alive_rows.size, gend)
        ends_blocked += bool(alive_rows.size) and kweighted._ends_blocked(gend, 0, share, tol)
        s1, r1 = share.copy(), np.zeros(n)
        a1 = kweighted._waterfill_alive(P, gptr, 0, alive, alive_rows.size, s1, tol, r1,
                                        lptrs, rows)
        # end counts not yet taken (counted on the first test of every alive row),
        # and already kept
        for ok in (False, True):
            gend = np.full((1, 2, nl), -7, np.int64)
            if ok:
                kweighted._count_ends(P, gptr, 0, alive, alive_rows.size, gend)
            gok = np.array([ok])
            s2, r2 = share.copy(), np.zeros(n)
            st2, lst2 = stamp.copy(), stale.copy()
            lcnt = np.array([listed.size], np.int64)
            a2 = kweighted._waterfill_kept(P, gptr, 0, lst2, alive_rows.size, st2, ep, gcnt,
                                           s2, tol, r2, lptrs, rows, gend, gok, lcnt)
            assert a1 == a2
            assert r1.tobytes() == r2.tobytes() and s1.tobytes() == s2.tobytes()
            # the dead rows stay dead; the alive ones are stamped ep at most
            assert (st2[killed[~np.isin(killed, alive_rows)]] == kalloc.DEAD).all()
            assert (st2[alive_rows] <= ep).all()
            # compacted only when every alive row was tested
            assert lcnt[0] in (listed.size, alive_rows.size)
            if lcnt[0] == alive_rows.size:
                assert lst2[:lcnt[0]].tolist() == alive_rows.tolist()
        blocked = sum(int(lptr[lk + 1] - lptr[lk]) for lk in range(nl)
                      if gcnt[0, lk] > 0 and not share[lk] > tol[lk])
        kept_paths += blocked <= alive_rows.size
    assert kept_paths > 10  # the kept counts served most cases
    assert ends_blocked > 2  # and the blocked-ends shortcut some


@pytest.mark.parametrize("seed", range(6))
def test_fillings_on_a_groups_links_equal_those_on_every_link(seed):
    # the weighted pass visits a group's links only (kweighted._group_links,
    # _kept_links, _alive_links): the same rates, shares, stamps, kept counts and
    # return codes as the fillings over every link (_waterfill_kept,
    # _waterfill_alive), bit for bit, with and without negative shares; the
    # scratch counts are all zeros again after each call
    rng = np.random.default_rng(700 + seed)
    nl, W = 60, 4
    L = nl - 1
    seen = {"neg": 0, "kept": 0, "alive": 0}
    for _ in range(40):
        # a stack of three groups; the group filled is the middle one
        ns = [int(x) for x in rng.integers(1, 40, 3)]
        Ps = [_random_rows(rng, n, W, L) for n in ns]
        P = np.vstack(Ps)
        gptr = np.array([0, ns[0], ns[0] + ns[1], sum(ns)], dtype=np.int64)
        csrs = [kalloc.group_csr(x, nl) for x in Ps]
        lptrs = np.vstack([c[0] for c in csrs])
        rows_all = np.concatenate([c[1] for c in csrs])
        mark = np.zeros(nl, bool)
        glp, glk = kweighted._group_links(P, gptr, lptrs, L, mark)
        assert not mark.any()
        for g in range(3):
            want = np.unique(Ps[g][Ps[g] < L])
            assert glk[glp[g]:glp[g + 1]].tolist() == want.tolist()
        g, lo, n = 1, ns[0], ns[1]
        alive_rows = lo + np.flatnonzero(rng.random(n) < 0.8)
        alive = np.arange(P.shape[0], dtype=np.int64)
        alive[lo:lo + alive_rows.size] = alive_rows
        stamp = np.full(P.shape[0], kalloc.DEAD, np.int32)
        stamp[alive_rows] = 0
        gcnt = np.zeros((3, nl), np.int64)
        for i in alive_rows:
            for lk in P[i]:
                gcnt[g, lk] += 1
        share = rng.uniform(0.0, 10.0, nl)
        share[rng.random(nl) < 0.15] = 0.0
        neg = rng.random() < 0.3
        if neg:  # negative shares, some off the group's links
            share[rng.random(nl) < 0.1] = -1.0
            seen["neg"] += 1
        share[L] = np.inf
        tol = np.full(nl, 1e-9)
        tol[L] = 0.0
        g0, g1 = int(glp[g]), int(glp[g + 1])
        cnt = np.zeros(nl)
        scratch = (np.empty(nl, bool), np.empty(nl, np.int64), np.empty(nl, np.int64))
        ok = rng.random() < 0.5
        runs = []
        for sparse in (False, True):
            s_, r_, st_, al_ = share.copy(), np.zeros(P.shape[0]), stamp.copy(), alive.copy()
            gend = np.zeros((3, 2, nl), np.int64)
            if ok:
                kweighted._count_ends(P, gptr, g, al_, alive_rows.size, gend)
            gok = np.array([False, ok, False])
            lcnt = np.array([0, alive_rows.size, 0], np.int64)
            if sparse:
                a = kweighted._kept_links(P, gptr, g, al_, alive_rows.size, st_, 3, gcnt.copy(),
                                          s_, tol, r_, lptrs, rows_all, gend, gok, lcnt, glk,
                                          g0, g1, neg, cnt, *scratch)
                assert not cnt.any()
                s2, r2 = share.copy(), np.zeros(P.shape[0])
                b = kweighted._alive_links(P, gptr, g, alive, alive_rows.size, s2, tol, r2,
                                           lptrs, rows_all, glk, g0, g1, neg, cnt, *scratch)
                assert not cnt.any()
            else:
                a = kweighted._waterfill_kept(P, gptr, g, al_, alive_rows.size, st_, 3,
                                              gcnt.copy(), s_, tol, r_, lptrs, rows_all,
                                              gend, gok, lcnt)
                s2, r2 = share.copy(), np.zeros(P.shape[0])
                b = kweighted._waterfill_alive(P, gptr, g, alive, alive_rows.size, s2, tol,
                                               r2, lptrs, rows_all)
            runs.append((a, s_.tobytes(), r_.tobytes(), st_.tobytes(), b, s2.tobytes(),
                         r2.tobytes()))
        assert runs[0] == runs[1]
        seen["kept"] += runs[0][0] > 0
        seen["alive"] += runs[0][4] > 0
    assert seen["neg"] > 3 and seen["kept"] > 5 and seen["alive"] > 5


@pytest.mark.parametrize("seed", range(4))
def test_killed_rows_leave_the_kept_counts(seed):
    # the weighted pass removes the rows of newly saturated links from its kept
    # state (kweighted._kill_rows): the stamps, the link counts and the end counts
    # left must be those of the rows still alive, counted afresh, and the alive
    # list, compacted on demand (kweighted._compact_alive), those rows in order
    rng = np.random.default_rng(300 + seed)
    nl, W = 30, 4
    L = nl - 1
    killed_all = 0
    for _ in range(40):
        n = int(rng.integers(1, 50))
        P = _random_rows(rng, n, W, L)
        # group 1 of two (rows 3.. of the stack), the first three rows another group
        Ps = np.vstack([np.full((3, W), L, dtype=np.int64), P])
        gptr = np.array([0, 3, 3 + n], dtype=np.int64)
        lptr, rows = kalloc.group_csr(P, nl)
        lptrs = np.vstack([kalloc.group_csr(Ps[:3], nl)[0], lptr])
        rows_all = np.concatenate([kalloc.group_csr(Ps[:3], nl)[1], rows])
        alive_rows = 3 + np.flatnonzero(rng.random(n) < 0.8)
        alive = np.arange(3 + n, dtype=np.int64)
        alive[3:3 + alive_rows.size] = alive_rows
        stamp = np.full(3 + n, kalloc.DEAD, np.int32)
        stamp[alive_rows] = rng.integers(0, 5, alive_rows.size)
        gcnt = np.zeros((2, nl), np.int64)
        for i in alive_rows:
            for lk in Ps[i]:
                gcnt[1, lk] += 1
        gend = np.zeros((2, 2, nl), np.int64)
        kweighted._count_ends(Ps, gptr, 1, alive, alive_rows.size, gend)
        gok = np.array([False, True])
        newly = rng.choice(L, int(rng.integers(0, 4)), replace=False).astype(np.int64)
        newly = np.concatenate([newly, np.zeros(3, np.int64)])  # unused tail
        nnew = newly.size - 3
        before = alive.copy()
        kbuf = np.empty(3 + n, np.int64)
        left = kweighted._kill_rows(Ps, gptr, 1, newly, nnew, lptrs, rows_all, alive,
                                    alive_rows.size, stamp, gcnt, gend, gok, kbuf)
        want = [i for i in alive_rows if not set(Ps[i]) & set(newly[:nnew].tolist())]
        assert left == len(want)
        if not want:  # every row died: the counts are not read again, nor kept
            assert (stamp[alive_rows] == kalloc.DEAD).all()
            killed_all += 1
            continue
        assert np.flatnonzero(stamp != kalloc.DEAD).tolist() == want
        # the list is compacted later, on demand (kweighted._compact_alive)
        assert np.array_equal(alive, before)
        assert kweighted._compact_alive(alive, 3, alive_rows.size, stamp) == left
        assert alive[3:3 + left].tolist() == want
        want_cnt = np.zeros((2, nl), np.int64)
        for i in want:
            for lk in Ps[i]:
                want_cnt[1, lk] += 1
        want_end = np.zeros((2, 2, nl), np.int64)
        kweighted._count_ends(Ps, gptr, 1, np.array([0, 1, 2] + want, np.int64), len(want),
                              want_end)
        assert np.array_equal(gcnt, want_cnt) and np.array_equal(gend, want_end)


def test_end_counts_and_the_blocked_ends_test():
    # kweighted._count_ends counts alive rows by first and by last non-padding link;
    # _ends_blocked says no row can be active only when a whole side is within
    # tolerance (hand case: rows 0->1, 0->2, 3->2 on links 0..3, dummy 4)
    L = 4
    P = np.array([[0, 1, L], [0, 2, L], [3, 2, L], [1, L, L]], dtype=np.int64)
    gptr = np.array([0, 4], dtype=np.int64)
    alive = np.array([0, 1, 2, 0], dtype=np.int64)  # rows 0-2 alive, row 3 not
    gend = np.full((1, 2, L + 1), -1, np.int64)
    kweighted._count_ends(P, gptr, 0, alive, 3, gend)
    assert gend[0, 0].tolist() == [2, 0, 0, 1, 0]  # first links 0, 0, 3
    assert gend[0, 1].tolist() == [0, 1, 2, 0, 0]  # last links 1, 2, 2
    tol = np.array([1e-9] * L + [0.0])
    free = np.array([5.0] * L + [np.inf])
    assert not kweighted._ends_blocked(gend, 0, free, tol)
    one = free.copy()
    one[0] = 0.0  # rows 0 and 1 blocked, row 2 (3->2) not
    assert not kweighted._ends_blocked(gend, 0, one, tol)
    firsts = one.copy()
    firsts[3] = 1e-9  # every first link within tolerance
    assert kweighted._ends_blocked(gend, 0, firsts, tol)
    lasts = free.copy()
    lasts[1] = lasts[2] = 0.0  # every last link
    assert kweighted._ends_blocked(gend, 0, lasts, tol)
    mixed = free.copy()
    mixed[0] = mixed[2] = 0.0  # every row blocked, but no whole side: not seen
    assert not kweighted._ends_blocked(gend, 0, mixed, tol)


@pytest.mark.parametrize("seed", range(4))
def test_assign_bandwidth_kernel_is_the_best_candidate_loop(seed):
    # Algorithm 3's AssignBandwidth over a coflow's flexible flows, compiled on the
    # candidate path blocks (krapier.assign_bandwidth_kernel), must choose the paths
    # and give the rates and residuals of best_candidate's loop, bit for bit
    from rapier_app.kernels import rapier as krapier
    from rapier_app.scheduling.conserve import best_candidate
    from rapier_app.scheduling.pathcache import pair_paths
    from topologies import build_topology

    topo = build_topology("fattree:4")
    L = len(topo.capacity)
    rng = np.random.default_rng(900 + seed)
    hosts = sorted(topo.hosts)
    chosen = none = 0
    for _ in range(20):
        n = int(rng.integers(1, 30))
        pps = []
        for _ in range(n):
            a, b = rng.choice(len(hosts), 2, replace=False)
            pps.append(pair_paths(topo, hosts[a], hosts[b], None))
        blocks, off, npaths, nhops, pos = [], [], [], [], 0
        for pp in pps:
            M = pp.padded
            off.append(pos)
            npaths.append(M.shape[0])
            nhops.append(M.shape[1])
            blocks.append(M.ravel())
            pos += M.size
        mflat = np.concatenate(blocks).astype(np.int64)
        res = rng.uniform(0.0, 1e9, L)
        res[rng.random(L) < 0.3] = 0.0
        rates0 = rng.uniform(0.0, 1e8, n)
        sel = rng.permutation(n)[:int(rng.integers(1, n + 1))].astype(np.int64)
        # the loop of distribute_bandwidth
        r = res.tolist()
        rl = rates0.tolist()
        want = []
        for j in sel.tolist():
            best, best_ls, bw = best_candidate(pps[j].paths, pps[j].links, r)
            want.append(-1 if best is None else pps[j].paths.index(best))
            if best is None:
                continue
            rl[j] += bw
            for lk in best_ls:
                r[lk] -= bw
        rx = np.append(res, np.inf)
        rates = rates0.copy()
        choice = np.empty(sel.shape[0], np.int64)
        krapier.assign_bandwidth_kernel(sel, np.array(off, np.int64),
                                        np.array(npaths, np.int64),
                                        np.array(nhops, np.int64), mflat, rx, rates, choice)
        assert choice.tolist() == want
        assert rates.tobytes() == np.array(rl).tobytes()
        assert rx[:-1].tobytes() == np.array(r).tobytes()
        chosen += sum(k >= 0 for k in want)
        none += sum(k < 0 for k in want)
    assert chosen > 20 and none > 0
