"""The Ryu shell with ``topology = discover``: Ryu's switch, link and packet-in events
(fakes shaped like Ryu's) become the discovered graph, its rules and its packet-outs;
the REST views show it.  In-process, no switch, no running Ryu."""

import json
from types import SimpleNamespace

import pytest
from webob import Request

import rapier_app.controller as controller_pkg
from rapier_app.controller import app as app_mod
from rapier_app.controller.settings import Settings, SettingsError
from rapier_app.controller.stack import ofproto_v1_3_parser
from test_controller_fakes import FakeDatapath
from test_discovery import MAC, arp_request
from topologies.topofile import loads_topology


def call(app, method, path):
    resp = Request.blank(path, method=method).get_response(app.wsgi)
    return resp.status_int, json.loads(resp.body)


@pytest.fixture
def app(monkeypatch):
    monkeypatch.setattr(app_mod, "observe_links", lambda conf=None: True)
    a = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler="rapier", topology="discover", agent_url="", link_bps=10e6,
        state_db=":memory:"))
    return a


def test_discover_needs_lldp(monkeypatch):
    monkeypatch.setattr(app_mod, "observe_links", lambda conf=None: False)
    with pytest.raises(SettingsError, match="^topology: discover needs .*--observe-links"):
        controller_pkg.RapierController(rapier_settings=Settings(
            topology="discover", agent_url="", state_db=":memory:"))


def _link(a, pa, b, pb):
    return SimpleNamespace(link=SimpleNamespace(src=SimpleNamespace(dpid=a, port_no=pa),
                                                dst=SimpleNamespace(dpid=b, port_no=pb)))


def test_events_build_the_fabric_and_arp_goes_to_edge_ports_only(app):
    # a triangle s1 s2 s3 (ports 1, 2 to the others), port 3 of each for a host
    dps = {d: FakeDatapath(d, [1, 2, 3]) for d in (1, 2, 3)}
    for dp in dps.values():
        app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
        assert len(dp.sent) == 4  # counters read, cleared; no rule yet: not in the graph
        app.switch_enter(SimpleNamespace(switch=SimpleNamespace(dp=dp, ports=[])))
    for a, pa, b, pb in [(1, 1, 2, 2), (2, 1, 3, 2), (3, 1, 1, 2)]:
        app.link_add(_link(a, pa, b, pb))
        app.link_add(_link(b, pb, a, pa))
    assert app.core.topology.switches == ["s1", "s2", "s3"]
    g = app.core.topology.graph
    assert g.edges["s1", "s2"]["capacity_bps"] == 10e6  # link_bps over curr_speed
    parser = ofproto_v1_3_parser
    for dp in dps.values():
        mods = [m for m in dp.sent if isinstance(m, parser.OFPFlowMod)]
        assert any(m.priority == 20 and m.match["eth_type"] == 0x0806 for m in mods)
        assert any(m.priority == 0 and not m.match.to_jsondict()["OFPMatch"]["oxm_fields"]
                   for m in mods)  # table miss -> controller
        dp.sent.clear()
    # h1 on s1:3 asks for 10.0.0.3 (not seen): out of s2:3 and s3:3 only
    req = arp_request(MAC[1], "10.0.0.1", "10.0.0.3")
    app.packet_in(SimpleNamespace(msg=SimpleNamespace(datapath=dps[1], match={"in_port": 3},
                                                      data=req)))
    outs = {d: [(m.actions[0].port, bytes(m.data)) for m in dp.sent
                if isinstance(m, parser.OFPPacketOut)] for d, dp in dps.items()}
    assert outs == {1: [], 2: [(3, req)], 3: [(3, req)]}
    assert app.core.topology.hosts == ["h1"]
    # rules towards h1 reached every switch with the update
    for dp in dps.values():
        assert any(isinstance(m, parser.OFPFlowMod) and m.priority == 10
                   and m.match.get("ipv4_dst") == "10.0.0.1" for m in dp.sent)
    st, topo = call(app, "GET", "/rapier/v1/topology")
    disc = topo["observed"]["discovery"]
    assert st == 200 and disc["mode"] == "discover" and disc["links_present"] == 6
    assert [h["name"] for h in disc["hosts"]] == ["h1"] and disc["hosts"][0]["port"] == 3
    st, health = call(app, "GET", "/rapier/v1/health")
    assert health["status"] in ("ok", "discovering") and health["switches_connected"] == 3
    st, saved = call(app, "GET", "/rapier/v1/topology/file")
    assert st == 200 and loads_topology(saved["file"]).to_dict() == saved["topology"]
    # the link s1-s2 goes: missing, default forwarding re-routed
    app.link_delete(_link(1, 1, 2, 2))
    app.link_delete(_link(2, 2, 1, 1))
    assert app.link_state.missing == {("s1", "s2"), ("s2", "s1")}
    st, health = call(app, "GET", "/rapier/v1/health")
    assert health["links_missing"] == ["s1-s2"]


def test_rapier_topology_pin_writes_the_discovered_fabric(app, tmp_path, capsys):
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from rapier_app.topology_cli import main

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    dps = {d: FakeDatapath(d, [1, 2]) for d in (1, 2)}
    for dp in dps.values():
        app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
        app.switch_enter(SimpleNamespace(switch=SimpleNamespace(dp=dp, ports=[])))
    app.link_add(_link(1, 1, 2, 1))
    app.packet_in(SimpleNamespace(msg=SimpleNamespace(
        datapath=dps[2], match={"in_port": 2}, data=arp_request(MAC[7], "10.0.0.7", "10.0.0.1"))))
    server = make_server("127.0.0.1", 0, app.wsgi, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    out = tmp_path / "fabric.yaml"
    try:
        # not stable yet (it just changed): refused, named
        assert main(["pin", "--controller", url, "-o", str(out)]) == 2
        assert "state: the controller's fabric is discovering" in capsys.readouterr().err
        assert not out.exists()
        assert main(["pin", "--controller", url, "-o", str(out), "--any-state"]) == 0
    finally:
        server.shutdown()
    topo = loads_topology(out.read_text(), str(out))
    assert topo.switches == ["s1", "s2"] and topo.hosts == ["h7"]
    assert topo.attachment("h7") == ("s2", 2) and topo.graph.edges["s1", "s2"]["port"] == 1
    assert main(["pin", "--controller", "http://127.0.0.1:1"]) == 2
    assert "--controller: http://127.0.0.1:1" in capsys.readouterr().err
