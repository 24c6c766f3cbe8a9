"""Coexistence with traffic that is not a scheduled coflow (RAPIER Section III-A
"Ensure coexistence", III-B): the controller side of the site broker, and small
coflows left to default forwarding.

Pure logic, no Ryu import.  The Ryu shell (:mod:`.app`) requests port statistics
(``OFPPortStatsRequest``) of every connected switch in each poller round, with the
flow statistics it requests anyway, hands the replies to
:meth:`CoexistMixin.broker_port_stats`, and every ``broker_period_s`` calls
:meth:`CoexistMixin.broker_tick`, which feeds the
:class:`~rapier_app.core.broker.SiteBroker` and, when the residual capacity in
force changed, decides again.

Counters (cumulative bytes per directed link of the topology):

* port bytes: a switch port's ``tx_bytes`` count the link leaving it; for a port
  facing a host, its ``rx_bytes`` count the link from the host (a host has no
  counters of its own).  A port that is no link of the topology is ignored; a link
  whose counter was never read is unknown (no sample).
* scheduled bytes: every flow that has a path (a scheduled coflow flow) adds the
  growth of its first-hop rule's raw byte counter (``FlowTrack.last_bytes``, the
  same wire bytes as port counters; a counter that went back restarts from it) to
  every link of its path.  A flow that finished has no rule left to count its last
  bytes: its counter is taken as at least its size plus ``header_bytes`` per
  1448-byte segment.  Flows on default forwarding (fallback, small coflows) add
  nothing: their bytes are background, as unregistered traffic's.

The two are read at the same moment: the shell sends a switch's port-stats request
right after its flow-stats request, the switch answers in order, and the flows
whose first hop is that switch are counted when its port-stats reply arrives (their
counters then come from the flow-stats reply just before it).  What remains is
background: other hosts' TCP, ACKs of scheduled flows on the reverse path, small
coflows, ARP.

Small coflows: a coflow with ``total_bytes < small_coflow_bytes`` and at most
``small_coflow_width`` flows (0: any width) is not scheduled.  Its ``decision`` is
``background`` from the moment it is accepted: no scheduler call, no rate limits
(``rates`` is ``applied`` at once), a counting rule on each flow's first hop with
the default-forwarding action (ECMP), and completion as for any flow.

Units: bytes, bit/s, seconds.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from ..core.broker import BrokerSettings, ResidualScheduler, SiteBroker
from .rules import Actions

#: ``decision`` of a coflow below the size threshold (``GET /coflows/<id>``)
BACKGROUND = "background"

__all__ = ["BACKGROUND", "BrokerFeed", "CoexistMixin", "broker_settings", "is_small",
           "port_links", "wrap"]


def broker_settings(settings) -> BrokerSettings:
    """The :class:`BrokerSettings` of the controller options ``broker_*``."""
    return BrokerSettings(period_s=settings.broker_period_s, weight=settings.broker_weight,
                          reserve_fraction=settings.broker_reserve_fraction,
                          min_fraction=settings.broker_min_fraction,
                          change_fraction=settings.broker_change_fraction,
                          steady_fraction=settings.broker_steady_fraction)


def is_small(total_bytes: float, width: int, small_bytes: int, small_width: int) -> bool:
    """True when a coflow of ``total_bytes`` and ``width`` flows is below the
    threshold (``small_bytes`` > 0, ``total_bytes < small_bytes`` and, when
    ``small_width`` > 0, ``width <= small_width``)."""
    return (small_bytes > 0 and total_bytes < small_bytes
            and (small_width <= 0 or width <= small_width))


def port_links(topology) -> Dict[Tuple[int, int], List[Tuple[int, str]]]:
    """``(dpid, port_no) -> [(link index, "tx" | "rx"), ...]``: which counter of which
    switch port counts which directed link (module docstring)."""
    g = topology.graph
    out: Dict[Tuple[int, int], List[Tuple[int, str]]] = {}
    for (u, v), i in topology.link_ids.items():
        if "dpid" in g.nodes[u]:
            key = (int(g.nodes[u]["dpid"]), int(g.edges[u, v]["port"]))
            out.setdefault(key, []).append((i, "tx"))
        elif "dpid" in g.nodes[v]:  # host -> switch: the switch port's rx
            key = (int(g.nodes[v]["dpid"]), int(g.edges[v, u]["port"]))
            out.setdefault(key, []).append((i, "rx"))
    return out


class BrokerFeed:
    """Port and scheduled-flow counters -> :class:`SiteBroker` (module docstring).

    Args:
        topology: the fabric (link order, capacities in bit/s, ports, dpids).
        settings: the broker's :class:`BrokerSettings`.
    """

    def __init__(self, topology, settings: BrokerSettings):
        self.topology = topology
        self.broker = SiteBroker(topology.capacity, settings, topology.links)
        self.ports = port_links(topology)
        n = len(topology.capacity)
        #: cumulative port bytes per link (NaN: never read)
        self.port_bytes = np.full(n, np.nan)
        #: cumulative bytes of scheduled flows per link
        self.coflow_bytes = np.zeros(n)
        self._flow_last: Dict[str, int] = {}
        self._flow_path: Dict[str, tuple] = {}
        self.last_tick_s: Optional[float] = None

    def port_stats(self, dpid: int, entries: Iterable[Tuple[int, int, int]]) -> None:
        """A port-stats reply of switch ``dpid``: ``(port_no, rx_bytes, tx_bytes)``
        per port; ports that are no link of the topology are ignored."""
        for port, rx, tx in entries:
            for i, kind in self.ports.get((int(dpid), int(port)), ()):
                self.port_bytes[i] = float(tx if kind == "tx" else rx)

    def count_flows(self, flows: Iterable[Tuple[str, Optional[tuple], int]]) -> None:
        """Add the scheduled flows' counter growth to their links.

        Args:
            flows: ``(flow_id, path or None, raw byte counter of its first-hop rule)``
                for every flow of the coflows in memory.  A flow with no path now
                but one before (it finished, or fell back) still adds its last growth
                to its last path.
        """
        topo = self.topology
        for fid, path, nbytes in flows:
            if path is None:
                path = self._flow_path.get(fid)
                if path is None:
                    continue
            else:
                self._flow_path[fid] = path
            last = self._flow_last.get(fid, 0)
            grow = nbytes - last if nbytes >= last else nbytes
            self._flow_last[fid] = nbytes
            if grow > 0:
                try:
                    self.coflow_bytes[topo.path_links(path)] += grow
                except Exception:  # noqa: BLE001 -- a path the core refused: no link
                    pass

    def forget(self, keep: Iterable[str]) -> None:
        """Drop the counters of flows not in ``keep`` (coflows that left memory)."""
        keep = set(keep)
        for d in (self._flow_last, self._flow_path):
            for fid in [k for k in d if k not in keep]:
                del d[fid]

    def tick(self, now: float) -> bool:
        """One broker observation at ``now`` (s) of the counters held; True when the
        residual in force changed."""
        self.last_tick_s = now
        return self.broker.observe(now, self.port_bytes, self.coflow_bytes)


class CoexistMixin:
    """The broker and small-coflow part of :class:`.core.ControllerCore`.

    Uses the core's ``settings``, ``coflows``, ``tracks``, ``decision``,
    ``scheduler`` and :meth:`reschedule`; :attr:`broker_feed` is set by
    :func:`wrap` (None: the broker is off).
    """

    broker_feed: Optional[BrokerFeed] = None

    def is_background(self, c) -> bool:
        """True when coflow ``c`` (a CoflowState) is below the size threshold
        (``small_coflow_bytes``, ``small_coflow_width``): not scheduled."""
        s = self.settings
        return is_small(c.spec.total_bytes, c.width, s.small_coflow_bytes,
                        s.small_coflow_width)

    def broker_port_stats(self, dpid: int, entries, now: float) -> None:
        """A port-stats reply of switch ``dpid`` (``(port_no, rx_bytes, tx_bytes)``
        per port): its port counters, and the counters of the flows whose first hop
        it is (module docstring)."""
        feed = self.broker_feed
        if feed is None:
            return
        feed.port_stats(dpid, entries)
        hdr = self.settings.header_bytes
        flows = []
        for c in self.coflows.values():
            for f in c.flows:
                tr = self.tracks.get(f.flow_id)
                if tr is None or tr.first_dpid != dpid:
                    continue
                nbytes = int(tr.last_bytes)
                if f.done:  # its rules are gone: at least its size on the wire
                    size = f.spec.size_bytes
                    nbytes = max(nbytes, int(size + -(-size // 1448) * hdr))
                flows.append((f.flow_id, tuple(f.path) if f.path else None, nbytes))
        feed.count_flows(flows)

    def broker_tick(self, now: float, read_s: Optional[float] = None) -> Actions:
        """One broker observation (every ``broker_period_s``): the broker observes
        the counters read so far as of ``read_s`` (s, when they were requested;
        default ``now``), and when the residual
        capacity in force changed the active coflows are decided again at ``now``
        (the Actions)."""
        feed = self.broker_feed
        if feed is None:
            return Actions()
        feed.forget(fid for c in self.coflows.values() for fid in
                    (f.flow_id for f in c.flows))
        if feed.tick(now if read_s is None else read_s) and self.active():
            self._log("info", "broker: residual capacity changed (version %d); deciding "
                      "again", feed.broker.version)
            return self.reschedule(now)
        return Actions()

    def broker_view(self) -> Dict[str, Any]:
        """``GET /schedule``'s ``broker``: the settings, and per link its measured
        background (``sample_bps``), the prediction, the residual and the residual
        in force (bit/s); ``{"enabled": false}`` when the broker is off."""
        feed = self.broker_feed
        s = self.settings
        out: Dict[str, Any] = {"enabled": feed is not None,
                               "small_coflow_bytes": s.small_coflow_bytes,
                               "small_coflow_width": s.small_coflow_width}
        if feed is None:
            return out
        b = feed.broker
        out.update({"period_s": b.settings.period_s, "weight": b.settings.weight,
                    "reserve_fraction": b.settings.reserve_fraction,
                    "min_fraction": b.settings.min_fraction,
                    "change_fraction": b.settings.change_fraction,
                    "version": b.version, "observed_at_s": feed.last_tick_s,
                    "links": b.view()})
        return out


def wrap(core) -> BrokerFeed:
    """Give ``core`` a :class:`BrokerFeed` and wrap its scheduler in
    :class:`~rapier_app.core.broker.ResidualScheduler`; returns the feed."""
    feed = BrokerFeed(core.topology, broker_settings(core.settings))
    core.broker_feed = feed
    core.scheduler = ResidualScheduler(core.scheduler, feed.broker)
    return feed
