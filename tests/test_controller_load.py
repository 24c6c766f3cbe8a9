"""The controller under load (in-process, fake switches, counted not timed):
arrivals during a decision are batched into the next one, /health, reads, POSTs and
DELETEs do not wait for a decision in progress, the decision budget cuts Algorithm 1
and a follow-up decision places the rest at once, and RAPIER's deadline hook.
"""

import threading

from rapier_app.controller.metrics import CoreCollector
from rapier_app.controller.settings import Settings  # noqa: F401 -- used by rest_app
from rapier_app.core.model import CoflowState, InfoPolicy, make_coflow
from rapier_app.scheduling import make_scheduler as build_scheduler
from topologies import build_topology

from test_controller_worker_reconcile import MB, call, connect, flow, rest_app  # noqa: I100

PAIRS = [("h1", "h5"), ("h2", "h6"), ("h3", "h9"), ("h4", "h8"), ("h7", "h2"), ("h9", "h1")]


def worker_mode(app):
    """The app as under ryu-manager: POSTs queue, every decision is the worker's.
    The decision runs in the test's worker thread itself (no eventlet hub here to
    hand it to ``tpool``): the same two threads as under ryu-manager."""
    app.worker.running = True
    app._offload = None
    app._start_loop()


class Blocking:
    """Wraps the scheduler's ``schedule``: the first call waits for ``release``;
    every call's coflow ids are recorded."""

    def __init__(self, app):
        self.inner = app.core.scheduler.schedule
        self.calls = []
        self.entered = threading.Event()
        self.release = threading.Event()
        app.core.scheduler.schedule = self

    def __call__(self, now, coflows):
        self.calls.append(sorted(c.coflow_id for c in coflows))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(30)
        return self.inner(now, coflows)


def test_arrivals_during_a_decision_are_batched_and_nothing_waits_for_it():
    app = rest_app()
    connect(app)
    worker_mode(app)
    st, first = call(app, "POST", "/rapier/v1/coflows", {"id": "a", "flows": [flow("h1", "h5")]})
    assert st == 201 and first["coflow"]["decision"] == "provisional"  # admitted
    st, _ = call(app, "POST", "/rapier/v1/coflows", {"id": "gone", "flows": [flow("h3", "h7")]})
    app.worker.run_once(block=False)  # decides a and gone
    block = Blocking(app)
    call(app, "POST", "/rapier/v1/coflows", {"id": "b", "flows": [flow("h2", "h6")]})
    done = []
    t = threading.Thread(target=lambda: done.append(app.worker.run_once(block=False)))
    t.start()
    assert block.entered.wait(30)  # the decision for b is in the scheduler, blocked
    assert app.core.deciding
    # while it is blocked: /health, reads, POSTs and a DELETE are served at once
    # (each call returns in this thread; none waits for the decision)
    assert call(app, "GET", "/rapier/v1/health")[0] == 200
    assert call(app, "GET", "/rapier/v1/coflows")[1]["total"] == 3
    assert call(app, "GET", "/rapier/v1/coflows/a")[1]["decision"] == "scheduled"
    for cid, (s, d) in zip(("c", "d", "e"), PAIRS[2:5]):
        st, body = call(app, "POST", "/rapier/v1/coflows", {"id": cid, "flows": [flow(s, d)]})
        assert st == 201 and body["coflow"]["decision"] == "provisional"
    st, body = call(app, "DELETE", "/rapier/v1/coflows/gone")
    assert st == 200 and body["state"] == "cancelled"
    assert app.core.decision_due  # the cancel waits for the next decision
    assert block.calls == [["a", "b", "gone"]] and t.is_alive()
    block.release.set()
    t.join(30)
    assert not t.is_alive()
    # one decision for b, then at once one more for c, d, e and the cancel together
    assert block.calls == [["a", "b", "gone"], ["a", "b", "c", "d", "e"]]
    assert done == [["b", "c", "d", "e"]]
    assert app.worker.stats()["largest_batch"] == 3
    for cid in "abcde":
        c = call(app, "GET", f"/rapier/v1/coflows/{cid}")[1]
        assert c["decision"] == "scheduled" and c["flows"][0]["path"] is not None
    gone = call(app, "GET", "/rapier/v1/coflows/gone")[1]
    assert not [k for k in app.core.desired if k[1] == gone["flows"][0]["flow_id"]]
    assert not app.core.wants_decision() and app.worker.backlog() == 0


def test_stats_during_a_decision_are_applied_after_it_in_order():
    app = rest_app()
    connect(app)
    worker_mode(app)
    call(app, "POST", "/rapier/v1/coflows", {"id": "a", "flows": [flow("h1", "h5", 10 * MB)]})
    app.worker.run_once(block=False)
    block = Blocking(app)
    call(app, "POST", "/rapier/v1/coflows", {"id": "b", "flows": [flow("h2", "h6")]})
    t = threading.Thread(target=app.worker.run_once, kwargs={"block": False})
    t.start()
    assert block.entered.wait(30)
    f = app.core.coflows["a"].flows[0]
    tr = app.core.tracks[f.flow_id]
    app._stats_arrived(tr.first_dpid, [(tr.cookie, 2 * MB, 10)])
    app._stats_arrived(tr.first_dpid, [(tr.cookie, 3 * MB, 20)])
    assert f.bytes_sent == 0  # held while the scheduler runs
    block.release.set()
    t.join(30)
    hdr = app.core.settings.header_bytes
    assert f.bytes_sent == 3 * MB - 20 * hdr and tr.offset_bytes == 0  # in order, no reset


def test_budget_cuts_algorithm_1_and_follow_ups_place_the_rest_at_once():
    app = rest_app(decision_budget_s=1e-9)  # out of time after the first pick
    connect(app)
    worker_mode(app)
    cuts = []
    end = app.core.end_decision

    def spy(job, now):
        acts = end(job, now)
        deferred = job.sched.info.get("deferred", [])
        paths = [f.path for cid in deferred for f in app.core.coflows[cid].flows]
        cuts.append((list(job.sched.order), list(deferred), paths,
                     [app.core.decision[c] for c in deferred]))
        return acts

    app.core.end_decision = spy
    ids = []
    for i, (s, d) in enumerate(PAIRS):
        st, body = call(app, "POST", "/rapier/v1/coflows",
                        {"flows": [flow(s, d, (i + 1) * 10 * MB, 7000 + i)]})
        ids.append(body["id"])
    assert app.worker.run_once(block=False) == ids  # the follow-ups come at once
    # each decision carries the cut pass on: it plans or places at least one coflow
    # more, the placed ones stay placed, until the pass is complete
    placed = [len(order) for order, *_ in cuts]
    assert placed == sorted(placed) and placed[-1] == len(ids) and len(cuts) > 1
    for (order, *_), (nxt, *_) in zip(cuts, cuts[1:]):
        assert nxt[:len(order)] == order
    for order, deferred, paths, states in cuts[:-1]:
        assert sorted(order + deferred) == sorted(ids)
        # the coflows left out keep ECMP paths (not default forwarding): provisional
        assert paths and all(p is not None for p in paths)
        assert set(states) == {"provisional"}
    assert cuts[-1][1] == []
    for cid in ids:
        c = call(app, "GET", f"/rapier/v1/coflows/{cid}")[1]
        assert c["decision"] == "scheduled" and c["fallback"] is None
        assert c["flows"][0]["path"] is not None
    assert not app.core.wants_decision()
    # a cut decision leaves the coflows placed before on their paths and rates
    before = {f.flow_id: (f.path, f.rate_bps) for cid in ids
              for f in app.core.coflows[cid].flows}
    call(app, "POST", "/rapier/v1/coflows", {"id": "late", "flows": [flow("h8", "h3")]})
    assert app._decide_batch(["late"]) is True  # cut: a follow-up is due
    assert "late" in cuts[-1][1] and app.core.decision["late"] == "provisional"
    assert app.core.coflows["late"].flows[0].path is not None  # ECMP, not default
    assert {f.flow_id: (f.path, f.rate_bps) for cid in ids
            for f in app.core.coflows[cid].flows} == before
    assert all(app.core.decision[cid] == "scheduled" for cid in ids)
    app.worker.run_once(block=False)
    assert app.core.decision["late"] == "scheduled" and not app.core.wants_decision()


def test_rapier_deadline_hook():
    """Algorithm 1 stops once the deadline has passed and the next call with a
    deadline carries the pass on, to the picks of an uncut pass; without a deadline
    the pass is the same as before."""
    topo = build_topology("fattree:4", 1e9)
    policy = InfoPolicy(True)
    hosts = topo.hosts

    def coflows():
        return [CoflowState(make_coflow(f"c{i}", 0.0, [(hosts[i], hosts[-1 - i], (i + 1) * MB),
                                                       (hosts[i + 1], hosts[-2 - i], MB)]),
                            policy) for i in range(5)]

    full = build_scheduler("rapier", topo).schedule(0.0, coflows())
    assert "deferred" not in full.info and len(full.order) == 5
    s = build_scheduler("rapier", topo)
    s.deadline = 0.0  # long past
    cfs = coflows()
    cut = s.schedule(0.0, cfs)
    assert not cut.fallback and len(cut.allocations) == 10  # every flow has a path
    assert len(cut.order) <= 1 and sorted(cut.order + cut.info["deferred"]) == sorted(full.order)
    calls = 1
    while "deferred" in cut.info:
        cut = s.schedule(0.0, cfs)
        calls += 1
        assert calls <= 20  # each call plans or places one coflow at least
    assert cut.order == full.order and calls > 2
    assert {f: a.path for f, a in cut.allocations.items()} == \
        {f: a.path for f, a in full.allocations.items()}
    s.deadline = None  # no deadline: a new pass, as before
    assert s.schedule(0.0, coflows()).order == full.order


def test_flows_added_during_a_decision_wait_for_its_end():
    """POST .../flows changes a coflow the scheduler may be reading off the event
    loop (its flow list, RAPIER's per-coflow arrays): the add waits behind the
    decision gate, so the scheduler sees the flow list it started with."""
    app = rest_app()
    connect(app)
    worker_mode(app)
    st, _ = call(app, "POST", "/rapier/v1/coflows",
                 {"id": "o", "open": True, "flows": [flow("h1", "h5")]})
    assert st == 201
    app.worker.run_once(block=False)
    block = Blocking(app)
    seen = []
    inner = block.inner

    def counting(now, coflows):  # the flows of "o" as the scheduler leaves
        sched = inner(now, coflows)
        seen.append(len(app.core.coflows["o"].flows))
        return sched
    block.inner = counting
    call(app, "POST", "/rapier/v1/coflows", {"id": "b", "flows": [flow("h2", "h6")]})
    t = threading.Thread(target=app.worker.run_once, kwargs={"block": False})
    t.start()
    assert block.entered.wait(30)
    added = []
    adder = threading.Thread(target=lambda: added.append(call(
        app, "POST", "/rapier/v1/coflows/o/flows", {"flows": [flow("h3", "h9")]})))
    adder.start()
    adder.join(0.5)
    assert adder.is_alive() and not added  # held while the scheduler runs
    assert len(app.core.coflows["o"].flows) == 1
    block.release.set()
    t.join(30)
    adder.join(30)
    assert added[0][0] == 201 and added[0][1]["flows"][0]["index"] == 1
    assert seen[0] == 1  # the decision ran on the list it started with
    app.worker.run_once(block=False)  # the add's own decision
    view = call(app, "GET", "/rapier/v1/coflows/o")[1]
    assert [f["path"] is not None for f in view["flows"]] == [True, True]


def test_an_arrival_during_a_long_decision_gets_rules_before_it_ends():
    """Admission: a coflow POSTed while a decision is in the scheduler gets its ECMP
    paths and leftover rates at once (rules on the switches, ``provisional``), the
    decision in flight leaves them alone, and the next one places it."""
    app = rest_app()
    sw = connect(app)
    worker_mode(app)
    call(app, "POST", "/rapier/v1/coflows", {"id": "a", "flows": [flow("h1", "h5")]})
    call(app, "POST", "/rapier/v1/coflows", {"id": "b", "flows": [flow("h2", "h6")]})
    app.worker.run_once(block=False)
    block = Blocking(app)
    call(app, "POST", "/rapier/v1/coflows", {"id": "c", "flows": [flow("h3", "h9")]})
    t = threading.Thread(target=app.worker.run_once, kwargs={"block": False})
    t.start()
    assert block.entered.wait(30)  # the decision for c is in the scheduler, blocked
    st, body = call(app, "POST", "/rapier/v1/coflows",
                    {"id": "late", "flows": [flow("h1", "h8", 20 * MB, 6001),
                                             flow("h4", "h5", 30 * MB, 6002)]})
    assert st == 201 and body["coflow"]["decision"] == "provisional"
    core = app.core
    fam = [m for m in CoreCollector(core).collect() if m.name == "rapier_coflows_decision"][0]
    got = {s.labels["decision"]: s.value for s in fam.samples}
    assert (got["provisional"], got["scheduled"], got["queued"]) == (2, 2, 0)  # c, late; a, b
    late = core.coflows["late"].flows
    ecmp = core.scheduler.inner if hasattr(core.scheduler, "inner") else core.scheduler
    while not hasattr(ecmp, "ecmp_path"):
        ecmp = ecmp.inner
    topo = core.topology
    for f in late:  # on the switches of its ECMP path, before the decision ends
        assert f.path == tuple(ecmp.ecmp_path(f))
        cookie = core.tracks[f.flow_id].cookie
        for s in f.path[1:-1]:
            assert cookie in {ck for ck, _ in sw[s].table.values()}
    # its rates: Algorithm 3's leftover along its path, larger flow first
    load = {}
    for cid in ("a", "b", "c"):
        for f in core.coflows[cid].flows:
            if f.path and f.rate_bps > 0:
                for li in topo.path_links(f.path).tolist():
                    load[li] = load.get(li, 0.0) + f.rate_bps
    for f in sorted(late, key=lambda f: -f.spec.size_bytes):
        links = topo.path_links(f.path).tolist()
        want = max(0.0, min(topo.capacity[li] - load.get(li, 0.0) for li in links))
        assert abs(f.rate_bps - want) <= 1e-6 * max(1.0, want)
        for li in links:
            load[li] = load.get(li, 0.0) + f.rate_bps
    assert t.is_alive() and core.deciding
    fids = {f.flow_id for f in late}
    rules_before = {k: r for k, r in core.desired.items() if k[1] in fids}
    after_first = []
    end = core.end_decision

    def spy(job, now):  # what the decision in flight left of the admitted coflow
        acts = end(job, now)
        if not after_first:
            after_first.append(({k: core.desired.get(k) for k in rules_before},
                                {e["flow_id"] for es in core._pushes.limits.values()
                                 for e in es} & fids,
                                [(f.path, f.rate_bps) for f in late], core.decision["late"]))
        return acts

    paths_rates = [(f.path, f.rate_bps) for f in late]
    core.end_decision = spy
    block.release.set()
    t.join(30)
    assert not t.is_alive()
    assert block.calls[0] == ["a", "b", "c"]  # the decision that was in flight ...
    assert "late" in block.calls[1]  # ... then one more, at once, placed it
    assert core.decision["late"] == "scheduled"
    assert not core.wants_decision()
    assert all(f.path is not None for f in late)
    kept, limited, held, state = after_first[0]
    assert rules_before and kept == rules_before  # same rule objects: nothing resent
    assert limited == fids and held == paths_rates and state == "provisional"


def test_admission_survives_the_decision_in_flight_and_a_cut_slice_touches_only_its_picks():
    """The decision in flight when a coflow was admitted keeps the admitted rules and
    rate limits; a slice of a cut pass hands over only the coflows it picked."""
    app = rest_app(decision_budget_s=1e-9)  # out of time after each pick
    connect(app)
    worker_mode(app)
    for i, (s, d) in enumerate(PAIRS):
        call(app, "POST", "/rapier/v1/coflows", {"id": f"k{i}", "flows": [flow(s, d)]})
    applied = []
    apply = app.core._apply

    def spy(sched, active, keep=(), hold=(), partial=False, **kw):
        applied.append((partial, sorted(c.coflow_id for c in active)))
        return apply(sched, active, keep, hold, partial, **kw)

    app.core._apply = spy
    app.worker.run_once(block=False)
    slices = [ids for partial, ids in applied if partial]
    assert len(slices) >= 2 and applied[-1][0] is False  # the last slice is full
    # a slice after the first hands over its picks (and the deferred coflows not yet
    # admitted: none here), not the coflows placed by the slices before it
    assert all(len(ids) <= 1 for ids in slices[1:])
    limits = {e["flow_id"] for es in app.core._pushes.limits.values() for e in es}
    assert limits == {f.flow_id for c in app.core.active() for f in c.flows}
    assert all(app.core.decision[f"k{i}"] == "scheduled" for i in range(len(PAIRS)))
