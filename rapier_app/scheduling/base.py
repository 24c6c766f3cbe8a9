"""The scheduler interface shared by the simulator and the Ryu controller.

A scheduler is an object built for one topology.  At every decision point (a
coflow arrival, a flow or coflow completion, a cancel, or a wake-up it asked for)
its caller passes the current time and the live coflow states, and it returns a
:class:`~rapier_app.core.model.Schedule`: for each active flow a path and a rate in
bit/s.  It never sends anything and never reads a clock: time is passed in.

Schedulers register under a name (:func:`~rapier_app.scheduling.registry.register`)
so that the CLI and the controller's configuration can select them by name.
"""

from __future__ import annotations

import operator
import zlib
from typing import Dict, List, Optional, Sequence

import numpy as np

from topologies import Topology

from ..errors import RapierError
from ..core.model import CoflowState, FlowState, Schedule


#: entries of a scheduler's ECMP memo (:meth:`Scheduler.ecmp_path`) before it is cleared
ECMP_MEMO_MAX = 200_000


class SchedulerError(RapierError, ValueError):
    """Unknown scheduler name or invalid scheduler parameter (names the field)."""


class UnknownSizeError(SchedulerError):
    """A scheduler that needs flow sizes was asked to run with sizes hidden
    (``rapier-sim --hide-sizes``): it refuses instead of guessing
    (:attr:`Scheduler.unknown_sizes` is ``"refuse"``)."""


#: the values of :attr:`Scheduler.unknown_sizes`
UNKNOWN_SIZES = ("unused", "estimate", "refuse")


class Scheduler:
    """Base class: subclasses implement :meth:`schedule`.

    Class attributes:
        name: the registry name.
        clairvoyant: whether the scheme may read flow sizes (RAPIER, Varys,
            Sincronia: yes; Aalo, Philae, OPTAS: no).  The simulator enforces it.
        reschedule_on: the events the scheme reacts to besides coflow arrivals and
            its wake-ups: ``"flow"`` (every flow completion; the default, for schemes
            whose enforcement reacts at once, like TCP fair sharing or host
            priorities) or ``"coflow"`` (coflow completions only: a centralised
            rate allocator such as RAPIER's Algorithm 1 or Varys's).  The simulator
            follows it (see :class:`~rapier_app.sim.Simulator`).
        rates_pushed: whether the scheme's rates stand for limits a controller
            pushes to host agents (default True).  False for TCP fair sharing
            (``baseline``, ``fair``): its rates model what TCP reaches by itself,
            so ``rapier-sim --handoff-delay``
            (:class:`~rapier_app.sim.handoff.HandoffDelay`) leaves it alone.
        reads_progress: whether :meth:`schedule` reads ``bytes_sent``, ``rate_bps``
            or ``path`` of unfinished flows (default True).  Schemes that keep their
            own routes and only need the active flows (ECMP + max-min fair) set it
            False, and the simulator skips writing those fields back at every event
            (finished flows still get their final ``bytes_sent`` and ``finish_s``);
            ``"arrivals"``: only ``bytes_sent``, and only at decision points where a
            coflow arrived; ``"coflow-events"``: only ``bytes_sent``, at decision
            points where a coflow arrived or completed (RAPIER and Varys: their full
            passes; flow completions only re-hand freed capacity);
            ``"coflow-events+wakeups"``: as ``"coflow-events"``, and at the
            scheduler's own wake-ups (``rapier-nc`` re-estimates sizes there);
            ``"bytes"``: only ``bytes_sent``, at every decision point;
            ``"coflow"``: only each coflow's total (``CoflowState.bytes_sent``), at
            every decision point (Aalo's coordinator view), while unfinished flows'
            own counters stay unwritten; ``"vector"``: the simulator hands the
            scheduler its array of per-flow bytes sent (:meth:`bind_counters`,
            indexed by ``FlowState._sim_idx``) instead of writing every flow's
            ``bytes_sent``.
        sticky_paths: True when the scheme gives each flow one path for its whole
            life, always as the same tuple object (sticky ECMP); the simulator then
            validates a path once, when the flow first sends, instead of checking
            at every decision point that the path object is unchanged.
        work_conserving: what the scheme promises about idle capacity, checked by
            :mod:`rapier_app.sim.checker` between decision points.  None (default):
            nothing (a scheme may hold flows back on purpose, e.g. Philae's pilots).
            ``"path"``: every flow with bytes left has a link at capacity on its
            path (its own, fixed path; a waiting flow: the path it is given when it
            sends), so no flow could send faster without taking from another.
            ``"candidates"``: as ``"path"`` for sending flows, and a waiting flow has
            a link at capacity on every candidate path (the scheme may route a waiting
            flow on any candidate path, RAPIER Algorithm 3's AssignBandwidth).
        few_senders: True when few of the scheme's flows send at a time (Sincronia's
            greedy rates: about one per port); the simulator then runs its sparse
            event step, which touches only the sending flows.  Default
            False.
        unknown_sizes: what the scheme does when flow sizes are hidden
            (:meth:`expect_unknown_sizes`; ``docs/schedulers.md`` has the table):
            ``"unused"`` (it never reads a size: the non-clairvoyant seeds, fair
            sharing), ``"estimate"`` (it schedules on an estimate of each unknown
            size: ``rapier-nc``) or ``"refuse"`` (default: it needs the sizes and
            raises :class:`UnknownSizeError`).
        volatile_schedules: set True by a caller that reads a returned
            :class:`Schedule`'s vectors only until its next call to :meth:`schedule`
            and never keeps them (the simulator, for the length of a run).
            Schemes may then hand out their own live lists instead of copies (RAPIER
            and Varys at flow completions: two O(flows) list copies per event less).
            False (default): every returned schedule is the caller's to keep (the
            controller's ``last_schedule``).

    Args:
        topology: the fabric (capacities in bit/s, candidate paths).
        seed: seed for any randomness (ECMP hashing), so runs reproduce.
        max_paths: cap K on candidate paths per host pair (None: the whole ECMP set).
    """

    name = "base"
    clairvoyant = True
    rates_pushed = True
    reschedule_on = "flow"
    reads_progress = True
    sticky_paths = False
    few_senders = False
    work_conserving = None
    volatile_schedules = False
    unknown_sizes = "refuse"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None):
        self.topology = topology
        self.seed = int(seed)
        self.max_paths = max_paths
        self._sent_arr: Optional[np.ndarray] = None  # see bind_counters
        self._active_list: Optional[list] = None  # see bind_active

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        """Decide paths and rates for every active flow of ``coflows`` at ``now`` (s)."""
        raise NotImplementedError

    def expect_unknown_sizes(self) -> None:
        """Called once, before the first decision, by a caller that hides flow sizes
        (the simulator with ``hide_sizes=True``): the scheme gets ready to schedule
        flows whose ``size_bytes`` raises
        :class:`~rapier_app.core.model.InformationError`.  Default: nothing for
        ``unknown_sizes`` ``"unused"`` and ``"estimate"``.

        Raises:
            UnknownSizeError: ``unknown_sizes`` is ``"refuse"`` (the message names
                the scheduler and the ones that run without sizes).
        """
        if self.unknown_sizes == "refuse":
            raise UnknownSizeError(
                f"scheduler: {self.name} needs flow sizes and refuses hidden sizes; "
                f"without sizes use rapier-nc (RAPIER on estimated sizes) or a "
                f"non-clairvoyant scheme (aalo, philae, optas, fifo, baseline)")

    @staticmethod
    def group_finished(store: Dict[str, List[FlowState]], flows: Sequence[FlowState]) -> None:
        """Append each of ``flows`` to ``store[its coflow_id]`` (a list per coflow):
        the bookkeeping of :meth:`flows_finished` for schemes that drop finished
        flows from cached per-coflow views by position."""
        for f in flows:
            lst = store.get(f.coflow_id)
            if lst is None:
                store[f.coflow_id] = [f]
            else:
                lst.append(f)

    @staticmethod
    def finished_positions(ords: np.ndarray, flows: Sequence[FlowState],
                           fin: Sequence[FlowState]) -> Optional[np.ndarray]:
        """Positions in ``flows`` (whose orders in their coflow, ``FlowState._ord``,
        are the increasing ``ords``) of the flows ``fin``, found by bisection, or
        None when one of them is not there (the caller then scans)."""
        want = np.fromiter((f._ord for f in fin), np.int64, len(fin))
        pos = np.searchsorted(ords, want)
        if (pos >= len(flows)).any() or not all(
                map(operator.is_, map(flows.__getitem__, pos.tolist()), fin)):
            return None
        return pos

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Hook: ``flows`` finished since the last :meth:`schedule` call.  The
        simulator and the controller call it before the next decision; schemes that
        keep per-flow state between decisions (RAPIER and Varys work conservation)
        use it to avoid scanning every flow.  Default: nothing."""

    def next_wakeup(self, now: float) -> Optional[float]:
        """Absolute time (s) of the next periodic decision this scheme wants, or None."""
        return None

    def set_capacity(self, capacity_bps) -> None:
        """Plan from now on with ``capacity_bps`` ((L,) bit/s, the topology's link
        order) as link capacities: the site broker's residual capacity
        (:mod:`rapier_app.core.broker`, RAPIER Section III-B).  The scheduler gets
        its own shallow copy of the topology with that ``capacity`` array (the
        shared topology, its graph and path caches are untouched), then
        :meth:`capacity_changed` runs.

        Raises:
            SchedulerError: wrong length, or a capacity that is not positive.
        """
        from ..core.broker import private_topology

        cap = np.array(capacity_bps, dtype=float)
        if cap.shape != np.shape(self.topology.capacity) or not np.all(cap > 0):
            raise SchedulerError(f"capacity_bps: must be {len(self.topology.capacity)} "
                                 f"positive bit/s, got shape {cap.shape}")
        if not self.__dict__.get("_own_topology", False):
            self.topology = private_topology(self.topology)
            self._own_topology = True
        self.topology.capacity = cap
        self.capacity_changed()

    def coflows_changed(self, coflow_ids: Sequence[str]) -> None:
        """Hook: the coflows ``coflow_ids`` changed other than by flows finishing:
        flows were added to them, or the sizes the scheduler reads of their flows
        changed (estimates of unknown sizes grew, :mod:`rapier_app.core.estimate`).
        Schemes that keep values derived from a coflow's flows or sizes between
        decisions drop them.  Default: drops the incremental work-conservation state
        (as :meth:`capacity_changed`; the next decision is a full pass)."""
        if "_wc" in self.__dict__:
            self._wc = None

    def capacity_changed(self) -> None:
        """Hook after :meth:`set_capacity`: schemes that keep values derived from
        ``topology.capacity`` between decisions drop or recompute them.  Default:
        drops the incremental work-conservation state (``_wc`` of RAPIER and Varys:
        the next decision is a full pass)."""
        if "_wc" in self.__dict__:
            self._wc = None

    def bind_counters(self, sent: Optional[np.ndarray]) -> None:
        """Take the simulator's live per-flow bytes-sent array (bytes, indexed by
        ``FlowState._sim_idx``; read only) for ``reads_progress = "vector"``; None
        unbinds it.  The simulator calls it again whenever the array is replaced."""
        self._sent_arr = sent

    def bind_active(self, flows: Optional[list]) -> None:
        """Take the simulator's live list of active flows (read only; None unbinds):
        every active flow of the coflows the next :meth:`schedule` call gets, in
        their order, each coflow's in flow order.  A scheme whose rate vector is in
        that order may return this very list as its schedule's flows
        (:meth:`Schedule.from_vectors`): the simulator then knows the vectors are
        aligned with its own positions without comparing them flow by flow (an
        O(flows) pass per decision point with 600,000 flows live).  The
        simulator calls it again whenever the list is replaced."""
        self._active_list = flows

    def candidates(self, flow: FlowState) -> List[tuple]:
        """Candidate paths of ``flow`` (the ECMP set, capped at ``max_paths``), from the
        per-topology cache every scheduler shares
        (:func:`~rapier_app.scheduling.pathcache.pair_paths`).

        Raises:
            TopologyError: unknown host or no path.
        """
        from .pathcache import pair_paths

        return pair_paths(self.topology, flow.src, flow.dst, self.max_paths).paths

    def ecmp_path(self, flow: FlowState) -> tuple:
        """ECMP: a deterministic, seeded hash of the flow over its equal-cost paths.

        The hash covers the seed, the endpoints and the flow id (standing for the
        5-tuple), so a flow keeps its path for its whole life, as with switch ECMP.
        Memoised per scheduler on (src, dst, flow id) (at most
        :data:`ECMP_MEMO_MAX` entries; RAPIER's tie-break asks for every flow of a
        coflow at every LP solve).
        """
        key = (flow.src, flow.dst, flow.flow_id)
        memo = self.__dict__.get("_ecmp_memo")
        if memo is None:
            memo = self._ecmp_memo = {}
        p = memo.get(key)
        if p is not None:
            return p
        paths = self.candidates(flow)
        if len(paths[-1]) > len(paths[0]):  # a path slack: hash over the shortest only
            paths = [q for q in paths if len(q) == len(paths[0])]
        if len(paths) == 1:
            p = paths[0]
        else:
            h = zlib.crc32(f"{self.seed}|{flow.src}|{flow.dst}|{flow.flow_id}".encode())
            p = paths[h % len(paths)]
        if len(memo) >= ECMP_MEMO_MAX:
            memo.clear()  # a pure function of the key: dropping entries is safe
        memo[key] = p
        return p
