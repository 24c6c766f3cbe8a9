"""A topology file's fabric everywhere a spec is taken: candidate paths within a hop
slack, the simulator, the controller's default forwarding and proxy ARP, Mininet's
topology (built by Mininet's own buildTopo; no root needed)."""

import os
import struct

import pytest

from rapier_app.controller.core import make_core
from rapier_app.controller.settings import Settings, SettingsError
from rapier_app.core.model import CoflowSpec, FlowSpec
from rapier_app.scheduling import load_all, make_scheduler
from rapier_app.sim import simulate
from topologies import TopologyError, build_topology

from test_controller_fakes import FakeFabric, tcp_pkt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RING = os.path.join(ROOT, "configs", "topologies", "ring-two-speeds.yaml")
MB = 1 << 20


@pytest.fixture
def ring():
    return build_topology(f"file:{RING}")


def test_path_slack_adds_longer_paths_shortest_first(ring):
    assert ring.path_slack == 1  # the file's
    assert ring.candidate_paths("h1", "h4") == [
        ("h1", "s1", "s3", "h4"),                               # 10 Mbit/s chord
        ("h1", "s1", "s2", "s3", "h4"),                         # 20 Mbit/s arc
        ("h1", "s1", "s4", "s3", "h4")]
    assert ring.candidate_paths("h1", "h4", k=2)[-1] == ("h1", "s1", "s2", "s3", "h4")
    # same switch: nothing within one hop more goes through another switch and back
    assert ring.candidate_paths("h1", "h2") == [("h1", "s1", "h2")]
    ring.set_path_slack(0)
    assert ring.candidate_paths("h1", "h4") == [("h1", "s1", "s3", "h4")]
    ring.set_path_slack(2)
    assert len(ring.candidate_paths("h3", "h6")) == 4  # s2-s1-s4, s2-s3-s4, +2 hops
    with pytest.raises(TopologyError, match="path_slack: must be an integer"):
        ring.set_path_slack(-1)


def test_default_candidate_paths_unchanged_without_slack():
    t = build_topology("fattree:4")
    assert t.path_slack == 0 and len(t.candidate_paths("h1", "h16")) == 4
    t.set_path_slack(2)
    ps = t.candidate_paths("h1", "h16")
    assert [len(p) for p in ps[:4]] == [7] * 4 and len(ps) > 4
    assert ps[:4] == sorted(ps[:4])
    t.set_path_slack(0)
    assert len(t.candidate_paths("h1", "h16")) == 4


def _two_flows():
    flows = (FlowSpec("c1/0", "c1", "h1", "h4", 4 * MB, 5001),
             FlowSpec("c1/1", "c1", "h2", "h5", 4 * MB, 5002))
    return [CoflowSpec("c1", 0.0, flows, 1.0)]


def test_rapier_takes_the_faster_longer_path_with_a_slack(ring):
    """h1 -> h4 and h2 -> h5 both leave s1 for s3.  Shortest paths only: both share
    the 10 Mbit/s chord (5 Mbit/s each, 2 x 4 MiB x 8 / 10e6 = 6.7 s).  With one hop
    of slack RAPIER puts one flow on the 20 Mbit/s arc s1-s2-s3: each flow gets its
    10 Mbit/s access link, 4 MiB x 8 / 10e6 = 3.36 s."""
    load_all()
    one = 4 * MB * 8 / 10e6
    res = simulate(ring, _two_flows(), make_scheduler("rapier", ring))
    assert res.ccts[0] == pytest.approx(one, rel=1e-6)
    ring.set_path_slack(0)
    res0 = simulate(ring, _two_flows(), make_scheduler("rapier", ring))
    assert res0.ccts[0] == pytest.approx(2 * one, rel=1e-6)
    # ECMP (baseline) keeps to the equal-cost shortest paths whatever the slack
    ring.set_path_slack(1)
    sched = make_scheduler("baseline", ring)
    resb = simulate(ring, _two_flows(), sched)
    assert resb.ccts[0] == pytest.approx(2 * one, rel=1e-6)


def test_controller_on_a_file_topology(tmp_path):
    core = make_core(Settings(scheduler="rapier", topology=f"file:{RING}", agent_url=""))
    topo = core.topology
    assert [topo.graph.nodes[s]["dpid"] for s in topo.switches] == [0x11, 0x12, 0x13, 0x14]
    assert all(core.is_known_dpid(d) for d in (0x11, 0x12, 0x13, 0x14))
    assert not core.is_known_dpid(1)
    fab = FakeFabric(topo)
    for dpid in fab.name_of:
        fab.apply(core.default_rules(dpid))
    # default forwarding: every host reaches every other on shortest paths, through
    # the file's port numbers (s1 -> s3 leaves by port 13, h4 hangs on s3 port 1)
    for s in topo.hosts:
        for d in topo.hosts:
            if s != d:
                pkt = {"eth_type": 0x0800, "ipv4_dst": topo.graph.nodes[d]["ip"]}
                walks = fab.walks(s, pkt)
                shortest = len(topo.candidate_paths(s, d)[0])
                assert walks and all(w[-1] == d and len(w) == shortest for w in walks)
    rules = {r.match_dict().get("ipv4_dst"): r.actions for r in core.default_rules(0x11)
             if "ipv4_dst" in r.match_dict()}
    assert rules["192.168.30.4"] == (("output", 13),)
    assert rules["192.168.10.2"] == (("output", 2),)
    # proxy ARP answers for the file's addresses
    req = (b"\xff" * 6 + bytes.fromhex("020000001001") + b"\x08\x06" +
           struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + bytes.fromhex("020000001001") +
           bytes([192, 168, 10, 1]) + b"\x00" * 6 + bytes([192, 168, 30, 4]))
    rep = core.arp_answer(req)
    assert rep[6:12] == bytes.fromhex("020000003004") and rep[28:32] == bytes([192, 168, 30, 4])
    # the switches and links of the file are what the controller expects to see
    links = [(topo.graph.nodes[u]["dpid"], d["port"], topo.graph.nodes[v]["dpid"],
              d["peer_port"]) for u, v, d in topo.graph.edges(data=True)
             if not topo.is_host(u) and not topo.is_host(v)]
    ports = {topo.graph.nodes[s]["dpid"]: [topo.graph.edges[s, n]["port"]
                                           for n in topo.graph.successors(s)]
             for s in topo.switches}
    assert core.check_observed(ports, links) == []
    assert core.check_observed({0x11: [1, 2, 11, 12]}, [(0x11, 11, 0x12, 12)]) == [
        "switch s1 (dpid=0x11): port 13 towards s3 is missing",
        "link s1 -> s2: observed ports 11->12, configured 11->11"]
    # a coflow: RAPIER's paths get rules the fake fabric follows
    _, act = core.submit({"flows": [
        {"src": "h1", "dst": "h4", "size_bytes": 4 * MB, "dst_port": 5001},
        {"src": "h2", "dst": "h5", "size_bytes": 4 * MB, "dst_port": 5002}]}, 0.0)
    fab.apply(act.rules)
    sched = core.schedule_view()
    paths = sorted(tuple(a["path"]) for a in sched["allocations"].values())
    assert paths == [("h1", "s1", "s3", "h4"), ("h2", "s1", "s2", "s3", "h5")] or \
        paths == [("h1", "s1", "s2", "s3", "h4"), ("h2", "s1", "s3", "h5")]
    for fid, a in sched["allocations"].items():
        f = core.coflows["c1"].flows[int(fid.split("/")[1])]
        assert fab.walks(f.src, tcp_pkt(topo, f.src, f.dst, f.dst_port)) == [tuple(a["path"])]
        assert a["rate_bps"] == pytest.approx(10e6, rel=1e-6)


def test_controller_path_slack_setting_and_bad_file(tmp_path):
    core = make_core(Settings(scheduler="rapier", topology=f"file:{RING}", agent_url="",
                              path_slack=0))
    assert core.topology.path_slack == 0
    core = make_core(Settings(scheduler="rapier", topology="leafspine:2,2,1", agent_url="",
                              path_slack=2))
    assert core.topology.path_slack == 2
    with pytest.raises(SettingsError, match="path_slack: must be an integer >= 0"):
        make_core(Settings(topology=f"file:{RING}", path_slack=-1, agent_url=""))
    bad = tmp_path / "bad.yaml"
    bad.write_text("switches: {s1: {dpid: 1}}\nhosts: {}\nlinks: []\n")
    with pytest.raises(SettingsError, match=r"^topology: .*bad.yaml:2: file: hosts: must "
                                            r"be a non-empty mapping"):
        make_core(Settings(topology=f"file:{bad}", agent_url=""))


def test_rapier_sim_takes_a_file_and_path_slack(tmp_path, capsys):
    from rapier_app.cli import main
    out = tmp_path / "o"
    rc = main(["--topology", f"file:{RING}", "--synthetic", "3,2,0.5", "--schedulers",
               "rapier,baseline", "--out", str(out), "--no-plot", "--no-bound", "-q",
               "--json"])
    assert rc == 0
    rc = main(["--topology", f"file:{RING}", "--synthetic", "3,2,0.5", "--schedulers",
               "rapier", "--out", str(out), "--no-plot", "--no-bound", "-q",
               "--path-slack", "-1"])
    assert rc == 2 and "--path-slack: must be >= 0" in capsys.readouterr().err


def test_mininet_builds_the_file_exactly():
    from mininet.link import TCLink
    from mininet.util import buildTopo

    from mininet_tests.topos import DefinedTopo, dpid_hex, link_order, topos

    t = buildTopo(topos, f"file,{RING}")
    assert sorted(t.hosts()) == ["h1", "h2", "h3", "h4", "h5", "h6"]
    assert {s: t.nodeInfo(s)["dpid"] for s in t.switches()} == {
        "s1": dpid_hex(0x11), "s2": dpid_hex(0x12), "s3": dpid_hex(0x13), "s4": dpid_hex(0x14)}
    assert t.nodeInfo("h4")["ip"] == "192.168.30.4/8" and \
        t.nodeInfo("h4")["mac"] == "02:00:00:00:30:04"
    bw = {}
    for u, v, info in t.links(withInfo=True):
        assert info["cls"] is TCLink
        for end in ("1", "2"):
            n, p = info["node" + end], info["port" + end]
            bw[(n, p)] = info["params" + end].get("bw")
    # every switch port the file declares, shaped at the file's speed (Mbit/s);
    # host-side interfaces left to the host agents
    assert bw[("s1", 11)] == bw[("s2", 11)] == bw[("s3", 11)] == 20.0
    assert bw[("s1", 13)] == bw[("s3", 13)] == bw[("s4", 12)] == 10.0
    assert bw[("s3", 1)] == bw[("s4", 3)] == 10.0 and bw[("h6", 1)] is None
    assert len(bw) == 22
    # bw= scales the file in proportion (slowest host link at bw)
    t2 = buildTopo(topos, f"file,{RING},bw=1")
    bw2 = {(i["node1"], i["port1"]): i["params1"].get("bw") for _, _, i in t2.links(withInfo=True)}
    assert bw2[("s1", 11)] == 2.0
    # a prefix that holds hosts of different /8s
    mixed = DefinedTopo(build_topology(f"file:{RING}"))
    assert mixed.prefix_len == 8
    # link order: every link once, ports as in the file
    order = link_order(build_topology(f"file:{RING}"))
    assert len(order) == 11 and ("s1", "s3", 13, 13) in order


def test_host_prefix_covers_hosts_in_different_networks(tmp_path):
    from mininet_tests.topos import host_prefix_len

    text = open(RING).read().replace("192.168.40.6", "172.16.0.6")
    p = tmp_path / "mixed.yaml"
    p.write_text(text)
    # 192.168.x.x and 172.16.0.6 share their first bit only (both start 1...)
    assert host_prefix_len(build_topology(f"file:{p}")) == 1
    assert host_prefix_len(build_topology("fattree:4")) == 8


def test_rapier_emulate_checks_a_file_before_starting(tmp_path, capsys):
    from mininet_tests.emulate import main
    from rapier_app.topology_cli import main as topology_main

    path = tmp_path / "fig1.yaml"
    assert topology_main(["export", "fig1", "-o", str(path)]) == 0
    with pytest.raises(SystemExit) as exc:
        main(["--topology", f"file:{path}", "--synthetic", "1,1,0"])
    assert exc.value.code == 2
    assert "--topology: host S has 2 interfaces" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--topology", f"file:{tmp_path}/none.yaml", "--synthetic", "1,1,0"])
    assert exc.value.code == 2 and "none.yaml: file: cannot read" in capsys.readouterr().err
