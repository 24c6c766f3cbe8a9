"""The simulator's sparse event step (issue 16): for sticky-path schedulers with the
compiled kernels on, each event works on the sending positions only and keeps the
rates its link loads were counted at for those positions, instead of passing over
every live flow.  It must give the dense step's results bit for bit (every CCT and
flow finish time, the event count and the maximum link utilisation, which comes
from the kept loads), and refuse the same broken schedules with the same errors.

Units: bytes (MB = 1e6), bit/s (G = 1e9), seconds.
"""

import dataclasses
import math

import numpy as np
import pytest

from rapier_app.core.model import CoflowSpec, FlowSpec, Schedule, make_coflow
from rapier_app.core.workload import synthetic
from rapier_app import kernels
from rapier_app.kernels import sim as ksim
from rapier_app.scheduling import Scheduler, make_scheduler
from rapier_app.sim import SimulationError, simulate
from rapier_app.sim import simulator as simmod
from topologies import build_topology

MB = 1e6
G = 1e9



def _needs_kernels(sparse=True):
    if sparse and not kernels.ENABLED:
        pytest.skip("the sparse step needs the compiled kernels (RAPIER_KERNELS=numpy "
                    "turns them off)")


def _run(monkeypatch, sparse, topo, cfs, sched, every=1000):
    _needs_kernels(sparse)
    monkeypatch.setattr(simmod, "SPARSE_STEP", sparse)
    monkeypatch.setattr(simmod, "EXACT_CHECK_EVERY", every)
    calls = []
    orig = ksim.sim_sparse_kernel

    def counted(*a):
        calls.append(1)
        return orig(*a)

    monkeypatch.setattr(ksim, "sim_sparse_kernel", counted)
    res = simulate(topo, cfs, sched, record_flows=True)
    return res, len(calls)


def _key(res):
    return ([(r.coflow_id, r.cct_s) for r in res.coflows],
            sorted((f.flow_id, f.finish_s) for f in res.flows),
            res.events, res.max_link_utilisation, res.bytes_delivered)


@pytest.mark.parametrize("name", ["sincronia", "aalo", "philae", "fifo", "optas",
                                  "sincronia-maxmin"])
@pytest.mark.parametrize("topology", ["bigswitch:12", "fattree:4"])
def test_sparse_step_gives_the_dense_results_bit_for_bit(monkeypatch, name, topology):
    topo = build_topology(topology)
    cfs = synthetic(topo, 14, 10, 0.02, sizes="uniform:1,40", seed=11)
    # Aalo and Philae with a decision interval run the dense step only (below)
    kw = {"decision_interval": 0.0} if name in ("aalo", "philae") else {}
    dense, n_dense = _run(monkeypatch, False, topo, cfs, make_scheduler(name, topo, **kw))
    sparse, n_sparse = _run(monkeypatch, True, topo, cfs, make_scheduler(name, topo, **kw))
    if kw:
        _, n_iv = _run(monkeypatch, True, topo, cfs, make_scheduler(name, topo))
        assert n_iv == 0
    assert n_dense == 0 and n_sparse == sparse.events > 50  # each step as named
    # by default, only a scheduler with few senders runs the sparse step
    auto, n_auto = _run(monkeypatch, None, topo, cfs, make_scheduler(name, topo, **kw))
    assert _key(auto) == _key(dense)
    assert n_auto == (auto.events if name == "sincronia" else 0)
    assert _key(sparse) == _key(dense)  # == on floats: bit for bit
    assert 0.9 < sparse.max_link_utilisation <= 1 + 1e-6


def test_sparse_step_with_every_flow_at_zero_and_a_kept_load_between_exact_sums(
        monkeypatch):
    # Sincronia's greedy rates with every coflow at t = 0: most live flows wait, the
    # senders change at each completion; loads kept for 1000 events between exact
    # sums must equal the dense ones at every event (the maximum is over all events)
    topo = build_topology("bigswitch:8")
    cfs = [dataclasses.replace(c, arrival_s=0.0)
           for c in synthetic(topo, 20, 12, 0.05, sizes="uniform:1,20", seed=3)]
    out = {}
    for sparse in (False, True):
        for every in (1, 1000):
            out[sparse, every] = _key(_run(monkeypatch, sparse, topo, cfs,
                                           make_scheduler("sincronia", topo), every)[0])
    assert out[True, 1000] == out[False, 1000]
    assert out[True, 1] == out[False, 1]


class _Sticky(Scheduler):
    """Every flow on its first candidate path; ``rate(i, flow)`` gives the rates
    (bit/s) in active-flow order; ``path(flow)`` may override the path."""

    name = "sticky-test"
    sticky_paths = True
    reads_progress = False

    def __init__(self, topology, rate, path=None):
        super().__init__(topology)
        self.rate = rate
        self.path = path
        self.calls = 0

    def schedule(self, now, coflows):
        self.calls += 1
        fl = [f for c in coflows for f in c.active_flows()]
        paths = [self.path(f) if self.path else self.candidates(f)[0] for f in fl]
        return Schedule.from_vectors(fl, paths, [self.rate(i, f, self.calls)
                                                 for i, f in enumerate(fl)])


def _one_port_coflow(n=6):
    return [make_coflow("A", 0, [("h1", f"h{2 + i % 3}", (i + 1) * MB) for i in range(n)])]


@pytest.mark.parametrize("sparse", [False, True])
def test_a_late_violation_is_refused_at_its_event(monkeypatch, sparse):
    # one flow at a time from h1 at the full link, then at call 4 a second flow
    # also sends: h1's uplink at 2 Gbit/s, refused at that event
    _needs_kernels(sparse)
    monkeypatch.setattr(simmod, "SPARSE_STEP", sparse)
    topo = build_topology("bigswitch:5")
    s = _Sticky(topo, lambda i, f, k: G if i == 0 or (k >= 4 and i == 1) else 0.0)
    with pytest.raises(SimulationError, match=r"capacity: link h1->s1 carries 2e\+09"):
        simulate(topo, _one_port_coflow(), s)
    assert s.calls == 4


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_bad_rate_names_the_flow(monkeypatch, sparse, value):
    _needs_kernels(sparse)
    monkeypatch.setattr(simmod, "SPARSE_STEP", sparse)
    topo = build_topology("bigswitch:5")
    s = _Sticky(topo, lambda i, f, k: value if (k == 3 and i == 2) else (G / 8 if i < 3 else 0))
    with pytest.raises(SimulationError, match=r"rate_bps: flow A/4 got rate"):
        simulate(topo, _one_port_coflow(), s)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_sending_flow_with_a_wrong_path_is_refused_a_waiting_one_is_not(
        monkeypatch, sparse):
    _needs_kernels(sparse)
    monkeypatch.setattr(simmod, "SPARSE_STEP", sparse)
    topo = build_topology("bigswitch:5")

    def path(f):
        return ("h4", "s1", "h5") if f.flow_id == "A/3" else ("h1", "s1", f.dst)

    # A/3's path does not start at h1: fine while it waits, refused once it sends
    s = _Sticky(topo, lambda i, f, k: G if i == 0 else 0.0, path)
    with pytest.raises(SimulationError, match=r"path: flow A/3 \(h1->h2\) got path "
                                              r"h4-s1-h5 with wrong endpoints"):
        simulate(topo, _one_port_coflow(), s)
    assert s.calls == 4  # A/0, A/1, A/2 finished first, one at a time


@pytest.mark.parametrize("sparse", [False, True])
def test_a_sending_flow_without_a_path_waits(monkeypatch, sparse):
    # a positive rate with no path (None) is no allocation: the flow waits, and the
    # others' loads and finish times are as if it had rate 0
    _needs_kernels(sparse)
    monkeypatch.setattr(simmod, "SPARSE_STEP", sparse)
    topo = build_topology("bigswitch:5")

    class _NoPath(_Sticky):
        def schedule(self, now, coflows):
            self.calls += 1
            fl = [f for c in coflows for f in c.active_flows()]
            paths = [None if (f.flow_id == "A/0" and self.calls < 3) else
                     self.candidates(f)[0] for f in fl]
            rates = [G / 2 if i < 2 else 0.0 for i in range(len(fl))]
            return Schedule.from_vectors(fl, paths, rates)

    res = simulate(topo, _one_port_coflow(3), _NoPath(topo, None), record_flows=True)
    fin = {f.flow_id: f.finish_s for f in res.flows}
    # call 1 (t=0): A/0 has no path, A/1 sends at 0.5 G: 2 MB in 0.032 s; call 2:
    # still no path for A/0, A/2 alone at 0.5 G: 3 MB in 0.048 s; call 3: A/0 at
    # 0.5 G: 1 MB in 0.016 s
    assert fin["A/1"] == pytest.approx(0.032)
    assert fin["A/2"] == pytest.approx(0.080)
    assert fin["A/0"] == pytest.approx(0.096)
    assert res.max_link_utilisation == pytest.approx(0.5)


@pytest.mark.parametrize("name", ["aalo", "philae", "optas", "sincronia", "fifo"])
def test_schedules_hand_back_the_bound_active_list_with_the_same_results(
        monkeypatch, name):
    # the seed schedulers return the simulator's own active list (bind_active) as
    # their flows, so the simulator skips its flow-by-flow check, and give their
    # nonzero positions, so it scans no rate vector; the results are those of a run
    # in which nothing is bound and no position given (the per-flow lists are built,
    # the rates scanned)
    from rapier_app.scheduling import Scheduler as Base

    topo = build_topology("fattree:4")
    cfs = synthetic(topo, 20, 12, 0.05, "pareto:0.5,1.3", seed=4)
    s = make_scheduler(name, topo)
    handed = []
    orig = s.schedule

    def spy(now, coflows):
        out = orig(now, coflows)
        flows, paths, rates = out.vectors()
        handed.append(flows is s._active_list)
        # the nonzero positions it promises (schedulers with few senders, whose
        # runs take the sparse step): every entry that is not +0.0
        if s.few_senders:
            assert np.array_equal(out.nonzero_hint(),
                                  np.flatnonzero(rates.view(np.int64)))
        else:
            assert out.nonzero_hint() is None
        # the lists a rebuild gives: every active flow in coflow order, its route
        assert list(flows) == [f for c in coflows for f in c.active_flows()]
        assert list(paths) == [s.route(f) for f in flows]
        assert [paths[j] for j in range(len(paths))] == list(paths)
        return out

    s.schedule = spy
    bound = simulate(topo, cfs, s, record_flows=True)
    assert len(handed) == bound.events and all(handed)
    assert s._active_list is None  # unbound after the run
    monkeypatch.setattr(Base, "bind_active", lambda self, flows: None)
    monkeypatch.setattr(Schedule, "nonzero_hint", lambda self: None)
    plain = simulate(topo, cfs, make_scheduler(name, topo), record_flows=True)
    assert _key(bound) == _key(plain)


def test_aligned_and_concat_paths():
    from rapier_app.scheduling.seeds.group import _aligned, _ConcatPaths

    class G:  # the two fields of a _Group they read
        def __init__(self, flows):
            self.flows = flows
            self.paths = [("p", f) for f in flows]
            self.n = len(flows)

    a, b, e, c = G(list("xyz")), G(["u"]), G([]), G(list("vw"))
    act = list("xyzuvw")
    assert _aligned([a, b, e, c], act)
    assert not _aligned([b, a, e, c], act)  # coflows out of place
    assert not _aligned([a, b, c], act[:-1])  # a flow missing
    assert not _aligned([a, b], act)  # a coflow missing
    act2 = list("xyzuvw")
    act2[4] = "q"  # another flow at a boundary
    assert not _aligned([a, b, e, c], act2)
    cp = _ConcatPaths([a, b, e, c])
    flat = a.paths + b.paths + c.paths
    assert len(cp) == 6 and list(cp) == flat
    assert [cp[j] for j in range(6)] == flat and cp[-1] == flat[-1] and cp[1:4] == flat[1:4]
    with pytest.raises(IndexError):
        cp[6]
    assert len(_ConcatPaths([])) == 0 and list(_ConcatPaths([e])) == []


@pytest.mark.parametrize("name", ["sincronia", "sincronia-immediate"])
def test_the_reused_rate_array_is_all_zeros_at_every_plan(name):
    # a volatile caller's last rate vector is zeroed where it held a nonzero bit
    # pattern and reused: every plan must start from zeros (+0.0) as from np.zeros
    topo = build_topology("bigswitch:8")
    cfs = synthetic(topo, 16, 10, 0.05, sizes="uniform:1,20", seed=2)
    s = make_scheduler(name, topo)
    orig = s.plan
    bases = []

    def spy(now, coflows, rates):
        for r in rates.values():
            assert not r.view(np.int64).any()  # +0.0 everywhere (-0.0 has a bit set)
        if rates:
            bases.append(next(iter(rates.values())).base.ctypes.data)
        out = orig(now, coflows, rates)
        if rates:  # leave a -0.0 in a waiting slot: it must be cleared next time
            r = next(iter(rates.values()))
            w = np.flatnonzero(r == 0.0)
            if w.size:
                r[w[0]] = -0.0
        return out

    s.plan = spy
    res = simulate(topo, cfs, s)
    assert len(res.coflows) == 16
    assert len(set(bases)) < len(bases) / 4  # mostly the same array


@pytest.mark.parametrize("sparse", [False, True])
def test_the_simulator_takes_the_senders_from_the_nonzero_hint(monkeypatch, sparse):
    # a hint that leaves out a sending position makes that flow wait in the sparse
    # step: the hint is what it reads (the schedulers' hints are checked above);
    # the dense step scans the rates
    _needs_kernels(sparse)
    monkeypatch.setattr(simmod, "SPARSE_STEP", sparse)
    topo = build_topology("bigswitch:5")
    s = _Sticky(topo, lambda i, f, k: G / 4 if i < 2 else 0.0)
    orig = s.schedule

    def hinted(now, coflows):
        out = orig(now, coflows)
        r = out.vectors()[2]
        out._nz = np.flatnonzero(r)[1:] if r.shape[0] > 1 else np.flatnonzero(r)
        return out

    s.schedule = hinted
    res = simulate(topo, _one_port_coflow(2), s, record_flows=True)
    fin = {f.flow_id: f.finish_s for f in res.flows}
    # hinted: A/1 (2 MB) alone at 0.25 G until 0.064 s, then A/0 (1 MB) alone:
    # 0.096 s; scanned: both at once, A/0 at 0.032 s
    assert fin["A/1"] == pytest.approx(0.064)
    assert fin["A/0"] == pytest.approx(0.096 if sparse else 0.032)


def test_a_hint_in_the_schedule_s_own_order_is_not_read_as_the_simulator_s():
    # a schedule whose flows are not in the simulator's order is mapped flow by flow;
    # its nonzero positions are in its own order, so they must not pick the senders
    _needs_kernels()
    topo = build_topology("bigswitch:5")
    s = _Sticky(topo, None)

    def reversed_with_hint(now, coflows):
        fl = [f for c in coflows for f in c.active_flows()][::-1]
        first = fl[-1]  # A/0 while it is live, then A/1
        rates = np.array([G / 4 if f is first else 0.0 for f in fl])
        return Schedule.from_vectors(fl, [s.candidates(f)[0] for f in fl], rates,
                                     nonzero=np.flatnonzero(rates))

    s.schedule = reversed_with_hint
    res = simulate(topo, _one_port_coflow(2), s, record_flows=True)
    fin = {f.flow_id: f.finish_s for f in res.flows}
    # A/0 (1 MB) alone at 0.25 G: 0.032 s; then A/1 (2 MB): 0.064 s more
    assert fin == pytest.approx({"A/0": 0.032, "A/1": 0.096})


def test_sincronia_kept_octs_are_the_demand_matrix_maxima():
    # the orphans' OCTs kept with their cached demand rows equal, bit for bit, the
    # row maxima of a freshly stacked demand matrix, at every decision point
    topo = build_topology("bigswitch:8")
    cfs = [dataclasses.replace(c, arrival_s=0.0)
           for c in synthetic(topo, 24, 10, 0.05, sizes="uniform:1,20", seed=9)]
    s = make_scheduler("sincronia", topo)
    orig = s.plan
    seen = []

    def spy(now, coflows, rates):
        if coflows:
            kept = s.octs(coflows)
            fresh = s.demand_matrix(coflows).max(axis=1).tolist()
            s._dcache.clear()
            rebuilt = s.octs(coflows)
            assert kept == fresh == rebuilt
            seen.append(len(coflows))
        return orig(now, coflows, rates)

    s.plan = spy
    simulate(topo, cfs, s)
    assert len(seen) > 50 and max(seen) == 24


def test_rank_select_gives_the_live_flows_global_indices():
    # position j of the simulator is the j-th live flow in global-index order:
    # rank_select_kernel(alive, block counts, positions) == flatnonzero(alive)[pos]
    _needs_kernels()
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 2000))
        cap = n + int(rng.integers(0, 200))
        alive = np.zeros(cap, dtype=np.uint8)
        alive[:n] = rng.random(n) < rng.choice([0.02, 0.5, 1.0])
        if not alive.any():
            continue
        bcnt = np.zeros(cap // 64 + 1, dtype=np.int64)
        np.add.at(bcnt, np.flatnonzero(alive) >> 6, 1)
        live = np.flatnonzero(alive)
        k = int(rng.integers(0, live.shape[0] + 1))
        sel = np.sort(rng.choice(live.shape[0], k, replace=False)).astype(np.int64)
        got = ksim.rank_select_kernel(alive, bcnt, sel)
        assert got.tolist() == live[sel].tolist()
