"""OpenFlow rules as data, default forwarding, topology checks and the rule diff.

The core returns OpenFlow 1.3 rules *as data* (:class:`FlowRule`, :class:`GroupRule`)
inside :class:`Actions`; :mod:`.ofmsgs` turns them into messages.  Here:

* the constants of the rules (priorities, cookies, EtherTypes);
* :func:`default_forwarding`: per-destination shortest paths, ECMP over OpenFlow
  ``SELECT`` groups, ARP to the controller;
* :func:`check_observed` / :func:`link_mismatch` / :func:`missing_switches`: what
  Ryu discovered against the configured topology;
* :func:`diff_rules`: installed rules -> desired rules as adds, modifies
  (``MODIFY_STRICT`` keeps the byte counters) and deletes, in the order to send them.

Pure: no Ryu import, no I/O.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Dict, Hashable, Iterable, List, Mapping, Optional, Tuple

from topologies import Topology

from .matches import PROTOCOLS
from .pushes import AgentPush

ETH_TYPE_IP = 0x0800
ETH_TYPE_ARP = 0x0806
IP_PROTO_TCP = 6
#: OpenFlow 1.3 reserved port numbers used in rule data.
OFPP_CONTROLLER = 0xFFFFFFFD
#: Priorities: coflow 5-tuple rules above ARP-to-controller above default forwarding.
PRIORITY_COFLOW = 100
PRIORITY_ARP = 20
PRIORITY_DEFAULT = 10
#: Cookies: the top 16 bits tag our rules (0x5241 = "RA"); coflow rules carry a
#: per-flow number in the low bits so that flow-stats replies map back to flows.
COOKIE_TAG = 0x5241 << 48
COOKIE_TAG_MASK = 0xFFFF << 48
COOKIE_DEFAULT = COOKIE_TAG | 1


@dataclass(frozen=True)
class FlowRule:
    """One OpenFlow 1.3 flow entry in table 0, as data.

    Attributes:
        dpid: datapath id of the switch.
        priority: flow priority.
        match: ((field, value), ...) in Ryu ``OFPMatch`` keyword names
            (``eth_type``, ``ip_proto``, ``ipv4_src``, ``ipv4_dst``, ``tcp_src``,
            ``tcp_dst``, ``udp_src``, ``udp_dst``; :func:`flow_match`).
        actions: (("output", port) | ("group", group_id) | ("controller", 0), ...).
        cookie: 64-bit cookie (see :data:`COOKIE_TAG`).
        command: ``"add"``, ``"modify"`` (MODIFY_STRICT: keeps counters) or
            ``"delete"`` (DELETE_STRICT).
        flow_id: the coflow flow this rule serves, or None for default rules.
    """

    dpid: int
    priority: int
    match: Tuple[Tuple[str, Any], ...]
    actions: Tuple[Tuple[str, int], ...]
    cookie: int = COOKIE_DEFAULT
    command: str = "add"
    flow_id: Optional[str] = None

    def match_dict(self) -> Dict[str, Any]:
        """The match as a dict (Ryu ``OFPMatch(**match_dict)``)."""
        return dict(self.match)

    def with_command(self, command: str) -> "FlowRule":
        """A copy with another command."""
        return FlowRule(self.dpid, self.priority, self.match, self.actions, self.cookie,
                        command, self.flow_id)


@dataclass(frozen=True)
class GroupRule:
    """One OpenFlow 1.3 group, as data: ``select`` over output ports (ECMP).

    Attributes:
        dpid: datapath id.
        group_id: group number (the destination host's index).
        ports: output ports of the buckets, one bucket each (weight 1).
        command: ``"add"`` or ``"delete"``.
    """

    dpid: int
    group_id: int
    ports: Tuple[int, ...]
    command: str = "add"


@dataclass
class Actions:
    """What the Ryu shell must do after a core call.

    Attributes:
        rules: flow and group rules in the order to send them.
        pushes: agent pushes.
        finished: flow ids that completed in this call.
    """

    rules: List[Any] = field(default_factory=list)
    pushes: List[AgentPush] = field(default_factory=list)
    finished: List[str] = field(default_factory=list)

    def extend(self, other: "Actions") -> "Actions":
        """Append ``other``'s rules, pushes and finished flows; return self."""
        self.rules.extend(other.rules)
        self.pushes.extend(other.pushes)
        self.finished.extend(other.finished)
        return self


def tcp_match(src_ip: str, dst_ip: str, dst_port: int) -> Tuple[Tuple[str, Any], ...]:
    """The match of a coflow flow known by its TCP destination port: IPv4, TCP, src
    IP, dst IP, TCP dst port (:func:`flow_match` with ``proto="tcp"``)."""
    return flow_match(src_ip, dst_ip, "tcp", None, dst_port)


#: OpenFlow match fields of the ports, per protocol: (source, destination).
PORT_FIELDS = {"tcp": ("tcp_src", "tcp_dst"), "udp": ("udp_src", "udp_dst")}


def flow_match(src_ip: str, dst_ip: str, proto: str = "tcp", src_port: Optional[int] = None,
               dst_port: Optional[int] = None) -> Tuple[Tuple[str, Any], ...]:
    """The match of a coflow flow: ``eth_type`` IPv4, ``ip_proto`` (6 TCP, 17 UDP),
    ``ipv4_src``, ``ipv4_dst`` and exactly the ports given (``tcp_src``/``tcp_dst``
    or ``udp_src``/``udp_dst``; a port given as None is not matched), in that order
    (:func:`.ofmsgs.match_tuple` reads switch matches back in the same order).

    Raises:
        KeyError: ``proto`` not ``tcp`` or ``udp``.
    """
    sf, df = PORT_FIELDS[proto]
    m = [("eth_type", ETH_TYPE_IP), ("ip_proto", PROTOCOLS[proto]), ("ipv4_src", src_ip),
         ("ipv4_dst", dst_ip)]
    if src_port is not None:
        m.append((sf, int(src_port)))
    if dst_port is not None:
        m.append((df, int(dst_port)))
    return tuple(m)


def cookie_for(flow_number: int) -> int:
    """The cookie of the ``flow_number``-th flow registered (1, 2, ...): the tag in
    the top 16 bits, ``flow_number + 1`` below (1 is the default rules' cookie)."""
    return COOKIE_TAG | (flow_number + 1)


def diff_rules(installed: Mapping[Hashable, FlowRule],
               desired: Mapping[Hashable, FlowRule]) -> List[FlowRule]:
    """The rule changes that turn ``installed`` into ``desired`` (both keyed alike,
    the core uses (dpid, flow id)).

    Returns:
        Adds (key not installed) and modifies (same key, other actions: the new path,
        sent as ``MODIFY_STRICT`` so that the byte counters survive) in ``desired``'s
        order, then deletes (key no longer desired) in ``installed``'s order: the new
        path is ready before the old one goes.  A rule with unchanged actions gives
        nothing.
    """
    changes: List[FlowRule] = []
    for key, r in desired.items():
        old = installed.get(key)
        if old is None:
            changes.append(r)
        elif old.actions != r.actions:
            changes.append(r.with_command("modify"))
    changes.extend(old.with_command("delete") for key, old in installed.items()
                   if key not in desired)
    return changes


# ---------------------------------------------------------------------------
# Default forwarding and topology checks
# ---------------------------------------------------------------------------
def _switch_neighbours(topo: Topology, s: str) -> List[str]:
    return [n for n in topo.graph.successors(s) if not topo.is_host(n)]


def default_forwarding(topo: Topology) -> Dict[int, Tuple[List[GroupRule], List[FlowRule]]]:
    """Default forwarding for all traffic that is not a scheduled coflow flow.

    For every destination host h and every switch s: the output ports of s on the
    shortest paths (in switch hops) to the switches h is attached to.  One port gives
    an ``output`` action; several give a ``select`` group (ECMP, OVS hashes the
    5-tuple) with ``group_id`` = the host's index.  Plus one rule per switch sending
    ARP to the controller (proxy ARP: ARP is never flooded, so loops do not storm).

    Returns:
        dpid -> (groups, rules); rules match ``eth_type=0x0800, ipv4_dst=IP(h)``.
    """
    out: Dict[int, Tuple[List[GroupRule], List[FlowRule]]] = {}
    g = topo.graph
    switches = topo.switches
    for s in switches:
        dpid = g.nodes[s]["dpid"]
        out[dpid] = ([], [FlowRule(dpid, PRIORITY_ARP, (("eth_type", ETH_TYPE_ARP),),
                                   (("controller", 0),))])
    for h in topo.hosts:
        attach = sorted(n for n in g.successors(h) if not topo.is_host(n))
        dist = {a: 0 for a in attach}
        frontier = deque(attach)
        while frontier:
            s = frontier.popleft()
            for n in _switch_neighbours(topo, s):
                if n not in dist:
                    dist[n] = dist[s] + 1
                    frontier.append(n)
        ip = g.nodes[h]["ip"]
        gid = g.nodes[h]["index"]
        for s in switches:
            if s not in dist:
                continue
            dpid = g.nodes[s]["dpid"]
            if dist[s] == 0:
                ports = [g.edges[s, h]["port"]]
            else:
                ports = sorted({g.edges[s, n]["port"] for n in _switch_neighbours(topo, s)
                                if dist.get(n, math.inf) == dist[s] - 1})
            groups, rules = out[dpid]
            match = (("eth_type", ETH_TYPE_IP), ("ipv4_dst", ip))
            if len(ports) == 1:
                rules.append(FlowRule(dpid, PRIORITY_DEFAULT, match, (("output", ports[0]),)))
            else:
                groups.append(GroupRule(dpid, gid, tuple(ports)))
                rules.append(FlowRule(dpid, PRIORITY_DEFAULT, match, (("group", gid),)))
    return out


def check_observed(topo: Topology, switch_ports: Mapping[int, Optional[Iterable[int]]],
                   links: Iterable[Tuple[int, int, int, int]] = ()) -> List[str]:
    """Compare what Ryu discovered with the configured topology.

    Args:
        switch_ports: dpid -> port numbers the switch reported (None: not known).
        links: discovered links as (src_dpid, src_port, dst_dpid, dst_port)
            (Ryu's ``--observe-links`` LLDP discovery).

    Returns:
        Human-readable mismatch messages, empty when everything observed is in the
        configured topology (switches not yet connected are not mismatches: see
        :func:`missing_switches`).
    """
    g = topo.graph
    by_dpid = {g.nodes[s]["dpid"]: s for s in topo.switches}
    msgs: List[str] = []
    for dpid in sorted(switch_ports):
        name = by_dpid.get(dpid)
        if name is None:
            msgs.append(f"switch dpid={dpid:#x} is not in topology {topo.name}")
            continue
        ports = switch_ports[dpid]
        if ports is None:
            continue
        have = set(int(p) for p in ports)
        for n in sorted(g.successors(name)):
            p = g.edges[name, n]["port"]
            if p not in have:
                msgs.append(f"switch {name} (dpid={dpid:#x}): port {p} towards {n} is missing")
    msgs += filter(None, (link_mismatch(topo, link, by_dpid) for link in links))
    return msgs


def link_mismatch(topo: Topology, link: Tuple[int, int, int, int],
                  by_dpid: Optional[Mapping[int, str]] = None) -> Optional[str]:
    """What is wrong with one observed directed link against the configured
    topology, or None when ``topo`` has it on these ports.

    Serves :func:`check_observed` (Ryu's LLDP links against the configured fabric)
    and :func:`~.discovery.compare_declared` (the discovered graph against a
    declared one).

    Args:
        topo: the configured (declared) topology.
        link: (src_dpid, src_port, dst_dpid, dst_port) as LLDP saw it.
        by_dpid: dpid -> switch name of ``topo`` (built from ``topo`` when None).

    Returns:
        A human-readable message: a switch not in ``topo`` (``unknown switch``), a
        link between two known switches that ``topo`` lacks (``is not in
        topology``), or ports that differ from ``topo``'s (``observed ports ...,
        configured ...``); None when the link is as configured.
    """
    if by_dpid is None:
        by_dpid = {int(topo.graph.nodes[s]["dpid"]): s for s in topo.switches}
    sd, sp, dd, dp = link
    s, d = by_dpid.get(sd), by_dpid.get(dd)
    if s is None or d is None:
        return f"link dpid={sd:#x}:{sp} -> dpid={dd:#x}:{dp}: unknown switch"
    g = topo.graph
    if not g.has_edge(s, d):
        return f"link {s}:{sp} -> {d}:{dp} is not in topology {topo.name}"
    e = g.edges[s, d]
    if (e["port"], e["peer_port"]) != (sp, dp):
        return (f"link {s} -> {d}: observed ports {sp}->{dp}, configured "
                f"{e['port']}->{e['peer_port']}")
    return None


def missing_switches(topo: Topology, connected: Iterable[int]) -> List[str]:
    """Names of configured switches whose dpid is not in ``connected``."""
    have = set(connected)
    return [s for s in topo.switches if topo.graph.nodes[s]["dpid"] not in have]
