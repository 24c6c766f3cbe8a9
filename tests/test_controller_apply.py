"""The rule-apply step after a decision costs the flows whose route or rate changed,
not every live flow (``rapier_app/controller/applying.py``).

Counted, not timed: ``ControllerCore.apply_counts`` (flows whose path and rules were
re-examined, flows whose rate alone changed) and a spy on ``_flow_rules`` (the
per-flow rule look-up every apply used to make for every live flow).

The case, on ``fattree:4`` with the ``baseline`` scheduler (ECMP routes, per-flow
max-min fair rates), hosts h1..h16 two per edge switch e1..e8, pods {e1,e2},
{e3,e4}, {e5,e6}, {e7,e8}:

* c0..c18: 19 coflows of 1,000 flows between the hosts h1..h8 (pods 0 and 1),
  decided together;
* c19, the twentieth: 1,000 flows between h13..h16 (pod 3), which shares no link with
  the others: the decision changes no route and no rate of c0..c18, so the apply
  handles exactly c19's 1,000 flows, and its rules are one per switch of each new
  path: 1 for two hosts on one edge switch (h13-h14, h15-h16), 3 across the pod's
  edge switches (edge, aggregation, edge);
* c20: 1,000 more flows between h13..h16: every flow of c19 shares its source's
  uplink with flows of c20, so all 1,000 get a lower max-min rate (same routes: no
  rule), and c20's 1,000 flows get rules; c0..c18 are not touched.

An equivalence test runs random sequences (arrivals, cancels, flow completions,
decisions) through an incremental core and a core doing a full pass every time
(``apply_incremental = False``) and compares rules, limits, paths and rates.
"""

import json
import random

from rapier_app.controller.core import make_core
from rapier_app.controller.settings import Settings

MB = 1 << 20


def _body(cid, n, hosts, port0):
    """Coflow ``cid`` of ``n`` flows over the host numbers ``hosts`` (every ordered
    pair in turn, distinct ports)."""
    pairs = [(s, d) for s in hosts for d in hosts if s != d]
    flows = [{"src": f"h{pairs[i % len(pairs)][0]}", "dst": f"h{pairs[i % len(pairs)][1]}",
              "size_bytes": (1 + i % 7) * MB, "dst_port": port0 + i} for i in range(n)]
    return json.dumps({"id": cid, "flows": flows}).encode()


def _rules_per_flow(src, dst):
    """Switches on a pod-3 ECMP path (by hand: same edge 1, across the pod 3)."""
    edge = {13: 7, 14: 7, 15: 8, 16: 8}
    return 1 if edge[src] == edge[dst] else 3


def _spy_flow_rules(core):
    calls = {"n": 0}
    inner = core._flow_rules

    def counted(*a, **k):
        calls["n"] += 1
        return inner(*a, **k)

    core._flow_rules = counted
    return calls


def test_the_twentieth_coflow_applies_its_own_flows_only():
    core = make_core(Settings(scheduler="baseline", topology="fattree:4", agent_url="",
                              state_db=""))
    for i in range(19):
        core.submit(_body(f"c{i}", 1000, range(1, 9), 1024 + 1000 * i), float(i),
                    schedule=False)
    core.decide(19.0)
    old = {f.flow_id: (f.path, f.rate_bps) for c in core.active() for f in c.flows}
    assert len(old) == 19_000 and all(p is not None and r > 0 for p, r in old.values())
    calls = _spy_flow_rules(core)
    c, acts = core.submit(_body("c19", 1000, range(13, 17), 30000), 20.0)
    assert core.decision["c19"] == "scheduled"
    assert calls["n"] == 1000                       # 20,000 when every flow was redone
    # the premise: nothing of c0..c18 changed
    assert {fid: (f.path, f.rate_bps) for cc in core.active() if cc.coflow_id != "c19"
            for f in cc.flows for fid in [f.flow_id]} == old
    # 19,000 flows placed by the first decision, then c19's 1,000; no rate moved
    assert core.apply_counts == {"flows": 20_000, "rates": 0, "full": 0}
    pairs = [(int(f.src[1:]), int(f.dst[1:])) for f in c.flows]
    expected = sum(_rules_per_flow(s, d) for s, d in pairs)
    assert 1000 < expected < 3000
    assert len(acts.rules) == expected and {r.flow_id for r in acts.rules} == \
        {f.flow_id for f in c.flows}
    assert all(r.command == "add" for r in acts.rules)
    assert all(len(f.path) - 2 == _rules_per_flow(s, d) for f, (s, d) in zip(c.flows, pairs))

    # c20 shares every host link of c19: c19's rates change, its routes do not
    rates19 = {f.flow_id: f.rate_bps for f in c.flows}
    calls["n"] = 0
    c20, acts = core.submit(_body("c20", 1000, range(13, 17), 40000), 21.0)
    assert all(f.rate_bps < rates19[f.flow_id] for f in c.flows)
    assert calls["n"] == 1000
    assert core.apply_counts == {"flows": 21_000, "rates": 1000, "full": 0}
    assert {r.flow_id for r in acts.rules} == {f.flow_id for f in c20.flows}
    assert {fid: (f.path, f.rate_bps) for cc in core.active()
            if cc.coflow_id not in ("c19", "c20") for f in cc.flows
            for fid in [f.flow_id]} == old
    # the limits follow the new rates (agents off: kept, not pushed)
    lim = {d["flow_id"]: d["rate_bps"] for ds in core._pushes.limits.values() for d in ds}
    assert len(lim) == 21_000
    assert all(lim[f.flow_id] == int(round(f.rate_bps)) for f in c.flows + c20.flows)

    # a cancel: its flows' rules go, and no other flow is handled
    calls["n"] = 0
    acts = core.cancel("c20", 22.0)
    assert sorted(r.flow_id for r in acts.rules if r.command == "delete") == \
        sorted(f.flow_id for f in c20.flows for _ in range(_rules_per_flow(
            int(f.src[1:]), int(f.dst[1:]))))
    assert calls["n"] == 0
    assert core.apply_counts == {"flows": 21_000, "rates": 2000, "full": 0}  # c19's rates back
    assert {f.flow_id: f.rate_bps for f in c.flows} == rates19
    assert not any(core.desired.of_flow(f.flow_id) for f in c20.flows)


def _state(core):
    flows = {f.flow_id: (f.path, f.rate_bps) for c in core.coflows.values() for f in c.flows
             if core.state[c.coflow_id] == "active" and not f.done}
    lims = {h: sorted((d["flow_id"], d["rate_bps"]) for d in ds)
            for h, ds in core._pushes.limits.items()}
    return dict(core.desired), flows, lims, dict(core._pushes.pushed)


def _acts(acts):
    return (sorted((r.dpid, r.flow_id, r.command, r.actions) for r in acts.rules),
            sorted((p.host, json.dumps(p.flows, sort_keys=True)) for p in acts.pushes))


def test_incremental_apply_equals_a_full_pass():
    # rapier with a budget of 1e-9 s: every decision is cut after one pick (slices
    # of a cut pass, coflows held, follow-ups)
    for scheduler, seed, budget in (("baseline", 1, 2.0), ("rapier", 2, 2.0),
                                    ("routing-only", 3, 2.0), ("rapier", 4, 1e-9)):
        rnd = random.Random(seed)
        cores = []
        for incremental in (True, False):
            core = make_core(Settings(scheduler=scheduler, topology="fattree:4",
                                      state_db="", small_coflow_bytes=4 * MB,
                                      decision_budget_s=budget))
            core.apply_incremental = incremental
            cores.append(core)
        live, n, port, cuts = [], 0, 10000, 0
        for step in range(40):
            now = float(step)
            op = rnd.random()
            if op < 0.45 or not live:
                hosts = rnd.sample(range(1, 17), rnd.randint(2, 6))
                width = rnd.randint(1, 30)
                body = _body(f"k{n}", width, hosts, port)
                out = [core.submit(body, now) for core in cores]
                live.append((f"k{n}", width))
                n += 1
                port += width
            elif op < 0.65:
                cid, _ = live.pop(rnd.randrange(len(live)))
                out = [(None, core.cancel(cid, now)) for core in cores]
            else:
                cid, width = rnd.choice(live)
                idx = rnd.randrange(width)
                if cores[0].coflows[cid].flows[idx].done:
                    continue
                out = [core.report_flow_done(cid, idx, now) for core in cores]
                if cores[0].state[cid] != "active":
                    live.remove((cid, width))
            assert _acts(out[0][1]) == _acts(out[1][1]), (scheduler, step)
            assert _state(cores[0]) == _state(cores[1]), (scheduler, step)
            if cores[0].decision_due:  # a cut decision's follow-up
                assert _acts(cores[0].decide(now)) == _acts(cores[1].decide(now))
                assert _state(cores[0]) == _state(cores[1]), (scheduler, step)
                cuts += 1
        assert (cuts > 5) == (budget < 1), (scheduler, cuts)
        assert cores[1].apply_counts["full"] > 30
        assert cores[0].apply_counts["full"] == 0
        assert cores[0].apply_counts["flows"] < cores[1].apply_counts["flows"]


def test_a_cancel_during_a_pause_of_the_apply_leaves_nothing_behind():
    """The shell lets other requests in while the apply step pauses (every
    ``PAUSE_EVERY`` flows): a coflow cancelled in a pause, before or after the step
    reached its flows, has no rule and no limit once the step ends, and every other
    flow is as a core that never paused has it."""
    for victim in ("p0", "p3"):  # already handled when the pause comes / not yet
        cores = []
        for pausing in (True, False):
            core = make_core(Settings(scheduler="baseline", topology="fattree:4",
                                      state_db=""))
            core.PAUSE_EVERY = 100
            for i in range(4):
                core.submit(_body(f"p{i}", 300, range(1 + 4 * i, 5 + 4 * i), 2000 + 300 * i),
                            0.0, schedule=False)
            cores.append(core)
        paused = []

        def pause(core=cores[0]):
            if not paused:
                paused.append(len(core.desired))
                core.cancel(victim, 0.5)  # deferred: a decision is in flight
        cores[0].apply_pause = pause
        cores[0].worker_decides = True  # as under the shell: the cancel marks one due
        job = cores[0].begin_decision(1.0)
        cores[0].run_decision(job)
        cores[0].end_decision(job, 1.0)
        assert paused and 0 < paused[0] and cores[0].decision_due
        assert not any(cores[0].desired.of_flow(f.flow_id)
                       for f in cores[0].coflows[victim].flows)
        assert victim not in {d["flow_id"].split("/")[0]
                              for ds in cores[0]._pushes.limits.values() for d in ds}
        cores[0].decide(1.0)  # the decision the cancel asked for
        cores[1].cancel(victim, 0.5)
        cores[1].decide(1.0)
        assert dict(cores[0].desired) == dict(cores[1].desired)
        assert _state(cores[0])[1:3] == _state(cores[1])[1:3]
