"""Event-driven, exact flow-level simulator.

Events are coflow arrivals, flow completions and the wake-ups a scheduler asks for
(:meth:`Scheduler.next_wakeup`).  Between events every flow sends at the constant
rate its scheduler gave it, so time jumps straight to the next event: no time step,
no rounding of rates.  At every event the simulator checks the schedule (every path
exists and joins the flow's endpoints; no link above its capacity) and raises
:class:`SimulationError` naming the flow or link when it does not hold.

Units: bytes, bit/s, seconds.  Source of the method: RAPIER Section V-B ("the
simulator accounts for the flow arrival events and departure events").
"""

from __future__ import annotations

import math
import operator
import time
from dataclasses import dataclass, field
from collections import deque
from itertools import compress, repeat
from operator import attrgetter
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from topologies import Topology, TopologyError

from ..core.model import CoflowSpec, CoflowState, FlowState, InfoPolicy
from .. import kernels as _kernels
from ..kernels import sim as _ksim
from ..scheduling import Scheduler

BITS = 8.0
_UNSET = object()  # "no validated path yet" (a path may legitimately be None)
_NO_HINT = np.zeros(0, dtype=np.int64)
#: The values of ``Scheduler.reads_progress`` the simulator knows (see its docstring).
READS_PROGRESS = (True, False, "arrivals", "bytes", "coflow", "vector", "coflow-events")
#: Relative slack on link capacity before a schedule counts as over capacity.
CAPACITY_SLACK = 1e-6
#: the capacity check sums every link's load exactly at least once per this many
#: events; in between it keeps the loads from the flows whose rate changed (their
#: rounding drift, about 1e-16 relative per update, stays far below CAPACITY_SLACK)
EXACT_CHECK_EVERY = 1000
#: the sparse event step (see :meth:`Simulator._run`), for sticky-path schedulers
#: with the compiled kernels on: None (default) when the scheduler says few of its
#: flows send at a time (``few_senders``: Sincronia's greedy rates, one flow per
#: port); True for every sticky-path scheduler; False never (tests compare both)
SPARSE_STEP = None


def _link_load(glob_P: np.ndarray, glob_len: np.ndarray, gi: np.ndarray,
               rates_bps: np.ndarray, n_links: int) -> np.ndarray:
    """(n_links,) bit/s: flow ``gi[k]`` (a row of the padded link matrix ``glob_P``
    with ``glob_len[gi[k]]`` valid entries) adding ``rates_bps[k]`` on each of its
    links.  Sums run in ``gi`` order, then hop order (row-major selection)."""
    lens = glob_len[gi]
    return np.bincount(glob_P[gi][np.arange(glob_P.shape[1]) < lens[:, None]],
                       weights=np.repeat(rates_bps, lens), minlength=n_links)


def _store_links(glob_P: np.ndarray, glob_len: np.ndarray, g: int,
                 links: Sequence[int]) -> np.ndarray:
    """Record flow ``g``'s validated link indices as row ``g`` of the padded matrix
    ``glob_P`` (widened when the path is longer than any before) and its length in
    ``glob_len`` (in place); returns the matrix, a new one when it was widened."""
    nl = len(links)
    if nl > glob_P.shape[1]:
        glob_P = np.concatenate([glob_P, np.zeros(
            (glob_P.shape[0], nl - glob_P.shape[1]), dtype=np.int64)], axis=1)
    glob_P[g, :nl] = links
    glob_len[g] = nl
    return glob_P


#: block size of :func:`_changed`
_BLOCK = 256


def _changed(new: list, old: list, m: int) -> np.ndarray:
    """(m,) bool mask: True at positions where ``new[j] is not old[j]``, except in
    blocks of :data:`_BLOCK` positions whose slices compare equal (``==``: the same
    or equal paths, which validate to the same links).  Both lists have length m."""
    look = np.zeros(m, dtype=bool)
    is_ = operator.is_
    for a in range(0, m, _BLOCK):
        b = a + _BLOCK
        if new[a:b] != old[a:b]:
            look[a:min(b, m)] = ~np.fromiter(map(is_, new[a:b], old[a:b]), dtype=bool,
                                             count=min(b, m) - a)
    return look


class SimulationError(RuntimeError):
    """The schedule broke an invariant (bad path, link over capacity, deadlock)."""


@dataclass
class CoflowRecord:
    """Per-coflow outcome: times in seconds, volume in bytes."""

    coflow_id: str
    arrival_s: float
    finish_s: float
    cct_s: float
    width: int
    total_bytes: float
    weight: float = 1.0


@dataclass
class FlowRecord:
    """Per-flow outcome: times in seconds, size in bytes, last path."""

    flow_id: str
    coflow_id: str
    src: str
    dst: str
    size_bytes: float
    finish_s: float
    fct_s: float


@dataclass
class SimResult:
    """Outcome of one run.

    Attributes:
        scheduler: scheduler name.
        coflows, flows: per-coflow and per-flow records, in completion order.
        wall_s: wall-clock seconds of the run.
        events: number of decision points (scheduler calls).
        max_link_utilisation: largest load/capacity seen on any link at any event.
        bytes_delivered, bytes_offered: totals in bytes (equal at the end).
    """

    scheduler: str
    coflows: List[CoflowRecord] = field(default_factory=list)
    flows: List[FlowRecord] = field(default_factory=list)
    wall_s: float = 0.0
    events: int = 0
    max_link_utilisation: float = 0.0
    bytes_delivered: float = 0.0
    bytes_offered: float = 0.0

    @property
    def ccts(self) -> np.ndarray:
        """CCTs in seconds, ordered by coflow arrival then id."""
        recs = sorted(self.coflows, key=lambda r: (r.arrival_s, r.coflow_id))
        return np.array([r.cct_s for r in recs])


@dataclass
class EventRecord:
    """What a decision put in force, from ``t_s`` until ``t_next_s`` (seconds).

    Attributes:
        flow_ids: the active flows at the decision (simulator order).
        paths: per flow, its path (tuple of node names) or None (no allocation).
        rates_bps: per flow, its rate in bit/s (0: waiting).
        remaining_bytes: per flow, bytes left at ``t_s``.
        finish_s: per flow, when it finished inside the interval (inf: it did not).
    """

    t_s: float
    t_next_s: float
    flow_ids: List[str]
    paths: list
    rates_bps: np.ndarray
    remaining_bytes: np.ndarray
    finish_s: np.ndarray


class Simulator:
    """Drive one scheduler over one workload on one topology.

    Args:
        topology: the fabric.
        coflows: the workload (any order; sorted by arrival then id).
        scheduler: the scheduler instance (fresh: schedulers keep state).
        progress: optional callback ``progress(done_coflows, total_coflows, now_s)``
            called after each coflow completes; the coflow's record is then the last
            of ``self.result.coflows`` (the :class:`SimResult` being built).
        record_flows: keep per-flow records (memory grows with the flow count).
        max_events: safety limit on decision points (SimulationError beyond).
        reschedule_on: when the scheduler is called, besides coflow arrivals and its
            own wake-ups: ``"flow"`` (every flow completion: exact per-flow
            reallocation, as TCP fair sharing reacts), ``"coflow"`` (only when a
            coflow completes: bandwidth a finished flow frees stays idle until the
            next coflow event, as RAPIER Section IV-C says of Algorithm 1, "invoked
            whenever a new coflow comes or an existing coflow finishes"), or None
            (default) for the scheduler's own ``reschedule_on`` attribute.  Both are
            exact: flows keep their rates between decisions and finish at their own
            times.  With ``"coflow"``, if no coflow can finish before the next arrival
            (a coflow has a flow without bandwidth), the next flow completion is a
            decision point too, so nothing deadlocks.
        event_log: optional list; when given, one :class:`EventRecord` is appended
            per decision point (what was in force until the next one), for
            independent checkers (``tests/test_work_conservation.py``).  Costs
            O(active flows) Python work per event: off by default.

    Raises:
        SimulationError: ``reschedule_on`` or the scheduler's ``reads_progress`` is
            not a known value (at construction).

    Raises (from :meth:`run`):
        SimulationError: a path that does not exist or does not join the flow's
            endpoints, a link over capacity, or flows left with no bandwidth and no
            future event to wait for.
        TopologyError: a flow names a host that is not in the topology.
    """

    def __init__(self, topology: Topology, coflows: Sequence[CoflowSpec], scheduler: Scheduler,
                 progress: Optional[Callable[[int, int, float], None]] = None,
                 record_flows: bool = True, max_events: int = 50_000_000,
                 reschedule_on: Optional[str] = None,
                 event_log: Optional[list] = None):
        self.topology = topology
        self.event_log = event_log
        self.specs = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id))
        ids = [c.coflow_id for c in self.specs]
        if len(set(ids)) != len(ids):
            raise SimulationError("coflow_id: duplicate coflow ids in the workload")
        for c in self.specs:
            for f in c.flows:
                topology.check_host(f.src)
                topology.check_host(f.dst)
        self.scheduler = scheduler
        self.policy = InfoPolicy(scheduler.clairvoyant)
        self.progress = progress
        self.record_flows = record_flows
        self.max_events = max_events
        mode = reschedule_on if reschedule_on is not None else \
            getattr(scheduler, "reschedule_on", "flow")
        if mode not in ("flow", "coflow"):
            raise SimulationError(f"reschedule_on: must be 'flow' or 'coflow', got {mode!r}")
        rp = getattr(scheduler, "reads_progress", True)
        if rp not in READS_PROGRESS:
            raise SimulationError(f"reads_progress: scheduler {scheduler.name} has {rp!r}; "
                                  f"must be one of {READS_PROGRESS}")
        self.reschedule_on = mode

    def run(self) -> SimResult:
        """Run to completion of every coflow and return the :class:`SimResult`.

        Every flow gets a fixed index into numpy arrays (size and bytes sent, in
        bytes) when its coflow arrives; time advances with one vectorised update per
        event, and each :class:`FlowState`'s ``bytes_sent``, ``path``, ``rate_bps``
        and ``finish_s`` are written back at every event, so schedulers see the same
        state as before (``bytes_sent``, ``path`` and ``rate_bps`` of unfinished flows
        only for schedulers whose ``reads_progress`` is True; ``bytes_sent`` alone
        for ``"bytes"``).  A flow's path is validated when it changes (a new path
        object); link loads are checked at every event.

        Raises:
            SimulationError: see the class docstring.
        """
        # the run reads each schedule only until the next call (volatile_schedules)
        sch = self.scheduler
        had = sch.__dict__.get("volatile_schedules", None)
        sch.volatile_schedules = True
        try:
            return self._run()
        finally:
            unbind = getattr(sch, "bind_active", None)
            if unbind is not None:
                unbind(None)  # the run's list is not the scheduler's to keep
            if had is None:
                del sch.volatile_schedules
            else:
                sch.volatile_schedules = had

    def _run(self) -> SimResult:
        """The body of :meth:`run`."""
        t_wall = time.perf_counter()
        topo = self.topology
        cap = topo.capacity
        n_links = len(cap)
        cap_limit = cap * (1 + CAPACITY_SLACK) + 1e-6
        res = self.result = SimResult(self.scheduler.name)
        res.bytes_offered = sum(c.total_bytes for c in self.specs)
        arrivals = list(self.specs)
        ai = 0
        now = 0.0
        active: Dict[str, CoflowState] = {}
        total = len(self.specs)
        # Global flow arrays, indexed by FlowState._sim_idx (append-only).
        n_glob = 0
        size = np.zeros(1024)
        sent = np.zeros(1024)
        posmap = np.full(1024, -1, dtype=np.int64)  # global index -> position in act
        posmap_ok = True  # posmap holds the current positions of the active flows
        cof_of = np.zeros(1024, dtype=np.int64)  # global index -> coflow serial
        by_coflow = self.reschedule_on == "coflow"
        rp = getattr(self.scheduler, "reads_progress", True)
        reads = rp is True  # bytes_sent, rate_bps and path at every event
        reads_bytes = reads or rp == "bytes"  # bytes_sent at every event
        reads_on_arrival = rp == "arrivals"
        # "coflow-events": only bytes_sent, at decision points where a coflow arrived
        # or completed (full passes of RAPIER and Varys; flow events read nothing)
        reads_on_cevent = rp == "coflow-events"
        cevent = False
        # "vector": the scheduler reads this run's bytes-sent array directly
        reads_vector = rp == "vector"
        bound = None
        bind_act = getattr(self.scheduler, "bind_active", None)
        bound_act = None  # the list last given to bind_act
        # "coflow": only each coflow's total bytes sent (CoflowState.bytes_sent), kept
        # here per coflow serial instead of in every flow's counter
        reads_coflow = rp == "coflow"
        sticky = bool(getattr(self.scheduler, "sticky_paths", False))
        # The sparse step: with sticky paths (a flow's links never change once
        # validated) the per-event work runs over the sending positions only, and
        # the rates the link loads were counted at are kept for those flows
        # (prev_g, prev_rate) instead of for every live flow: most live flows
        # wait (one flow per port sends under Sincronia's greedy rates while
        # 600,000 are live in the all-at-0 hour; issue 16).  The same sums in the
        # same order as the dense step, so the same results bit for bit.
        # (With most flows sending, as under Aalo's, Philae's or OPTAS's max-min
        # shares, the dense step's fused passes are as fast or faster: OPTAS's
        # giants' window took 3.4 ms per decision point dense, 4.0 ms sparse.)
        wants = (bool(getattr(self.scheduler, "few_senders", False))
                 if SPARSE_STEP is None else SPARSE_STEP)
        sparse = (wants and sticky and _kernels.ENABLED and not by_coflow
                  and self.event_log is None)
        prev_g = np.zeros(0, dtype=np.int64)  # global indices, increasing
        prev_rate = np.zeros(0)
        # live flows per global index and per block of 64 indices: a position's
        # global index is the rank-th live one (kernels.rank_select_kernel)
        alive8 = np.zeros(1024, dtype=np.uint8)
        bcnt = np.zeros(1024 // 64 + 1, dtype=np.int64)
        # the scheduler's flows_finished hook, when it has one of its own
        fin_hook = (self.scheduler.flows_finished
                    if type(self.scheduler).flows_finished is not Scheduler.flows_finished
                    else None)
        cof_sent = np.zeros(len(self.specs))  # per coflow serial (arrival order)
        arrived = False
        # Per active position: the last validated path (a tuple; None: the schedule gave
        # none; _UNSET: none validated yet); positions move only when flows finish.
        # Not kept for sticky-path schedulers (glob_len says which flows have one).
        cur_paths: List[object] = []
        # validated link indices per global flow index, as a padded matrix (row g:
        # glob_len[g] link indices; append-only, so finishes need no compaction)
        glob_len = np.zeros(1024, dtype=np.int64)
        glob_P = np.zeros((1024, 1), dtype=np.int64)
        # The capacity check between exact sums: link loads (bit/s) kept up to date
        # from the positions whose rate changed (rate_prev: per position, the rate
        # counted in load_inc), an exact sum every EXACT_CHECK_EVERY events and
        # whenever the kept load says a link is over capacity.
        load_inc = np.zeros(n_links)
        rate_prev = np.zeros(0)
        exact_in = 0
        # Active flows, in (coflow arrival order, flow order): global ids and objects.
        act_idx = np.zeros(0, dtype=np.int64)
        act_flows: List[FlowState] = []
        act_dirty = False
        new_idx: List[int] = []
        get_idx = attrgetter("_sim_idx")
        isfinite = math.isfinite
        path_links = topo.path_links
        # per-link byte counters of a scheduler that asks for them (the site
        # broker's background wrapper, rapier_app.sim.background): bytes carried
        link_ctr = getattr(self.scheduler, "link_bytes", None)
        while ai < len(arrivals) or active:
            while ai < len(arrivals) and arrivals[ai].arrival_s <= now:
                spec = arrivals[ai]
                cs = CoflowState(spec, self.policy)
                active[spec.coflow_id] = cs
                if reads_coflow:
                    cs._sent = 0.0
                k = len(cs.flows)
                if n_glob + k > size.shape[0]:
                    grow = max(2 * size.shape[0], n_glob + k)
                    size = np.concatenate([size, np.zeros(grow - size.shape[0])])
                    sent = np.concatenate([sent, np.zeros(grow - sent.shape[0])])
                    posmap = np.concatenate([posmap, np.full(grow - posmap.shape[0], -1,
                                                             dtype=np.int64)])
                    cof_of = np.concatenate([cof_of, np.zeros(grow - cof_of.shape[0],
                                                              dtype=np.int64)])
                    glob_len = np.concatenate([glob_len, np.zeros(grow - glob_len.shape[0],
                                                                  dtype=np.int64)])
                    glob_P = np.concatenate([glob_P, np.zeros(
                        (grow - glob_P.shape[0], glob_P.shape[1]), dtype=np.int64)])
                    alive8 = np.concatenate([alive8, np.zeros(grow - alive8.shape[0],
                                                              dtype=np.uint8)])
                    bcnt = np.concatenate([bcnt, np.zeros(grow // 64 + 1 - bcnt.shape[0],
                                                          dtype=np.int64)])
                cof_of[n_glob:n_glob + k] = ai
                if sparse:
                    alive8[n_glob:n_glob + k] = 1
                    np.add.at(bcnt, np.arange(n_glob, n_glob + k) >> 6, 1)
                for n, f in enumerate(cs.flows):
                    f._sim_idx = n_glob + n
                size[n_glob:n_glob + k] = [f.spec.size_bytes for f in cs.flows]
                sent[n_glob:n_glob + k] = [f.bytes_sent for f in cs.flows]
                if not sticky:  # sticky schedulers' paths are checked by glob_len
                    cur_paths.extend([_UNSET] * k)
                new_idx.extend(range(n_glob, n_glob + k))
                act_flows.extend(cs.active_flows())
                n_glob += k
                act_dirty = True
                arrived = True
                ai += 1
            if not active:
                now = arrivals[ai].arrival_s
                continue
            if act_dirty:
                if new_idx:
                    if not sparse:  # (the sparse step reads flows' _sim_idx instead)
                        act_idx = np.concatenate([act_idx, np.array(new_idx, dtype=np.int64)])
                        rate_prev = np.concatenate([rate_prev, np.zeros(len(new_idx))])
                    new_idx = []
                posmap_ok = False  # refreshed on first use (schedules not in our order)
                act_dirty = False
            res.events += 1
            if res.events > self.max_events:
                raise SimulationError(f"max_events: more than {self.max_events} events")
            states = list(active.values())
            if (reads_on_arrival and arrived) or (reads_on_cevent and (arrived or cevent)):
                # the scheme reads byte counters only when coflows arrive (or complete)
                ai_ = act_idx if not sparse else np.fromiter(
                    map(get_idx, act_flows), dtype=np.int64, count=len(act_flows))
                deque(map(setattr, act_flows, repeat("bytes_sent"), sent[ai_].tolist()), 0)
            arrived = False
            cevent = False
            if reads_vector and bound is not sent:
                self.scheduler.bind_counters(sent)
                bound = sent
            if bind_act is not None and bound_act is not act_flows:
                bind_act(act_flows)
                bound_act = act_flows
            sched = self.scheduler.schedule(now, states)
            m = len(act_flows)
            # Per active position: path (None: no allocation) and rate in bit/s.
            vec = sched.vectors() if hasattr(sched, "vectors") else None
            nz_hint = sched.nonzero_hint() if sparse and vec is not None else None
            if vec is not None:
                vflows, vpaths, vrates = vec
                # FlowState compares by identity, so list == is the identity check
                # at C speed (a tuple never equals a list: the general branch)
                # (the scheduler may hand back the list of bind_active itself)
                if vflows is act_flows or \
                        (len(vflows) == m and (vflows == act_flows if type(vflows) is list
                                               else all(map(operator.is_, vflows,
                                                            act_flows)))):
                    path_pos = vpaths
                    rate_pos = vrates
                else:
                    g = np.fromiter(map(get_idx, vflows), dtype=np.int64, count=len(vflows))
                    pos = np.full(len(vflows), -1, dtype=np.int64)
                    ok = (g >= 0) & (g < n_glob)
                    if not posmap_ok:
                        ai_ = act_idx if not sparse else np.fromiter(
                            map(get_idx, act_flows), dtype=np.int64, count=m)
                        posmap[ai_] = np.arange(m)
                        posmap_ok = True
                    pos[ok] = posmap[g[ok]]
                    nz_hint = None  # its positions are the schedule's, not ours
                    path_pos = [None] * m
                    rate_pos = np.zeros(m)
                    for k in np.flatnonzero(pos >= 0).tolist():
                        j = int(pos[k])
                        if act_flows[j] is vflows[k]:
                            path_pos[j] = vpaths[k]
                            rate_pos[j] = vrates[k]
            else:
                alloc = sched.allocations
                path_pos = [None] * m
                rate_list = [0.0] * m
                for j, f in enumerate(act_flows):
                    a = alloc.get(f.flow_id)
                    if a is not None:
                        p = a.path
                        path_pos[j] = p if type(p) is tuple else tuple(p)
                        rate_list[j] = a.rate_bps
                rate_pos = np.array(rate_list, dtype=float)
            # flows that send: an allocation with a positive (or NaN: caught below) rate
            if sparse:
                # the sending positions: from the schedule's nonzero positions when it
                # gives them (Schedule.from_vectors(nonzero=...)), else one scan
                # with their rates and global indices (increasing, as positions are)
                sel_arr, gsel, rate_arr, look_k = _ksim.sim_senders_kernel(
                    rate_pos, _NO_HINT if nz_hint is None else nz_hint,
                    nz_hint is not None, alive8, bcnt, glob_len)
                none = []
                for j in sel_arr[look_k].tolist():
                    # a sending flow without a validated path (never counted in the
                    # loads: it never sent)
                    p = path_pos[j]
                    if p is None:
                        none.append(j)  # no allocation: it waits
                        continue
                    f = act_flows[j]
                    if p[0] != f.src or p[-1] != f.dst:
                        raise SimulationError(f"path: flow {f.flow_id} ({f.src}->{f.dst}) "
                                              f"got path {'-'.join(p)} with wrong endpoints")
                    try:
                        ls = path_links(p)
                    except TopologyError as exc:
                        raise SimulationError(f"flow {f.flow_id}: {exc}") from None
                    glob_P = _store_links(glob_P, glob_len, f._sim_idx, ls)
                if none:
                    keep_s = ~np.isin(sel_arr, none)
                    sel_arr = sel_arr[keep_s]
                    gsel = gsel[keep_s]
                    rate_arr = rate_arr[keep_s]
                (sent_g, ttf, bad_k,
                 ttf_min) = _ksim.sim_sparse_kernel(gsel, rate_arr, size, sent, glob_P,
                                                    glob_len, prev_g, prev_rate, load_inc)
                bad = int(sel_arr[bad_k]) if bad_k >= 0 else -1
                if bad >= 0:
                    raise SimulationError(f"rate_bps: flow {act_flows[bad].flow_id} got "
                                          f"rate {rate_pos[bad]}")
                n_sel = sel_arr.shape[0]
                look = None
            elif sticky and _kernels.ENABLED:
                # each flow keeps its first path: only never-validated flows that send
                # need a look (a waiting flow's path is not yet its own); one pass
                pos_mask, look_pos = _ksim.sim_look_kernel(rate_pos, act_idx, glob_len)
                look = look_pos if look_pos.shape[0] else None
            elif sticky:
                pos_mask = ~(rate_pos <= 0)
                same = glob_len[act_idx] > 0
                look = pos_mask & ~same
                look = np.flatnonzero(look) if look.any() else None
            elif type(path_pos) is list and path_pos == cur_paths:
                # every path is (the same object as, or equal to) the validated one
                look = None
            elif type(path_pos) is list and m > 4 * _BLOCK:
                # a few paths changed (work conservation moving waiting flows): find
                # them block by block, each block one C-speed list comparison
                look = _changed(path_pos, cur_paths, m)
            else:
                # waiting flows' paths are looked at too (and remembered when valid):
                # then the next event's list comparison above passes at C speed
                look = ~np.fromiter(map(operator.is_, path_pos, cur_paths), dtype=bool,
                                    count=m)
            if not sticky:
                pos_mask = ~(rate_pos <= 0)
                if look is not None:
                    look = np.flatnonzero(look)
            for j in (() if look is None else look.tolist()):
                p = path_pos[j]
                if p is None:
                    pos_mask[j] = False
                    if not sticky:
                        cur_paths[j] = None
                    continue
                f = act_flows[j]
                sends = bool(pos_mask[j])
                if p[0] != f.src or p[-1] != f.dst:
                    if not sends:
                        continue  # never used: checked again if it comes to send
                    raise SimulationError(f"path: flow {f.flow_id} ({f.src}->{f.dst}) got "
                                          f"path {'-'.join(p)} with wrong endpoints")
                try:
                    ls = path_links(p)
                except TopologyError as exc:
                    if not sends:
                        continue
                    raise SimulationError(f"flow {f.flow_id}: {exc}") from None
                if not sticky:
                    cur_paths[j] = p if type(p) is tuple else _UNSET
                g = int(act_idx[j])
                if rate_prev[j] != 0.0:  # its old links lose its old rate
                    load_inc[glob_P[g, :glob_len[g]]] -= rate_prev[j]
                    rate_prev[j] = 0.0
                glob_P = _store_links(glob_P, glob_len, g, ls)
            if sparse:
                pass  # done above
            elif _kernels.ENABLED:
                # the vector work below in one compiled pass (same values, same sums)
                (sel_arr, rate_arr, gsel, sent_g, ttf, w, bad,
                 ttf_min) = _ksim.sim_select_kernel(pos_mask, rate_pos, act_idx, size,
                                                    sent, glob_P, glob_len, rate_prev,
                                                    load_inc)
                if bad >= 0:
                    raise SimulationError(f"rate_bps: flow {act_flows[bad].flow_id} got "
                                          f"rate {rate_pos[bad]}")
                n_sel = sel_arr.shape[0]
            else:
                sel_arr = np.flatnonzero(pos_mask)
                rate_arr = rate_pos[sel_arr]
                fine = np.isfinite(rate_arr)
                if not fine.all():  # the first sending flow (position order), bad rate
                    j = int(sel_arr[np.flatnonzero(~fine)[0]])
                    raise SimulationError(f"rate_bps: flow {act_flows[j].flow_id} got rate "
                                          f"{rate_pos[j]}")
                n_sel = sel_arr.shape[0]
                gsel = act_idx[sel_arr]
                # per position, the rate it sends at (0: waiting)
                w = rate_pos.copy() if n_sel == m else np.where(pos_mask, rate_pos, 0.0)
                ch = np.flatnonzero(w != rate_prev)
                if ch.size:
                    load_inc += _link_load(glob_P, glob_len, act_idx[ch],
                                           w[ch] - rate_prev[ch], n_links)
                sent_g = sent[gsel]  # bytes sent before this interval (one gather)
                remaining = np.maximum(size[gsel] - sent_g, 0.0)
                ttf = remaining * BITS / rate_arr
                ttf_min = float(ttf.min()) if n_sel else math.inf
            if reads:
                if sparse:
                    rate_clean = np.zeros(m)
                    rate_clean[sel_arr] = rate_arr
                else:
                    rate_clean = np.where(pos_mask, rate_pos, 0.0)
                deque(map(setattr, act_flows, repeat("rate_bps"), rate_clean.tolist()), 0)
                deque(map(setattr, act_flows, repeat("path"), path_pos), 0)
            if sparse:
                prev_g, prev_rate = gsel, rate_arr
            else:
                rate_prev = w
            if n_sel:
                util = load_inc / cap
                worst = int(np.argmax(util))
                exact_in -= 1
                if exact_in <= 0 or load_inc[worst] > cap_limit[worst]:
                    exact_in = EXACT_CHECK_EVERY
                    # every position's links, waiting flows weighted 0: the senders'
                    # loads bit for bit
                    load_inc = (_link_load(glob_P, glob_len, gsel, rate_arr, n_links)
                                if sparse else
                                _link_load(glob_P, glob_len, act_idx, w, n_links))
                    util = load_inc / cap
                    worst = int(np.argmax(util))
                load = load_inc
                res.max_link_utilisation = max(res.max_link_utilisation, float(util[worst]))
                if load[worst] > cap_limit[worst]:
                    u, v = topo.links[worst]
                    raise SimulationError(
                        f"capacity: link {u}->{v} carries {load[worst]:.6g} bit/s over its "
                        f"capacity {cap[worst]:.6g} bit/s at t={now:.9g} s "
                        f"(scheduler {self.scheduler.name})")
            t_next = now + (float(ttf_min) if n_sel else math.inf)
            if by_coflow and n_sel:
                # next coflow completion: the coflow whose last active flow finishes
                # first (flows without bandwidth never finish: inf)
                tf_all = np.full(m, math.inf)
                tf_all[sel_arr] = ttf
                cofs = cof_of[act_idx]
                starts = np.flatnonzero(np.r_[True, cofs[1:] != cofs[:-1]])
                t_cof = float(np.maximum.reduceat(tf_all, starts).min())
                if math.isfinite(t_cof):
                    t_next = now + t_cof
            if ai < len(arrivals):
                t_next = min(t_next, arrivals[ai].arrival_s)
            wake = self.scheduler.next_wakeup(now)
            if wake is not None and wake > now:
                t_next = min(t_next, wake)
            if not math.isfinite(t_next):
                raise SimulationError(f"deadlock: scheduler {self.scheduler.name} left {m} "
                                      f"flows without bandwidth at t={now:.9g} s and no event "
                                      f"is pending")
            dt = t_next - now
            if link_ctr is not None and n_sel:
                link_ctr += load_inc * (dt / BITS)
            if self.event_log is not None:
                rem_all = np.maximum(size[act_idx] - sent[act_idx], 0.0)
                fin_all = np.full(m, math.inf)
                if n_sel:
                    # flows that finish in the interval end at min(own time, t_next);
                    # the others stay inf (np.minimum first: inf must survive it)
                    ends = np.minimum(now + ttf, t_next)
                    ends[ttf > dt * (1 + 1e-9) + 1e-12] = math.inf
                    fin_all[sel_arr] = ends
                self.event_log.append(EventRecord(
                    now, t_next, [f.flow_id for f in act_flows],
                    list(path_pos),
                    np.where(pos_mask, rate_pos, 0.0), rem_all, fin_all))
            touched = ()
            fin_by: Dict[str, list] = {}
            if n_sel:
                if _kernels.ENABLED:
                    # counters advanced and written to sent[gsel] in one pass
                    new_sent, fin = _ksim.sim_advance_kernel(
                        gsel, rate_arr, sent_g, ttf, size, sent, dt,
                        dt * (1 + 1e-9) + 1e-12)
                else:
                    finished = ttf <= dt * (1 + 1e-9) + 1e-12
                    new_sent = sent_g + rate_arr * dt / BITS
                    fin = np.flatnonzero(finished)
                    if fin.size:
                        new_sent[fin] = size[gsel[fin]]
                if reads_coflow:
                    if _kernels.ENABLED:
                        _ksim.coflow_sent_kernel(cof_of, gsel, new_sent, sent_g, cof_sent)
                    else:
                        cof_sent += np.bincount(cof_of[gsel], weights=new_sent - sent_g,
                                                minlength=cof_sent.shape[0])
                if not _kernels.ENABLED:
                    sent[gsel] = new_sent
                if reads_bytes:
                    senders = (map(act_flows.__getitem__, sel_arr.tolist()) if sparse
                               else compress(act_flows, pos_mask.tolist()))
                    deque(map(setattr, senders, repeat("bytes_sent"), new_sent.tolist()), 0)
                elif fin.size:
                    for j, b in zip(sel_arr[fin].tolist(), new_sent[fin].tolist()):
                        act_flows[j].bytes_sent = b
                if fin.size:
                    fin_pos = sel_arr[fin]
                    if _kernels.ENABLED and fin_pos.shape[0] <= 32:
                        keep = None  # not needed: one-pass drops and in-place deletes
                    else:
                        keep = np.ones(m, dtype=bool)
                        keep[fin_pos] = False
                    if by_coflow:
                        # between decisions flows finish at their own times
                        fin_t = np.minimum(now + ttf[fin], t_next).tolist()
                    else:
                        fin_t = repeat(t_next)
                    for j, tf in zip(fin_pos.tolist(), fin_t):
                        f = act_flows[j]
                        f.finish_s = tf
                        fin_by.setdefault(f.coflow_id, []).append(f)
                    touched = fin_by
                    if fin_hook is not None:
                        fin_hook([act_flows[j] for j in fin_pos.tolist()])
                    if sparse:
                        gfin = gsel[fin]
                        rfin = rate_arr[fin]
                        alive8[gfin] = 0
                        np.subtract.at(bcnt, gfin >> 6, 1)
                        # the senders that go on (global indices do not move)
                        alive = np.ones(n_sel, dtype=bool)
                        alive[fin] = False
                        prev_g = gsel[alive]
                        prev_rate = rate_arr[alive]
                    else:
                        gfin = act_idx[fin_pos]
                        rfin = rate_prev[fin_pos]
                    posmap[gfin] = -1
                    if sparse:
                        pass  # no per-position arrays
                    elif keep is None:  # compacted in place (nothing else holds them)
                        act_idx = act_idx[:_ksim.drop_positions_kernel(act_idx, fin_pos)]
                        rate_prev = rate_prev[:_ksim.drop_positions_kernel(rate_prev,
                                                                            fin_pos)]
                    else:
                        act_idx = act_idx[keep]
                        rate_prev = rate_prev[keep]
                    if fin_pos.shape[0] <= 32:
                        # a few finishes: deleting in place (a C memmove each) beats
                        # rebuilding the lists from a mask
                        for j in fin_pos[::-1].tolist():
                            del act_flows[j]
                            if not sticky:
                                del cur_paths[j]
                    else:
                        kl = keep.tolist()
                        act_flows = list(compress(act_flows, kl))
                        if not sticky:
                            cur_paths = list(compress(cur_paths, kl))
                    # the finished flows' rates leave their links
                    load_inc -= _link_load(glob_P, glob_len, gfin, rfin, n_links)
                    act_dirty = True
            now = t_next
            if reads_coflow:
                # a coflow's serial is cof_of of any of its flows
                ser = cof_of[[c.flows[0]._sim_idx for c in states]]
                for c, v in zip(states, cof_sent[ser].tolist()):
                    c._sent = v
            if not touched:
                continue
            for c in states:
                fl = touched.get(c.coflow_id)
                if fl is None:
                    continue
                c._drop_finished(fl)
                if not c.active_flows():
                    c.finish_s = max(f.finish_s for f in c.flows)
                    del active[c.coflow_id]
                    cevent = True
                    res.coflows.append(CoflowRecord(c.coflow_id, c.arrival_s, c.finish_s,
                                                    c.finish_s - c.arrival_s, c.width,
                                                    c.spec.total_bytes, c.weight))
                    res.bytes_delivered += sum(f.bytes_sent for f in c.flows)
                    if self.record_flows:
                        for f in c.flows:
                            res.flows.append(FlowRecord(f.flow_id, f.coflow_id, f.src, f.dst,
                                                        f.spec.size_bytes, f.finish_s,
                                                        f.finish_s - c.arrival_s))
                    if self.progress:
                        self.progress(len(res.coflows), total, now)
        if reads_vector:
            self.scheduler.bind_counters(None)
        res.wall_s = time.perf_counter() - t_wall
        return res


def simulate(topology: Topology, coflows: Sequence[CoflowSpec], scheduler: Scheduler,
             **kw) -> SimResult:
    """Convenience wrapper: ``Simulator(topology, coflows, scheduler, **kw).run()``."""
    return Simulator(topology, coflows, scheduler, **kw).run()
