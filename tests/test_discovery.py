"""Discovered networks: switch, port, LLDP link and host events -> the graph in force
(:mod:`rapier_app.controller.discovery`, :mod:`rapier_app.controller.fabric`), fed
with fake events as the Ryu shell translates them; no Ryu, no switch."""

import socket
import struct

import pytest

from rapier_app.controller.arp import build_arp_reply
from rapier_app.controller.core import make_core
from rapier_app.controller.settings import Settings, SettingsError
from rapier_app.controller.discovery import (DISCOVERING, EMPTY, STABLE, Discovery,
                                             DiscoveryError, compare_declared,
                                             parse_link_capacities)
from rapier_app.controller.fabric import PRIORITY_MISS, defaults_diff, parse_frame
from rapier_app.controller.rules import FlowRule, GroupRule
from rapier_app.httpjson import RequestError
from topologies.topofile import loads_topology

MAC = {i: f"00:00:00:00:00:{i:02x}" for i in range(1, 20)}


def mac_bytes(m):
    return bytes(int(x, 16) for x in m.split(":"))


def arp_request(src_mac, src_ip, target_ip):
    """An ARP request frame (broadcast), as a host sends it."""
    return (b"\xff" * 6 + mac_bytes(src_mac) + struct.pack("!H", 0x0806)
            + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac_bytes(src_mac)
            + socket.inet_aton(src_ip) + b"\0" * 6 + socket.inet_aton(target_ip))


def ipv4_frame(src_mac, src_ip, dst_ip):
    """A minimal IPv4 frame (20-byte header, no payload)."""
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20, 0, 0, 64, 6, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    return b"\x00\x00\x00\x00\x00\x99" + mac_bytes(src_mac) + b"\x08\x00" + ip


def core_for(**opts):
    s = dict(topology="discover", state_db=":memory:", agent_url="", scheduler="rapier")
    s.update(opts)
    return make_core(Settings(**s))


def ring(core, n=4, t=0.0, speed_kbps=10_000_000):
    """Switches 1..n in a ring: port 1 to the next switch, port 2 to the previous,
    ports 3 and 4 for hosts; both directions of every cable seen by LLDP."""
    d = core.discovery
    for s in range(1, n + 1):
        d.switch_enter(s, [(p, speed_kbps, True) for p in (1, 2, 3, 4)] + [(0xFFFFFFFE, 0, True)], t)
    for s in range(1, n + 1):
        nxt = s % n + 1
        d.link_add(s, 1, nxt, 2, t)
        d.link_add(nxt, 2, s, 1, t)
    return core.fabric_update(t)


def learn(core, host, dpid, port, t=0.5):
    """Host ``h<host>`` (10.0.0.<host>) sends an IPv4 packet on (dpid, port)."""
    return core.packet_in(dpid, port, ipv4_frame(MAC[host], f"10.0.0.{host}", "10.0.0.254"), t)


# ---------------------------------------------------------------------------------------
# events -> graph
# ---------------------------------------------------------------------------------------
def test_switches_links_and_hosts_become_the_topology():
    core = core_for()
    assert core.discovery.state(0.0) == EMPTY and core.topology.switches == []
    ring(core, 4)
    learn(core, 1, 1, 3)
    learn(core, 2, 3, 4)
    t = core.topology
    assert t.switches == ["s1", "s2", "s3", "s4"] and t.hosts == ["h1", "h2"]
    g = t.graph
    assert [g.nodes[s]["dpid"] for s in t.switches] == [1, 2, 3, 4]
    # LLDP's ports, both ways; reported speed 10 Gbit/s (curr_speed kbit/s)
    assert (g.edges["s1", "s2"]["port"], g.edges["s1", "s2"]["peer_port"]) == (1, 2)
    assert (g.edges["s2", "s1"]["port"], g.edges["s2", "s1"]["peer_port"]) == (2, 1)
    assert g.edges["s1", "s2"]["capacity_bps"] == 10e9
    assert g.nodes["h2"]["ip"] == "10.0.0.2" and g.nodes["h2"]["mac"] == MAC[2]
    assert t.attachment("h2") == ("s3", 4) and g.edges["h2", "s3"]["port"] == 1
    # 4 cables + 2 access links, both directions; the LOCAL port is no port
    assert g.number_of_edges() == 12 and 0xFFFFFFFE not in core.discovery.ports[1]
    # both ways round the ring: two equal-cost paths h1 -> h2
    assert t.candidate_paths("h1", "h2") == [("h1", "s1", "s2", "s3", "h2"),
                                             ("h1", "s1", "s4", "s3", "h2")]


def test_configured_capacity_wins_over_the_reported_speed():
    core = core_for(link_bps=10e6, link_capacities="s1-s2=20e6, h1-s1=5e6")
    ring(core, 4)
    learn(core, 1, 1, 3)
    g = core.topology.graph
    assert g.edges["s1", "s2"]["capacity_bps"] == g.edges["s2", "s1"]["capacity_bps"] == 20e6
    assert g.edges["s2", "s3"]["capacity_bps"] == 10e6
    assert g.edges["h1", "s1"]["capacity_bps"] == 5e6
    # no configuration: the smaller reported speed; none reported: 1 Gbit/s
    d = Discovery()
    d.switch_enter(1, [(1, 100_000, True)], 0)
    d.switch_enter(2, [(1, 1_000_000, True)], 0)
    d.switch_enter(3, [(1, 0, True)], 0)
    d.switch_enter(4, [(1, 0, True)], 0)
    d.link_add(1, 1, 2, 1, 0)
    d.link_add(3, 1, 4, 1, 0)
    g = d.topology().graph
    assert g.edges["s1", "s2"]["capacity_bps"] == 100e6
    assert g.edges["s3", "s4"]["capacity_bps"] == 1e9


@pytest.mark.parametrize("text, word", [("s1-s2", "NODE-NODE=BPS"), ("s1=5", "NODE-NODE"),
                                        ("s1-s2=0", "positive"), ("s1-s2=x", "positive"),
                                        ("s1-s2=1e6,s2-s1=2e6", "twice")])
def test_bad_link_capacities_are_named(text, word):
    with pytest.raises(DiscoveryError, match=f"link_capacities: .*{word}"):
        parse_link_capacities(text)
    with pytest.raises(SettingsError, match="^link_capacities: "):
        Settings(link_capacities=text).validate()


def test_bad_host_net_and_settle_are_named():
    with pytest.raises(SettingsError, match="^discover_host_net: "):
        Settings(discover_host_net="10.0.0.0/33").validate()
    with pytest.raises(SettingsError, match="^discover_settle_s: "):
        Settings(discover_settle_s=-1).validate()


def test_host_names_follow_mininet_inside_the_host_net_and_the_address_outside():
    core = core_for()
    ring(core, 2)
    core.packet_in(1, 3, ipv4_frame(MAC[5], "192.168.1.7", "10.0.0.1"), 0.1)
    learn(core, 12, 2, 3)
    assert core.topology.hosts == ["h12", "192.168.1.7"]  # address order
    assert core.topology.graph.nodes["h12"]["index"] == 0x0A00000C  # its group id


def test_state_is_stable_after_the_settle_time_without_change():
    core = core_for(discover_settle_s=3.0)
    ring(core, 3, t=10.0)
    assert core.discovery.state(11.0) == DISCOVERING
    assert core.discovery.state(13.0) == STABLE
    learn(core, 1, 1, 3, t=14.0)  # a new host: discovering again
    assert core.discovery.state(15.0) == DISCOVERING
    assert core.health_view(15.0, [1, 2, 3])["status"] == "discovering"
    h = core.health_view(17.5, [1, 2, 3])
    assert (h["status"], h["fabric"], h["hosts"], h["differences"]) == ("ok", STABLE, 1, [])


def test_packets_from_switch_ports_teach_nothing():
    core = core_for()
    ring(core, 3)
    before = core.discovery.version
    acts, outs = learn(core, 1, 1, 1)  # port 1 faces s2: a transit packet
    assert core.topology.hosts == [] and outs == [] and core.discovery.version == before
    # a link seen where a host was learnt: the host was the far switch's packets
    d = Discovery()
    d.switch_enter(1, [(1, 0, True), (2, 0, True)], 0)
    d.switch_enter(2, [(1, 0, True)], 0)
    assert d.host_seen("10.0.0.1", MAC[1], 1, 2, 0.1) == "new"
    d.link_add(1, 2, 2, 1, 0.2)
    assert d.hosts == {} and d.edge_ports() == [(1, 1)]


# ---------------------------------------------------------------------------------------
# proxy ARP and forwarding on a loop
# ---------------------------------------------------------------------------------------
def test_arp_for_an_unseen_host_goes_out_of_edge_ports_only_and_the_reply_back():
    core = core_for()
    ring(core, 4)
    req = arp_request(MAC[1], "10.0.0.1", "10.0.0.2")
    acts, outs = core.packet_in(1, 3, req, 1.0)
    # every up port of every switch that faces no switch, but the one it came in on
    assert sorted((o.dpid, o.port) for o in outs) == [(1, 4), (2, 3), (2, 4), (3, 3), (3, 4),
                                                      (4, 3), (4, 4)]
    assert all(o.data == req for o in outs)
    # the same frame coming back in (through a port not known to face a switch yet)
    # is ignored, so a loop cannot echo it
    assert core.packet_in(2, 3, req, 1.1) == (core.packet_in(2, 3, req, 1.1)[0], [])
    assert core.topology.hosts == ["h1"]
    # h2 answers: learnt, and its reply is delivered to h1's port
    reply = build_arp_reply(MAC[1], "10.0.0.1", MAC[2], "10.0.0.2")
    acts, outs = core.packet_in(3, 4, reply, 1.2)
    assert [(o.dpid, o.port, o.data) for o in outs] == [(1, 3, reply)]
    assert core.topology.hosts == ["h1", "h2"]
    # rules towards h2 on every switch came with the update
    assert {r.dpid for r in acts.rules if isinstance(r, FlowRule)
            and r.match_dict().get("ipv4_dst") == "10.0.0.2"} == {1, 2, 3, 4}
    # now h1's next request is answered by the controller out of its port
    acts, outs = core.packet_in(1, 3, req, 5.0)
    assert [(o.dpid, o.port) for o in outs] == [(1, 3)]
    assert parse_frame(outs[0].data) == {"kind": "arp", "op": 2, "src_mac": MAC[2],
                                         "src_ip": "10.0.0.2", "dst_mac": MAC[1],
                                         "dst_ip": "10.0.0.1"}
    # h1's first IPv4 packet to h2 reaching a switch before its new rule: the
    # controller delivers it to h2's port; to an unknown host: dropped
    # (also at a transit switch, which teaches nothing)
    ping = ipv4_frame(MAC[1], "10.0.0.1", "10.0.0.2")
    version = core.discovery.version
    assert [(o.dpid, o.port, o.data) for o in core.packet_in(2, 2, ping, 5.1)[1]] == \
        [(3, 4, ping)]
    assert core.discovery.version == version
    ping2 = ping + b"\0"  # another frame (the same one again is an echo: ignored)
    assert [(o.dpid, o.port, o.data) for o in core.packet_in(1, 3, ping2, 5.1)[1]] == \
        [(3, 4, ping2)]
    assert core.packet_in(1, 3, ping2, 5.2)[1] == []
    assert core.packet_in(1, 3, ipv4_frame(MAC[1], "10.0.0.1", "10.0.0.3"), 5.2)[1] == []


def _walk(core, dpid, ip, by_dpid, seen=()):
    """Every switch sequence a packet to ``ip`` entering ``dpid`` can take (ECMP: all
    buckets), from the core's default rules as a fake flow table."""
    groups, rules = core._defaults[dpid]
    rule = max((r for r in rules if r.match_dict().get("ipv4_dst") == ip
                or r.priority == PRIORITY_MISS), key=lambda r: r.priority)
    kind, arg = rule.actions[0]
    ports = [arg] if kind == "output" else \
        [p for g in groups if g.group_id == arg for p in g.ports] if kind == "group" else []
    if kind == "controller":
        return [(*seen, dpid, "controller")]
    out = []
    for p in ports:
        nxt = by_dpid.get((dpid, p))
        if nxt is None:
            out.append((*seen, dpid, ("port", p)))
        else:
            assert nxt not in seen and nxt != dpid, f"loop: {seen} {dpid} -> {nxt}"
            out.extend(_walk(core, nxt, ip, by_dpid, (*seen, dpid)))
    return out


def test_default_forwarding_on_a_ring_reaches_every_host_without_loops():
    core = core_for()
    ring(core, 5)
    for h, (dpid, port) in {1: (1, 3), 2: (3, 4), 3: (4, 3)}.items():
        learn(core, h, dpid, port)
    by_dpid = {src: dst[0] for src, dst in core.discovery.links.items()}
    for ip, (sw, port) in {"10.0.0.1": (1, 3), "10.0.0.2": (3, 4), "10.0.0.3": (4, 3)}.items():
        for start in range(1, 6):
            walks = _walk(core, start, ip, by_dpid)
            assert walks and all(w[-2:] == (sw, ("port", port)) for w in walks), (ip, start, walks)
    # s1 -> s3 (ring of 5): one way is 2 hops, the other 3: no ECMP; s1 -> s4 is 2
    # hops via s5 only
    assert {w[:-1] for w in _walk(core, 1, "10.0.0.2", by_dpid)} == {(1, 2, 3)}
    # a ring of 4: s1 -> s3 both ways, an ECMP group of two buckets
    core4 = core_for()
    ring(core4, 4)
    learn(core4, 2, 3, 4)
    groups, rules = core4._defaults[1]
    assert [g.ports for g in groups] == [(1, 2)]
    # every switch sends ARP to the controller, and unmatched packets too
    assert any(r.match == (("eth_type", 0x0806),) for r in rules)
    assert any(r.priority == PRIORITY_MISS and r.actions == (("controller", 0),) for r in rules)


# ---------------------------------------------------------------------------------------
# scheduling on the discovered graph; changes re-plan
# ---------------------------------------------------------------------------------------
def test_coflow_naming_a_host_not_seen_is_400_naming_the_field():
    core = core_for()
    ring(core, 4)
    learn(core, 1, 1, 3)
    with pytest.raises(RequestError) as err:
        core.submit({"flows": [{"src": "h1", "dst": "10.0.0.9", "size_bytes": 1e6,
                                "dst_port": 5001}]}, 1.0)
    assert err.value.status == 400 and err.value.field == "flows[0].dst"
    assert "not seen" in str(err.value)
    assert core.coflows == {}


def test_link_loss_and_host_move_replan_the_coflows_they_touch():
    core = core_for(link_bps=10e6)
    ring(core, 4)
    learn(core, 1, 1, 3)
    learn(core, 2, 3, 4)
    c, acts = core.submit({"id": "a", "flows": [{"src": "h1", "dst": "h2",
                                                 "size_bytes": 5e6, "dst_port": 5001}]}, 4.0)
    f = c.flows[0]
    assert f.path in (("h1", "s1", "s2", "s3", "h2"), ("h1", "s1", "s4", "s3", "h2"))
    via = f.path[2]
    other = "s4" if via == "s2" else "s2"
    # the cable s1 - via goes (LLDP timeout, both directions)
    d = core.discovery
    vid = int(via[1:])
    for src, dst in list(d.links.items()):
        if {src[0], dst[0]} == {1, vid}:
            d.link_delete(*src, *dst, 5.0)
    acts = core.fabric_update(5.0)
    assert ("s1", via) in core.link_state.missing and ("s1", via) in core.topology.graph.edges
    assert f.path == ("h1", "s1", other, "s3", "h2")
    assert any(getattr(r, "flow_id", None) == f.flow_id for r in acts.rules)
    # h2 moves to s2 port 3: the graph changes, the flow follows it
    learn(core, 2, 2, 3, t=6.0)
    assert core.topology.attachment("h2") == ("s2", 3)
    assert f.path[-2:] == ("s2", "h2") and ("s1", via) not in zip(f.path, f.path[1:])
    assert d.hosts["10.0.0.2"].moves == 1


def test_a_switch_that_leaves_takes_its_links_and_hosts_down():
    core = core_for()
    ring(core, 4)
    learn(core, 1, 1, 3)
    learn(core, 2, 2, 3)
    core.discovery.switch_leave(2, 3.0)
    core.fabric_update(3.0)
    miss = core.link_state.missing
    assert {("s1", "s2"), ("s2", "s3"), ("h2", "s2"), ("s2", "h2")} <= miss
    assert ("s3", "s4") not in miss
    assert core.health_view(3.1, [1, 3, 4])["links_missing"] == ["h2-s2", "s1-s2", "s2-s3"]


def test_defaults_diff_adds_modifies_then_deletes():
    r = lambda ip, act: FlowRule(1, 10, (("eth_type", 0x800), ("ipv4_dst", ip)), act)
    old = {1: ([GroupRule(1, 7, (1, 2)), GroupRule(1, 8, (1, 2))],
               [r("10.0.0.7", (("group", 7),)), r("10.0.0.8", (("group", 8),)),
                r("10.0.0.9", (("output", 3),))])}
    new = {1: ([GroupRule(1, 7, (1, 3)), GroupRule(1, 5, (2, 3))],
               [r("10.0.0.7", (("group", 7),)), r("10.0.0.5", (("group", 5),)),
                r("10.0.0.9", (("output", 4),))])}
    out = defaults_diff(old, new)
    kinds = [(type(x).__name__, x.command, getattr(x, "group_id", None) or x.match_dict()["ipv4_dst"])
             for x in out]
    assert kinds == [("GroupRule", "modify", 7), ("GroupRule", "add", 5),
                     ("FlowRule", "add", "10.0.0.5"), ("FlowRule", "add", "10.0.0.9"),
                     ("FlowRule", "delete", "10.0.0.8"), ("GroupRule", "delete", 8)]
    assert defaults_diff(new, new) == []


def test_the_saved_topology_file_reads_back_as_the_same_graph():
    core = core_for(link_bps=10e6, link_capacities="s1-s2=20e6")
    ring(core, 4)
    learn(core, 1, 1, 3)
    learn(core, 2, 3, 4)
    core.packet_in(2, 4, ipv4_frame(MAC[3], "192.168.1.3", "10.0.0.1"), 1.0)
    saved = core.topology_file(9.0)
    assert saved["state"] == STABLE and saved["name"] == "discovered"
    back = loads_topology(saved["file"], "saved")
    assert back.to_dict() == core.topology.to_dict() == saved["topology"]
    assert back.hosts == core.topology.hosts == ["h1", "h2", "192.168.1.3"]
    # two addresses on one edge port: the one seen last is the host there
    learn(core, 4, 2, 4, t=10.0)
    assert core.topology.hosts == ["h1", "h2", "h4"]


# ---------------------------------------------------------------------------------------
# a declared topology checked against what connected
# ---------------------------------------------------------------------------------------
def test_declared_links_not_seen_are_missing_and_reported():
    core = make_core(Settings(topology="leafspine:2,2,1", state_db=":memory:", agent_url=""))
    core.links_observed = True
    t = core.topology
    g = t.graph
    d = core.discovery
    for s in t.switches:
        d.switch_enter(g.nodes[s]["dpid"], [(p, 0, True) for p in range(1, 5)], 0.0)
    # LLDP sees every leaf-spine cable but l1 - s2
    missing_cable = None
    for u, v, e in g.edges(data=True):
        if t.is_host(u) or t.is_host(v):
            continue
        if {u, v} == {"l1", "s2"}:
            missing_cable = (u, v)
            continue
        d.link_add(g.nodes[u]["dpid"], e["port"], g.nodes[v]["dpid"], e["peer_port"], 0.1)
    assert missing_cable is not None
    core.fabric_update(0.1)
    assert core.link_state.missing == {("l1", "s2"), ("s2", "l1")}
    h = core.health_view(5.0, [g.nodes[s]["dpid"] for s in t.switches])
    assert h["status"] == "degraded"
    assert any("l1" in m and "s2" in m and "not seen" in m for m in h["differences"])
    # h1 (on l1) -> h2 (on l2): only via s1; the scheduler never uses l1 - s2
    c, _ = core.submit({"flows": [{"src": "h1", "dst": "h2", "size_bytes": 1e6,
                                   "dst_port": 5001}]}, 6.0)
    assert c.flows[0].path == ("h1", "l1", "s1", "l2", "h2")
    # an extra switch and an undeclared link are differences too
    d.switch_enter(99, [(1, 0, True)], 7.0)
    d.link_add(99, 1, g.nodes["l1"]["dpid"], 4, 7.0)
    diffs = compare_declared(t, d)
    assert any("dpid=0x63" in m and "not in topology" in m for m in diffs)
    # a cable between two declared switches that the declaration lacks: one message
    # for both directions, worded as check_observed words an observed link
    l1, l2 = g.nodes["l1"]["dpid"], g.nodes["l2"]["dpid"]
    d.link_add(l2, 4, l1, 4, 8.0)
    d.link_add(l1, 4, l2, 4, 8.0)
    extra = [m for m in compare_declared(t, d) if "l2" in m and "l1" in m]
    assert extra == [f"link l1:4 -> l2:4 is not in topology {t.name}"]


def test_every_registered_scheduler_starts_empty_and_schedules_on_the_grown_fabric():
    from rapier_app.scheduling import REGISTRY, load_all

    load_all()
    for name in sorted(REGISTRY):
        core = core_for(scheduler=name, link_bps=10e6)  # an empty fabric at start
        ring(core, 4)
        learn(core, 1, 1, 3)
        learn(core, 2, 3, 4)
        c, _ = core.submit({"flows": [{"src": "h1", "dst": "h2", "size_bytes": 1e6,
                                       "dst_port": 5001}]}, 5.0)
        assert core.decision[c.coflow_id] == "scheduled", name
