"""The fabric in force: discovered or declared, checked, and kept up to date.

Part of :class:`.core.ControllerCore` (as :class:`FabricMixin`); pure, no Ryu import.
The shell feeds :attr:`FabricMixin.discovery` (a :class:`~.discovery.Discovery`) with
switch, port and LLDP link events, then calls :meth:`FabricMixin.fabric_update`;
packet-ins go to :meth:`FabricMixin.packet_in`.

Two modes (the ``topology`` option):

* ``discover``: the topology is built from what connected
  (:meth:`.discovery.Discovery.topology`) and replaced whenever a switch, a link or a
  host appears, a host moves or a port speed changes (:meth:`replace_topology`):
  new scheduler for the new graph, default forwarding sent as a difference, and a
  decision for the active coflows.  Links that went away stay in the graph as
  *missing* (:attr:`.links.LinkState.missing`): no schedule uses them, default
  forwarding routes around them.  Proxy ARP answers for hosts seen; a request for a
  host not seen yet is sent by the controller out of every edge port (never into
  the fabric, so loops cannot storm), and the reply is delivered to the requester.
* a declared topology (a spec or a file): with LLDP on (``--observe-links``), every
  declared inter-switch link LLDP does not see is missing (never scheduled), and
  :meth:`fabric_differences` lists what differs (``/health`` says ``degraded``).

Times in seconds, capacities in bit/s.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Set, Tuple

from topologies import Topology
from topologies.topofile import dump_topology

from .arp import _mac_str, build_arp_reply
from .discovery import (STABLE, Discovery, compare_declared, missing_declared_links,
                        parse_host_net, parse_link_capacities)
from .rules import (ETH_TYPE_ARP, ETH_TYPE_IP, Actions, FlowRule, GroupRule,
                    default_forwarding, missing_switches)

#: The ``topology`` option value that turns discovery on.
DISCOVER = "discover"
#: Priority of the table-miss rule (discover mode: unmatched packets teach hosts).
PRIORITY_MISS = 0
#: A frame the controller sent out of edge ports is ignored if it comes back in
#: within this many seconds (a port not yet known to face a switch).
ECHO_GUARD_S = 2.0


@dataclass(frozen=True)
class PacketOut:
    """A frame to send out of ``port`` of switch ``dpid`` (bytes, Ethernet)."""

    dpid: int
    port: int
    data: bytes


def parse_frame(frame: bytes) -> Optional[Dict[str, Any]]:
    """An Ethernet frame (no VLAN) -> what host learning and proxy ARP need.

    Returns:
        ``{"kind": "arp", "op": 1|2, "src_mac", "src_ip", "dst_mac", "dst_ip"}`` for
        IPv4-over-Ethernet ARP (RFC 826), ``{"kind": "ip", "src_mac", "src_ip",
        "dst_ip"}`` for IPv4, None for anything else or a truncated frame.
    """
    if len(frame) < 34:
        return None
    eth_type, = struct.unpack("!H", frame[12:14])
    if eth_type == ETH_TYPE_ARP and len(frame) >= 42:
        htype, ptype, hlen, plen, op = struct.unpack("!HHBBH", frame[14:22])
        if (htype, ptype, hlen, plen) != (1, ETH_TYPE_IP, 6, 4) or op not in (1, 2):
            return None
        return {"kind": "arp", "op": op, "src_mac": _mac_str(frame[22:28]),
                "src_ip": socket.inet_ntoa(frame[28:32]), "dst_mac": _mac_str(frame[32:38]),
                "dst_ip": socket.inet_ntoa(frame[38:42])}
    if eth_type == ETH_TYPE_IP and (frame[14] >> 4) == 4:
        return {"kind": "ip", "src_mac": _mac_str(frame[6:12]),
                "src_ip": socket.inet_ntoa(frame[26:30]),
                "dst_ip": socket.inet_ntoa(frame[30:34])}
    return None


def defaults_diff(old: Dict[int, Tuple[List[GroupRule], List[FlowRule]]],
                  new: Dict[int, Tuple[List[GroupRule], List[FlowRule]]]) -> List[Any]:
    """The messages that turn the default forwarding ``old`` (what switches hold,
    dpid -> (groups, rules)) into ``new``: groups added or modified, flow rules
    added (an ADD replaces a rule of the same priority and match), flow rules
    deleted, then groups deleted (no rule points at them any more)."""
    adds, dels, gdels = [], [], []
    for dpid in sorted(set(old) | set(new)):
        og, orules = old.get(dpid, ([], []))
        ng, nrules = new.get(dpid, ([], []))
        ogm = {g.group_id: g.ports for g in og}
        ngm = {g.group_id: g.ports for g in ng}
        for g in ng:
            if g.group_id not in ogm:
                adds.append(GroupRule(dpid, g.group_id, g.ports, "add"))
            elif ogm[g.group_id] != g.ports:
                adds.append(GroupRule(dpid, g.group_id, g.ports, "modify"))
        orm = {(r.priority, r.match): r for r in orules}
        nrm = {(r.priority, r.match): r for r in nrules}
        for key, r in nrm.items():
            if key not in orm or orm[key].actions != r.actions:
                adds.append(r.with_command("add"))
        dels.extend(r.with_command("delete") for key, r in orm.items() if key not in nrm)
        gdels.extend(GroupRule(dpid, gid, (), "delete") for gid in ogm if gid not in ngm)
    return adds + dels + gdels


def with_table_miss(defaults: Dict[int, Tuple[List[GroupRule], List[FlowRule]]]
                    ) -> Dict[int, Tuple[List[GroupRule], List[FlowRule]]]:
    """``defaults`` plus, on every switch, a table-miss rule (priority
    :data:`PRIORITY_MISS`, empty match) sending unmatched packets to the controller:
    in discover mode a host that sends IPv4 without ARP is learnt from it."""
    out = {}
    for dpid, (groups, rules) in defaults.items():
        out[dpid] = (list(groups), list(rules) + [FlowRule(dpid, PRIORITY_MISS, (),
                                                           (("controller", 0),))])
    return out


class FabricMixin:
    """Discovered or declared fabric, its checks and its updates (module docstring).

    Uses the core's ``settings``, ``topology``, ``scheduler``, ``link_state``,
    ``_defaults``, ``_dpid``, ``tracks``, ``log`` and :meth:`reschedule`.
    """

    def setup_fabric(self, links_observed: bool = False) -> None:
        """Create :attr:`discovery` from the settings (``link_bps``,
        ``link_capacities``, ``discover_host_net``, ``discover_settle_s``).

        Args:
            links_observed: LLDP link discovery runs (Ryu's ``--observe-links``):
                declared links it does not see are then missing.

        Raises:
            DiscoveryError: a bad ``link_capacities`` or ``discover_host_net``.
        """
        s = self.settings
        self.discovery = Discovery(link_bps=s.link_bps,
                                   link_capacities=parse_link_capacities(s.link_capacities),
                                   host_net=parse_host_net(s.discover_host_net),
                                   settle_s=s.discover_settle_s)
        self.links_observed = bool(links_observed) or self.discover_mode
        self._built_version = 0
        self._state_seen = -1
        self._announced: Optional[str] = None
        self._sent_out: Dict[bytes, float] = {}
        if self.discover_mode:
            self._defaults = with_table_miss(self._defaults)
        if getattr(self, "link_state", None) is None:
            from .links import wrap

            wrap(self, self.log)
        self.link_state.base_defaults = self._defaults

    @property
    def discover_mode(self) -> bool:
        """True when the topology is discovered (``topology = discover``)."""
        return self.settings.topology.strip().lower() == DISCOVER

    def _missing_now(self) -> Set[Tuple[str, str]]:
        if self.discover_mode:
            return self.discovery.down_links(self.topology)
        if self.links_observed:
            return missing_declared_links(self.topology, self.discovery)
        return set()

    def fabric_update(self, now: float) -> Actions:
        """Bring the graph in force up to date with :attr:`discovery` after events.

        Discover mode: a changed graph is replaced (:meth:`replace_topology`).  Both
        modes: when the missing links changed, default forwarding is recomputed
        without them and the active coflows are decided again (their flows leave
        missing links, :class:`~.links.LinkAwareScheduler`).

        Returns:
            the Actions (default rule changes first, then the decision's).
        """
        d = self.discovery
        if self.discover_mode and d.version != self._built_version:
            self._built_version = d.version
            self._state_seen = d.state_version
            return self.replace_topology(d.topology(), now)
        if d.state_version == self._state_seen:
            return Actions()
        self._state_seen = d.state_version
        missing = self._missing_now()
        if missing == self.link_state.missing:
            return Actions()
        self.link_state.missing = missing
        self._log("warning", "links not there: %s", ", ".join(
            f"{u}-{v}" for u, v in sorted(missing) if u < v) or "none")
        defaults = self.link_state.reroute_defaults(self)
        acts = self.reschedule(now)
        acts.rules[:0] = defaults
        return acts

    def replace_topology(self, topo: Topology, now: float) -> Actions:
        """Put ``topo`` in force (discover mode): a scheduler built for it (wrapped to
        avoid missing links, and in the site broker's residual capacities when
        ``broker`` is on: a new broker for the new links), default forwarding sent as a difference
        (:func:`defaults_diff`), the first-hop switch of each active flow moved to its
        source's attachment, and a decision for the active coflows.

        Returns:
            Actions: default rule changes first, then the decision's rules and pushes.
        """
        from .links import LinkAwareScheduler, LinkState
        from .settings import build_scheduler

        old_defaults = self._defaults
        self.topology = topo
        g = topo.graph
        self._dpid = {s: g.nodes[s]["dpid"] for s in topo.switches}
        base = with_table_miss(default_forwarding(topo))
        state = LinkState(topo)
        state.base_defaults = base
        state.missing = self.discovery.down_links(topo)
        inner = build_scheduler(self.settings, topo)
        self.scheduler = LinkAwareScheduler(inner, state, self.log)
        self.link_state = state
        if getattr(self.settings, "broker", False):  # the site broker, for this graph
            from .coexist import wrap as broker_wrap

            broker_wrap(self)
        self._defaults = base
        state.reroute_defaults(self)
        send = defaults_diff(old_defaults, self._defaults)
        for c in self.active():
            for f in c.active_flows():
                tr = self.tracks.get(f.flow_id)
                if tr is not None and f.src in g:
                    tr.first_dpid = self._dpid[topo.attachment(f.src)[0]]
        self._log("info", "fabric now %d switches, %d links, %d hosts (%d links not there)",
                  len(topo.switches), sum(1 for u, v in g.edges() if u < v
                                           and not topo.is_host(u) and not topo.is_host(v)),
                  len(topo.hosts), len(state.missing) // 2)
        acts = self.reschedule(now)
        acts.rules[:0] = send
        return acts

    def fabric_state(self, now: float) -> str:
        """``empty``, ``discovering`` or ``stable`` (:meth:`.discovery.Discovery.state`);
        logged once at each change (INFO when it becomes stable)."""
        st = self.discovery.state(now)
        if st != self._announced:
            self._announced = st
            if st == STABLE:
                t = self.topology
                self._log("info", "fabric stable: %d switches, %d hosts, %d links down or "
                          "missing; scheduling on it", len(t.switches), len(t.hosts),
                          len(self.link_state.missing) // 2)
            else:
                self._log("info", "fabric %s", st)
        return st

    def fabric_differences(self, connected=()) -> List[str]:
        """What differs from the declared topology (empty in discover mode):
        :func:`.discovery.compare_declared` with LLDP on, else the configured switches
        not in ``connected`` (dpids)."""
        if self.discover_mode:
            return []
        if self.links_observed:
            return compare_declared(self.topology, self.discovery)
        return [f"switch {s} is not connected"
                for s in missing_switches(self.topology, connected)]

    def health_view(self, now: float, connected=(), mismatches=()) -> Dict[str, Any]:
        """``GET /health``: ``status`` ``ok``, ``discovering`` (discover mode, not
        stable yet) or ``degraded`` (a declared topology that differs from what
        connected: ``differences`` lists it), ``fabric`` (discover mode: ``empty``,
        ``discovering``, ``stable``; else ``declared``), and the fabric's size."""
        diffs = list(dict.fromkeys(list(mismatches) + self.fabric_differences(connected)))
        state = self.fabric_state(now) if self.discover_mode else "declared"
        if diffs:
            status = "degraded"
        elif self.discover_mode and state != STABLE:
            status = "discovering"
        else:
            status = "ok"
        return {"ok": True, "status": status, "fabric": state,
                "scheduler": self.settings.scheduler, "topology": self.settings.topology,
                "switches_connected": len(set(connected)),
                "switches_configured": len(self.topology.switches),
                "hosts": len(self.topology.hosts),
                "links_missing": sorted(f"{u}-{v}" for u, v in self.link_state.missing
                                        if u < v),
                "differences": diffs}

    # -- packets -----------------------------------------------------------------------
    def packet_in(self, dpid: int, port: int, frame: bytes,
                  now: float) -> Tuple[Actions, List[PacketOut]]:
        """A packet the switch sent to the controller (ARP rule or table miss).

        Declared topology: proxy ARP from the topology (:meth:`arp_answer`).
        Discover mode: the sender is learnt if ``port`` is an edge port
        (:meth:`.discovery.Discovery.host_seen`, then :meth:`fabric_update`; packets
        from a port facing a switch teach nothing, and only IPv4 ones are
        delivered, below); an ARP
        request for a known host is answered out of ``port``; one for an unknown host
        is sent out of every edge port but ``port``; an ARP reply goes to the
        requester's port; an IPv4 packet to a known host that missed every rule,
        at its first switch or further on (its rules are still on their way to the
        switches), goes to that host's port.  A frame the controller itself sent out of an edge port in
        the last :data:`ECHO_GUARD_S` seconds is ignored (it came back through a
        port not yet known to face a switch).

        Returns:
            (Actions of the update, frames to send).
        """
        if not self.discover_mode:
            reply = self.arp_answer(frame)
            return Actions(), ([PacketOut(dpid, port, reply)] if reply else [])
        frame = bytes(frame)
        self._sent_out = {k: t for k, t in self._sent_out.items() if now - t < ECHO_GUARD_S}
        if frame in self._sent_out:
            return Actions(), []
        pkt = parse_frame(frame)
        d = self.discovery
        if pkt is None:
            return Actions(), []
        transit = d.is_switch_port(dpid, port)
        if transit and pkt["kind"] != "ip":
            return Actions(), []
        acts = Actions()
        if not transit:
            d.host_seen(pkt["src_ip"], pkt["src_mac"], dpid, port, now)
            acts = self.fabric_update(now)
        outs: List[PacketOut] = []
        target = d.hosts.get(pkt["dst_ip"])
        if pkt["kind"] == "ip":
            # an IPv4 packet that missed every rule: to a known host, the rules are
            # on their way (it was just learnt); deliver it to its edge port
            if target is not None and (target.dpid, target.port) != (int(dpid), int(port)):
                outs.append(PacketOut(target.dpid, target.port, frame))
                self._sent_out[frame] = now
            return acts, outs
        if pkt["src_ip"] == pkt["dst_ip"]:
            return acts, outs
        if pkt["op"] == 1:
            if target is not None:
                outs.append(PacketOut(dpid, port, build_arp_reply(
                    pkt["src_mac"], pkt["src_ip"], target.mac, pkt["dst_ip"])))
            else:
                for e in d.edge_ports():
                    if e != (int(dpid), int(port)):
                        outs.append(PacketOut(e[0], e[1], frame))
        elif target is not None:
            outs.append(PacketOut(target.dpid, target.port, frame))
        for o in outs:
            self._sent_out[o.data] = now
        return acts, outs

    def topology_file(self, now: float) -> Dict[str, Any]:
        """``GET /topology/file``: the graph in force as a topology file, to pin a
        discovered fabric (``topology = file:PATH``).

        Returns:
            ``{"name", "state" (the fabric's), "file" (topology-file text,
            :func:`topologies.topofile.dump_topology`), "topology"
            (:meth:`~topologies.Topology.to_dict`)}``.
        """
        state = self.fabric_state(now) if self.discover_mode else "declared"
        text = dump_topology(self.topology, header=(
            f"{self.topology.name}: saved by the RAPIER controller (fabric {state}, "
            f"{len(self.topology.switches)} switches, {len(self.topology.hosts)} hosts)"))
        return {"name": self.topology.name, "state": state, "file": text,
                "topology": self.topology.to_dict()}

    def fabric_view(self, now: float, connected=(), mismatches=()) -> Dict[str, Any]:
        """The ``discovery`` part of ``GET /topology``: mode, state, what connected
        (:meth:`.discovery.Discovery.view`), the differences and missing links."""
        view = self.discovery.view(now)
        view["mode"] = "discover" if self.discover_mode else "declared"
        view["state"] = self.fabric_state(now) if self.discover_mode else "declared"
        view["differences"] = list(dict.fromkeys(
            list(mismatches) + self.fabric_differences(connected)))
        view["links_missing"] = sorted(f"{u}-{v}" for u, v in self.link_state.missing
                                       if u < v)
        return view


__all__ = ["DISCOVER", "ECHO_GUARD_S", "FabricMixin", "PRIORITY_MISS", "PacketOut",
           "defaults_diff", "parse_frame", "with_table_miss"]
