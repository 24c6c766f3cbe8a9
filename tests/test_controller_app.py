"""Tests of the Ryu shell, the REST API, the OpenFlow messages and the agent client.

Everything runs in-process without root, OVS or a running Ryu: the WSGI app is
called with webob ``Request.blank``; OpenFlow messages are built with
``ryu.ofproto.ofproto_v1_3_parser`` against a fake datapath that records what is
sent; the agent client talks to a throw-away HTTP server on a Unix socket.
"""

import http.server
import json
import os
import socketserver
import struct
import tempfile
import threading
from types import SimpleNamespace

import pytest
from webob import Request

import rapier_app.controller as controller_pkg
from rapier_app.controller import agent_client, ofmsgs
from rapier_app.controller.pushes import AgentPush
from rapier_app.controller.rules import (COOKIE_TAG, COOKIE_TAG_MASK, FlowRule, GroupRule,
                                         cookie_for)
from rapier_app.controller.settings import Settings
from rapier_app.controller.stack import ofproto_v1_3, ofproto_v1_3_parser
from test_controller_fakes import FakeDatapath

MB = 1 << 20


def flow(src="h1", dst="h5", size=50 * MB, port=5001):
    return {"src": src, "dst": dst, "size_bytes": size, "dst_port": port}


@pytest.fixture
def app():
    a = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler="rapier", topology="leafspine:3,3,3", agent_url=""))
    return a


def call(app, method, path, body=None):
    raw = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = Request.blank(path, method=method, body=raw or b"",
                        headers={"Content-Type": "application/json"})
    resp = req.get_response(app.wsgi)
    assert resp.content_type == "application/json"
    return resp.status_int, json.loads(resp.body)


def connect_all(app):
    dps = {}
    for s in app.core.topology.switches:
        dpid = app.core.topology.graph.nodes[s]["dpid"]
        dp = FakeDatapath(dpid)
        app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
        dps[s] = dp
    return dps


# ---------------------------------------------------------------------------
# Loading as ryu-manager does
# ---------------------------------------------------------------------------
def test_ryu_manager_finds_the_app_in_the_package():
    from rapier_app.controller.stack import AppManager, BaseApp as RyuApp

    cls = AppManager().load_app("rapier_app.controller")
    assert cls is controller_pkg.RapierController and issubclass(cls, RyuApp)
    assert cls.OFP_VERSIONS == [ofproto_v1_3.OFP_VERSION]


def test_oslo_options_have_the_documented_defaults():
    from rapier_app.controller.ryuconf import CONF, settings_from_conf

    CONF([], project="ryu", default_config_files=[])
    s = settings_from_conf(CONF)
    assert s == Settings()
    conf = os.path.join(os.path.dirname(__file__), "..", "configs", "rapier.conf")
    CONF(["--config-file", conf], project="ryu", default_config_files=[])
    assert settings_from_conf(CONF) == Settings()  # the shipped file states the defaults
    CONF([], project="ryu", default_config_files=[])


# ---------------------------------------------------------------------------
# REST
# ---------------------------------------------------------------------------
def test_post_get_list_delete(app):
    st, body = call(app, "POST", "/rapier/v1/coflows",
                    {"flows": [flow(), flow("10.0.0.2", "h6", 1000, 5002)], "weight": 2})
    assert st == 201 and body["id"] == "c1"
    st, c = call(app, "GET", "/rapier/v1/coflows/c1")
    assert st == 200 and c["state"] == "active" and c["weight"] == 2.0
    f0, f1 = c["flows"]
    assert (f0["src"], f0["dst"], f0["dst_port"], f0["size_bytes"]) == ("h1", "h5", 5001, 50 * MB)
    assert f1["src"] == "h2" and f1["src_ip"] == "10.0.0.2"
    assert f0["path"][0] == "h1" and f0["path"][-1] == "h5" and len(f0["path"]) == 5
    assert 0 < f0["rate_bps"] <= 1e9 and f0["bytes_sent"] == 0 and f0["finish_s"] is None
    st, body = call(app, "POST", "/rapier/v1/coflows", {"flows": [flow("h3", "h9", 10, 7)],
                                                        "id": "job-7"})
    assert (st, body["id"]) == (201, "job-7")
    st, lst = call(app, "GET", "/rapier/v1/coflows")
    assert [c["id"] for c in lst["coflows"]] == ["c1", "job-7"]
    st, c = call(app, "DELETE", "/rapier/v1/coflows/c1")
    assert st == 200 and c["state"] == "cancelled"
    st, err = call(app, "DELETE", "/rapier/v1/coflows/c1")
    assert st == 400 and err["field"] == "id"
    st, sched = call(app, "GET", "/rapier/v1/schedule")
    assert st == 200 and list(sched["allocations"]) == ["job-7/0"]


@pytest.mark.parametrize("method,path,body,status,field", [
    ("POST", "/rapier/v1/coflows", b"{oops", 400, "body"),
    ("POST", "/rapier/v1/coflows", {"flows": [flow(src="h42")]}, 400, "flows[0].src"),
    ("POST", "/rapier/v1/coflows", {"flows": [flow(size=0)]}, 400, "flows[0].size_bytes"),
    ("POST", "/rapier/v1/coflows", {"flows": [flow(size=-1)]}, 400, "flows[0].size_bytes"),
    ("POST", "/rapier/v1/coflows", {"flows": [flow(), flow()]}, 400, "flows[1]"),
    ("GET", "/rapier/v1/coflows/zz", None, 404, "id"),
    ("DELETE", "/rapier/v1/coflows/zz", None, 404, "id"),
])
def test_bad_requests_answer_json_errors_and_change_nothing(app, method, path, body, status,
                                                            field):
    call(app, "POST", "/rapier/v1/coflows", {"flows": [flow(port=9000)], "id": "keep"})
    before = call(app, "GET", "/rapier/v1/coflows")[1]
    sched_count = app.core.schedule_count
    st, err = call(app, method, path, body)
    assert st == status and err["field"] == field and err["error"].startswith(field)
    assert call(app, "GET", "/rapier/v1/coflows")[1] == before
    assert app.core.schedule_count == sched_count


def test_duplicate_of_an_active_flow_and_duplicate_id(app):
    call(app, "POST", "/rapier/v1/coflows", {"flows": [flow()], "id": "a"})
    st, err = call(app, "POST", "/rapier/v1/coflows", {"flows": [flow(size=5)]})
    assert st == 409 and err["field"] == "flows[0]" and "a/0" in err["error"]
    st, err = call(app, "POST", "/rapier/v1/coflows", {"flows": [flow(port=1)], "id": "a"})
    assert st == 400 and err["field"] == "id"


def test_unknown_route_is_404(app):
    assert Request.blank("/rapier/v2/coflows").get_response(app.wsgi).status_int == 404


def test_topology_and_health(app):
    st, t = call(app, "GET", "/rapier/v1/topology")
    assert st == 200 and t["spec"] == "leafspine:3,3,3"
    assert len(t["hosts"]) == 9 and len(t["links"]) == 36
    h1 = t["hosts"][0]
    assert (h1["name"], h1["switch"], h1["dpid"], h1["port"]) == ("h1", "l1", 4, 1)
    assert t["observed"]["missing"] == ["s1", "s2", "s3", "l1", "l2", "l3"]
    connect_all(app)
    st, t = call(app, "GET", "/rapier/v1/topology")
    assert t["observed"]["missing"] == [] and len(t["observed"]["connected"]) == 6
    st, h = call(app, "GET", "/rapier/v1/health")
    # the start's phases, in seconds after the process started, in the order reached
    phases = h.pop("startup")["phases_s"]
    # (the phase marks are the process's: an earlier test in this process may have
    # reached later ones, e.g. first_flow_done, before this app's core)
    assert [k for k in phases if k in ("imports", "core", "kernels")] == \
        ["imports", "core", "kernels"], phases
    assert 0 < phases["imports"] <= phases["core"] <= phases["all_switches"], phases
    assert h == {"ok": True, "scheduler": "rapier", "topology": "leafspine:3,3,3",
                 "switches_connected": 6, "switches_configured": 6, "status": "ok",
                 "fabric": "declared", "hosts": 9, "links_missing": [], "differences": []}


# ---------------------------------------------------------------------------
# The Ryu shell against fake datapaths
# ---------------------------------------------------------------------------
def test_switch_connect_clears_then_installs_defaults(app):
    dps = connect_all(app)
    # First its counters (a restarted controller's flows may have finished meanwhile:
    # their rules' counters tell, tests/test_controller_restart_recovery.py), then
    # the clear.
    stats_req, *sent = dps["l1"].sent
    assert isinstance(stats_req, ofproto_v1_3_parser.OFPFlowStatsRequest)
    assert (stats_req.cookie, stats_req.cookie_mask) == (COOKIE_TAG, COOKIE_TAG_MASK)
    assert isinstance(sent[0], ofproto_v1_3_parser.OFPFlowMod)
    assert sent[0].command == ofproto_v1_3.OFPFC_DELETE and sent[0].table_id == ofproto_v1_3.OFPTT_ALL
    # Only our rules go (Ryu's LLDP rule for --observe-links has cookie 0).
    assert (sent[0].cookie, sent[0].cookie_mask) == (COOKIE_TAG, COOKIE_TAG_MASK)
    assert isinstance(sent[1], ofproto_v1_3_parser.OFPGroupMod)
    assert sent[1].command == ofproto_v1_3.OFPGC_DELETE
    groups = [m for m in sent[2:] if isinstance(m, ofproto_v1_3_parser.OFPGroupMod)]
    assert len(groups) == 6 and all(g.type == ofproto_v1_3.OFPGT_SELECT for g in groups)
    assert sorted(b.actions[0].port for b in groups[0].buckets) == [4, 5, 6]
    flows = [m for m in sent[2:] if isinstance(m, ofproto_v1_3_parser.OFPFlowMod)]
    assert len(flows) == 1 + 9  # ARP + one per destination host
    assert isinstance(sent[-1], ofproto_v1_3_parser.OFPBarrierRequest)
    # Unknown switch: no rules, a mismatch.
    stranger = FakeDatapath(0x99)
    app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=stranger)))
    assert stranger.sent == []
    assert any("0x99" in m for m in app.observed()["mismatches"])


def test_post_sends_flow_mods_and_stats_complete_the_coflow(app):
    dps = connect_all(app)
    for dp in dps.values():
        dp.sent.clear()
    st, body = call(app, "POST", "/rapier/v1/coflows", {"flows": [flow(size=1448 * 100)]})
    assert st == 201
    path = call(app, "GET", "/rapier/v1/coflows/c1")[1]["flows"][0]["path"]
    for s in path[1:-1]:
        # One writer per switch: the flow mod, then a barrier (issue 14).
        fm, barrier = dps[s].sent
        assert isinstance(barrier, ofproto_v1_3_parser.OFPBarrierRequest)
        assert fm.command == ofproto_v1_3.OFPFC_ADD and fm.priority == 100
        assert fm.idle_timeout == 300 and fm.flags == ofproto_v1_3.OFPFF_SEND_FLOW_REM
        assert fm.cookie == cookie_for(1)
        assert (fm.match["ipv4_src"], fm.match["ipv4_dst"], fm.match["tcp_dst"],
                fm.match["ip_proto"]) == ("10.0.0.1", "10.0.0.5", 5001, 6)
        nxt = path[path.index(s) + 1]
        assert fm.instructions[0].actions[0].port == app.core.topology.graph.edges[s, nxt]["port"]
    for s in set(dps) - set(path):
        assert dps[s].sent == []
    # The poller asks the first-hop switch for stats of our cookies.
    dps["l1"].sent.clear()
    app.poll_once()
    (req,) = dps["l1"].sent
    assert isinstance(req, ofproto_v1_3_parser.OFPFlowStatsRequest)
    assert (req.cookie, req.cookie_mask) == (COOKIE_TAG, COOKIE_TAG_MASK)
    # A two-part reply: the first part alone changes nothing.
    stat = SimpleNamespace(cookie=cookie_for(1), byte_count=101 * 66 + 100 * 1448,
                           packet_count=101)
    more = SimpleNamespace(datapath=dps["l1"], body=[], flags=ofproto_v1_3.OFPMPF_REPLY_MORE)
    app.flow_stats_reply(SimpleNamespace(msg=more))
    assert call(app, "GET", "/rapier/v1/coflows/c1")[1]["state"] == "active"
    for dp in dps.values():
        dp.sent.clear()
    last = SimpleNamespace(datapath=dps["l1"], body=[stat], flags=0)
    app.flow_stats_reply(SimpleNamespace(msg=last))
    c = call(app, "GET", "/rapier/v1/coflows/c1")[1]
    assert c["state"] == "done" and c["cct_s"] >= 0 and c["flows"][0]["bytes_sent"] == 1448 * 100
    for s in path[1:-1]:
        dels = [m for m in dps[s].sent if isinstance(m, ofproto_v1_3_parser.OFPFlowMod)]
        assert [m.command for m in dels] == [ofproto_v1_3.OFPFC_DELETE_STRICT]


def test_packet_in_arp_is_answered_out_of_the_in_port(app):
    dps = connect_all(app)
    dp = dps["l2"]
    dp.sent.clear()
    req = (b"\xff" * 6 + bytes.fromhex("000000000004") + b"\x08\x06" +
           struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + bytes.fromhex("000000000004") +
           bytes([10, 0, 0, 4]) + b"\x00" * 6 + bytes([10, 0, 0, 9]))
    app.packet_in(SimpleNamespace(msg=SimpleNamespace(datapath=dp, data=req,
                                                      match={"in_port": 1})))
    (po,) = dp.sent
    assert isinstance(po, ofproto_v1_3_parser.OFPPacketOut)
    assert po.actions[0].port == 1
    assert po.data[6:12] == bytes.fromhex("000000000009")
    app.packet_in(SimpleNamespace(msg=SimpleNamespace(datapath=dp, data=b"\x00" * 64,
                                                      match={"in_port": 1})))
    assert len(dp.sent) == 1


def test_topology_discovery_events_are_checked(app):
    g = app.core.topology.graph
    sw = SimpleNamespace(dp=SimpleNamespace(id=4), ports=[SimpleNamespace(port_no=p)
                                                          for p in (1, 2, 3, 4, 5)])
    app.switch_enter(SimpleNamespace(switch=sw))
    assert app.observed()["mismatches"] == ["switch l1 (dpid=0x4): port 6 towards s3 is missing"]
    p = g.edges["l1", "s1"]
    good = SimpleNamespace(src=SimpleNamespace(dpid=4, port_no=p["port"]),
                           dst=SimpleNamespace(dpid=1, port_no=p["peer_port"]))
    app.link_add(SimpleNamespace(link=good))
    assert len(app.observed()["mismatches"]) == 1
    bad = SimpleNamespace(src=SimpleNamespace(dpid=4, port_no=p["port"]),
                          dst=SimpleNamespace(dpid=2, port_no=1))
    app.link_add(SimpleNamespace(link=bad))
    assert app.observed()["mismatches"][-1] == "link l1 -> s2: observed ports 4->1, configured 5->1"


def test_lp_failure_does_not_stop_the_controller(app, monkeypatch):
    dps = connect_all(app)

    def boom(*a, **k):
        raise RuntimeError("LP (4) exceeded its time limit")

    monkeypatch.setattr(app.core.scheduler, "schedule", boom)
    st, body = call(app, "POST", "/rapier/v1/coflows", {"flows": [flow()]})
    assert st == 201
    c = call(app, "GET", "/rapier/v1/coflows/c1")[1]
    assert "time limit" in c["fallback"] and c["flows"][0]["path"] is None
    fm = [m for m in dps["l1"].sent if isinstance(m, ofproto_v1_3_parser.OFPFlowMod)][-1]
    assert fm.match["tcp_dst"] == 5001
    assert isinstance(fm.instructions[0].actions[0], ofproto_v1_3_parser.OFPActionGroup)


# ---------------------------------------------------------------------------
# OpenFlow messages as data
# ---------------------------------------------------------------------------
def test_flow_mod_commands_and_encoding():
    dp = FakeDatapath(7)
    rule = FlowRule(7, 100, (("eth_type", 0x0800), ("ip_proto", 6), ("ipv4_src", "10.0.0.1"),
                             ("ipv4_dst", "10.0.0.5"), ("tcp_dst", 5001)), (("output", 3),),
                    cookie_for(4), "add", "c1/0")
    add = ofmsgs.flow_mod(dp, rule)
    add.set_xid(1)
    add.serialize()
    assert add.command == ofproto_v1_3.OFPFC_ADD and add.buffer_id == ofproto_v1_3.OFP_NO_BUFFER
    assert struct.unpack("!BBHI", bytes(add.buf[:8]))[0:2] == (4, ofproto_v1_3.OFPT_FLOW_MOD)
    assert struct.unpack("!H", bytes(add.buf[2:4]))[0] == len(add.buf)
    mod = ofmsgs.flow_mod(dp, rule.with_command("modify"))
    assert mod.command == ofproto_v1_3.OFPFC_MODIFY_STRICT
    dele = ofmsgs.flow_mod(dp, rule.with_command("delete"))
    assert dele.command == ofproto_v1_3.OFPFC_DELETE_STRICT and dele.instructions == []
    with pytest.raises(ValueError, match="command"):
        ofmsgs.flow_mod(dp, rule.with_command("replace"))
    ctl = ofmsgs.flow_mod(dp, FlowRule(7, 20, (("eth_type", 0x0806),), (("controller", 0),)))
    act = ctl.instructions[0].actions[0]
    assert (act.port, act.max_len) == (ofproto_v1_3.OFPP_CONTROLLER, ofproto_v1_3.OFPCML_NO_BUFFER)
    with pytest.raises(ValueError, match="action"):
        ofmsgs.actions_for(dp, [("flood", 0)])


def test_group_mod_select_buckets():
    dp = FakeDatapath(7)
    gm = ofmsgs.group_mod(dp, GroupRule(7, 12, (4, 5, 6)))
    gm.set_xid(2)
    gm.serialize()
    assert (gm.command, gm.type, gm.group_id) == (ofproto_v1_3.OFPGC_ADD,
                                                  ofproto_v1_3.OFPGT_SELECT, 12)
    assert [(b.weight, b.actions[0].port) for b in gm.buckets] == [(1, 4), (1, 5), (1, 6)]
    # Each bucket watches its port: the switch skips a bucket whose link is down.
    assert [b.watch_port for b in gm.buckets] == [4, 5, 6]
    assert ofmsgs.group_mod(dp, GroupRule(7, 12, (), "delete")).buckets == []


# ---------------------------------------------------------------------------
# Agent client and pusher
# ---------------------------------------------------------------------------
class _Recorder(http.server.BaseHTTPRequestHandler):
    received = []

    def log_message(self, *a):
        pass

    def address_string(self):
        return "unix"

    def _reply(self, status, obj):
        raw = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_PUT(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append((self.path, body))
        if any(f.get("rate_bps", 0) < 0 for f in body["flows"]):
            self._reply(400, {"error": "flows[0].rate_bps: must be >= 0"})
        else:
            self._reply(200, {"flows": body["flows"]})

    def do_GET(self):
        self._reply(200, {"ok": True})


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@pytest.fixture
def unix_agent():
    d = tempfile.mkdtemp()
    path = os.path.join(d, "h1.sock")
    _Recorder.received = []
    srv = _UnixServer(path, _Recorder)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "unix:" + path
    srv.shutdown()
    srv.server_close()
    os.unlink(path)
    os.rmdir(d)


def test_agent_client_over_unix_socket(unix_agent):
    flows = [{"flow_id": "c1/0", "src_ip": "10.0.0.1", "dst_ip": "10.0.0.5", "proto": "tcp",
              "dst_port": 5001, "rate_bps": 250000000}]
    reply = agent_client.put_flows(unix_agent, AgentPush("h1", unix_agent, flows).body())
    assert reply == {"flows": flows}
    assert _Recorder.received == [("/v1/flows", {"flows": flows})]
    assert agent_client.health(unix_agent) is True
    bad = [dict(flows[0], rate_bps=-1)]
    with pytest.raises(agent_client.AgentError, match="400 flows\\[0\\].rate_bps"):
        agent_client.put_flows(unix_agent, json.dumps({"flows": bad}).encode())


def test_agent_client_unreachable_and_bad_url():
    with pytest.raises(agent_client.AgentError):
        agent_client.put_flows("unix:/nonexistent/dir/h1.sock", b'{"flows": []}', 0.2)
    assert agent_client.health("http://127.0.0.1:1", 0.2) is False
    with pytest.raises(agent_client.AgentError, match="agent_url"):
        agent_client.connection_for("ftp://x", 1.0)
    conn, prefix = agent_client.connection_for("http://10.0.0.1:7070/api/", 1.0)
    assert (conn.host, conn.port, prefix) == ("10.0.0.1", 7070, "/api")


def test_pusher_sends_latest_set_and_marks_failures(unix_agent):
    app = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler="rapier", agent_url=unix_agent.replace("h1.sock", "{host}.sock")))
    call_app = app
    st, _ = call(call_app, "POST", "/rapier/v1/coflows",
                 {"flows": [flow(), flow("h2", "h6", 10, 7)]})
    assert st == 201
    assert sorted(app._pending) == ["h1", "h2"]
    app.push_pending()
    # h1's agent got its set; h2 has no agent socket: marked for a retry.
    assert [p for p, _ in _Recorder.received] == ["/v1/flows"]
    assert _Recorder.received[0][1]["flows"][0]["flow_id"] == "c1/0"
    assert app.core.pushed["h2"] == ("<failed>",)
    assert [p.host for p in app.core.retry_pushes().pushes] == ["h2"]


def test_pusher_pushes_the_hosts_of_one_round_concurrently(monkeypatch):
    # a decision's limits reach all its hosts in about one agent round trip: the
    # pushes of one round are in flight together, and each ack is recorded
    from rapier_app.controller.stack import hub
    app = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler="rapier", agent_url="unix:/tmp/never/{host}.sock"))
    inflight, peak, sent = [0], [0], []

    def fake_put(url, body, timeout, token=None):
        inflight[0] += 1
        peak[0] = max(peak[0], inflight[0])
        hub.sleep(0.01)  # the agent's round trip: other pushes go out meanwhile
        inflight[0] -= 1
        sent.append(url)
        return {"commands": 1}

    monkeypatch.setattr(agent_client, "put_flows", fake_put)
    st, obj = call(app, "POST", "/rapier/v1/coflows",
                   {"flows": [flow(), flow("h2", "h6", 10, 7), flow("h3", "h5", 10, 8)]})
    assert st == 201 and sorted(app._pending) == ["h1", "h2", "h3"]
    assert app.core.coflow_view(obj["id"])["rates"] == "pending"
    app.push_pending()
    assert peak[0] == 3 and len(sent) == 3 and not app._pending
    assert app.core.coflow_view(obj["id"])["rates"] == "applied"
