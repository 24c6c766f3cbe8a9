"""The scheduler interface shared by the simulator and the Ryu controller.

A scheduler is an object built for one topology.  At every decision point (a
coflow arrival, a flow or coflow completion, a cancel, or a wake-up it asked for)
its caller passes the current time and the live coflow states, and it returns a
:class:`~rapier_app.core.model.Schedule`: for each active flow a path and a rate in
bit/s.  It never sends anything and never reads a clock: time is passed in.

Schedulers register under a name (``@register("rapier")``) so that the CLI and the
controller's configuration can select them by name.
"""

from __future__ import annotations

import operator
import zlib
from typing import Callable, Dict, List, Optional, Sequence, Type

import numpy as np

from topologies import Topology

from ..core.model import CoflowState, FlowState, Schedule
from . import kernels as _kernels


#: entries of a scheduler's ECMP memo (:meth:`Scheduler.ecmp_path`) before it is cleared
ECMP_MEMO_MAX = 200_000


class SchedulerError(ValueError):
    """Unknown scheduler name or invalid scheduler parameter (names the field)."""


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
            follows it (see :class:`~rapier_app.sim.simulator.Simulator`).
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
            passes; flow completions only re-hand freed capacity); ``"bytes"``: only ``bytes_sent``, at every decision point;
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
            event step, which touches only the sending flows (issue 16).  Default
            False.
        volatile_schedules: set True by a caller that reads a returned
            :class:`Schedule`'s vectors only until its next call to :meth:`schedule`
            and never keeps them (the simulator, for the length of a run; issue 16).
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

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None):
        self.topology = topology
        self.seed = int(seed)
        self.max_paths = max_paths
        self._sent_arr: Optional[np.ndarray] = None  # see bind_counters
        self._active_list: Optional[list] = None  # see bind_active

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        """Decide paths and rates for every active flow of ``coflows`` at ``now`` (s)."""
        raise NotImplementedError

    @staticmethod
    def group_finished(store: Dict[str, List[FlowState]], flows: Sequence[FlowState]) -> None:
        """Append each of ``flows`` to ``store[its coflow_id]`` (a list per coflow):
        the bookkeeping of :meth:`flows_finished` for schemes that drop finished
        flows from cached per-coflow views by position (issue 16)."""
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
        O(flows) pass per decision point with 600,000 flows live; issue 16).  The
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


REGISTRY: Dict[str, Type[Scheduler]] = {}


def register(name: str) -> Callable[[Type[Scheduler]], Type[Scheduler]]:
    """Class decorator: make a scheduler selectable by ``name``."""

    def deco(cls: Type[Scheduler]) -> Type[Scheduler]:
        cls.name = name
        REGISTRY[name] = cls
        return cls

    return deco


def make_scheduler(name: str, topology: Topology, seed: int = 0, **params) -> Scheduler:
    """Instantiate the scheduler registered as ``name``.

    Raises:
        SchedulerError: unknown name, or a parameter the scheduler does not take.
    """
    from . import load_all  # noqa: F401  (registers every built-in scheduler)

    load_all()
    cls = REGISTRY.get(name)
    if cls is None:
        raise SchedulerError(f"scheduler: unknown scheduler {name!r}; known: "
                             f"{', '.join(sorted(REGISTRY))}")
    try:
        return cls(topology, seed=seed, **params)
    except TypeError as exc:
        raise SchedulerError(f"scheduler: bad parameter for {name}: {exc}") from None


def max_min_fair(flow_links: Sequence[np.ndarray], capacity: np.ndarray,
                 demand: Optional[np.ndarray] = None,
                 weights: Optional[np.ndarray] = None, rel_eps: float = 1e-9) -> np.ndarray:
    """Weighted max-min fair rates by progressive filling (water-filling).

    Args:
        flow_links: per flow, an int array of link indices its path crosses.
        capacity: per link, the capacity available to these flows in bit/s.
        demand: optional per-flow upper bound in bit/s (``inf`` for none).
        weights: optional per-flow positive weights (default all 1).

    Returns:
        Per-flow rates in bit/s (float array, same order as ``flow_links``).  No link
        exceeds its capacity; every flow is limited by a saturated link on its path or
        by its demand.

    Source: Bertsekas and Gallager, Data Networks, Section 6.5.2 (max-min fairness).
    """
    n = len(flow_links)
    if n == 0:
        return np.zeros(0)
    lens = np.fromiter(map(len, flow_links), dtype=np.int64, count=n)
    lidx = np.concatenate(flow_links).astype(np.int64, copy=False)
    return max_min_fair_flat(lens, lidx, capacity, demand, weights, rel_eps)


def max_min_fair_flat(lens: np.ndarray, lidx: np.ndarray, capacity: np.ndarray,
                      demand: Optional[np.ndarray] = None,
                      weights: Optional[np.ndarray] = None,
                      rel_eps: float = 1e-9) -> np.ndarray:
    """:func:`max_min_fair` with the flows' links given flat (CSR-like).

    Args:
        lens: per flow, the number of links of its path (int array).
        lidx: the link indices of every flow, concatenated in flow order (int array,
            ``lens.sum()`` long).
        capacity, demand, weights, rel_eps: as in :func:`max_min_fair`.

    Returns:
        Per-flow rates in bit/s, identical to :func:`max_min_fair` on the same flows.

    Incremental progressive filling: all active flows sit at rate level * weight,
    and a link's active weight changes only when one of its flows freezes, so an
    iteration costs O(links) plus the entries it freezes (about 10x faster than
    recomputing every link's load per iteration on 144k trace flows).

    Raises:
        ValueError: unbounded rates (a flow crosses no link and has no demand).
    """
    lens = np.asarray(lens, dtype=np.int64)
    n = lens.shape[0]
    rate = np.zeros(n)
    if n == 0:
        return rate
    cap = np.asarray(capacity, dtype=float)
    L = cap.shape[0]
    lidx = np.asarray(lidx, dtype=np.int64)
    if weights is None and demand is None and _kernels.ENABLED:
        # the compiled twin: same operations, same rates bit for bit (issue 16)
        if lidx.size and (lidx.min() < 0 or lidx.max() >= L):
            raise IndexError("max_min_fair_flat: a link index outside the capacity vector")
        if _kernels.maxmin_flat_kernel(lens, lidx, np.maximum(cap, 0.0),
                                       rel_eps * np.maximum(cap, 1.0), rate) < 0:
            raise ValueError("max_min_fair: unbounded rates (a flow crosses no link)")
        return rate
    weighted = weights is not None
    w = np.asarray(weights, dtype=float) if weighted else np.ones(n)
    dem = np.full(n, np.inf) if demand is None else np.asarray(demand, dtype=float)
    # Progressive filling with incremental bookkeeping: every active flow's rate is
    # level * w; a link's active weight wl and active count cnt only change when a
    # flow freezes, so each iteration costs O(links) plus the entries of the flows
    # and links it freezes (O(entries) over the whole run).  Links are kept as a
    # padded (flows x longest path) matrix P whose padding is the sentinel link L,
    # so a set of flows' links is one row gather.
    active = (lens > 0) & (dem > 0)
    W = int(lens.max())
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    flat = np.full(n * W, L, dtype=np.int64)
    if W:  # entry k of flow i goes to i * W + k
        pos = np.repeat(np.arange(0, n * W, W, dtype=np.int64) - starts, lens)
        pos += np.arange(lidx.shape[0], dtype=np.int64)
        flat[pos] = lidx
    P = flat.reshape(n, W)
    everyone = bool(active.all())
    act_ents = flat if everyone else P[active].ravel()
    cnt = np.bincount(act_ents, minlength=L + 1)[:L]
    if weighted:
        wl = np.bincount(act_ents, weights=np.repeat(w if everyone else w[active], W),
                         minlength=L + 1)[:L]
    else:
        wl = cnt.astype(float)  # unit weights: the active weight is the count
    # entries of P.ravel() stably sorted by link (radix sort on 16-bit keys when the
    # link ids fit: 3x faster); entry e belongs to flow e // W
    by_link = np.argsort(flat.astype(np.int16) if L < 32767 else flat, kind="stable")
    lptr = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=L + 1))])
    head = dem / w  # level at which a flow reaches its demand
    dem_order = np.argsort(np.where(active, head, np.inf), kind="stable")
    dem_order = dem_order[np.isfinite(head[dem_order]) & active[dem_order]]
    di = 0
    residual = np.maximum(cap.copy(), 0.0)
    tol = rel_eps * np.maximum(cap, 1.0)
    # A link without active flows gets residual inf (and wl 0): its share
    # residual / wl is inf and it never counts as saturated, so the loop needs no
    # "used" mask.  A link never regains active flows.
    residual[cnt == 0] = np.inf
    simple = not weighted and demand is None  # rate = level for every flow
    level = 0.0
    n_active = int(active.sum())
    slot = np.empty(n, dtype=np.int64)  # scratch for _dedup
    err = np.seterr(divide="ignore", invalid="ignore")
    try:
        while n_active:
            share = residual / wl
            inc = float(share.min())
            # flows frozen by a saturated link no longer bound the level by their demand
            while di < len(dem_order) and not active[dem_order[di]]:
                di += 1
            if di < len(dem_order):
                inc = min(inc, float(head[dem_order[di]]) - level)
            inc = max(inc, 0.0)
            if not np.isfinite(inc):
                raise ValueError("max_min_fair: unbounded rates (a flow crosses no link)")
            level += inc
            residual -= inc * wl
            sat = np.flatnonzero(residual <= tol)
            ents = (np.concatenate([by_link[lptr[l]:lptr[l + 1]] for l in sat.tolist()])
                    if sat.size else np.zeros(0, np.int64))
            cand = ents // W if W else ents
            if di < len(dem_order):
                dstop = di
                lim = level * (1 + rel_eps)
                while dstop < len(dem_order) and head[dem_order[dstop]] <= lim:
                    dstop += 1
                cand = np.concatenate([cand, dem_order[di:dstop]])
                di = dstop
            newly = _dedup(cand[active[cand]], slot)
            if not newly.size:  # numerical guard: freeze the most constrained link's flows
                j = int(np.argmin(share))
                e = by_link[lptr[j]:lptr[j + 1]] // W
                newly = _dedup(e[active[e]], slot)
            if simple:
                rate[newly] = level
            else:
                rate[newly] = np.minimum(level * w[newly], dem[newly])
            active[newly] = False
            n_active -= newly.size
            le = P[newly].ravel()
            dec = np.bincount(le, minlength=L + 1)[:L]
            cnt -= dec
            if weighted:
                wl -= np.bincount(le, weights=np.repeat(w[newly], W), minlength=L + 1)[:L]
            else:
                wl -= dec
            gone = np.flatnonzero((cnt == 0) & (dec > 0))
            wl[gone] = 0.0
            residual[gone] = np.inf
    finally:
        np.seterr(**err)
    return rate


def _dedup(ids: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """``ids`` without repeats (first occurrences, in order), in O(len(ids)) using the
    scratch array ``slot`` (length > max id); no sort, unlike ``np.unique``."""
    pos = np.arange(ids.shape[0])
    slot[ids[::-1]] = pos[::-1]
    return ids[slot[ids] == pos]
