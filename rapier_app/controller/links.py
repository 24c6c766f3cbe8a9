"""Link failure: which links are down, and schedules that avoid them.

Pure logic, no Ryu import.  The Ryu shell (:mod:`.app`) translates

* ``EventOFPPortStatus`` (reason ``OFPPR_DELETE``, or ``OFPPS_LINK_DOWN`` in the
  port's state, or ``OFPPC_PORT_DOWN`` in its config: down; otherwise up) into
  :meth:`LinkState.port_status` calls, and
* Ryu topology discovery (``--observe-links``): ``EventLinkDelete`` into
  :meth:`LinkState.link_delete`, ``EventLinkAdd`` into :meth:`LinkState.link_add`,

then, when the set of down links changed, asks the core for an immediate decision
(:meth:`~.core.ControllerCore.reschedule`).

How down links reach the routes: the scheduler is wrapped in
:class:`LinkAwareScheduler`.  The topology and its path caches
(:meth:`topologies.base.Topology.candidate_paths` / ``path_links``) are left
untouched -- they describe the configured fabric and are shared with the
schedulers' own caches -- and every schedule the wrapped scheduler returns is
checked: a flow whose path crosses a down link is moved to the candidate path of
its host pair that avoids every down link and has the least load (largest
``(allocated bit/s on the link + the flow's rate) / capacity`` over its links,
counted from the same schedule), keeping its rate; with no such path the flow
gets no path (the core then uses default forwarding, whose ECMP ``SELECT``
groups watch their bucket's port, so the switch itself skips a dead bucket).
When a link returns, it leaves the down set and the next decision may use it
again.

Units: rates in bit/s, capacities in bit/s (the topology's ``capacity`` array).
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import numpy as np

from topologies import Topology, TopologyError

from ..core.model import Allocation, Schedule
from ..core.wrapper import SchedulerWrapper

Link = Tuple[str, str]


class LinkState:
    """The set of down links of ``topology``, fed by switch events.

    Links are directed ``(u, v)`` node-name pairs as in ``topology.graph``; a port
    going down takes both directions of its cable down.  A cable is up only when
    both of its ends say so: each end's last port status is kept, and a port-status
    "up" from one end does not bring back a cable whose other end is down.  Ryu's
    LLDP discovery seeing the link (``link_add``) shows that both ends work and
    clears both.

    Args:
        topology: the configured fabric; ``graph.edges[u, v]["port"]`` is the port
            of ``u`` towards ``v`` and ``graph.nodes[s]["dpid"]`` a switch's dpid.
    """

    def __init__(self, topology: Topology):
        self.topology = topology
        g = topology.graph
        #: (dpid, port_no) -> (u, v): the link leaving switch u by that port
        self.by_port: Dict[Tuple[int, int], Link] = {}
        for u, v, d in g.edges(data=True):
            if u in topology.switches and "dpid" in g.nodes[u]:
                self.by_port[(int(g.nodes[u]["dpid"]), int(d["port"]))] = (u, v)
        #: down directed links (port status and LLDP events): both directions of
        #: every cable with an end in :attr:`ends_down`
        self.down: Set[Link] = set()
        #: ends reported down, as the directed link leaving that end: ``(u, v)`` is
        #: ``u``'s port towards ``v`` (port status down, or LLDP lost ``u -> v``)
        self.ends_down: Set[Link] = set()
        #: directed links that are not there although the topology has them: declared
        #: links LLDP never saw, or discovered links gone (:mod:`.discovery`); set
        #: whole by the core, never by events
        self.missing: Set[Link] = set()
        #: default forwarding of the full fabric (set by :func:`wrap`)
        self.base_defaults: Optional[Dict] = None

    def reroute_defaults(self, core) -> List:
        """Recompute ``core``'s default forwarding without the down links
        (:func:`defaults_avoiding`), store it in the core (what reconnecting
        switches get and reconciliation compares with) and return the rules to send.
        """
        base = self.base_defaults if self.base_defaults is not None else core._defaults
        new, send = defaults_avoiding(self.topology, base, core._defaults, self.all_down())
        core._defaults = new
        return send

    def _cable(self, dpid: int, port: int) -> Optional[Tuple[Link, Link]]:
        link = self.by_port.get((int(dpid), int(port)))
        if link is None:
            return None
        return link, (link[1], link[0])

    def port_status(self, dpid: int, port: int, up: bool) -> bool:
        """Port ``port`` of switch ``dpid`` went up or down.

        Returns:
            True when the down set changed (a decision is needed); False for a port
            that is no link of the topology (e.g. the local port) or no change.
        """
        cable = self._cable(dpid, port)
        if cable is None:
            return False
        if up:
            self.ends_down.discard(cable[0])
        else:
            self.ends_down.add(cable[0])
        return self._update(cable)

    def _update(self, cable: Tuple[Link, Link]) -> bool:
        """Set both directions of ``cable`` down when either end is down, else up;
        True when :attr:`down` changed."""
        before = len(self.down)
        if cable[0] in self.ends_down or cable[1] in self.ends_down:
            self.down.update(cable)
        else:
            self.down.difference_update(cable)
        return len(self.down) != before

    def link_delete(self, src_dpid: int, src_port: int) -> bool:
        """Ryu's discovery lost the link leaving ``src_dpid`` by ``src_port``
        (``EventLinkDelete``): the cable is down.  Returns True on a change."""
        return self.port_status(src_dpid, src_port, up=False)

    def link_add(self, src_dpid: int, src_port: int) -> bool:
        """Ryu's discovery saw the link leaving ``src_dpid`` by ``src_port``
        (``EventLinkAdd``): LLDP crossed the cable, so both of its ends work and the
        cable is up.  Returns True on a change."""
        cable = self._cable(src_dpid, src_port)
        if cable is None:
            return False
        self.ends_down.difference_update(cable)
        return self._update(cable)

    def all_down(self) -> Set[Link]:
        """Every directed link no schedule may use: :attr:`down` plus :attr:`missing`."""
        return self.down | self.missing

    def down_ids(self) -> FrozenSet[int]:
        """Indices (into ``topology.capacity``) of the down and missing links."""
        ids = self.topology.link_ids
        return frozenset(ids[l] for l in self.all_down() if l in ids)

    def view(self) -> List[str]:
        """The down and missing links as sorted ``"u-v"`` strings (for logs and the
        REST API)."""
        return sorted(f"{u}-{v}" for u, v in self.all_down())


def path_is_up(topology: Topology, path, down_ids: FrozenSet[int]) -> bool:
    """True when no link of ``path`` (node names) is in ``down_ids``.

    Raises:
        TopologyError: a hop of ``path`` is no link of the topology.
    """
    if not down_ids:
        return True
    return not any(int(l) in down_ids for l in topology.path_links(path))


def avoid_down_links(topology: Topology, sched: Schedule,
                     down_ids: FrozenSet[int]) -> Tuple[Schedule, Dict[str, Optional[tuple]]]:
    """``sched`` with every allocation that crosses a down link re-routed.

    Args:
        topology: the fabric (its candidate paths and capacities, bit/s).
        sched: a scheduler's decision; not modified.
        down_ids: link indices that are down (:meth:`LinkState.down_ids`).

    Returns:
        (the schedule to apply, ``{flow_id: new path or None}`` for the flows that
        were moved).  The schedule is ``sched`` itself when nothing crossed a down
        link.  A moved flow keeps its rate; it goes to the up candidate path of its
        host pair with the smallest load ratio (see the module docstring); with no
        up candidate its allocation is dropped (``None``: the core gives it
        default forwarding).
    """
    if not down_ids:
        return sched, {}
    allocs = sched.allocations
    bad = [fid for fid, a in allocs.items()
           if a is not None and a.path and not _up(topology, a.path, down_ids)]
    if not bad:
        return sched, {}
    cap = np.asarray(topology.capacity, dtype=float)
    load = np.zeros(len(cap))
    for fid, a in allocs.items():
        if fid not in bad and a is not None and a.path and a.rate_bps > 0:
            load[topology.path_links(a.path)] += float(a.rate_bps)
    new = dict(allocs)
    moved: Dict[str, Optional[tuple]] = {}
    for fid in sorted(bad):
        a = allocs[fid]
        try:
            cands = topology.candidate_paths(a.path[0], a.path[-1])
        except TopologyError:
            cands = []
        best, best_ratio = None, None
        for p in cands:
            if not _up(topology, p, down_ids):
                continue
            links = topology.path_links(p)
            ratio = float(np.max((load[links] + float(a.rate_bps)) / cap[links]))
            if best_ratio is None or ratio < best_ratio:
                best, best_ratio = tuple(p), ratio
        if best is None:
            del new[fid]
        else:
            new[fid] = Allocation(best, a.rate_bps)
            load[topology.path_links(best)] += float(a.rate_bps)
        moved[fid] = best
    info = dict(sched.info)
    info["links_down_moved"] = len(moved)
    return Schedule(allocations=new, order=list(sched.order), fallback=dict(sched.fallback),
                    info=info), moved


def _up(topology: Topology, path, down_ids) -> bool:
    try:
        return path_is_up(topology, path, down_ids)
    except TopologyError:
        return True  # not ours to judge: the core rejects unusable paths itself


class LinkAwareScheduler(SchedulerWrapper):
    """A scheduler whose schedules avoid the down links of a :class:`LinkState`.

    Wraps any scheduler of :mod:`rapier_app.scheduling`
    (:class:`~rapier_app.core.wrapper.SchedulerWrapper`); every attribute other
    than :meth:`schedule` is the wrapped one's (``name``, ``clairvoyant``,
    ``next_wakeup``, ...).  The wrapped scheduler still plans on the full fabric
    (its path caches stay valid); :func:`avoid_down_links` moves what it put on a
    down link.  :attr:`moved` counts the flows moved so far.
    """

    def __init__(self, inner, links: LinkState, log=None):
        super().__init__(inner)
        self.links = links
        self.log = log
        self.moved = 0
        self._logged: Dict[str, Optional[tuple]] = {}

    def schedule(self, now: float, coflows) -> Schedule:
        """The wrapped scheduler's decision at ``now`` (s) for ``coflows``, with
        flows on down links moved (:func:`avoid_down_links`)."""
        sched = self.inner.schedule(now, coflows)
        out, moved = avoid_down_links(self.links.topology, sched, self.links.down_ids())
        if moved:
            self.moved += len(moved)
            if self.log is not None:
                for fid, p in sorted(moved.items()):
                    # WARNING once per (flow, new path); later decisions: DEBUG
                    level = "debug" if self._logged.get(fid) == p else "warning"
                    self._logged[fid] = p
                    getattr(self.log, level)("flow %s moved off down links %s: %s", fid,
                                             ",".join(self.links.view()),
                                             "-".join(p) if p else "default forwarding")
        else:
            self._logged.clear()
        return out


class _UpView:
    """``topology`` seen without its down links: the same object for every
    attribute except ``graph``, a copy without the ``down`` edges (for
    :func:`~.rules.default_forwarding`, which reads ``graph``, ``switches``,
    ``hosts`` and ``is_host``; node roles are unchanged)."""

    def __init__(self, topology: Topology, down):
        self._topology = topology
        self.graph = topology.graph.copy()
        self.graph.remove_edges_from([l for l in down if self.graph.has_edge(*l)])

    def __getattr__(self, name):
        return getattr(self._topology, name)


def defaults_avoiding(topology: Topology, base: Dict, current: Dict,
                      down) -> Tuple[Dict, List]:
    """Default forwarding of ``topology`` recomputed without the ``down`` links,
    kept in the shape of ``base``.

    Args:
        topology: the configured fabric.
        base: :func:`~.rules.default_forwarding` of the full fabric, dpid -> (groups,
            flow rules), what switches get at connect; not modified.
        current: the same map as the switches hold it now (``base`` or an earlier
            result of this function).
        down: down directed links ``(u, v)``.

    Returns:
        (the new dpid -> (groups, rules) map, the rules to send: what differs from
        ``current``).  Group ids and the flow rules pointing at groups stay as in
        ``base``: a group gets the ports of the shortest up paths (``GroupRule``
        command ``modify``; a group left with no up port keeps its buckets, whose
        watch ports drop them); a single-output rule whose port is no longer on a
        shortest up path outputs to the first port that is (``FlowRule`` command
        ``add``, which replaces it).  With nothing down the new map equals ``base``.
    """
    from .rules import FlowRule as _FR, GroupRule as _GR, default_forwarding

    masked = default_forwarding(_UpView(topology, down)) if down else base
    out, send = {}, []
    for dpid, (groups, rules) in base.items():
        mgroups, mrules = masked.get(dpid, ([], []))
        mg = {g.group_id: g.ports for g in mgroups}
        mports = {}
        for r in mrules:
            ports = []
            for kind, arg in r.actions:
                if kind == "output":
                    ports.append(arg)
                elif kind == "group":
                    ports.extend(mg.get(arg, ()))
            mports[r.match] = tuple(sorted(ports))
        new_groups, new_rules, gports = [], [], {}
        for r in rules:
            kind, arg = r.actions[0] if r.actions else (None, None)
            want = mports.get(r.match, ())
            if kind == "group":
                gports[arg] = want
            elif kind == "output" and want and arg not in want:
                r = _FR(r.dpid, r.priority, r.match, (("output", want[0]),), r.cookie,
                        "add", r.flow_id)
            new_rules.append(r)
        for g in groups:
            new_groups.append(_GR(g.dpid, g.group_id, tuple(gports.get(g.group_id) or g.ports),
                                  g.command))
        cgroups, crules = current.get(dpid, ([], []))
        had_g = {g.group_id: g.ports for g in cgroups}
        had_r = {(r.priority, r.match): r.actions for r in crules}
        send.extend(_GR(g.dpid, g.group_id, g.ports, "modify") for g in new_groups
                    if had_g.get(g.group_id) != g.ports)
        send.extend(r for r in new_rules if had_r.get((r.priority, r.match)) != r.actions)
        out[dpid] = (new_groups, new_rules)
    return out, send


def wrap(core, log=None) -> LinkState:
    """Give ``core`` (a :class:`~.core.ControllerCore`) a :class:`LinkState` and
    wrap its scheduler in :class:`LinkAwareScheduler`; returns the LinkState."""
    state = LinkState(core.topology)
    state.base_defaults = core._defaults
    core.scheduler = LinkAwareScheduler(core.scheduler, state, log)
    core.link_state = state
    return state


def port_is_down(ofp, reason: int, state: int, config: int) -> bool:
    """OpenFlow 1.3 port-status fields -> down?  ``ofp`` is the ofproto module
    (``OFPPR_DELETE``, ``OFPPS_LINK_DOWN``, ``OFPPC_PORT_DOWN``)."""
    return (reason == ofp.OFPPR_DELETE or bool(state & ofp.OFPPS_LINK_DOWN)
            or bool(config & ofp.OFPPC_PORT_DOWN))



__all__ = ["LinkAwareScheduler", "LinkState", "avoid_down_links", "defaults_avoiding",
           "path_is_up", "port_is_down", "wrap"]
