"""Link failure (issue 14): :mod:`rapier_app.controller.links` and the Ryu shell's
port-status / link-delete handling, in-process with fake datapaths.

leafspine:3,3,3: leaves l1..l3 (h1-h3 on l1, h4-h6 on l2), spines s1..s3; every
h1 -> h5 path is h1-l1-sX-l2-h5.
"""

from types import SimpleNamespace

import pytest

from rapier_app.controller import links
from rapier_app.core.model import Allocation, Schedule
from rapier_app.controller.stack import ofproto_v1_3 as ofp, ofproto_v1_3_parser as parser
from topologies import build_topology

from test_controller_app import app, call, connect_all, flow  # noqa: F401  (fixture)


def _port(topo, u, v):
    return topo.graph.edges[u, v]["port"]


def _dpid(topo, s):
    return topo.graph.nodes[s]["dpid"]


def port_event(dp, port, down, reason=ofp.OFPPR_MODIFY):
    desc = SimpleNamespace(port_no=port, state=ofp.OFPPS_LINK_DOWN if down else 0, config=0)
    return SimpleNamespace(msg=SimpleNamespace(datapath=dp, reason=reason, desc=desc))


# -- pure logic -------------------------------------------------------------------------
def test_port_status_marks_both_directions_and_ignores_unknown_ports():
    topo = build_topology("leafspine:3,3,3")
    st = links.LinkState(topo)
    l1, p = _dpid(topo, "l1"), _port(topo, "l1", "s1")
    assert st.port_status(l1, p, up=False) is True
    assert st.down == {("l1", "s1"), ("s1", "l1")}
    assert st.port_status(l1, p, up=False) is False  # no change
    assert st.port_status(l1, 0xfffffffe, up=False) is False  # LOCAL port: no link
    assert st.down_ids() == frozenset({topo.link_ids[("l1", "s1")],
                                       topo.link_ids[("s1", "l1")]})
    # the discovery of the far end brings the cable back
    assert st.link_add(_dpid(topo, "s1"), _port(topo, "s1", "l1")) is True
    assert st.down == set()
    assert st.link_delete(_dpid(topo, "s2"), _port(topo, "s2", "l2")) is True
    assert st.view() == ["l2-s2", "s2-l2"]


def test_a_cable_is_up_only_when_both_ends_say_so():
    """Both ends of l1-s1 report their port down; s1's port coming back alone leaves
    the cable down (no change, no decision); l1's port coming back brings it up."""
    topo = build_topology("leafspine:3,3,3")
    st = links.LinkState(topo)
    l1, s1 = _dpid(topo, "l1"), _dpid(topo, "s1")
    pl, ps = _port(topo, "l1", "s1"), _port(topo, "s1", "l1")
    cable = {("l1", "s1"), ("s1", "l1")}
    assert st.port_status(l1, pl, up=False) is True
    assert st.port_status(s1, ps, up=False) is False  # already down
    assert st.port_status(s1, ps, up=True) is False   # l1's end is still down
    assert st.down == cable
    assert st.port_status(s1, ps, up=False) is False
    assert st.port_status(l1, pl, up=True) is False   # now s1's end is down
    assert st.down == cable
    assert st.port_status(s1, ps, up=True) is True    # both ends up
    assert st.down == set() and st.ends_down == set()


def test_one_end_up_does_not_flap_the_cable_in_the_app(app):
    topo = app.core.topology
    dps = connect_all(app)
    call(app, "POST", "/rapier/v1/coflows", {"flows": [flow()]})
    spine = call(app, "GET", "/rapier/v1/coflows/c1")[1]["flows"][0]["path"][2]
    l1_end = (dps["l1"], _port(topo, "l1", spine))
    sp_end = (dps[spine], _port(topo, spine, "l1"))
    for dp, port in (l1_end, sp_end):
        app.port_status(port_event(dp, port, down=True))
    path = call(app, "GET", "/rapier/v1/coflows/c1")[1]["flows"][0]["path"]
    assert spine not in path
    n = app.core.schedule_count
    app.port_status(port_event(*sp_end, down=False))  # the other end is still down
    assert app.link_state.down == {("l1", spine), (spine, "l1")}
    assert app.core.schedule_count == n
    assert call(app, "GET", "/rapier/v1/coflows/c1")[1]["flows"][0]["path"] == path
    app.port_status(port_event(*l1_end, down=False))
    assert app.link_state.down == set() and app.core.schedule_count == n + 1


def test_port_is_down_reads_reason_state_and_config():
    assert links.port_is_down(ofp, ofp.OFPPR_DELETE, 0, 0)
    assert links.port_is_down(ofp, ofp.OFPPR_MODIFY, ofp.OFPPS_LINK_DOWN, 0)
    assert links.port_is_down(ofp, ofp.OFPPR_MODIFY, 0, ofp.OFPPC_PORT_DOWN)
    assert not links.port_is_down(ofp, ofp.OFPPR_MODIFY, ofp.OFPPS_LIVE, 0)
    assert not links.port_is_down(ofp, ofp.OFPPR_ADD, 0, 0)


def test_avoid_down_links_moves_to_the_least_loaded_up_path():
    topo = build_topology("leafspine:3,3,3", 1e9)
    down = frozenset({topo.link_ids[("l1", "s1")], topo.link_ids[("s1", "l1")]})
    # a: h1->h5 on s1 (down) at 400 Mbit/s; b: h2->h6 on s2 at 700 Mbit/s;
    # c: h3->h4 on s3 at 500 Mbit/s.  Up candidates for a: s2 (700+400)/1e9 = 1.1,
    # s3 (500+400)/1e9 = 0.9 -> s3.
    sched = Schedule(allocations={
        "a": Allocation(("h1", "l1", "s1", "l2", "h5"), 4e8),
        "b": Allocation(("h2", "l1", "s2", "l2", "h6"), 7e8),
        "c": Allocation(("h3", "l1", "s3", "l2", "h4"), 5e8)}, order=["x"])
    out, moved = links.avoid_down_links(topo, sched, down)
    assert moved == {"a": ("h1", "l1", "s3", "l2", "h5")}
    assert out.allocations["a"] == Allocation(("h1", "l1", "s3", "l2", "h5"), 4e8)
    assert out.allocations["b"] is sched.allocations["b"] and out.order == ["x"]
    assert sched.allocations["a"].path[2] == "s1"  # the input is not modified
    # nothing down: the same object back
    assert links.avoid_down_links(topo, sched, frozenset()) == (sched, {})
    # every uplink of l1 down: no up path, the allocation is dropped (default forwarding)
    all_up = frozenset(topo.link_ids[(a, b)] for s in ("s1", "s2", "s3")
                       for a, b in (("l1", s), (s, "l1")))
    out, moved = links.avoid_down_links(topo, sched, all_up)
    assert moved == {"a": None, "b": None, "c": None} and out.allocations == {}


# -- the Ryu shell ----------------------------------------------------------------------
def _flow_mods(dp):
    return [m for m in dp.sent if isinstance(m, parser.OFPFlowMod) and m.priority == 100]


def test_port_down_moves_the_flow_in_the_next_rules_and_back_when_it_returns(app):
    topo = app.core.topology
    dps = connect_all(app)
    st, _ = call(app, "POST", "/rapier/v1/coflows", {"flows": [flow()]})
    assert st == 201
    path0 = call(app, "GET", "/rapier/v1/coflows/c1")[1]["flows"][0]["path"]
    spine = path0[2]
    for dp in dps.values():
        dp.sent.clear()
    # The l1 port towards the flow's spine goes down (OVS: port-status, LINK_DOWN).
    app.port_status(port_event(dps["l1"], _port(topo, "l1", spine), down=True))
    path1 = call(app, "GET", "/rapier/v1/coflows/c1")[1]["flows"][0]["path"]
    assert path1[2] != spine and path1[:2] == ["h1", "l1"] and path1[3:] == ["l2", "h5"]
    # The rules pushed at once: l1 now outputs towards the new spine, the new spine
    # got an ADD, the old spine a DELETE.
    (m,) = _flow_mods(dps["l1"])
    assert m.command == ofp.OFPFC_MODIFY_STRICT
    assert m.instructions[0].actions[0].port == _port(topo, "l1", path1[2])
    assert [x.command for x in _flow_mods(dps[path1[2]])] == [ofp.OFPFC_ADD]
    assert [x.command for x in _flow_mods(dps[spine])] == [ofp.OFPFC_DELETE_STRICT]
    assert app.observed()["links_down"] == sorted([f"l1-{spine}", f"{spine}-l1"])
    # The port comes back: the next decision may use the link again; the scheduler
    # (deterministic) puts the flow back where it had it.
    for dp in dps.values():
        dp.sent.clear()
    app.port_status(port_event(dps["l1"], _port(topo, "l1", spine), down=False))
    assert app.observed()["links_down"] == []
    path2 = call(app, "GET", "/rapier/v1/coflows/c1")[1]["flows"][0]["path"]
    assert path2 == path0
    (m,) = _flow_mods(dps["l1"])
    assert m.instructions[0].actions[0].port == _port(topo, "l1", spine)


def test_link_delete_event_moves_the_flow(app):
    topo = app.core.topology
    dps = connect_all(app)
    call(app, "POST", "/rapier/v1/coflows", {"flows": [flow()]})
    spine = call(app, "GET", "/rapier/v1/coflows/c1")[1]["flows"][0]["path"][2]
    s_port, l_port = _port(topo, spine, "l2"), _port(topo, "l2", spine)
    link = SimpleNamespace(src=SimpleNamespace(dpid=_dpid(topo, spine), port_no=s_port),
                           dst=SimpleNamespace(dpid=_dpid(topo, "l2"), port_no=l_port))
    app.link_delete(SimpleNamespace(link=link))
    path = call(app, "GET", "/rapier/v1/coflows/c1")[1]["flows"][0]["path"]
    assert spine not in path and len(path) == 5
    assert app.link_state.down == {(spine, "l2"), ("l2", spine)}
    # a port that is no link (the LOCAL port) changes nothing: no decision
    n = app.core.schedule_count
    app.port_status(port_event(dps["l3"], 0xfffffffe, down=True))
    assert app.core.schedule_count == n


def test_default_forwarding_avoids_a_down_cable_and_is_restored(app):
    """s1-l1 down: l2's and l3's ECMP groups towards h1 (on l1) drop the s1 bucket,
    s1's single-output rule towards h1 goes down to a leaf instead; every default
    walk from h5 to h1 (FakeFabric, all buckets) avoids the cable; the cable back
    restores the connect-time rules exactly."""
    from test_controller_fakes import FakeFabric

    topo = app.core.topology
    base = {d: (list(g), list(r)) for d, (g, r) in app.core._defaults.items()}
    dps = connect_all(app)
    fab = FakeFabric(topo)
    for d, (g, r) in base.items():
        fab.apply(list(g) + list(r))
    pkt = {"eth_type": 0x0800, "ip_proto": 6, "ipv4_src": "10.0.0.5",
           "ipv4_dst": "10.0.0.1", "tcp_dst": 80}
    assert any(w[2] == "s1" for w in fab.walks("h5", pkt))  # before: some walks use s1
    for dp in dps.values():
        dp.sent.clear()
    l1 = dps["l1"]
    app.port_status(port_event(l1, _port(topo, "l1", "s1"), down=True))
    gid = topo.graph.nodes["h1"]["index"]
    for leaf in ("l2", "l3"):
        (gm,) = [m for m in dps[leaf].sent if isinstance(m, parser.OFPGroupMod)
                 and m.group_id == gid]
        assert gm.command == ofp.OFPGC_MODIFY
        assert sorted(b.actions[0].port for b in gm.buckets) == sorted(
            [_port(topo, leaf, "s2"), _port(topo, leaf, "s3")])
    sent = [it for d in app.core._defaults.values() for it in d[0] + d[1]]
    changed = app.link_state.reroute_defaults(app.core)
    assert changed == []  # nothing more to send for the same down set
    fab.apply(sent)
    walks = fab.walks("h5", pkt)
    assert walks and all(("s1", "l1") not in zip(w, w[1:]) for w in walks), walks
    # s1 itself (traffic already there) now goes down to l2 or l3 towards h1, not l1
    s1_rule = [r for r in app.core._defaults[_dpid(topo, "s1")][1]
               if dict(r.match).get("ipv4_dst") == "10.0.0.1"][0]
    assert s1_rule.actions[0][1] in (_port(topo, "s1", "l2"), _port(topo, "s1", "l3"))
    # back up: the connect-time defaults again
    app.port_status(port_event(l1, _port(topo, "l1", "s1"), down=False))
    assert {d: (list(g), list(r)) for d, (g, r) in app.core._defaults.items()} == base
