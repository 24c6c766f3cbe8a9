"""Reads that never freeze the controller: a coflow's view touches its own flows'
rules only (the rules are indexed by flow), not every rule the controller holds.

Counted, not timed: a spy on the desired-rule table counts every rule a view walks
through and every ``RuleLedger.status`` call.  The small case's JSON is what the
implementation that scanned every rule per flow answered (kept verbatim below).
"""

import json
import os

from rapier_app.controller.core import DesiredRules, make_core
from rapier_app.controller.settings import Settings

MB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))


def _body(cid, n, k=8, port0=5000):
    """Coflow ``cid`` of ``n`` flows between the hosts h1..h``k`` (distinct ports)."""
    flows = []
    for i in range(n):
        s = 1 + i % k
        d = 1 + (i + 1 + i // k) % k
        if d == s:
            d = 1 + s % k
        flows.append({"src": f"h{s}", "dst": f"h{d}", "size_bytes": (1 + i % 5) * MB,
                      "dst_port": port0 + i})
    return json.dumps({"id": cid, "flows": flows}).encode()


def _confirm(core, acts, xid0, answer=True):
    """Hand ``acts``' rules to fake switches (one batch and barrier per dpid);
    answer the barriers when ``answer``.  Returns the next free xid."""
    xid = xid0
    by_dpid = {}
    for r in acts.rules:
        by_dpid.setdefault(r.dpid, []).append(r)
    for dpid, rules in sorted(by_dpid.items()):
        items = []
        for r in rules:
            items.append((xid, r))
            xid += 1
        core.rules_sent(dpid, xid, items)
        if answer:
            core.barrier_reply(dpid, xid)
        xid += 1
    return xid


def small_case():
    """Three coflows on leafspine:3,3,3 with the baseline scheduler: ``a`` and
    ``b`` installed, ``a`` cancelled, then ``c`` whose rules stay pending."""
    core = make_core(Settings(scheduler="baseline", agent_url=""))
    xid = 1
    for cid, n, port0 in (("a", 3, 5000), ("b", 4, 6000)):
        _, acts = core.submit(_body(cid, n, k=9, port0=port0), float(len(core.coflows)))
        xid = _confirm(core, acts, xid)
    xid = _confirm(core, core.cancel("a", 2.0), xid)
    _, acts = core.submit(_body("c", 2, k=9, port0=7000), 3.0)
    _confirm(core, acts, xid, answer=False)
    return core


class SpyRules(DesiredRules):
    """The desired-rule table, counting the rules walked by a full scan."""

    scanned = 0

    def items(self):
        for kv in super().items():
            SpyRules.scanned += 1
            yield kv

    def values(self):
        for v in super().values():
            SpyRules.scanned += 1
            yield v

    def __iter__(self):
        for k in super().__iter__():
            SpyRules.scanned += 1
            yield k


def _spy(core):
    core.desired = SpyRules(core.desired)
    calls = {"status": 0}
    status = core.ledger.status

    def counted(rule):
        calls["status"] += 1
        return status(rule)

    core.ledger.status = counted
    SpyRules.scanned = 0
    return calls


def test_small_case_views_unchanged():
    with open(os.path.join(HERE, "data", "controller_reads_small.json")) as fh:
        expected = json.load(fh)
    core = small_case()
    got = {"coflows": core.coflows_page(limit=1000, flows=True), "one": core.coflow_view("b"),
           "schedule": {k: v for k, v in core.schedule_view().items() if k != "solve_s"}}
    assert json.loads(json.dumps(got, sort_keys=True)) == expected
    # the case exercises both states and a cancelled coflow
    states = {json.dumps(f["rules"]) for c in got["coflows"]["coflows"] for f in c["flows"]}
    assert len(states) >= 2
    assert [c["state"] for c in got["coflows"]["coflows"]] == ["cancelled", "active", "active"]


def test_views_touch_only_their_coflows_rules():
    core = make_core(Settings(scheduler="baseline", agent_url=""))
    xid = 1
    for i in range(19):
        _, acts = core.submit(_body(f"c{i}", 1000, k=9, port0=1024 + 1000 * i), float(i))
        xid = _confirm(core, acts, xid)
    total = len(core.desired)
    assert total >= 19 * 1000
    calls = _spy(core)
    view = core.coflow_view("c7")
    mine = sum(f["rules"]["installed"] + f["rules"]["pending"] for f in view["flows"])
    assert len(view["flows"]) == 1000 and mine >= 1000
    assert all(f["rules"]["pending"] == 0 and f["rules"]["installed"] >= 1
               for f in view["flows"])
    assert SpyRules.scanned == 0          # no walk over every rule
    assert calls["status"] == mine        # one ledger look-up per own rule
    # the twentieth POST: its reply (view built after the decision) touches its own
    # flows' rules only, not the 19 other coflows'
    c, acts = core.submit(_body("c19", 1000, k=9, port0=30000), 19.0)
    _confirm(core, acts, xid)
    calls = _spy(core)
    view = core.coflow_view("c19")
    mine = sum(f["rules"]["installed"] + f["rules"]["pending"] for f in view["flows"])
    assert len(view["flows"]) == 1000
    assert SpyRules.scanned == 0
    assert calls["status"] == mine < len(core.desired) / 10
    # a page of two coflows with their flows: two coflows' rules
    calls = _spy(core)
    page = core.coflows_page(limit=2, offset=3, flows=True)
    assert [c["id"] for c in page["coflows"]] == ["c3", "c4"]
    assert SpyRules.scanned == 0
    assert calls["status"] == sum(f["rules"]["installed"] + f["rules"]["pending"]
                                  for c in page["coflows"] for f in c["flows"])


def test_index_follows_every_change():
    """The by-flow index agrees with a full scan after submits, decisions,
    cancellations and direct edits."""
    core = small_case()
    core.desired = dict(core.desired)  # a plain dict given back is indexed too
    assert isinstance(core.desired, DesiredRules)
    for fid in {fid for _, fid in core.desired}:
        scan = {k: r for k, r in core.desired.items() if k[1] == fid}
        assert core.desired.of_flow(fid) == list(scan.values())
    k = next(iter(core.desired))
    r = core.desired.pop(k)
    assert r not in core.desired.of_flow(k[1])
    core.desired[k] = r
    assert r in core.desired.of_flow(k[1])
    del core.desired[k]
    assert r not in core.desired.of_flow(k[1])
    assert core.desired.of_flow("no-such-flow") == []


def _count_flow_views(core):
    """Count the per-flow views built (the per-flow part of every read)."""
    calls = {"flow_view": 0}
    inner = core.flow_view

    def counted(f):
        calls["flow_view"] += 1
        return inner(f)

    core.flow_view = counted
    return calls


def _count_active_flows(monkeypatch):
    """Count the calls of ``active_flows`` (a scan of a coflow's flows) per coflow."""
    from rapier_app.core.model import CoflowState

    calls = {}
    inner = CoflowState.active_flows

    def counted(self):
        calls[self.coflow_id] = calls.get(self.coflow_id, 0) + 1
        return inner(self)

    monkeypatch.setattr(CoflowState, "active_flows", counted)
    return calls


def test_list_pages_are_summaries_and_posts_touch_their_own_flows(monkeypatch):
    """Default pages hold 50 summaries (no flow views, no rule look-ups); the
    twentieth POST of 1,000 flows and its reply touch none of the other coflows'
    flows; a reply above REPLY_FLOWS_MAX flows is the summary."""
    core = make_core(Settings(scheduler="baseline", agent_url=""))
    for i in range(19):
        core.submit(_body(f"c{i}", 1000, k=9, port0=1024 + 1000 * i), float(i), schedule=False)
    for i in range(40):  # small coflows: 59 in all, more than one default page
        core.submit(_body(f"s{i}", 2, k=9, port0=40000 + 2 * i), 19.0 + i, schedule=False)
    _confirm(core, core.decide(59.0), 1)  # one decision for all of them
    calls, views = _spy(core), _count_flow_views(core)
    page = core.coflows_page()
    assert page["limit"] == 50 and page["total"] == 59 and page["next_offset"] == 50
    assert len(page["coflows"]) == 50 and all("flows" not in c for c in page["coflows"])
    assert page["coflows"][7]["width"] == 1000 and page["coflows"][7]["id"] == "c7"
    assert {"decision", "rates", "state", "bytes_sent"} <= set(page["coflows"][7])
    assert views["flow_view"] == 0 and calls["status"] == 0 and SpyRules.scanned == 0
    nxt = core.coflows_page(offset=page["next_offset"])
    assert [c["id"] for c in nxt["coflows"]] == [f"s{i}" for i in range(31, 40)]
    assert nxt["next_offset"] is None
    # with flows: the page's flows, and only theirs
    page = core.coflows_page(limit=3, offset=5, flows=True)
    assert views["flow_view"] == 3000 == sum(len(c["flows"]) for c in page["coflows"])
    # the twentieth big POST: validation, the duplicate check and the reply touch
    # its own flows only (no other coflow's flows are scanned)
    scans = _count_active_flows(monkeypatch)
    views["flow_view"] = 0
    c, _ = core.submit(_body("c19", 1000, k=9, port0=30000), 60.0, schedule=False)
    reply = core.reply_view("c19")
    assert set(scans) <= {"c19"} and views["flow_view"] == 0 and "flows" not in reply
    assert reply["width"] == 1000 and reply["decision"] == "queued"
    small = core.reply_view("s3")
    assert len(small["flows"]) == 2 and views["flow_view"] == 2
    # the duplicate check still refuses a flow in use, and accepts one that ended
    import pytest
    from rapier_app.httpjson import RequestError
    with pytest.raises(RequestError) as err:
        core.submit(_body("dup", 1, k=9, port0=30000), 61.0)
    assert err.value.field == "flows[0]" and "c19/0" in str(err.value)
    assert err.value.status == 409
    core.cancel("c19", 62.0)
    core.submit(_body("dup", 1, k=9, port0=30000), 63.0)
    assert core.state["dup"] == "active"
