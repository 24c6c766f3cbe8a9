"""Coflows whose flows come over time (open coflows), flows matched by source port or
UDP, and flows of unknown size (controller side; ``docs/api.md``).

In-process: the Ryu app built with fake datapaths (as in ``test_controller_app.py``),
REST called through its WSGI app with webob; the database is a temporary file where
a restart is tested.
"""

import json
from types import SimpleNamespace

import pytest
from webob import Request

import rapier_app.controller as controller_pkg
from rapier_app.controller import ofmsgs
from rapier_app.controller.matches import Match, MatchIndex, keys_overlapping, overlaps
from rapier_app.controller.reconcile import diff_table, entry_from_stats
from rapier_app.controller.settings import Settings
from rapier_app.core.estimate import FLOOR_BYTES
from rapier_app.controller.stack import ofproto_v1_3_parser as parser
from test_controller_fakes import FakeDatapath

MB = 1 << 20
HDR = 66
P = "/rapier/v1/coflows"


def build(db=":memory:", **kw):
    opts = dict(scheduler="rapier", topology="leafspine:3,3,3",
                agent_url="unix:/nonexistent/{host}.sock", state_db=db)
    opts.update(kw)
    app = controller_pkg.RapierController(rapier_settings=Settings(**opts))
    return app


def call(app, method, path, body=None):
    raw = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    resp = Request.blank(path, method=method, body=raw or b"",
                         headers={"Content-Type": "application/json"}).get_response(app.wsgi)
    assert resp.content_type == "application/json"
    return resp.status_int, json.loads(resp.body)


def connect_all(app):
    dps = {}
    for s in app.core.topology.switches:
        dp = FakeDatapath(app.core.topology.graph.nodes[s]["dpid"])
        app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
        dps[dp.id] = dp
    return dps


def flow_mods(dps, cookie):
    """The FlowMods carrying ``cookie`` sent to the fake switches, re-parsed from
    their bytes (what a switch would read)."""
    out = []
    for dp in dps.values():
        for m in dp.sent:
            if isinstance(m, parser.OFPFlowMod) and m.cookie == cookie:
                match, _ = parser.OFPMatch.parser(bytes(m.buf), 48), None
                out.append((dp.id, m, match))
    return out


# ---------------------------------------------------------------------------
# the life of an open coflow
# ---------------------------------------------------------------------------
def test_open_add_rules_close_done():
    app = build()
    dps = connect_all(app)
    st, v = call(app, "POST", P, {"id": "s1", "open": True, "name": "sort shuffle 1"})
    assert st == 201 and v["open"] is True and v["name"] == "sort shuffle 1"
    assert v["flows"] == [] and v["state"] == "active" and v["coflow"]["open"] is True
    st, v = call(app, "POST", P + "/s1/flows", {"flows": [
        {"src": "h1", "dst": "10.0.0.5", "src_port": 7000, "size_bytes": 8 * MB}]})
    assert st == 201 and v["id"] == "s1" and v["open"] is True
    (fv,) = v["flows"]
    assert (fv["index"], fv["flow_id"], fv["src"], fv["dst"], fv["protocol"], fv["src_port"],
            fv["dst_port"], fv["size_bytes"]) == (0, "s1/0", "h1", "h5", "tcp", 7000, None,
                                                  8 * MB)
    # OpenFlow: exactly ipv4 src/dst, TCP and the source port, on every hop
    cookie = app.core.tracks["s1/0"].cookie
    rules = app.core.desired.of_flow("s1/0")
    assert len(rules) >= 2
    for r in rules:
        assert r.match == (("eth_type", 0x0800), ("ip_proto", 6), ("ipv4_src", "10.0.0.1"),
                           ("ipv4_dst", "10.0.0.5"), ("tcp_src", 7000))
    sent = flow_mods(dps, cookie)
    assert len(sent) == len(rules)
    for _, _, match in sent:
        assert match["tcp_src"] == 7000 and "tcp_dst" not in match
        assert match["ipv4_src"] == "10.0.0.1" and match["ip_proto"] == 6
    # the agent of h1 gets a limit matched on the source port
    (lim,) = app.core._pushes.limits["h1"]
    assert (lim["flow_id"], lim["proto"], lim["src_port"], lim["dst_port"]) == \
        ("s1/0", "tcp", 7000, None)
    assert lim["rate_bps"] > 0
    # a second flow, by both ports
    st, v = call(app, "POST", P + "/s1/flows", {"flows": [
        {"src": "h2", "dst": "h5", "src_port": 7000, "dst_port": 40001}]})
    assert st == 201 and v["flows"][0]["index"] == 1
    # done reports: the coflow stays active while open
    st, d = call(app, "POST", P + "/s1/flows/0/done")
    assert st == 200 and d["finished"] is True and d["coflow"]["state"] == "active"
    assert app.core.desired.of_flow("s1/0") == []
    st, d = call(app, "POST", P + "/s1/flows/1/done")
    assert d["finished"] is True and d["coflow"]["state"] == "active"
    # close: every flow is done, so it completes now
    st, v = call(app, "POST", P + "/s1/close", {})
    assert st == 200 and v["open"] is False and v["state"] == "done"
    assert v["finish_s"] == max(f["finish_s"] for f in v["flows"])
    assert call(app, "POST", P + "/s1/close")[0] == 200  # idempotent
    st, err = call(app, "POST", P + "/s1/flows", {"flows": [
        {"src": "h1", "dst": "h5", "dst_port": 1}]})
    assert st == 409 and err["field"] == "id" and "done" in err["error"]


def test_closed_coflow_finishes_at_its_last_done():
    app = build()
    call(app, "POST", P, {"id": "s", "open": True, "flows": [
        {"src": "h1", "dst": "h5", "dst_port": 5001, "size_bytes": MB}]})
    st, v = call(app, "POST", P + "/s/close")
    assert st == 200 and v["open"] is False and v["state"] == "active"
    st, err = call(app, "POST", P + "/s/flows", {"flows": [
        {"src": "h1", "dst": "h6", "dst_port": 5001}]})
    assert st == 409 and err["field"] == "id" and "closed" in err["error"]
    st, d = call(app, "POST", P + "/s/flows/0/done")
    assert d["finished"] is True and d["coflow"]["state"] == "done"


def test_closed_by_default_and_unknown_coflow():
    app = build()
    call(app, "POST", P, {"id": "c", "flows": [{"src": "h1", "dst": "h5", "dst_port": 5001,
                                                 "size_bytes": MB}]})
    st, err = call(app, "POST", P + "/c/flows", {"flows": [
        {"src": "h1", "dst": "h6", "dst_port": 5001}]})
    assert st == 409 and err["field"] == "id" and "closed" in err["error"]
    assert call(app, "GET", P + "/c")[1]["open"] is False
    for path in ("/nope/flows", "/nope/close"):
        st, err = call(app, "POST", P + path, {"flows": [{"src": "h1", "dst": "h5",
                                                          "dst_port": 1}]}
                       if path.endswith("flows") else None)
        assert st == 404 and err["field"] == "id"
    assert call(app, "GET", P + "/c/flows")[0] == 405
    assert call(app, "POST", P + "/c/close", {"x": 1})[0] == 400


def test_overlap_is_409_naming_both_and_adds_nothing():
    app = build()
    call(app, "POST", P, {"id": "a", "flows": [{"src": "h1", "dst": "h5", "dst_port": 5001,
                                                 "size_bytes": MB}]})
    call(app, "POST", P, {"id": "s", "open": True})
    n_sched = app.core.schedule_count
    body = {"flows": [{"src": "h2", "dst": "h5", "src_port": 7000},
                      {"src": "h1", "dst": "h5", "src_port": 40000}]}  # 2nd: any dst port
    st, err = call(app, "POST", P + "/s/flows", body)
    assert st == 409 and err["field"] == "flows[1]"
    assert "s/1" in err["error"] and "a/0" in err["error"]
    assert call(app, "GET", P + "/s")[1]["flows"] == []  # nothing added
    assert app.core.schedule_count == n_sched
    # another source port of the same pair is fine; the same match is not
    st, v = call(app, "POST", P + "/s/flows", {"flows": [
        {"src": "h1", "dst": "h5", "src_port": 40000, "dst_port": 5002}]})
    assert st == 201 and v["flows"][0]["index"] == 0
    st, err = call(app, "POST", P + "/s/flows", {"flows": [
        {"src": "h1", "dst": "h5", "dst_port": 5002}]})
    assert st == 409 and "s/1" in err["error"] and "s/0" in err["error"]
    # UDP never overlaps TCP; a finished flow frees its match
    st, _ = call(app, "POST", P + "/s/flows", {"flows": [
        {"src": "h1", "dst": "h5", "dst_port": 5001, "protocol": "udp"}]})
    assert st == 201
    call(app, "POST", P + "/a/flows/0/done")
    st, v = call(app, "POST", P + "/s/flows", {"flows": [
        {"src": "h1", "dst": "h5", "dst_port": 5001}]})
    assert st == 201 and v["flows"][0]["index"] == 2  # indices never reused
    # POST /coflows answers 409 too for a flow overlapping a live one
    st, err = call(app, "POST", P, {"flows": [{"src": "h1", "dst": "h5", "dst_port": 5001,
                                               "size_bytes": 1}]})
    assert st == 409 and err["field"] == "flows[0]" and "s/2" in err["error"]


@pytest.mark.parametrize("path,body,field", [
    ("", {"flows": [{"src": "h1", "dst": "h5", "size_bytes": 1}]}, "flows[0].dst_port"),
    ("", {"flows": [{"src": "h1", "dst": "h5", "dst_port": 1, "protocol": "icmp"}]},
     "flows[0].protocol"),
    ("", {"flows": [{"src": "h1", "dst": "h5", "src_port": 0}]}, "flows[0].src_port"),
    ("", {"flows": [{"src": "h1", "dst": "h5", "src_port": True}]}, "flows[0].src_port"),
    ("", {"flows": [{"src": "h1", "dst": "h5", "dst_port": 70000}]}, "flows[0].dst_port"),
    ("", {"flows": [{"src": "h1", "dst": "h5", "dst_port": 1, "size_bytes": 0}]},
     "flows[0].size_bytes"),
    ("", {"flows": [{"dst": "h5", "dst_port": 1}]}, "flows[0].src"),
    ("", {"flows": []}, "flows"),
    ("", {"open": "yes"}, "open"),
    ("", {"open": True, "name": "x" * 65}, "name"),
    ("", {"open": True, "name": 3}, "name"),
    ("", {"open": True, "flows": [{"src": "h1", "dst": "h5", "src_port": 7},
                                  {"src": "h1", "dst": "h5", "src_port": 7,
                                   "dst_port": 9}]}, "flows[1]"),
    ("/o/flows", {"flows": []}, "flows"),
    ("/o/flows", {}, "flows"),
    ("/o/flows", {"flows": [{"src": "h1", "dst": "h5", "dst_port": 1}], "id": "x"}, "id"),
    ("/o/flows", {"flows": [{"src": "h1", "dst": "h99", "dst_port": 1}]}, "flows[0].dst"),
    ("/o/flows", {"flows": [{"src": "h1", "dst": "h5", "dst_port": 1, "size_bytes": "1"}]},
     "flows[0].size_bytes"),
    ("/o/flows", b"{", "body"),
])
def test_bad_input_is_400_naming_the_field(path, body, field):
    app = build()
    call(app, "POST", P, {"id": "o", "open": True})
    before = call(app, "GET", P)[1]
    st, err = call(app, "POST", P + path, body)
    assert st == 400 and err["field"] == field and err["error"].startswith(field + ":")
    assert call(app, "GET", P)[1] == before


def test_flow_cap_counts_the_whole_coflow():
    app = build(max_flows_per_coflow=2)
    call(app, "POST", P, {"id": "o", "open": True, "flows": [
        {"src": "h1", "dst": "h5", "dst_port": 1}]})
    st, err = call(app, "POST", P + "/o/flows", {"flows": [
        {"src": "h1", "dst": "h5", "dst_port": 2}, {"src": "h1", "dst": "h5", "dst_port": 3}]})
    assert st == 413 and err["field"] == "flows"
    assert call(app, "POST", P + "/o/flows", {"flows": [
        {"src": "h1", "dst": "h5", "dst_port": 2}]})[0] == 201


# ---------------------------------------------------------------------------
# restart
# ---------------------------------------------------------------------------
def test_restart_keeps_open_coflows_flows_and_the_closed_flag(tmp_path):
    db = str(tmp_path / "c.sqlite3")
    app = build(db)
    call(app, "POST", P, {"id": "o", "open": True, "name": "job 7"})
    call(app, "POST", P + "/o/flows", {"flows": [
        {"src": "h1", "dst": "h5", "src_port": 7000},
        {"src": "h2", "dst": "h5", "dst_port": 6000, "protocol": "udp", "size_bytes": MB}]})
    call(app, "POST", P, {"id": "k", "open": True, "flows": [
        {"src": "h3", "dst": "h6", "dst_port": 5001, "size_bytes": MB}]})
    call(app, "POST", P + "/k/close")
    before = call(app, "GET", P + "/o")[1]
    app.core.store.close()

    app = build(db)
    v = call(app, "GET", P + "/o")[1]
    assert v["open"] is True and v["name"] == "job 7" and v["state"] == "active"
    for key in ("flow_id", "index", "src", "dst", "protocol", "src_port", "dst_port",
                "size_bytes", "size_known", "estimate_bytes"):
        assert [f[key] for f in v["flows"]] == [f[key] for f in before["flows"]], key
    assert [f["src_port"] for f in v["flows"]] == [7000, None]
    assert [f["protocol"] for f in v["flows"]] == ["tcp", "udp"]
    assert v["flows"][0]["size_bytes"] is None and v["flows"][0]["estimate_bytes"] == FLOOR_BYTES
    assert call(app, "GET", P + "/k")[1]["open"] is False
    # rules of the restored flows match as before
    (r, *_) = app.core.desired.of_flow("o/1")
    assert ("udp_dst", 6000) in r.match and ("ip_proto", 17) in r.match
    # the restored flows still block overlapping matches; more flows get new indices
    st, err = call(app, "POST", P + "/o/flows", {"flows": [
        {"src": "h1", "dst": "h5", "src_port": 7000, "dst_port": 80}]})
    assert st == 409 and "o/0" in err["error"] and "o/2" in err["error"]
    st, v = call(app, "POST", P + "/o/flows", {"flows": [
        {"src": "h1", "dst": "h5", "src_port": 7001}]})
    assert st == 201 and v["flows"][0]["index"] == 2
    assert call(app, "POST", P + "/k/flows", {"flows": [
        {"src": "h1", "dst": "h4", "dst_port": 1}]})[0] == 409
    call(app, "POST", P + "/o/close")
    app.core.store.close()
    app = build(db)
    v = call(app, "GET", P + "/o")[1]
    assert v["open"] is False and len(v["flows"]) == 3
    for i in range(3):
        call(app, "POST", P + f"/o/flows/{i}/done")
    assert call(app, "GET", P + "/o")[1]["state"] == "done"


# ---------------------------------------------------------------------------
# unknown sizes
# ---------------------------------------------------------------------------
def test_unknown_size_flow_gets_rules_limit_and_a_growing_estimate(tmp_path):
    db = str(tmp_path / "c.sqlite3")
    app = build(db, idle_finish_s=1.0)
    connect_all(app)
    st, v = call(app, "POST", P, {"id": "u", "open": True, "flows": [
        {"src": "h1", "dst": "h5", "src_port": 7000}]})
    fv = v["flows"][0]
    assert st == 201 and fv["size_bytes"] is None and fv["size_known"] is False
    assert fv["estimate_bytes"] == FLOOR_BYTES == 10_000_000
    core = app.core
    f = core.coflows["u"].flows[0]
    assert f.spec.size_bytes == FLOOR_BYTES  # what the scheduler is given
    assert len(core.desired.of_flow("u/0")) >= 2
    (lim,) = core._pushes.limits["h1"]
    assert lim["src_port"] == 7000 and lim["rate_bps"] > 0
    tr = core.tracks["u/0"]
    n = core.schedule_count
    # counters below the estimate: nothing changes
    core.apply_flow_stats(tr.first_dpid, [(tr.cookie, 5_000_000 + 100 * HDR, 100)], 1.0)
    assert f.spec.size_bytes == FLOOR_BYTES and core.schedule_count == n
    # past it: the estimate doubles, the scheduler decides again, the database has it
    acts = core.apply_flow_stats(tr.first_dpid, [(tr.cookie, 12_000_000 + 200 * HDR, 200)], 2.0)
    assert f.spec.size_bytes == 2 * FLOOR_BYTES and core.schedule_count == n + 1
    assert not acts.finished and not f.done
    # RAPIER planned on the new estimate, not on arrays cached with the old one
    assert list(core.scheduler._carr["u"].sizes) == [2 * FLOOR_BYTES]
    assert call(app, "GET", P + "/u")[1]["flows"][0]["estimate_bytes"] == 2 * FLOOR_BYTES
    assert core.store.get("u").flows[0].size_bytes == 2 * FLOOR_BYTES
    # way past it (two doublings at once); never finished by the estimate
    core.apply_flow_stats(tr.first_dpid, [(tr.cookie, 45_000_000 + 400 * HDR, 400)], 3.0)
    assert f.spec.size_bytes == 8 * FLOOR_BYTES and not f.done
    # idle counters finish it: its size becomes the bytes counted
    assert not core.check_idle(3.5).finished
    acts = core.check_idle(4.0)
    assert acts.finished == ["u/0"] and f.finish_s == 3.0
    v = call(app, "GET", P + "/u")[1]
    assert v["flows"][0]["size_bytes"] == 45_000_000 and v["flows"][0]["estimate_bytes"] is None
    assert v["state"] == "active"  # open: waits for its close
    assert call(app, "POST", P + "/u/close")[1]["state"] == "done"
    assert core.store.get("u").flows[0].size_bytes == 45_000_000


def test_known_siblings_inform_the_first_estimate():
    app = build()
    call(app, "POST", P, {"id": "m", "open": True, "flows": [
        {"src": "h1", "dst": "h5", "dst_port": 1, "size_bytes": 40 * MB},
        {"src": "h2", "dst": "h5", "dst_port": 1, "size_bytes": 20 * MB}]})
    st, v = call(app, "POST", P + "/m/flows", {"flows": [
        {"src": "h3", "dst": "h5", "dst_port": 1}]})
    assert v["flows"][0]["estimate_bytes"] == 30 * MB


# ---------------------------------------------------------------------------
# matches: index, reconciliation, flow-removed
# ---------------------------------------------------------------------------
def test_match_index_agrees_with_pairwise_overlap():
    import itertools

    ports = [None, 1, 2]
    ms = [Match(s, "h5", p, sp, dp) for s in ("h1", "h2") for p in ("tcp", "udp")
          for sp, dp in itertools.product(ports, ports) if (sp, dp) != (None, None)]
    for live in itertools.combinations(range(len(ms)), 3):
        idx = MatchIndex(lambda k: True)
        for k in live:
            idx.add(k, ms[k])
        for m in ms:
            want = {k for k in live if overlaps(m, ms[k])}
            got = idx.find(m)
            assert (got is None) == (not want) and (got is None or got in want)
            assert keys_overlapping(idx, m) == want


@pytest.mark.parametrize("flow,fields", [
    ({"src_port": 7000}, {"tcp_src": 7000}),
    ({"dst_port": 5001}, {"tcp_dst": 5001}),
    ({"src_port": 7000, "dst_port": 5001}, {"tcp_src": 7000, "tcp_dst": 5001}),
    ({"src_port": 53, "protocol": "udp"}, {"udp_src": 53}),
    ({"dst_port": 53, "src_port": 9, "protocol": "udp"}, {"udp_dst": 53, "udp_src": 9}),
])
def test_switch_tables_read_back_reconcile_without_repairs(flow, fields):
    """The rules as a switch reports them (OFPMatch serialised and parsed back, any
    field order) compare equal to what the controller wants: no false repairs; the
    flow-removed path maps the switch's match back to the rule."""
    app = build()
    call(app, "POST", P, {"id": "r", "open": True, "flows": [
        dict(src="h1", dst="h5", size_bytes=MB, **flow)]})
    core = app.core
    for dpid in sorted({r.dpid for r in core.desired.of_flow("r/0")}):
        have = []
        for r in core.switch_want(dpid):
            buf = bytearray()
            parser.OFPMatch(**r.match_dict()).serialize(buf, 0)
            match = parser.OFPMatch.parser(bytes(buf), 0)
            acts = [parser.OFPActionOutput(p) if k == "output" else
                    parser.OFPActionGroup(p) if k == "group" else
                    parser.OFPActionOutput(0xFFFFFFFD) for k, p in r.actions]
            have.append(entry_from_stats(SimpleNamespace(
                priority=r.priority, cookie=r.cookie, match=match,
                instructions=[SimpleNamespace(actions=acts)])))
            if r.flow_id == "r/0":
                assert {k: v for k, v in match.items() if k in fields} == fields
                assert ofmsgs.match_tuple(match) == r.match
        rep = diff_table(dpid, core.switch_want(dpid), have)
        assert rep.differences == 0, rep


@pytest.mark.parametrize("flow,want,absent", [
    ({"src_port": 7000}, ["match", "ip", "sport", "7000", "0xffff"], "dport"),
    ({"dst_port": 5001}, ["match", "ip", "dport", "5001", "0xffff"], "sport"),
    ({"src_port": 53, "protocol": "udp"}, ["match", "ip", "protocol", "17", "0xff"], "dport"),
])
def test_agent_filters_match_exactly_the_ports_pushed(flow, want, absent):
    """The controller's push entry, parsed by the agent, gives a u32 filter on the
    host pair, the protocol and exactly the ports of the flow."""
    from enforcement import tc

    app = build()
    call(app, "POST", P, {"id": "g", "open": True, "flows": [
        dict(src="h1", dst="h5", size_bytes=MB, **flow)]})
    (entry,) = app.core._pushes.limits["h1"]
    (lim,) = tc.parse_flow_set({"flows": [entry]})
    cmd = tc.filter_add_command("h1-eth0", 16, lim)
    text = " ".join(cmd)
    assert " ".join(want) in text and absent not in text
    assert "match ip src 10.0.0.1/32" in text and "match ip dst 10.0.0.5/32" in text
    for port_field, value in (("sport", flow.get("src_port")), ("dport", flow.get("dst_port"))):
        if value is not None:
            assert f"match ip {port_field} {value} 0xffff" in text


def test_cancelled_open_coflow_closes_after_it_left_memory(tmp_path):
    app = build(str(tmp_path / "c.sqlite3"), retention_s=1.0)
    call(app, "POST", P, {"id": "x", "open": True, "name": "n", "flows": [
        {"src": "h1", "dst": "h5", "dst_port": 5001}]})
    assert call(app, "DELETE", P + "/x")[0] == 200
    assert len(app.core.match_index) == 1
    assert app.core.prune(app.now() + 10.0) == ["x"]
    assert len(app.core.match_index) == 0  # pruned flows leave the index too
    st, v = call(app, "POST", P + "/x/close")
    assert st == 200 and v["state"] == "cancelled" and v["open"] is False
    assert v["name"] == "n" and v["flows"][0]["size_bytes"] is None
    assert call(app, "POST", P + "/x/flows", {"flows": [
        {"src": "h1", "dst": "h5", "dst_port": 5002}]})[0] == 409


def _sizes_seen(sched, cid):
    """The flow sizes a scheduler cached for coflow ``cid`` (None: nothing cached)."""
    inner = getattr(sched, "inner", sched)
    while getattr(inner, "inner", None) is not None:
        inner = inner.inner
    e = getattr(inner, "_carr", {}).get(cid)
    if e is not None:
        return sorted(e.sizes.tolist())
    e = getattr(inner, "_coflow_cache", {}).get(cid)
    if e is not None and e[1] is not None and e[1][5] is not None:
        return sorted(e[1][5].tolist())
    return None


@pytest.mark.parametrize("scheduler", ["rapier", "baseline", "routing-only",
                                       "scheduling-only", "sincronia", "aalo", "philae",
                                       "fifo", "optas"])
def test_every_scheduler_takes_flows_added_and_estimates_grown(scheduler):
    """Flows added to a coflow the scheduler already planned, flows finishing between
    adds, and an estimate that grows: every decision covers every active flow, no
    scheduler fails (a failure would put the coflow on default forwarding), and
    caches of sizes follow the estimate."""
    app = build(scheduler=scheduler, agent_url="")
    core = app.core
    call(app, "POST", P, {"id": "o", "open": True, "flows": [
        {"src": "h1", "dst": "h5", "src_port": 7000, "size_bytes": 4 * MB},
        {"src": "h2", "dst": "h5", "src_port": 7000}]})
    call(app, "POST", P, {"id": "k", "flows": [
        {"src": "h3", "dst": "h6", "dst_port": 5001, "size_bytes": 8 * MB}]})

    def check():
        live = {f.flow_id for c in core.active() for f in c.active_flows()}
        assert core.fallback == {} and core.errors == [], (core.fallback, core.errors)
        assert live <= set(core.last_schedule.allocations), live
        for fid in live:
            assert core.desired.of_flow(fid), fid  # every live flow has its rules

    check()
    for i, src in enumerate(("h3", "h4", "h6")):
        st, _ = call(app, "POST", P + "/o/flows", {"flows": [
            {"src": src, "dst": "h5", "src_port": 7000, "size_bytes": (i + 1) * MB}]})
        assert st == 201
        check()
        if i == 0:
            call(app, "POST", P + "/o/flows/0/done")
            check()
    tr = core.tracks["o/1"]
    core.apply_flow_stats(tr.first_dpid, [(tr.cookie, 11_000_000 + 100 * HDR, 100)], 5.0)
    check()
    assert core.coflows["o"].flows[1].spec.size_bytes == 2 * FLOOR_BYTES
    seen = _sizes_seen(core.scheduler, "o")
    if seen is not None:
        assert 2 * FLOOR_BYTES in seen, seen
    for i in range(1, 5):
        call(app, "POST", P + f"/o/flows/{i}/done")
        check()
    assert call(app, "POST", P + "/o/close")[1]["state"] == "done"


def test_a_completion_before_the_add_is_decided_decides_it():
    """``reschedule_on = coflow`` re-applies the last decision at a flow completion;
    not when flows were added since it (the decision worker has not run yet): the
    added flow would get no path and the floor rate."""
    app = build(reschedule_on="coflow", agent_url="")
    core = app.core
    call(app, "POST", P, {"id": "o", "open": True, "flows": [
        {"src": "h1", "dst": "h5", "dst_port": 1, "size_bytes": MB},
        {"src": "h2", "dst": "h5", "dst_port": 1, "size_bytes": MB}]})
    n = core.schedule_count
    (f,), _ = core.add_flows("o", {"flows": [{"src": "h3", "dst": "h6", "dst_port": 1}]},
                             app.now(), schedule=False)
    assert core.adds_pending and core.schedule_count == n
    core.report_flow_done("o", 0, app.now())
    assert core.schedule_count == n + 1 and not core.adds_pending
    assert f.flow_id in core.last_schedule.allocations and f.rate_bps > 0
    assert core.decide(app.now()).rules == [] and core.schedule_count == n + 1
