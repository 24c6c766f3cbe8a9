"""Networks the controller discovers: switch, link and host events -> a topology.

Pure (no Ryu import, no clock): the Ryu shell (:mod:`.app`) translates

* ``EventSwitchEnter`` (the datapath's port descriptions, ``OFPPort.curr_speed`` in
  kbit/s) into :meth:`Discovery.switch_enter`, ``EventSwitchLeave`` into
  :meth:`Discovery.switch_leave`;
* ``EventOFPPortStatus`` into :meth:`Discovery.port_status`;
* Ryu's LLDP discovery (``--observe-links``: ``EventLinkAdd`` / ``EventLinkDelete``)
  into :meth:`Discovery.link_add` / :meth:`Discovery.link_delete`;
* the first packets a host sends on an edge port (a port no discovered link uses:
  ARP, or IPv4 that missed every rule) into :meth:`Discovery.host_seen`,

and :meth:`Discovery.topology` builds the :class:`topologies.Topology` the scheduler,
default forwarding and proxy ARP use.  Times (``now``) are seconds on the caller's
clock.

Naming (stable across runs, so that a saved topology file and Mininet agree):
switch ``s<dpid>`` (Mininet names switch ``sN`` with dpid N); a host whose IPv4
address lies in ``host_net`` is ``h<offset>`` (Mininet gives ``hN`` the address
``10.0.0.N`` of ``10.0.0.0/8``), any other host is named by its address.

What stays in the graph: a switch, a link or a host once seen stays a node or an
edge of the topology; a link that disappears (LLDP timeout, port down, its switch
left) is *down* (:meth:`Discovery.down_links`): the scheduler never uses it and
default forwarding routes around it, until it comes back.  A host seen on another
edge port has *moved*: its one access link is rebuilt there.

Capacities (bit/s) of a link, first that applies: a per-link override
(``link_capacities``: ``"s1-s2=10e6,s2-h3=20e6"``, node names, either order), the
configured default ``link_bps``, the smaller ``curr_speed`` the two switch ports
report (a host link: the switch port's), :data:`FALLBACK_BPS`.  Open vSwitch in
Mininet reports 10 Gbit/s on every port whatever a ``TCLink``'s bandwidth, hence the
configuration first.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Set, Tuple

from topologies import Topology

from ..errors import RapierError
from .rules import link_mismatch

#: Capacity (bit/s) of a link nothing else gives one.
FALLBACK_BPS = 1e9
#: OpenFlow 1.3 port numbers above this are reserved (LOCAL, CONTROLLER, ...).
OFPP_MAX = 0xFFFFFF00
#: States of the discovered fabric (``state`` in ``GET /rapier/v1/topology``).
EMPTY, DISCOVERING, STABLE = "empty", "discovering", "stable"

Port = Tuple[int, int]  # (dpid, port_no)


class DiscoveryError(RapierError, ValueError):
    """A bad discovery option (``link_capacities``, ``discover_host_net``); the
    message starts with the option's name."""


def parse_link_capacities(text: str) -> Dict[frozenset, float]:
    """``"s1-s2=10e6, s2-h3=2e7"`` -> ``{frozenset({"s1", "s2"}): 1e7, ...}`` (bit/s).

    Raises:
        DiscoveryError: an entry that is not ``A-B=BPS`` with a positive number, or a
            link given twice (message names ``link_capacities`` and the entry).
    """
    out: Dict[frozenset, float] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        ends, eq, value = item.partition("=")
        a, dash, b = ends.strip().partition("-")
        try:
            bps = float(value)
        except ValueError:
            bps = float("nan")
        if not eq or not dash or not a.strip() or not b.strip() or not bps > 0 \
                or bps == float("inf"):
            raise DiscoveryError(f"link_capacities: entry {item!r} must be NODE-NODE=BPS "
                                 f"with a positive number of bit/s")
        key = frozenset((a.strip(), b.strip()))
        if key in out or len(key) != 2:
            raise DiscoveryError(f"link_capacities: link {ends.strip()!r} given twice or "
                                 f"to itself")
        out[key] = bps
    return out


def parse_host_net(text: str) -> ipaddress.IPv4Network:
    """The ``discover_host_net`` option as a network.

    Raises:
        DiscoveryError: not an IPv4 network (names ``discover_host_net``).
    """
    try:
        return ipaddress.IPv4Network(text, strict=False)
    except (ValueError, TypeError):
        raise DiscoveryError(f"discover_host_net: must be an IPv4 network such as "
                             f"10.0.0.0/8, got {text!r}") from None


@dataclass
class PortInfo:
    """One switch port as the switch described it: ``speed_bps`` (``curr_speed``
    kbit/s x 1000; 0 unknown) and ``up`` (neither link down nor administratively
    down)."""

    speed_bps: float = 0.0
    up: bool = True


@dataclass
class HostInfo:
    """A host seen on an edge port: its addresses, where, and when (s)."""

    ip: str
    mac: str
    dpid: int
    port: int
    first_s: float
    last_s: float
    moves: int = 0


@dataclass
class Discovery:
    """What connected: switches and their ports, links, hosts (see the module
    docstring).

    Args:
        link_bps: configured default capacity of every link (bit/s; None: the
            reported port speeds).
        link_capacities: per-link overrides (:func:`parse_link_capacities`).
        host_net: the network whose addresses give host names ``h<offset>``.
        settle_s: the fabric is *stable* once nothing changed for this long (s).

    Attributes:
        version: bumped by every change of the graph's elements (a new switch, link
            or host, a host move, a port speed change); :meth:`topology` is rebuilt
            when it moves.
        state_version: bumped by every change of the graph *or* of what is up
            (:meth:`down_links`).
        last_change_s: time of the last change of either kind.
    """

    link_bps: Optional[float] = None
    link_capacities: Mapping[frozenset, float] = field(default_factory=dict)
    host_net: ipaddress.IPv4Network = field(
        default_factory=lambda: ipaddress.IPv4Network("10.0.0.0/8"))
    settle_s: float = 3.0
    #: dpid -> port_no -> PortInfo of the switches that entered (kept after they left)
    ports: Dict[int, Dict[int, PortInfo]] = field(default_factory=dict)
    #: dpids connected now
    connected: Set[int] = field(default_factory=set)
    #: directed links seen by LLDP and present now: (src dpid, port) -> (dst dpid, port)
    links: Dict[Port, Port] = field(default_factory=dict)
    #: every directed link ever seen (the graph keeps them; absent ones are down)
    known_links: Dict[Port, Port] = field(default_factory=dict)
    #: IPv4 address -> HostInfo
    hosts: Dict[str, HostInfo] = field(default_factory=dict)
    version: int = 0
    state_version: int = 0
    last_change_s: Optional[float] = None
    #: a log of the changes, newest last (at most 200): "t_s: what"
    events: List[str] = field(default_factory=list)

    # -- events ------------------------------------------------------------------------
    def _changed(self, now: float, what: str, graph: bool = True) -> None:
        if graph:
            self.version += 1
        self.state_version += 1
        self.last_change_s = now
        self.events.append(f"{now:.3f}: {what}")
        del self.events[:-200]

    def switch_enter(self, dpid: int, ports: Iterable[Tuple[int, float, bool]],
                     now: float) -> None:
        """Switch ``dpid`` connected with ``ports``: ``(port_no, curr_speed kbit/s,
        up)`` each (reserved port numbers such as LOCAL are ignored)."""
        dpid = int(dpid)
        new = {int(p): PortInfo(float(kbps or 0) * 1e3, bool(up)) for p, kbps, up in ports
               if 0 < int(p) <= OFPP_MAX}
        old = self.ports.get(dpid)
        graph = old is None or {p: i.speed_bps for p, i in old.items()} != \
            {p: i.speed_bps for p, i in new.items()}
        self.ports[dpid] = new
        if dpid not in self.connected or graph or old != new:
            self.connected.add(dpid)
            self._changed(now, f"switch {self.switch_name(dpid)} entered with "
                               f"{len(new)} ports", graph)

    def switch_leave(self, dpid: int, now: float) -> None:
        """Switch ``dpid`` disconnected: its links and hosts are down until it is back
        (the links it had are dropped from the present set; LLDP finds them again)."""
        dpid = int(dpid)
        if dpid not in self.connected:
            return
        self.connected.discard(dpid)
        for src, dst in list(self.links.items()):
            if src[0] == dpid or dst[0] == dpid:
                del self.links[src]
        self._changed(now, f"switch {self.switch_name(dpid)} left", graph=False)

    def port_status(self, dpid: int, port: int, up: bool, now: float,
                    speed_kbps: Optional[float] = None, deleted: bool = False) -> None:
        """Port ``port`` of ``dpid`` was added, modified (``up``, ``speed_kbps``) or
        deleted (``deleted``: down, and its links leave the present set)."""
        dpid, port = int(dpid), int(port)
        if dpid not in self.ports or not 0 < port <= OFPP_MAX:
            return
        info = self.ports[dpid].get(port)
        graph = False
        if info is None:
            info = self.ports[dpid][port] = PortInfo(0.0, False)
            graph = True
        was = (info.up, info.speed_bps)
        info.up = bool(up) and not deleted
        if speed_kbps is not None and float(speed_kbps) * 1e3 != info.speed_bps:
            info.speed_bps = float(speed_kbps) * 1e3
            graph = True
        if not info.up:
            for src, dst in list(self.links.items()):
                if (dpid, port) in (src, dst):
                    del self.links[src]
        if graph or was != (info.up, info.speed_bps):
            self._changed(now, f"port {self.switch_name(dpid)}:{port} "
                               f"{'up' if info.up else 'down'}", graph)

    def link_add(self, src_dpid: int, src_port: int, dst_dpid: int, dst_port: int,
                 now: float) -> None:
        """LLDP saw the link leaving ``src_dpid`` by ``src_port`` into ``dst_dpid``
        by ``dst_port``.  A link seen where a host was learnt turns that port into a
        switch port (the host is forgotten there: it was the far switch's packets)."""
        src, dst = (int(src_dpid), int(src_port)), (int(dst_dpid), int(dst_port))
        if self.links.get(src) == dst:
            return
        graph = self.known_links.get(src) != dst
        self.links[src] = dst
        self.known_links[src] = dst
        for ip, h in list(self.hosts.items()):
            if (h.dpid, h.port) in (src, dst):
                del self.hosts[ip]
                graph = True
        self._changed(now, f"link {self.switch_name(src[0])}:{src[1]} -> "
                           f"{self.switch_name(dst[0])}:{dst[1]} up", graph)

    def link_delete(self, src_dpid: int, src_port: int, dst_dpid: int, dst_port: int,
                    now: float) -> None:
        """LLDP lost the link (timeout, port down, switch gone): it is down."""
        src = (int(src_dpid), int(src_port))
        if src in self.links:
            del self.links[src]
            self._changed(now, f"link {self.switch_name(src[0])}:{src[1]} -> "
                               f"{self.switch_name(int(dst_dpid))}:{int(dst_port)} down",
                          graph=False)

    def is_switch_port(self, dpid: int, port: int) -> bool:
        """True when a link ever seen uses port ``port`` of ``dpid``."""
        p = (int(dpid), int(port))
        return p in self.known_links or p in self.known_links.values()

    def edge_ports(self) -> List[Port]:
        """``(dpid, port)`` of every up port of a connected switch that no known link
        uses (where hosts are), sorted."""
        return [(d, p) for d in sorted(self.connected) for p, i in
                sorted(self.ports.get(d, {}).items())
                if i.up and not self.is_switch_port(d, p)]

    def host_seen(self, ip: str, mac: str, dpid: int, port: int, now: float) -> Optional[str]:
        """A packet from ``ip``/``mac`` came in on port ``port`` of ``dpid``.

        Returns:
            ``"new"`` (a host learnt), ``"moved"`` (seen on another edge port or with
            another MAC: its access link moves), or None (known there already, or the
            port faces a switch, or the switch is unknown, or ``ip`` is no unicast
            IPv4 address).
        """
        dpid, port = int(dpid), int(port)
        try:
            addr = ipaddress.IPv4Address(ip)
        except (ValueError, TypeError):
            return None
        if addr.is_unspecified or addr.is_multicast or addr.is_loopback \
                or str(addr) == "255.255.255.255":
            return None
        if dpid not in self.connected or port not in self.ports.get(dpid, {}) \
                or self.is_switch_port(dpid, port):
            return None
        ip = str(addr)
        h = self.hosts.get(ip)
        if h is not None and (h.dpid, h.port, h.mac) == (dpid, port, mac):
            h.last_s = now
            return None
        if h is None:
            self.hosts[ip] = HostInfo(ip, mac, dpid, port, now, now)
            self._changed(now, f"host {self.host_name(ip)} ({mac}) seen at "
                               f"{self.switch_name(dpid)}:{port}")
            return "new"
        old = f"{self.switch_name(h.dpid)}:{h.port}"
        h.mac, h.dpid, h.port, h.last_s = mac, dpid, port, now
        h.moves += 1
        self._changed(now, f"host {self.host_name(ip)} moved from {old} to "
                           f"{self.switch_name(dpid)}:{port}")
        return "moved"

    # -- state -------------------------------------------------------------------------
    def state(self, now: float) -> str:
        """:data:`EMPTY` (no switch yet), :data:`DISCOVERING` (something changed less
        than ``settle_s`` ago) or :data:`STABLE`."""
        if not self.ports:
            return EMPTY
        if self.last_change_s is None or now - self.last_change_s >= self.settle_s:
            return STABLE
        return DISCOVERING

    @staticmethod
    def switch_name(dpid: int) -> str:
        """``s<dpid>`` (decimal, Mininet's convention)."""
        return f"s{int(dpid)}"

    def host_name(self, ip: str) -> str:
        """``h<offset in host_net>`` or the address itself (module docstring)."""
        addr = ipaddress.IPv4Address(ip)
        if addr in self.host_net and addr != self.host_net.network_address:
            return f"h{int(addr) - int(self.host_net.network_address)}"
        return str(addr)

    # -- the graph ---------------------------------------------------------------------
    def _capacity(self, a: str, b: str, speeds: Iterable[float]) -> float:
        over = self.link_capacities.get(frozenset((a, b)))
        if over is not None:
            return float(over)
        if self.link_bps:
            return float(self.link_bps)
        known = [s for s in speeds if s and s > 0]
        return min(known) if known else FALLBACK_BPS

    def cables(self) -> List[Tuple[Port, Port]]:
        """Known inter-switch cables as ``(end a, end b)`` with ``a < b``, sorted (a
        link seen in one direction only counts)."""
        out = set()
        for src, dst in self.known_links.items():
            out.add((min(src, dst), max(src, dst)))
        return sorted(out)

    def topology(self, name: str = "discovered") -> Topology:
        """The discovered fabric as a frozen :class:`~topologies.Topology`.

        Switches ``s<dpid>`` (role ``switch``), hosts with their IP and MAC, a link per
        known cable with the ports LLDP saw (``port`` / ``peer_port`` as the
        generated topologies have them) and one access link per host (host side port
        1; one host per edge port, the one seen there last), capacities as the module
        docstring says.  Hosts get the integer value of
        their address as ``index`` (the ECMP group id of default forwarding), so the
        id of a host's group never changes while the fabric grows.  A cable whose
        ports were reused by another cable (re-cabling) keeps the newest only.
        """
        t = Topology(name)
        for dpid in sorted(self.ports):
            t.add_switch(self.switch_name(dpid), "switch", dpid)
        used: Dict[Port, Tuple[str, str]] = {}
        for a, b in self.cables():
            u, v = self.switch_name(a[0]), self.switch_name(b[0])
            if u == v or t.graph.has_edge(u, v) or a in used or b in used \
                    or a[0] not in self.ports or b[0] not in self.ports:
                continue  # parallel cables: the first (lowest ports) only
            sp = [self.ports[a[0]].get(a[1], PortInfo()).speed_bps,
                  self.ports[b[0]].get(b[1], PortInfo()).speed_bps]
            t.add_link(u, v, self._capacity(u, v, sp), a[1], b[1])
            used[a] = used[b] = (u, v)
        # one host per edge port: the one seen last there (the others moved away
        # unseen, or share the port: they are left out until seen elsewhere)
        on_port: Dict[Port, str] = {}
        for ip, h in sorted(self.hosts.items(), key=lambda kv: kv[1].last_s):
            on_port[(h.dpid, h.port)] = ip
        for ip in sorted(on_port.values(), key=lambda x: int(ipaddress.IPv4Address(x))):
            h = self.hosts[ip]
            if h.dpid not in self.ports or (h.dpid, h.port) in used:
                continue
            name_h = self.host_name(ip)
            t.add_host(name_h, ip=ip, mac=h.mac)
            t.graph.nodes[name_h]["index"] = int(ipaddress.IPv4Address(ip))
            sw = self.switch_name(h.dpid)
            sp = [self.ports[h.dpid].get(h.port, PortInfo()).speed_bps]
            t.add_link(name_h, sw, self._capacity(name_h, sw, sp), 1, h.port)
        return t.freeze()


    def down_links(self, topo: Topology) -> Set[Tuple[str, str]]:
        """Directed links of ``topo`` that are not there now: both directions of a
        cable LLDP does not see at present, of a port that is down, and of every
        link of a switch that is not connected (its hosts' access links too)."""
        g = topo.graph
        present = set()
        for src, dst in self.links.items():
            present.add((src, dst))
            present.add((dst, src))
        down = set()
        for u, v, d in g.edges(data=True):
            if not (topo.is_host(u) or topo.is_host(v)) and u < v:
                a = (int(g.nodes[u]["dpid"]), int(d["port"]))
                b = (int(g.nodes[v]["dpid"]), int(d["peer_port"]))
                ok = (a, b) in present and self._port_up(*a) and self._port_up(*b)
                if not ok:
                    down.update({(u, v), (v, u)})
            elif topo.is_host(u):
                s = (int(g.nodes[v]["dpid"]), int(d["peer_port"]))
                if not self._port_up(*s):
                    down.update({(u, v), (v, u)})
        return down

    def _port_up(self, dpid: int, port: int) -> bool:
        info = self.ports.get(dpid, {}).get(port)
        return dpid in self.connected and info is not None and info.up

    def view(self, now: float) -> Dict[str, object]:
        """JSON-ready summary for ``GET /rapier/v1/topology`` (``discovery``)."""
        last = self.last_change_s
        return {"state": self.state(now), "settle_s": self.settle_s,
                "since_change_s": None if last is None else round(now - last, 3),
                "switches": [{"name": self.switch_name(d), "dpid": d,
                              "connected": d in self.connected,
                              "ports": {str(p): {"up": i.up, "speed_bps": i.speed_bps}
                                        for p, i in sorted(self.ports[d].items())}}
                             for d in sorted(self.ports)],
                "links_present": len(self.links), "links_known": len(self.known_links),
                "hosts": [{"name": self.host_name(ip), "ip": ip, "mac": h.mac,
                           "switch": self.switch_name(h.dpid), "port": h.port,
                           "first_seen_s": round(h.first_s, 3), "moves": h.moves}
                          for ip, h in sorted(self.hosts.items(),
                                              key=lambda kv: int(ipaddress.IPv4Address(kv[0])))],
                "events": self.events[-20:]}


def compare_declared(declared: Topology, disc: Discovery) -> List[str]:
    """What connected against a declared topology: human-readable differences.

    Names: a declared switch that is not connected, a connected switch (dpid) that
    is not declared, a declared inter-switch link LLDP does not see, an observed link
    that is not declared or whose ports differ from the declaration (worded as
    :func:`~.rules.link_mismatch` words them; an undeclared cable once).  Empty when
    everything declared is there and nothing else.  (Hosts are not compared: they
    show themselves only when they send.)
    """
    g = declared.graph
    by_dpid = {int(g.nodes[s]["dpid"]): s for s in declared.switches}
    msgs: List[str] = []
    for s in declared.switches:
        if int(g.nodes[s]["dpid"]) not in disc.connected:
            msgs.append(f"switch {s} (dpid={int(g.nodes[s]['dpid']):#x}) is not connected")
    for d in sorted(disc.connected):
        if d not in by_dpid:
            msgs.append(f"switch dpid={d:#x} is connected but not in topology "
                        f"{declared.name}")
    present = set(disc.links.items())
    for u, v, d in sorted(g.edges(data=True)):
        if declared.is_host(u) or declared.is_host(v) or not u < v:
            continue
        a = (int(g.nodes[u]["dpid"]), int(d["port"]))
        b = (int(g.nodes[v]["dpid"]), int(d["peer_port"]))
        if (a, b) not in present and (b, a) not in present:
            msgs.append(f"link {u}:{a[1]} - {v}:{b[1]} is declared but not seen")
    for (sd, sp), (dd, dp) in sorted(present):
        s, d = by_dpid.get(sd), by_dpid.get(dd)
        if s is None or d is None:
            continue  # the switch is reported above
        if not g.has_edge(s, d) and (dd, dp) <= (sd, sp):
            continue  # an undeclared cable: reported once, from its lower end
        msg = link_mismatch(declared, (sd, sp, dd, dp), by_dpid)
        if msg is not None:
            msgs.append(msg)
    return msgs


def missing_declared_links(declared: Topology, disc: Discovery) -> Set[Tuple[str, str]]:
    """Directed inter-switch links of ``declared`` that LLDP does not see now (both
    directions of a cable seen in neither): no schedule may use them."""
    g = declared.graph
    present = set(disc.links.items())
    out = set()
    for u, v, d in g.edges(data=True):
        if declared.is_host(u) or declared.is_host(v):
            continue
        a = (int(g.nodes[u]["dpid"]), int(d["port"]))
        b = (int(g.nodes[v]["dpid"]), int(d["peer_port"]))
        if (a, b) not in present and (b, a) not in present:
            out.add((u, v))
    return out


__all__ = ["DISCOVERING", "Discovery", "DiscoveryError", "EMPTY", "FALLBACK_BPS",
           "HostInfo", "PortInfo", "STABLE", "compare_declared", "missing_declared_links",
           "parse_host_net", "parse_link_capacities"]
