"""Builders for the fabrics used in the coflow literature.

Every builder returns a frozen :class:`~topologies.base.Topology`.  Host names are
``h1..hN`` (Mininet-friendly), switch names are short role prefixes with a global
number, dpids are 1..S in creation order.  Capacities are in bit/s.
"""

from __future__ import annotations

import os
from typing import Optional

from .base import Topology, TopologyError

GBPS = 1e9


class _Numbering:
    """Hands out dpids 1, 2, ... for the switches of one topology."""

    def __init__(self) -> None:
        self.dpid = 0

    def next(self) -> int:
        self.dpid += 1
        return self.dpid


def fat_tree(k: int, hosts_per_edge: Optional[int] = None,
             link_bps: float = GBPS) -> Topology:
    """k-ary fat-tree (Al-Fares et al., SIGCOMM 2008).

    k pods, each with k/2 edge and k/2 aggregation switches; (k/2)^2 core switches;
    each edge switch has ``hosts_per_edge`` hosts (default k/2, hence k^3/4 hosts).
    Aggregation switch i of every pod connects to cores i*k/2 .. (i+1)*k/2-1.  With
    ``hosts_per_edge`` larger than k/2 the edge layer is oversubscribed (e.g. k=8 with
    16 hosts per edge gives 512 servers at 4:1).  All links run at ``link_bps``.

    Raises:
        TopologyError: k odd or < 2, hosts_per_edge < 1, link_bps <= 0.
    """
    if not isinstance(k, int) or k < 2 or k % 2:
        raise TopologyError(f"k: fat-tree arity must be an even integer >= 2, got {k!r}")
    half = k // 2
    hpe = half if hosts_per_edge is None else hosts_per_edge
    if not isinstance(hpe, int) or hpe < 1:
        raise TopologyError(f"hosts_per_edge: must be a positive integer, got {hpe!r}")
    name = f"fattree:{k}" + ("" if hosts_per_edge is None else f",{hpe}")
    t = Topology(name)
    num = _Numbering()
    cores = [t.add_switch(f"c{i + 1}", "core", num.next()) for i in range(half * half)]
    aggs, edges = [], []
    for p in range(k):
        aggs.append([t.add_switch(f"a{p * half + i + 1}", "aggregation", num.next())
                     for i in range(half)])
    for p in range(k):
        edges.append([t.add_switch(f"e{p * half + i + 1}", "edge", num.next())
                      for i in range(half)])
    h = 0
    for p in range(k):
        for e in edges[p]:
            for _ in range(hpe):
                h += 1
                t.add_link(t.add_host(f"h{h}"), e, link_bps)
    for p in range(k):
        for e in edges[p]:
            for a in aggs[p]:
                t.add_link(e, a, link_bps)
        for i, a in enumerate(aggs[p]):
            for j in range(half):
                t.add_link(a, cores[i * half + j], link_bps)
    return t.freeze()


def vl2(d_a: int, d_i: int, servers_per_tor: int = 20, server_bps: float = GBPS,
        fabric_bps: float = 10 * GBPS) -> Topology:
    """VL2 Clos fabric (Greenberg et al., SIGCOMM 2009).

    ``d_a``-port aggregation and ``d_i``-port intermediate switches: d_a/2
    intermediate switches, d_i aggregation switches, d_a*d_i/4 ToRs.  Every
    aggregation switch connects to every intermediate switch; aggregation switches
    are paired (2j, 2j+1) and each pair serves d_a/2 ToRs, each ToR with one uplink to
    each switch of its pair.  Server links run at ``server_bps``, ToR uplinks and the
    aggregation-intermediate mesh at ``fabric_bps``.

    Raises:
        TopologyError: d_a or d_i odd or < 2, servers_per_tor < 1, speeds <= 0.
    """
    for field, v in (("d_a", d_a), ("d_i", d_i)):
        if not isinstance(v, int) or v < 2 or v % 2:
            raise TopologyError(f"{field}: must be an even integer >= 2, got {v!r}")
    if not isinstance(servers_per_tor, int) or servers_per_tor < 1:
        raise TopologyError(f"servers_per_tor: must be a positive integer, got {servers_per_tor!r}")
    t = Topology(f"vl2:{d_a},{d_i},{servers_per_tor}")
    num = _Numbering()
    ints = [t.add_switch(f"i{i + 1}", "intermediate", num.next()) for i in range(d_a // 2)]
    aggs = [t.add_switch(f"a{i + 1}", "aggregation", num.next()) for i in range(d_i)]
    n_tor = d_a * d_i // 4
    tors = [t.add_switch(f"t{i + 1}", "tor", num.next()) for i in range(n_tor)]
    h = 0
    for tor in tors:
        for _ in range(servers_per_tor):
            h += 1
            t.add_link(t.add_host(f"h{h}"), tor, server_bps)
    per_pair = d_a // 2
    for i, tor in enumerate(tors):
        pair = i // per_pair
        t.add_link(tor, aggs[2 * pair], fabric_bps)
        t.add_link(tor, aggs[2 * pair + 1], fabric_bps)
    for a in aggs:
        for it in ints:
            t.add_link(a, it, fabric_bps)
    return t.freeze()


def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int,
               link_bps: float = GBPS) -> Topology:
    """Two-tier leaf-spine: every leaf connects to every spine.

    The RAPIER testbed (Section V-A, Fig. 3) is ``leaf_spine(3, 3, 3)`` with 1 Gbit/s
    links: hosts h1..h3 on leaf l1, h4..h6 on l2, h7..h9 on l3 (the paper's M1..M9).

    Raises:
        TopologyError: any count < 1 or link_bps <= 0.
    """
    for field, v in (("leaves", leaves), ("spines", spines), ("hosts_per_leaf", hosts_per_leaf)):
        if not isinstance(v, int) or v < 1:
            raise TopologyError(f"{field}: must be a positive integer, got {v!r}")
    t = Topology(f"leafspine:{leaves},{spines},{hosts_per_leaf}")
    num = _Numbering()
    sp = [t.add_switch(f"s{i + 1}", "spine", num.next()) for i in range(spines)]
    lf = [t.add_switch(f"l{i + 1}", "leaf", num.next()) for i in range(leaves)]
    h = 0
    for leaf in lf:
        for _ in range(hosts_per_leaf):
            h += 1
            t.add_link(t.add_host(f"h{h}"), leaf, link_bps)
    for leaf in lf:
        for s in sp:
            t.add_link(leaf, s, link_bps)
    return t.freeze()


def big_switch(ports: int, port_bps: float = GBPS) -> Topology:
    """Non-blocking big switch with ``ports`` ports (Varys/Aalo/Sincronia's model).

    Host ``h{p+1}`` sits on port p; its uplink is the port's ingress link and its
    downlink the egress link, both ``port_bps``.  Every host pair has exactly one path.

    Raises:
        TopologyError: ports < 1 or port_bps <= 0.
    """
    if not isinstance(ports, int) or ports < 1:
        raise TopologyError(f"ports: must be a positive integer, got {ports!r}")
    t = Topology(f"bigswitch:{ports}")
    sw = t.add_switch("s1", "switch", 1)
    for p in range(ports):
        t.add_link(t.add_host(f"h{p + 1}"), sw, port_bps)
    return t.freeze()


def fig1(link_bps: float = 100e6) -> Topology:
    """The motivating example of RAPIER Fig. 1: hosts S and D, switches Mu and Md.

    Links S-Mu, Mu-D, S-Md, Md-D at 100 Mbit/s, so S reaches D over the two
    equal-cost paths S-Mu-D and S-Md-D.
    """
    t = Topology("fig1")
    mu = t.add_switch("Mu", "switch", 1)
    md = t.add_switch("Md", "switch", 2)
    s = t.add_host("S", ip="10.0.0.1", mac="00:00:00:00:00:01")
    d = t.add_host("D", ip="10.0.0.2", mac="00:00:00:00:00:02")
    for a, b in ((s, mu), (mu, d), (s, md), (md, d)):
        t.add_link(a, b, link_bps)
    return t.freeze()


def _ints(field: str, text: str, n_min: int, n_max: int) -> list:
    parts = [p for p in text.split(",") if p != ""]
    if not n_min <= len(parts) <= n_max:
        raise TopologyError(f"topology: {field} takes {n_min}..{n_max} comma-separated "
                            f"integers, got {text!r}")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise TopologyError(f"topology: {field} parameters must be integers, got {text!r}") from None


def build_topology(spec: str, link_bps: Optional[float] = None) -> Topology:
    """Build a topology from a spec string, as the CLI and the controller config take it.

    Specs: ``fattree:K[,HOSTS_PER_EDGE]``, ``vl2:DA,DI[,SERVERS_PER_TOR]``,
    ``leafspine:LEAVES,SPINES,HOSTS_PER_LEAF``, ``bigswitch:N``, ``fig1``, and
    ``file:PATH`` (a topology file, :mod:`topologies.topofile`).
    ``link_bps`` overrides the default link speed (for VL2, the server links; the
    fabric stays 10x; for a file, its slowest host link, every link scaled by the
    same factor: :func:`scale_capacities`).

    Raises:
        TopologyError: unknown kind or bad parameters (the message names them); for a
            file, one that cannot be read, does not parse or does not validate.
    """
    if spec.strip().lower().startswith("file:"):
        from .topofile import load_topology

        path = spec.strip()[5:]
        if not path:
            raise TopologyError("topology: file: needs a path, e.g. file:configs/ring.yaml")
        topo = load_topology(path)
        return topo if link_bps is None else scale_capacities(topo, link_bps)
    kind, _, args = spec.strip().partition(":")
    kind = kind.lower().replace("-", "").replace("_", "")
    kw = {} if link_bps is None else {"link_bps": link_bps}
    if kind == "fattree":
        v = _ints("fattree", args, 1, 2)
        return fat_tree(v[0], v[1] if len(v) > 1 else None, **kw)
    if kind == "vl2":
        v = _ints("vl2", args, 2, 3)
        bw = {} if link_bps is None else {"server_bps": link_bps, "fabric_bps": 10 * link_bps}
        return vl2(*v, **bw)
    if kind == "leafspine":
        v = _ints("leafspine", args, 3, 3)
        return leaf_spine(*v, **kw)
    if kind == "bigswitch":
        v = _ints("bigswitch", args, 1, 1)
        return big_switch(v[0], **({} if link_bps is None else {"port_bps": link_bps}))
    if kind == "fig1":
        return fig1(**kw)
    raise TopologyError(f"topology: unknown kind {kind!r} in {spec!r} (expected fattree, "
                        f"vl2, leafspine, bigswitch, fig1 or file:PATH)")


def reference_bps(topo: Topology) -> float:
    """The speed ``link_bps`` stands for on ``topo``: its slowest host link (bit/s;
    the slowest link when no link touches a host)."""
    g = topo.graph
    caps = [d["capacity_bps"] for u, v, d in g.edges(data=True)
            if topo.is_host(u) or topo.is_host(v)] or \
        [d["capacity_bps"] for _, _, d in g.edges(data=True)]
    return min(caps) if caps else 1.0


def scale_capacities(topo: Topology, link_bps: float) -> Topology:
    """``topo`` with every capacity times ``link_bps / reference_bps(topo)`` (its
    slowest host link then runs at ``link_bps``; faster links keep their multiple),
    in place, re-frozen.  How ``build_topology("file:PATH", link_bps)`` and the
    emulation (``rapier-emulate --link-mbps``) scale a topology file.

    Raises:
        TopologyError: ``link_bps`` not positive.
    """
    if not link_bps > 0:
        raise TopologyError(f"link_bps: must be positive, got {link_bps!r}")
    f = float(link_bps) / reference_bps(topo)
    if f != 1.0:
        for _, _, d in topo.graph.edges(data=True):
            d["capacity_bps"] = d["capacity_bps"] * f
        slack = topo.path_slack
        topo.freeze()
        topo.path_slack = slack
    return topo


def absolute_spec(spec: str) -> str:
    """``spec`` with a ``file:`` path made absolute (for processes started in another
    working directory: the controller, Mininet's helpers); other specs unchanged."""
    s = spec.strip()
    if s.lower().startswith("file:") and len(s) > 5:
        return "file:" + os.path.abspath(s[5:])
    return spec
