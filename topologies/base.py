"""The topology model shared by the simulator, the controller and Mininet.

A :class:`Topology` is data, in the spirit of Mininet's ``topo.py``: a networkx
directed graph with one edge per link direction, capacities in bit/s, node roles,
explicit non-zero datapath ids for switches and explicit IP/MAC addresses for
hosts.  Nothing runs; the simulator reads capacities and candidate paths, the
controller reads ports and dpids, Mininet builds the same links.
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import networkx as nx
import numpy as np

from rapier_app.errors import RapierError

HOST = "host"
SWITCH_ROLES = ("edge", "aggregation", "core", "tor", "intermediate", "leaf",
                "spine", "switch")

Path = Tuple[str, ...]
#: Most candidate paths kept per host pair with a path slack (Topology.set_path_slack).
SLACK_PATHS_MAX = 64


class TopologyError(RapierError, ValueError):
    """Invalid topology parameters, unknown node, a path that does not exist, or a
    topology file that does not parse or validate (:mod:`topologies.topofile`; those
    carry ``file``, ``line``, ``element`` and ``field`` attributes)."""


class Topology:
    """A datacenter fabric as a directed graph.

    Nodes carry ``role`` (``"host"`` or one of :data:`SWITCH_ROLES`); switches carry
    ``dpid`` (int, non-zero, unique); hosts carry ``ip`` (dotted quad) and ``mac``.
    Each directed edge ``(u, v)`` carries ``capacity_bps`` (bit/s), ``port`` (the
    OpenFlow port number on ``u`` that leads to ``v``) and ``peer_port`` (the port
    number on ``v``).  Port numbers start at 1 on every node and follow the order in
    which links were added, which is also the order Mininet creates interfaces in.

    Links are indexed: :attr:`link_ids` maps ``(u, v)`` to an integer and
    :attr:`capacity` is a numpy array of capacities (bit/s) in that order, so that
    schedulers can do vectorised arithmetic over links.
    """

    def __init__(self, name: str):
        self.name = name
        self.graph = nx.DiGraph(name=name)
        self._next_port: Dict[str, int] = {}
        self._ports: Dict[str, set] = {}
        #: candidate paths may be this many hops longer than the shortest (0: ECMP)
        self.path_slack = 0
        self._path_cache: Dict[Tuple[str, str], List[Path]] = {}
        self._switch_path_cache: Dict[Tuple[str, str], List[Path]] = {}
        self._frozen = False
        self.link_ids: Dict[Tuple[str, str], int] = {}
        self.links: List[Tuple[str, str]] = []
        self.capacity = np.zeros(0)
        self._path_links_cache: Dict[Path, np.ndarray] = {}

    # -- construction -----------------------------------------------------------
    def add_switch(self, name: str, role: str, dpid: int) -> str:
        """Add a switch.  ``dpid`` must be a positive int unique in the topology.

        Raises:
            TopologyError: duplicate name or dpid, bad role, dpid <= 0.
        """
        if role not in SWITCH_ROLES:
            raise TopologyError(f"role: unknown switch role {role!r}")
        if dpid <= 0:
            raise TopologyError(f"dpid: must be positive, got {dpid}")
        if name in self.graph:
            raise TopologyError(f"name: duplicate node {name!r}")
        if any(d.get("dpid") == dpid for _, d in self.graph.nodes(data=True)):
            raise TopologyError(f"dpid: duplicate dpid {dpid}")
        self.graph.add_node(name, role=role, dpid=dpid)
        self._next_port[name] = 1
        self._ports[name] = set()
        return name

    def add_host(self, name: str, ip: Optional[str] = None,
                 mac: Optional[str] = None) -> str:
        """Add a host; IP defaults to 10.x.y.z from its index, MAC likewise.

        Raises:
            TopologyError: duplicate name.
        """
        if name in self.graph:
            raise TopologyError(f"name: duplicate node {name!r}")
        index = len(self.hosts) + 1
        if ip is None:
            ip = "10.%d.%d.%d" % ((index >> 16) & 0xFF, (index >> 8) & 0xFF, index & 0xFF)
        if mac is None:
            mac = "00:00:00:%02x:%02x:%02x" % ((index >> 16) & 0xFF,
                                               (index >> 8) & 0xFF, index & 0xFF)
        self.graph.add_node(name, role=HOST, ip=ip, mac=mac, index=index)
        self._next_port[name] = 1
        self._ports[name] = set()
        return name

    def add_link(self, u: str, v: str, capacity_bps: float, port_u: Optional[int] = None,
                 port_v: Optional[int] = None) -> None:
        """Add a full-duplex link: edges ``(u, v)`` and ``(v, u)``, each ``capacity_bps``.

        ``port_u`` / ``port_v``: the port numbers on each end (a topology file's); None:
        the node's next port (one above the highest used so far, 1 first).

        Raises:
            TopologyError: unknown node, non-positive capacity, duplicate link, a port
                already used on that node.
        """
        for n in (u, v):
            if n not in self.graph:
                raise TopologyError(f"node: unknown node {n!r}")
        if capacity_bps <= 0:
            raise TopologyError(f"capacity_bps: must be positive, got {capacity_bps}")
        if self.graph.has_edge(u, v):
            raise TopologyError(f"link: duplicate link {u}-{v}")
        pu = self._next_port[u] if port_u is None else int(port_u)
        pv = self._next_port[v] if port_v is None else int(port_v)
        for n, p in ((u, pu), (v, pv)):
            if p in self._ports[n] or p < 1:
                raise TopologyError(f"port: port {p} of {n} is already used or not >= 1")
        self._ports[u].add(pu)
        self._ports[v].add(pv)
        self._next_port[u] = max(self._next_port[u], pu + 1)
        self._next_port[v] = max(self._next_port[v], pv + 1)
        self.graph.add_edge(u, v, capacity_bps=float(capacity_bps), port=pu, peer_port=pv)
        self.graph.add_edge(v, u, capacity_bps=float(capacity_bps), port=pv, peer_port=pu)
        self._frozen = False

    def freeze(self) -> "Topology":
        """Index the links (called by the builders once all links exist)."""
        self.links = sorted(self.graph.edges())
        self.link_ids = {e: i for i, e in enumerate(self.links)}
        self.capacity = np.array([self.graph.edges[e]["capacity_bps"] for e in self.links])
        self._path_cache.clear()
        self._switch_path_cache.clear()
        self._path_links_cache.clear()
        self._swg = None
        self._frozen = True
        return self

    # -- queries ------------------------------------------------------------------
    @property
    def hosts(self) -> List[str]:
        """Host names in the order they were added (index 1..N)."""
        hs = [(d["index"], n) for n, d in self.graph.nodes(data=True) if d["role"] == HOST]
        return [n for _, n in sorted(hs)]

    @property
    def switches(self) -> List[str]:
        """Switch names sorted by dpid."""
        ss = [(d["dpid"], n) for n, d in self.graph.nodes(data=True) if d["role"] != HOST]
        return [n for _, n in sorted(ss)]

    def role(self, node: str) -> str:
        """Role of ``node``.  Raises TopologyError for an unknown node."""
        self.check_node(node)
        return self.graph.nodes[node]["role"]

    def is_host(self, node: str) -> bool:
        """True when ``node`` is a host."""
        return self.graph.nodes[node]["role"] == HOST

    def check_node(self, node: str) -> None:
        """Raise :class:`TopologyError` naming ``node`` when it is not in the topology."""
        if node not in self.graph:
            raise TopologyError(f"host: unknown node {node!r} in topology {self.name}")

    def check_host(self, host: str) -> None:
        """Raise :class:`TopologyError` unless ``host`` is a host of this topology."""
        if host not in self.graph or self.graph.nodes[host]["role"] != HOST:
            raise TopologyError(f"host: unknown host {host!r} in topology {self.name}")

    def host_by_ip(self, ip: str) -> str:
        """Host name owning ``ip``.  Raises TopologyError if none."""
        for n, d in self.graph.nodes(data=True):
            if d["role"] == HOST and d["ip"] == ip:
                return n
        raise TopologyError(f"host: no host with IP {ip!r}")

    def attachment(self, host: str) -> Tuple[str, int]:
        """(switch, port on that switch) a host is attached to (its first neighbour)."""
        self.check_host(host)
        sw = next(iter(self.graph.successors(host)))
        return sw, self.graph.edges[sw, host]["port"]

    def _switch_paths(self, s: str, d: str) -> List[Path]:
        key = (s, d)
        if key not in self._switch_path_cache:
            if s == d:
                paths = [(s,)]
            else:
                # Shortest paths over switches only: hosts never forward.
                sub = self._switch_graph()
                try:
                    paths = sorted(tuple(p) for p in nx.all_shortest_paths(sub, s, d))
                except nx.NetworkXNoPath:
                    paths = []
            self._switch_path_cache[key] = paths
        return self._switch_path_cache[key]

    def _switch_graph(self) -> nx.DiGraph:
        if not self._frozen:
            return self.graph.subgraph(self.switches)
        if getattr(self, "_swg", None) is None:
            # a copy, not a subgraph view: a view filters every neighbour through its
            # node set at each BFS step (path search x19 slower on a k=16 fat-tree)
            self._swg = self.graph.subgraph(self.switches).copy()
        return self._swg

    def candidate_paths(self, src: str, dst: str, k: Optional[int] = None) -> List[Path]:
        """All equal-cost shortest paths (the ECMP set) from host ``src`` to ``dst``;
        with a path slack (:meth:`set_path_slack`), also the simple paths up to that
        many hops longer, shortest first.

        Paths are tuples of node names from ``src`` to ``dst``, sorted
        lexicographically so that the order is deterministic, and capped at the first
        ``k`` when ``k`` is given.  A host with several uplinks (the Fig. 1 example
        topology) gets paths through each of them.  Results are cached per pair.

        ``src == dst`` gives the hairpin paths host-switch-host through each switch the
        host is attached to (a big-switch port's ingress and egress links).

        Raises:
            TopologyError: unknown host or no path.
        """
        self.check_host(src)
        self.check_host(dst)
        key = (src, dst)
        paths = self._path_cache.get(key)
        if paths is None:
            best: List[Path] = []
            best_len = None
            if src == dst:
                best = [(src, s, src) for s in sorted(self.graph.successors(src))]
            for s in ([] if src == dst else sorted(self.graph.successors(src))):
                for d in sorted(self.graph.predecessors(dst)):
                    if self.is_host(s) or self.is_host(d):
                        continue
                    for sp in self._switch_paths(s, d):
                        p = (src,) + sp + (dst,)
                        if best_len is None or len(p) < best_len:
                            best, best_len = [p], len(p)
                        elif len(p) == best_len:
                            best.append(p)
            if not best:
                raise TopologyError(f"path: no path from {src} to {dst}")
            paths = sorted(set(best))
            if self.path_slack and src != dst:
                paths = self._slack_paths(src, dst, len(paths[0]) + self.path_slack)
            self._path_cache[key] = paths
        return paths if k is None else paths[:k]

    def set_path_slack(self, hops: int) -> "Topology":
        """Candidate paths up to ``hops`` hops longer than the shortest (0: the ECMP set).

        With a slack, :meth:`candidate_paths` gives the shortest simple paths over
        switches (Yen's algorithm, ``networkx.shortest_simple_paths``) up to the
        shortest length + ``hops``, at most :data:`SLACK_PATHS_MAX` per pair, sorted by
        hop count then by name; a scheduler's ``max_paths`` then keeps the first K (the
        K shortest).  On a fabric whose links differ in speed, a longer path over
        faster links becomes a candidate.  ECMP (switch hashing) keeps to the equal-cost
        shortest paths (:meth:`rapier_app.scheduling.base.Scheduler.ecmp_path`).

        Returns:
            self (the cached candidate paths are dropped).

        Raises:
            TopologyError: ``hops`` not an integer >= 0.
        """
        if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
            raise TopologyError(f"path_slack: must be an integer number of hops >= 0, "
                                f"got {hops!r}")
        if hops != self.path_slack:
            self.path_slack = hops
            self._path_cache.clear()
        return self

    def _slack_paths(self, src: str, dst: str, max_nodes: int) -> List[Path]:
        """Simple paths src -> dst over switches with at most ``max_nodes`` nodes, in
        Yen's order, capped at :data:`SLACK_PATHS_MAX`, sorted by (length, names)."""
        nodes = set(self.switches) | {src, dst}
        sub = self.graph.subgraph(nodes)
        out: List[Path] = []
        for p in nx.shortest_simple_paths(sub, src, dst):
            if len(p) > max_nodes or len(out) >= SLACK_PATHS_MAX:
                break
            out.append(tuple(p))
        return sorted(out, key=lambda p: (len(p), p))

    def path_links(self, path: Sequence[str]) -> np.ndarray:
        """Link indices (into :attr:`capacity`) of ``path``, as an int numpy array.

        Raises:
            TopologyError: a hop of the path is not a link of the topology.
        """
        path = tuple(path)
        arr = self._path_links_cache.get(path)
        if arr is None:
            try:
                arr = np.fromiter((self.link_ids[(a, b)] for a, b in zip(path, path[1:])),
                                  dtype=np.int64, count=len(path) - 1)
            except KeyError as exc:
                raise TopologyError(f"path: {'-'.join(path)} uses a link that does not "
                                    f"exist: {exc.args[0]}") from None
            self._path_links_cache[path] = arr
        return arr

    def to_dict(self) -> dict:
        """JSON-ready description: nodes with roles/dpids/addresses, links with ports."""
        nodes = []
        for n, d in sorted(self.graph.nodes(data=True)):
            nodes.append({"name": n, **{k: v for k, v in d.items() if k != "index"}})
        links = [{"src": u, "dst": v, "capacity_bps": d["capacity_bps"],
                  "src_port": d["port"], "dst_port": d["peer_port"]}
                 for u, v, d in sorted(self.graph.edges(data=True))]
        return {"name": self.name, "nodes": nodes, "links": links}

    def __repr__(self) -> str:
        return (f"Topology({self.name!r}, hosts={len(self.hosts)}, "
                f"switches={len(self.switches)}, links={self.graph.number_of_edges()})")


def describe(topo: Topology) -> str:
    """One line about ``topo``: counts, link speeds (Mbit/s x full-duplex links) and
    path slack."""
    g = topo.graph
    speeds = Counter(d["capacity_bps"] for u, v, d in g.edges(data=True) if u < v)
    sp = ", ".join(f"{c} x {bps / 1e6:g} Mbit/s" for bps, c in sorted(speeds.items()))
    return (f"{topo.name}: {len(topo.switches)} switches, {len(topo.hosts)} hosts, "
            f"{g.number_of_edges() // 2} links ({sp}); path slack {topo.path_slack}")
