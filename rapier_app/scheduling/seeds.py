"""The seed papers' schedulers beside RAPIER: Aalo, Philae, Sincronia, OPTAS, FIFO.

Registered names (selectable in the simulator and in the controller configuration):

* ``aalo`` -- D-CLAS, Aalo (Chowdhury and Stoica, SIGCOMM 2015), Section 4.4 and
  Pseudocode 1.  Non-clairvoyant.
* ``philae`` -- pilot-flow sampling, Philae (Jajoo, Hu, Lin; seed 001), Sections 2-3.
  Non-clairvoyant.
* ``sincronia`` -- BSSI ordering (Algorithm 1), order-preserving greedy rates
  (Algorithm 2), the online epoch framework (Section 4.2) and prioritized work
  conservation (Section 4.4), Sincronia (Agarwal et al., SIGCOMM 2018).  Clairvoyant.
* ``sincronia-immediate`` -- the same with BSSI recomputed at every arrival and
  departure (the "immediate recomputation" baseline of Sincronia Section 5.2).
* ``optas`` -- tiny-task detection and FIFO priority, OPTAS (seed 002), Sections
  III-IV.  Non-clairvoyant.
* ``fifo`` -- coflows served in arrival order (Orchestra / Baraat's FIFO, as the Aalo
  paper's Table 1 describes it).  Non-clairvoyant.

Per-flow fair sharing (``fair``) lives in :mod:`classic`.

Units: bytes for sizes and counters, bit/s for rates and capacities, seconds for
times.  Every scheduler routes by sticky ECMP (a flow keeps the path
:meth:`Scheduler.ecmp_path` hashes it to), as the seed papers assume a big switch or
ECMP fabric, and returns a rate for every active flow: the controller enforces rates,
not priorities, so priority disciplines are turned into rates by the allocation
passes below.  The readings made where the papers are silent are stated in each
class docstring and collected in ``docs/seed-schedulers.md``.

Information model: the non-clairvoyant classes set ``clairvoyant = False``; they read
only endpoints, ``bytes_sent``, completions and (after completion) sizes.  The
:class:`~rapier_app.core.model.FlowState` guard raises ``InformationError`` if they
ask for anything else.
"""

from __future__ import annotations

import math
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ..core.model import CoflowState, FlowState, Schedule
from .base import Scheduler, SchedulerError, _dedup, register

_FINISH = attrgetter("finish_s")
_SENT = attrgetter("bytes_sent")
_IDX = attrgetter("_sim_idx")


# Row reductions over a padded link matrix P (flows x path width), one column at a
# time: numpy's axis=1 reductions over rows this narrow (2-6 links) are 5-20x slower
# than a short loop of 1-D gathers.  Same values as ``vals[P].min(axis=1)`` etc.
def _row_all(flag: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row of ``P``: True when ``flag`` holds on every link (bool array)."""
    if P.shape[1] == 0:
        return np.ones(P.shape[0], dtype=bool)
    out = flag[P[:, 0]]
    for k in range(1, P.shape[1]):
        out &= flag[P[:, k]]
    return out


def _row_any(flag: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row of ``P``: True when ``flag`` holds on some link (bool array)."""
    if P.shape[1] == 0:
        return np.zeros(P.shape[0], dtype=bool)
    out = flag[P[:, 0]]
    for k in range(1, P.shape[1]):
        out |= flag[P[:, k]]
    return out


def _row_min(vals: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row of ``P``: the smallest ``vals`` over its links."""
    out = vals[P[:, 0]]
    for k in range(1, P.shape[1]):
        np.minimum(out, vals[P[:, k]], out=out)
    return out


def _row_max(vals: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row of ``P``: the largest ``vals`` over its links."""
    out = vals[P[:, 0]]
    for k in range(1, P.shape[1]):
        np.maximum(out, vals[P[:, k]], out=out)
    return out

BITS = 8.0
MIB = float(1 << 20)
#: Relative tolerance below which a link's residual capacity counts as zero.
REL_TOL = 1e-9
#: Relative tolerance for "a counter has reached a threshold".
CROSS_TOL = 1e-9


# ---------------------------------------------------------------------------------
# vectorised allocation primitives (padded link matrices)
# ---------------------------------------------------------------------------------
def waterfill(P: np.ndarray, residual: np.ndarray, tol: np.ndarray,
              index: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> np.ndarray:
    """Max-min fair rates for the flows whose link rows are ``P``, in place.

    Args:
        P: int matrix (flows x width); row i lists the link indices of flow i's path,
            padded with the dummy index ``len(residual) - 1`` whose residual is ``inf``.
        residual: per link (plus the dummy) the capacity still free, in bit/s.  It is
            reduced in place by the rates given.
        tol: per link, the residual (bit/s) at or below which the link is saturated.
        index: optional ``link_index(P, len(residual))`` of this very ``P``, when the
            caller caches it.

    Returns:
        Rates in bit/s (one per row).  Flows crossing an already saturated link get 0;
        every other flow ends with a saturated link on its path (progressive filling,
        Bertsekas and Gallager, Data Networks, Section 6.5.2).

    Raises:
        SchedulerError: a flow crosses no link.

    Small inputs run the plain loop; from ``WATERFILL_INCREMENTAL`` rows on, the link
    counts are kept incrementally (a link's count changes only when one of its flows
    freezes), so a wide coflow costs O(entries + iterations x links) instead of
    O(entries x iterations).  Both do the same floating-point operations in the same
    order, so their rates and residuals are bit for bit equal.
    """
    n = P.shape[0]
    if n >= WATERFILL_INCREMENTAL:
        return _waterfill_incremental(P, residual, tol, index)
    return _waterfill_plain(P, residual, tol)


def link_index(P: np.ndarray, nl: int) -> Tuple[np.ndarray, np.ndarray]:
    """The entries of ``P`` (flows x width, link ids below ``nl``) grouped by link:
    ``(by_link, lptr)`` with link l's entries ``by_link[lptr[l]:lptr[l + 1]]`` (flat
    positions; the flow is position // width), in flow order."""
    flat = P.ravel()
    # a stable sort on 16-bit keys is a radix sort: several times faster
    by_link = np.argsort(flat.astype(np.int16) if nl < 32767 else flat, kind="stable")
    lptr = np.zeros(nl + 1, dtype=np.int64)
    np.cumsum(np.bincount(flat, minlength=nl), out=lptr[1:])
    return by_link, lptr


#: Row count from which :func:`waterfill` keeps its link counts incrementally.
WATERFILL_INCREMENTAL = 48


def _waterfill_plain(P: np.ndarray, residual: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """:func:`waterfill` recounting every active flow's links per iteration."""
    n = P.shape[0]
    rate = np.zeros(n)
    if n == 0:
        return rate
    act = _row_all(residual > tol, P)
    nl = residual.shape[0]
    while act.any():
        cnt = np.bincount(P[act].ravel(), minlength=nl).astype(float)
        cnt[-1] = 0.0
        used = cnt > 0
        if not used.any():  # only the dummy: a zero-hop path cannot occur here
            raise SchedulerError("waterfill: a flow crosses no link")
        inc = float((residual[used] / cnt[used]).min())
        inc = max(inc, 0.0)
        rate[act] += inc
        residual[:-1] -= inc * cnt[:-1]
        np.maximum(residual, 0.0, out=residual)
        sat = residual <= tol
        act &= ~_row_any(sat, P)
    return rate


def _waterfill_incremental(P: np.ndarray, residual: np.ndarray, tol: np.ndarray,
                           index: Optional[Tuple[np.ndarray, np.ndarray]] = None
                           ) -> np.ndarray:
    """:func:`waterfill` with incremental link counts (same operations, same order:
    an active flow's rate is the running sum of the increments, kept as ``level``)."""
    n, W = P.shape
    rate = np.zeros(n)
    if n == 0:
        return rate
    act = _row_all(residual > tol, P)
    n_act = int(np.count_nonzero(act))
    if not n_act:
        return rate
    nl = residual.shape[0]
    cnt = np.bincount(P[act].ravel(), minlength=nl).astype(float)
    cnt[-1] = 0.0
    # entries sorted by link: the flows of link l are by_link[lptr[l]:lptr[l+1]] // W
    by_link, lptr = index if index is not None else link_index(P, nl)
    slot = np.empty(n, dtype=np.int64)  # scratch for _dedup
    was_sat = residual <= tol
    level = 0.0
    while n_act:
        used = cnt > 0
        if not used.any():
            raise SchedulerError("waterfill: a flow crosses no link")
        inc = float((residual[used] / cnt[used]).min())
        inc = max(inc, 0.0)
        level += inc
        residual[:-1] -= inc * cnt[:-1]
        np.maximum(residual, 0.0, out=residual)
        sat = residual <= tol
        new_sat = np.flatnonzero(sat & ~was_sat).tolist()
        was_sat = sat
        if not new_sat:
            continue
        ents = (by_link[lptr[new_sat[0]]:lptr[new_sat[0] + 1]] if len(new_sat) == 1 else
                np.concatenate([by_link[lptr[l]:lptr[l + 1]] for l in new_sat]))
        rows = ents // W
        newly = _dedup(rows[act[rows]], slot)
        if not newly.size:
            continue
        rate[newly] = level
        act[newly] = False
        n_act -= newly.shape[0]
        cnt -= np.bincount(P[newly].ravel(), minlength=nl)
        cnt[-1] = 0.0
    return rate


def greedy_rates(P: np.ndarray, residual: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Order-preserving greedy allocation: row by row, each flow takes all the
    residual capacity left on its path (bit/s); ``residual`` is reduced in place.

    This is Sincronia Algorithm 2 ("allocate entire BW to the flow if its ingress
    and egress ports are free") generalised to paths and to partly used links: a flow
    whose path has free capacity takes the minimum residual along it, so on a big
    switch with uniform ports it gets the full port rate exactly when both its ports
    are free.  Each allocation saturates a link, so the loop runs at most
    ``#links`` times over vectorised scans.
    """
    n = P.shape[0]
    rate = np.zeros(n)
    start = 0
    while start < n:
        m = _row_min(residual, P[start:])
        t = _row_max(tol, P[start:])
        pos = np.flatnonzero(m > t)
        if pos.size == 0:
            break
        i = start + int(pos[0])
        r = float(m[pos[0]])
        rate[i] = r
        row = P[i]
        residual[row[row < residual.shape[0] - 1]] -= r
        np.maximum(residual, 0.0, out=residual)
        start = i + 1
    return rate


class _Group:
    """The active flows of one coflow (in flow order) with their sticky paths and
    padded link rows ``P`` (flows x path width, padded with the dummy link ``L``);
    ``idx`` holds the flows' simulator indices (``FlowState._sim_idx``) and
    ``done_max`` the largest byte count of the coflow's finished flows."""

    __slots__ = ("n", "flows", "paths", "P", "L", "idx", "done_max", "_ports", "sizes",
                 "_index")

    def __init__(self, flows: List[FlowState], paths: List[tuple], P: np.ndarray, L: int,
                 idx: np.ndarray, done_max: float):
        self.n = len(flows)
        self.flows = flows
        self.paths = paths
        self.P = P
        self.L = L
        self.idx = idx
        self.done_max = done_max
        #: flow sizes in bytes, filled by clairvoyant schedulers only (Sincronia)
        self.sizes: Optional[np.ndarray] = None
        self._index: Optional[Tuple[np.ndarray, np.ndarray]] = None
        self._ports: Optional[Tuple[np.ndarray, np.ndarray]] = None

    @property
    def ports(self) -> Tuple[np.ndarray, np.ndarray]:
        """Per flow, (first link, last link) of its path: the access "ports"."""
        if self._ports is None:
            P, n = self.P, self.n
            if n:
                last = (P < self.L).sum(axis=1) - 1
                self._ports = (P[:, 0].copy(), P[np.arange(n), last])
            else:
                self._ports = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        return self._ports

    def link_index(self, nl: int) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """Cached :func:`link_index` of ``P`` for wide groups (None for narrow ones,
        which :func:`waterfill` serves with its plain loop)."""
        if self.n < WATERFILL_INCREMENTAL:
            return None
        if self._index is None:
            self._index = link_index(self.P, nl)
        return self._index


class _SeedScheduler(Scheduler):
    """Shared machinery: sticky ECMP routes, cached per-coflow link matrices, the
    allocation passes (strict, weighted multi-queue) and the Schedule output.

    Subclasses implement :meth:`plan`, which returns per-coflow flow rates.
    """

    #: the schemes read bytes sent (queue demotion, size estimates, remaining
    #: bytes), never a flow's current rate or path: they keep their own routes
    reads_progress = "bytes"
    #: a flow's path is chosen once (sticky ECMP) and emitted as the same object
    sticky_paths = True

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None):
        super().__init__(topology, seed, max_paths)
        cap = np.asarray(topology.capacity, dtype=float)
        self._L = cap.shape[0]
        self._cap = np.concatenate([cap, [np.inf]])
        self._tol = np.concatenate([REL_TOL * np.maximum(cap, 1.0), [0.0]])
        self._width = self._path_width(topology)
        self._routes: Dict[str, tuple] = {}
        self._rows: Dict[str, np.ndarray] = {}
        self._routed: Dict[str, List[str]] = {}  # coflow_id -> flow ids routed
        self._groups: Dict[str, _Group] = {}
        self._last_rates: Dict[str, float] = {}  # coflow_id -> total bit/s last given

    @staticmethod
    def _path_width(topology: Topology) -> int:
        import networkx as nx

        g = topology.graph.to_undirected()
        try:
            d = nx.diameter(g) if nx.is_connected(g) else len(g)
        except nx.NetworkXError:
            d = len(g)
        return max(2, int(d))

    # -- routes and rows --------------------------------------------------------
    def route(self, flow: FlowState) -> tuple:
        """The flow's sticky ECMP path (chosen once, kept for the flow's life)."""
        p = self._routes.get(flow.flow_id)
        if p is None:
            p = self.ecmp_path(flow)
            self._routes[flow.flow_id] = p
            self._routed.setdefault(flow.coflow_id, []).append(flow.flow_id)
            links = self.topology.path_links(p)
            if len(links) > self._width:
                raise SchedulerError(f"path: flow {flow.flow_id} path longer than the "
                                     f"topology diameter {self._width}")
            row = np.full(self._width, self._L, dtype=np.int64)
            row[:len(links)] = links
            self._rows[flow.flow_id] = row
        return p

    def group(self, c: CoflowState) -> _Group:
        """Cached :class:`_Group` of ``c``'s active flows.  A coflow's flow set never
        grows, so when flows finish the cached group is filtered, not rebuilt."""
        g = self._groups.get(c.coflow_id)
        act = c.active_flows()
        if g is None:
            paths = [self.route(f) for f in act]
            P = (np.stack([self._rows[f.flow_id] for f in act]) if act
                 else np.zeros((0, self._width), dtype=np.int64))
            done_max = max((f.bytes_sent for f in c.flows if f.finish_s is not None),
                           default=0.0)
            g = _Group(act, paths, P, self._L,
                       np.fromiter(map(_IDX, act), np.int64, len(act)), done_max)
            self._groups[c.coflow_id] = g
        elif g.n != len(act):
            # the active list is the cached flows without the finished ones, in order
            m = np.fromiter(map(is_, map(_FINISH, g.flows), repeat(None)), bool, g.n)
            keep = m.tolist()
            done_max = max(g.done_max, max(map(_SENT, compress(g.flows, (~m).tolist())),
                                           default=0.0))
            sizes = None if g.sizes is None else g.sizes[m]
            g = _Group(act, list(compress(g.paths, keep)), g.P[m], self._L, g.idx[m],
                       done_max)
            g.sizes = sizes
            self._groups[c.coflow_id] = g
        return g

    def flow_sent(self, g: _Group) -> np.ndarray:
        """Bytes sent by each of ``g``'s active flows (float array): read from the
        simulator's array when one is bound (``reads_progress = "vector"``), else
        from the flows' own counters."""
        arr = self._sent_arr
        if arr is not None:
            return arr[g.idx]
        return np.fromiter(map(_SENT, g.flows), float, g.n)

    def _forget(self, live: Sequence[CoflowState]) -> None:
        ids = {c.coflow_id for c in live}
        for cid in [k for k in self._groups if k not in ids]:
            self._groups.pop(cid)
            for fid in self._routed.pop(cid, []):
                self._routes.pop(fid, None)
                self._rows.pop(fid, None)
            self._last_rates.pop(cid, None)

    def fresh_residual(self) -> np.ndarray:  # noqa: D401
        """Full capacities (bit/s) plus the dummy ``inf`` entry."""
        return self._cap.copy()

    # -- allocation passes ------------------------------------------------------
    def strict_pass(self, groups: Sequence[Tuple[_Group, np.ndarray]], residual: np.ndarray,
                    rates: Dict[str, np.ndarray]) -> None:
        """Strict priority in the given order: each coflow's eligible flows get max-min
        fair rates on what earlier coflows left (``mask`` selects eligible flows; ``None``
        selects all of them)."""
        for g, mask in groups:
            if g.n == 0:
                continue
            if mask is not None:  # None selects every flow (no per-call mask checks)
                if not mask.any():
                    continue
                if mask.all():
                    mask = None
            if mask is None:
                r = waterfill(g.P, residual, self._tol, g.link_index(residual.shape[0]))
            else:
                r = waterfill(g.P[mask], residual, self._tol)
            acc = rates[id(g)]
            if mask is None:
                acc += r
            else:
                acc[mask] += r

    def weighted_pass(self, queues: Sequence[Tuple[float, Sequence[Tuple[_Group, np.ndarray]]]],
                      residual: np.ndarray, rates: Dict[str, np.ndarray], rounds: int) -> None:
        """Weighted sharing across queues, strict order inside each queue.

        Reading of Aalo Pseudocode 1 (lines 3-14) on a network of links: in each round,
        on every link the free capacity is split among the queues that have a flow
        able to grow across it, in proportion to the queue weights; inside its share a
        queue serves its coflows in order (FIFO for Aalo), each coflow's flows max-min
        fair.  Capacity a queue cannot use is offered again in the next round to the
        queues that can still grow ("distribute unused share ... max-min among other
        queues", line 14).  ``rounds`` such rounds are run; the caller finishes with a
        :meth:`strict_pass` so that the result is work conserving.
        """
        L = self._L
        tol = self._tol
        for _ in range(rounds):
            W = np.zeros(L + 1)
            present = []
            free = residual > tol
            for w, groups in queues:
                # links on which the queue has a flow that can grow (a mark per link:
                # cheaper than np.unique's sort)
                mark = np.zeros(L + 1, dtype=bool)
                found = False
                for g, mask in groups:
                    if g.n == 0 or (mask is not None and not mask.any()):
                        continue
                    P = g.P if mask is None else g.P[mask]
                    ok = _row_all(free, P)
                    if ok.all():
                        mark[P] = True
                        found = True
                    elif ok.any():
                        mark[P[ok]] = True
                        found = True
                if found:
                    mark[L] = False
                    W[mark] += w
                present.append(found)
            if not any(present):
                return
            used = np.zeros(L + 1)
            base = residual.copy()
            for (w, groups), pres in zip(queues, present):
                if not pres:
                    continue
                share = np.zeros(L + 1)
                m = W[:L] > 0
                share[:L][m] = base[:L][m] * (w / W[:L][m])
                share[L] = np.inf
                start = share.copy()
                self.strict_pass(groups, share, rates)
                used[:L] += start[:L] - share[:L]
            residual[:L] -= used[:L]
            np.maximum(residual, 0.0, out=residual)

    # -- output -------------------------------------------------------------------
    def emit(self, coflows: Sequence[CoflowState], rates: Dict[int, np.ndarray],
             order: List[str], info: Optional[dict] = None) -> Schedule:
        """Build the :class:`Schedule`: every active flow gets its path and a rate.

        Returned in vector form (:meth:`Schedule.from_vectors`), flows in coflow order
        then flow order, so the simulator applies it without per-flow lookups."""
        last = {}
        flows: list = []
        paths: list = []
        rs = []
        for c in coflows:
            g = self.group(c)
            r = rates.get(id(g))
            if r is None:
                r = np.zeros(g.n)
            flows.extend(g.flows)
            paths.extend(g.paths)
            rs.append(r)
            last[c.coflow_id] = float(r.sum())
        self._last_rates = last
        return Schedule.from_vectors(flows, paths, np.concatenate(rs) if rs else np.zeros(0),
                                     order=order, info=info or {}, tuple_paths=True)

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        """Paths (sticky ECMP) and rates (bit/s) for every active flow at ``now`` (s);
        the discipline is the subclass's :meth:`plan`."""
        self._forget(coflows)
        live = [c for c in coflows if c.active_flows()]
        rates = {}
        for c in live:
            g = self.group(c)
            rates[id(g)] = np.zeros(g.n)
        order, info = self.plan(now, live, rates)
        return self.emit(live, rates, order, info)

    def plan(self, now: float, coflows: List[CoflowState],
             rates: Dict[int, np.ndarray]) -> Tuple[List[str], dict]:
        """Fill ``rates[id(group)]`` (bit/s per active flow); return (order, info)."""
        raise NotImplementedError

    @staticmethod
    def all_mask(g: _Group) -> np.ndarray:
        """Boolean mask selecting every active flow of ``g``."""
        return np.ones(g.n, dtype=bool)


# ---------------------------------------------------------------------------------
# FIFO
# ---------------------------------------------------------------------------------
@register("fifo")
class Fifo(_SeedScheduler):
    """Coflows served one after another in arrival order (Orchestra, Baraat).

    Aalo Table 1 characterises Orchestra and Baraat as one FIFO queue whose work
    conservation goes to the "next coflow".  Here: coflows sorted by (arrival time,
    id); the first gets max-min fair rates for its flows on the full capacity, the
    next gets max-min fair rates on what is left, and so on, so later coflows
    back-fill idle ports.  Needs no size: non-clairvoyant.
    """

    clairvoyant = False
    reads_progress = False  # the order needs only arrival times; no byte counters
    #: strict priority by water-filling on what earlier coflows left: every flow
    #: ends on a saturated link (back-filling, Aalo Table 1's "next coflow")
    work_conserving = "path"

    def plan(self, now, coflows, rates):
        order = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id))
        res = self.fresh_residual()
        self.strict_pass([(self.group(c), None) for c in order],
                         res, rates)
        return [c.coflow_id for c in order], {}


# ---------------------------------------------------------------------------------
# Aalo: D-CLAS
# ---------------------------------------------------------------------------------
@register("aalo")
class Aalo(_SeedScheduler):
    """Aalo's Discretized Coflow-Aware Least-Attained Service (D-CLAS).

    Source: Aalo (Chowdhury and Stoica, SIGCOMM 2015), Section 4.2 (multi-level
    queues: new coflows enter Q1; a coflow moves from Q_i to Q_{i+1} when its total
    bytes sent cross Q_i^hi), Section 4.4 (Q_{i+1}^hi = E * Q_i^hi; weighted sharing
    across queues; FIFO inside a queue; max-min among a coflow's flows; Pseudocode 1),
    Section 6.2 (coordination every Delta) and Section 7.1 (defaults Delta = 10 ms,
    E = K = 10, Q1^hi = 10 MB; weight of Q_i = K - i + 1).

    Args:
        K: number of queues (>= 1).
        E: threshold multiplier (> 1).
        q1_hi: first threshold Q1^hi in bytes (default 10 MiB: CoflowSim's MB).
        delta: coordination interval in seconds.  The global view (every coflow's
            total bytes sent, hence its queue) refreshes at the instants k * delta;
            between refreshes a coflow keeps the queue of the last refresh, and a new
            coflow sits in Q1 until the first refresh after its arrival.  ``0`` means
            continuous coordination: a coflow changes queue exactly when its bytes
            sent reach a threshold (the scheduler asks the simulator to wake it then).
        rounds: weighted-sharing rounds before the final strict (work-conserving)
            pass; see :meth:`_SeedScheduler.weighted_pass`.

    Raises:
        SchedulerError: K < 1, E <= 1, q1_hi <= 0, delta < 0 or rounds < 0.

    Readings: queue i (1-based) holds total bytes sent in [Q1^hi E^(i-2), Q1^hi E^(i-1))
    with Q_1^lo = 0 and Q_K^hi = inf; a coflow at exactly a threshold has crossed it.
    "Sorted by CoflowId" (Pseudocode 1 line 4) is FIFO by arrival: ids here do not
    encode arrival, so the order is (arrival time, id).  Weighted fair queuing among
    queues is applied per link (a queue's share on a link counts only if it has a flow
    there), since the paper's big-switch ports are our links.  Only the event-driven
    refresh instants are simulated: a refresh at which no coflow changes queue does
    not change the schedule, so the scheduler wakes only at the first tick k*delta at
    which some coflow will have crossed a threshold at the current rates.
    """

    clairvoyant = False
    #: D-CLAS reads only each coflow's total bytes sent (the coordinator's view)
    reads_progress = "coflow"
    #: the final strict pass water-fills what the weighted rounds left (Pseudocode
    #: 1 line 14: unused share goes to the other queues)
    work_conserving = "path"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 K: int = 10, E: float = 10.0, q1_hi: float = 10 * MIB, delta: float = 0.010,
                 rounds: int = 2):
        super().__init__(topology, seed, max_paths)
        if int(K) < 1:
            raise SchedulerError(f"K: must be >= 1, got {K!r}")
        if not E > 1:
            raise SchedulerError(f"E: must be > 1, got {E!r}")
        if not q1_hi > 0:
            raise SchedulerError(f"q1_hi: must be > 0 bytes, got {q1_hi!r}")
        if not delta >= 0:
            raise SchedulerError(f"delta: must be >= 0 s, got {delta!r}")
        if int(rounds) < 0:
            raise SchedulerError(f"rounds: must be >= 0, got {rounds!r}")
        self.K = int(K)
        self.E = float(E)
        self.q1_hi = float(q1_hi)
        self.delta = float(delta)
        self.rounds = int(rounds)
        #: thresholds Q_i^hi for i = 1..K-1, in bytes
        self.thresholds = self.q1_hi * self.E ** np.arange(self.K - 1)
        self._queue: Dict[str, int] = {}     # coflow_id -> queue index (0-based) of the view
        self._tick = -1                      # index of the last refresh
        self._last_call = None               # time of the previous schedule() call
        self._now = 0.0
        self._sent_now: Dict[str, float] = {}

    def queue_of(self, sent_bytes: float) -> int:
        """0-based queue index for a coflow that has sent ``sent_bytes`` bytes."""
        t = self.thresholds
        return int(np.count_nonzero(sent_bytes >= t * (1 - CROSS_TOL)))

    def weight(self, q: int) -> float:
        """Weight of 0-based queue q: K - i + 1 with i = q + 1 (Aalo Section 7.1)."""
        return float(self.K - q)

    def _refresh(self, now: float, coflows: Sequence[CoflowState]) -> None:
        if self.delta == 0:
            for c in coflows:
                self._queue[c.coflow_id] = self.queue_of(self._sent_now[c.coflow_id])
            return
        k = math.floor(now / self.delta + CROSS_TOL)
        if k <= self._tick:
            return
        t_tick = k * self.delta
        back = max(now - t_tick, 0.0)
        if self._last_call is not None and t_tick < self._last_call:
            back = 0.0  # the tick lies before the last call: no event between (cannot happen)
        for c in coflows:
            sent = self._sent_now[c.coflow_id]
            if c.arrival_s > t_tick + 1e-12:
                continue  # arrived after the tick: stays in Q1 until the next refresh
            at_tick = sent - self._last_rates.get(c.coflow_id, 0.0) * back / BITS
            self._queue[c.coflow_id] = self.queue_of(max(at_tick, 0.0))
        self._tick = k

    def plan(self, now, coflows, rates):
        self._now = now
        self._sent_now = {c.coflow_id: c.bytes_sent for c in coflows}
        for c in coflows:
            self._queue.setdefault(c.coflow_id, 0)
        self._refresh(now, coflows)
        for cid in [k for k in self._queue if k not in self._sent_now]:
            del self._queue[cid]
        self._last_call = now
        byq: List[List[CoflowState]] = [[] for _ in range(self.K)]
        for c in sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id)):
            byq[self._queue[c.coflow_id]].append(c)
        queues = [(self.weight(q), [(self.group(c), None)
                                    for c in byq[q]]) for q in range(self.K) if byq[q]]
        res = self.fresh_residual()
        self.weighted_pass(queues, res, rates, self.rounds)
        self.strict_pass([gm for _, groups in queues for gm in groups], res, rates)
        order = [c.coflow_id for q in byq for c in q]
        return order, {"queues": {c.coflow_id: self._queue[c.coflow_id] + 1 for c in coflows}}

    def next_wakeup(self, now: float) -> Optional[float]:
        """The first instant (s) at which some coflow's queue will change at the
        current rates: its crossing time, or the first tick k*delta after it."""
        best = None
        for cid, q in self._queue.items():
            if q >= self.K - 1:
                continue
            r = self._last_rates.get(cid, 0.0)
            sent = self._sent_now.get(cid)
            if sent is None:
                continue
            thr = self.thresholds[q]
            if self.delta > 0:
                # a coflow that already crossed (or is new) changes at the next tick
                t_cross = now if sent >= thr * (1 - CROSS_TOL) else (
                    now + (thr - sent) * BITS / r if r > 0 else None)
                if t_cross is None:
                    continue
                k = max(math.ceil(t_cross / self.delta - CROSS_TOL), self._tick + 1)
                t = k * self.delta
                if t <= now:
                    t = (math.floor(now / self.delta + CROSS_TOL) + 1) * self.delta
            else:
                if r <= 0:
                    continue
                t = now + max(thr - sent, 0.0) * BITS / r
            if t > now and (best is None or t < best):
                best = t
        return best


# ---------------------------------------------------------------------------------
# Philae
# ---------------------------------------------------------------------------------
@register("philae")
class Philae(Aalo):
    """Philae: sampling-based non-clairvoyant coflow scheduling (seed 001).

    Source: Philae (Jajoo, Hu, Lin), Section 2 ("pre-schedules sampled flows, called
    pilot flows, of each coflow and uses their measured sizes to estimate the coflow
    size.  It then resorts to SJF"), Section 2.1 (pilot flows on the least-busy
    ports; one out of the flows of each sender; fewer than 1% of the flows of wide
    coflows), Section 2.3 / Table 1 (size estimated once, on the completion of all
    pilot flows; reordering on coflow arrival/completion and, for the contention
    policy, on contention changes), abstract ("shortest is determined using the
    learned coflow sizes and coflow contention").

    Algorithm as implemented:

    1. Pilots.  When a coflow first appears, p = min(#distinct senders, #distinct
       receivers) pilot flows are chosen, at most one per sender: senders are taken
       in increasing contention of their uplink (number of other live coflows with an
       active flow on it), and each takes its flow whose receiver downlink has the
       least contention, preferring receivers no other pilot uses; ties by flow order.
       (For an m x r shuffle, min(m, r) <= 1% of m*r once m, r >= 100.)
    2. Piloting coflows' pilot flows are served first, strict priority, FIFO among
       piloting coflows, max-min among a coflow's pilots; their other flows wait.
    3. When all pilots have finished, the mean pilot size s (bytes, now known) is the
       estimate of the coflow's flow size; the coflow's estimated remaining size is
       s * (number of unfinished flows).
    4. Estimated coflows are ordered shortest-first by ``metric``: ``"size"`` (the
       estimated remaining bytes) or ``"contention"`` (estimated remaining bytes
       times the number of live coflows, itself included, that share an access
       link with it).  Default: ``"contention"``, the abstract's policy.
    5. Starvation freedom (the mechanism's text is lost in the seed): the estimated
       coflows are grouped in K exponentially spaced classes of the metric (Q1hi, E as
       Aalo's) served with weighted sharing (class weight ``weight_base ** (K-i)``,
       i.e. the public simulator's time-split factor 10), shortest-first within a
       class; every class gets a non-zero share, so no coflow starves.

    Args:
        metric: ``"contention"`` or ``"size"``.
        K, E, q1_hi: classes of the metric as in :class:`Aalo` (bytes).
        weight_base: ratio of consecutive class weights (> 1).
        rounds: weighted rounds before the final strict pass.

    Raises:
        SchedulerError: unknown metric or bad numbers.
    """

    clairvoyant = False
    #: pilots, estimates and contention need completions and endpoints only: no
    #: byte counters of unfinished flows
    reads_progress = False
    #: not work conserving: a piloting coflow's other flows wait for its pilots
    #: even on idle links (Section 2, step 2 of the class docstring)
    work_conserving = None

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 metric: str = "contention", K: int = 10, E: float = 10.0,
                 q1_hi: float = 10 * MIB, weight_base: float = 10.0, rounds: int = 2):
        super().__init__(topology, seed, max_paths, K=K, E=E, q1_hi=q1_hi, delta=0.0,
                         rounds=rounds)
        if metric not in ("contention", "size"):
            raise SchedulerError(f"metric: must be 'contention' or 'size', got {metric!r}")
        if not weight_base > 1:
            raise SchedulerError(f"weight_base: must be > 1, got {weight_base!r}")
        self.metric = metric
        self.weight_base = float(weight_base)
        self._pilots: Dict[str, set] = {}       # coflow_id -> pilot flow ids
        self._estimate: Dict[str, float] = {}   # coflow_id -> mean flow size (bytes)

    def weight(self, q: int) -> float:
        """Weight of 0-based class q: ``weight_base ** (K - 1 - q)``."""
        return float(self.weight_base ** (self.K - 1 - q))

    def next_wakeup(self, now: float) -> Optional[float]:
        """None: Philae is event triggered (Table 1), it needs no periodic call."""
        return None  # Philae is event triggered (Table 1): no periodic work

    @staticmethod
    def _ports(g: _Group, i: int) -> Tuple[int, int]:
        return int(g.ports[0][i]), int(g.ports[1][i])

    def choose_pilots(self, c: CoflowState, live: Sequence[CoflowState]) -> set:
        """Pick ``c``'s pilot flow ids (step 1 of the class docstring)."""
        g = self.group(c)
        busy: Dict[int, int] = {}
        for o in live:
            if o.coflow_id == c.coflow_id:
                continue
            og = self.group(o)
            for l in np.unique(og.P[og.P < self._L]):
                busy[int(l)] = busy.get(int(l), 0) + 1
        by_sender: Dict[str, List[int]] = {}
        for i, f in enumerate(g.flows):
            by_sender.setdefault(f.src, []).append(i)
        receivers = {f.dst for f in g.flows}
        p = max(1, min(len(by_sender), len(receivers)))
        senders = sorted(by_sender, key=lambda s: (busy.get(self._ports(g, by_sender[s][0])[0], 0),
                                                   by_sender[s][0]))
        chosen, used_rx = set(), set()
        for s in senders[:p]:
            cand = sorted(by_sender[s], key=lambda i: (g.flows[i].dst in used_rx,
                                                       busy.get(self._ports(g, i)[1], 0), i))
            i = cand[0]
            chosen.add(g.flows[i].flow_id)
            used_rx.add(g.flows[i].dst)
        return chosen

    def _contention(self, coflows: Sequence[CoflowState]) -> Dict[str, int]:
        """Per coflow, the number of live coflows (itself included) sharing an
        access link (first or last link of a path) with one of its active flows."""
        if not coflows:
            return {}
        M = np.zeros((len(coflows), self._L + 1), dtype=np.float32)
        for i, c in enumerate(coflows):
            g = self.group(c)
            M[i, g.ports[0]] = 1.0
            M[i, g.ports[1]] = 1.0
        share = (M @ M.T) > 0
        return {c.coflow_id: int(n) for c, n in zip(coflows, share.sum(axis=1))}

    def plan(self, now, coflows, rates):
        live_ids = {c.coflow_id for c in coflows}
        for d in (self._pilots, self._estimate):
            for cid in [k for k in d if k not in live_ids]:
                del d[cid]
        arrival = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id))
        for c in arrival:
            if c.coflow_id not in self._pilots and c.coflow_id not in self._estimate:
                self._pilots[c.coflow_id] = self.choose_pilots(c, coflows)
        piloting, estimated = [], []
        for c in arrival:
            pil = self._pilots.get(c.coflow_id)
            if pil is not None:
                done = [f for f in c.flows if f.flow_id in pil and f.done]
                if len(done) == len(pil):
                    self._estimate[c.coflow_id] = float(np.mean([f.size_bytes for f in done]))
                    del self._pilots[c.coflow_id]
                else:
                    piloting.append(c)
                    continue
            estimated.append(c)
        res = self.fresh_residual()
        pilot_groups = []
        for c in piloting:
            g = self.group(c)
            pil = self._pilots[c.coflow_id]
            pilot_groups.append((g, np.array([f.flow_id in pil for f in g.flows])))
        self.strict_pass(pilot_groups, res, rates)
        cont = self._contention(coflows) if self.metric == "contention" else {}
        key = {}
        for c in estimated:
            v = self._estimate[c.coflow_id] * len(c.active_flows())
            key[c.coflow_id] = v * cont.get(c.coflow_id, 1)
        estimated.sort(key=lambda c: (key[c.coflow_id], c.arrival_s, c.coflow_id))
        byq: List[List[CoflowState]] = [[] for _ in range(self.K)]
        for c in estimated:
            byq[self.queue_of(key[c.coflow_id])].append(c)
        queues = [(self.weight(q), [(self.group(c), None)
                                    for c in byq[q]]) for q in range(self.K) if byq[q]]
        self.weighted_pass(queues, res, rates, self.rounds)
        self.strict_pass([gm for _, groups in queues for gm in groups], res, rates)
        order = [c.coflow_id for c in piloting] + [c.coflow_id for q in byq for c in q]
        return order, {"piloting": [c.coflow_id for c in piloting]}


# ---------------------------------------------------------------------------------
# Sincronia
# ---------------------------------------------------------------------------------
def bssi_order(demand: np.ndarray, weights: Sequence[float],
               port_tiebreak: Optional[Sequence[float]] = None,
               coflow_tiebreak: Optional[Sequence[float]] = None,
               rel_eps: float = 1e-12, trace: Optional[list] = None) -> List[int]:
    """Bottleneck-Select-Scale-Iterate (Sincronia Algorithm 1, Section 3.1).

    Args:
        demand: (coflows x ports) matrix d_c^p >= 0: what coflow c must still move
            through port p.  Any unit works as long as it is comparable across ports;
            the scheduler passes seconds (bits / port capacity), which is d_c^p for
            uniform ports and the natural reading for non-uniform ones.
        weights: coflow weights w_c >= 0.
        port_tiebreak: per port, a key; among ports whose load ties (within
            ``rel_eps``) for the maximum, the largest key is the bottleneck.  Default:
            the largest port index (the paper's Table 2 breaks ties "in favour of the
            ingress port with the largest index").
        coflow_tiebreak: per coflow, a key; among coflows tying for the minimum
            w_c / d_c^b, the one with the largest key is placed last.  Default: the
            largest index.
        trace: if a list is given, one tuple (k, b, sigma(k), weights after scaling)
            is appended per iteration (k counts n..1), as in the paper's Table 2.

    Returns:
        Coflow indices in order, first to be served first.  For k = n..1: b = the port
        with the most remaining load over unordered coflows; sigma(k) = argmin over
        unordered c with d_c^b > 0 of w_c / d_c^b (placed last); then
        w_c <- w_c - w_sigma(k) * d_c^b / d_sigma(k)^b for the others (clamped at 0).
        Coflows with no load left at all are placed first (nothing to wait for), by
        the tie key.

    Raises:
        ValueError: shapes disagree or a negative demand/weight.
    """
    D = np.asarray(demand, dtype=float)
    n = D.shape[0]
    if n == 0:
        return []
    if D.ndim != 2:
        raise ValueError("demand: must be a 2-D (coflows x ports) matrix")
    w = np.asarray(weights, dtype=float).copy()
    if w.shape != (n,):
        raise ValueError(f"weights: need {n} weights, got shape {w.shape}")
    if (D < 0).any() or (w < 0).any():
        raise ValueError("demand/weights: must be non-negative")
    pk = np.arange(D.shape[1], dtype=float) if port_tiebreak is None else np.asarray(
        port_tiebreak, dtype=float)
    ck = np.arange(n, dtype=float) if coflow_tiebreak is None else np.asarray(
        coflow_tiebreak, dtype=float)
    alive = np.ones(n, dtype=bool)
    order: List[int] = [0] * n
    for k in range(n - 1, -1, -1):
        load = D[alive].sum(axis=0)
        top = load.max()
        if top <= 0:
            # the remaining coflows have no load: serve them first, lowest key first
            rest = sorted(np.flatnonzero(alive), key=lambda i: ck[i])
            order[:k + 1] = [int(i) for i in rest]
            break
        ties = np.flatnonzero(load >= top * (1 - rel_eps))
        b = int(ties[np.argmax(pk[ties])])
        col = D[:, b]
        cand = np.flatnonzero(alive & (col > 0))
        ratio = w[cand] / col[cand]
        rmin = ratio.min()
        tied = cand[ratio <= rmin + abs(rmin) * rel_eps + 1e-300]
        s = int(tied[np.argmax(ck[tied])])
        order[k] = s
        alive[s] = False
        w[alive] -= w[s] * col[alive] / col[s]
        w[s] = 0.0
        np.maximum(w, 0.0, out=w)
        if trace is not None:
            trace.append((k + 1, b, s, w.copy()))
    return order


def orphan_order(octs: Sequence[float], arrivals: Sequence[float], now: float,
                 max_epoch_s: float) -> List[int]:
    """Sincronia Section 4.4: orphan coflows in increasing
    OCT / (now + max_epoch_size - arrival_time) (seconds / seconds), ties by arrival
    then index.  Returns indices into ``octs``."""
    key = [(o / (now + max_epoch_s - a), a, i) for i, (o, a) in enumerate(zip(octs, arrivals))]
    return [i for _, _, i in sorted(key)]


def bssi_lp_select(demand: np.ndarray, weights: Sequence[float], budget: np.ndarray) -> np.ndarray:
    """Sincronia Section 4.2's subset selection (Garg et al.'s framework [14]).

    Solves the LP relaxation of "choose coflows to finish within this epoch":
    maximise sum_c w_c x_c subject to sum_c x_c d_c^p <= budget_p for every port p and
    0 <= x_c <= 1, and returns the boolean mask of coflows with x_c >= 1/2
    ("at least half-assigned").  ``demand`` is (coflows x ports) in seconds and
    ``budget`` the epoch length (s) per port.

    Raises:
        SchedulerError: the LP solver fails.
    """
    from scipy.optimize import linprog

    D = np.asarray(demand, dtype=float)
    n = D.shape[0]
    if n == 0:
        return np.zeros(0, dtype=bool)
    cols = D.sum(axis=0) > 0
    A = D[:, cols].T
    b = np.asarray(budget, dtype=float)[cols]
    res = linprog(-np.asarray(weights, dtype=float), A_ub=A if A.size else None,
                  b_ub=b if A.size else None, bounds=[(0.0, 1.0)] * n, method="highs")
    if res.status != 0:
        raise SchedulerError(f"sincronia: epoch LP failed: {res.message}")
    return res.x >= 0.5 - 1e-9


@register("sincronia")
class Sincronia(_SeedScheduler):
    """Sincronia (Agarwal et al., SIGCOMM 2018): BSSI + greedy order-preserving rates,
    online epochs and prioritized work conservation.

    Source: Algorithm 1 (BSSI, :func:`bssi_order`), Algorithm 2 (greedy rate
    allocation, :func:`greedy_rates`), Section 4.2 (online framework: epochs, the
    smallest 100 ms, each next one twice as long, time horizon reset after 8 epochs;
    at each epoch start, a subset of unfinished coflows is chosen by the LP of
    :func:`bssi_lp_select` with the epoch's transfer budget and ordered by BSSI),
    Section 4.4 (coflows not in the ordered set -- "orphans" -- are served for work
    conservation in increasing OCT / (now + max_epoch - arrival), OCT = max_p
    d_c^p / b_p of the coflow alone).

    Args:
        epoch_s: the smallest epoch (s), default 0.1.
        growth: epoch growth factor, default 2.
        epochs_per_horizon: epochs before the time horizon resets, default 8.
        immediate: recompute BSSI over all live coflows at every call instead of
            epochs (then there are no orphans).
        rates: ``"greedy"`` (Algorithm 2, default) or ``"maxmin"``: coflows in the
            same order, each coflow's flows max-min fair on what earlier coflows left.
            Both are work conserving, preemptive and order preserving, the class for
            which Theorem 1 (Section 3.2) holds "irrespective of the per-flow rate
            allocation"; ``maxmin`` keeps a coflow's flows running together, so a
            flow-level simulation needs far fewer events.

    Raises:
        SchedulerError: non-positive epoch_s, growth < 1, epochs_per_horizon < 1,
            unknown rates.

    Readings: d_c^p is the coflow's remaining bits on link p (its flows' ECMP paths)
    divided by the link capacity, i.e. seconds; on the big switch the links are the
    paper's ingress and egress ports.  The epoch LP considers every live coflow that
    arrived by the epoch start (ordered ones that have not finished included, as the
    framework re-plans each epoch); the ordered list is fixed for the epoch, so a
    selected coflow stays ahead of orphans until it finishes or the next epoch
    starts.  Epoch boundaries continue while the network is idle.  Ordered coflows'
    flows are served in coflow order, flows in flow order (Algorithm 2); orphans
    follow in the OCT metric's order with the same greedy allocation.
    """

    #: remaining bytes come from the simulator's counters (see ``flow_sent``)
    reads_progress = "vector"
    #: Algorithm 2's greedy (each flow takes its path's residual) or max-min, over
    #: ordered coflows then orphans (Section 4.4): every flow ends on a full link
    work_conserving = "path"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 epoch_s: float = 0.1, growth: float = 2.0, epochs_per_horizon: int = 8,
                 immediate: bool = False, rates: str = "greedy"):
        super().__init__(topology, seed, max_paths)
        if rates not in ("greedy", "maxmin"):
            raise SchedulerError(f"rates: must be 'greedy' or 'maxmin', got {rates!r}")
        self.rates = rates
        if not epoch_s > 0:
            raise SchedulerError(f"epoch_s: must be > 0 s, got {epoch_s!r}")
        if not growth >= 1:
            raise SchedulerError(f"growth: must be >= 1, got {growth!r}")
        if int(epochs_per_horizon) < 1:
            raise SchedulerError(f"epochs_per_horizon: must be >= 1, got {epochs_per_horizon!r}")
        self.epoch_s = float(epoch_s)
        self.growth = float(growth)
        self.epochs_per_horizon = int(epochs_per_horizon)
        self.immediate = bool(immediate)
        self.max_epoch_s = self.epoch_s * self.growth ** (self.epochs_per_horizon - 1)
        self._horizon = None      # start time of the current horizon (s)
        self._epoch = 0           # index of the current epoch in the horizon
        self._epoch_start = None
        self._ordered: List[str] = []
        self.epochs_run = 0

    def epoch_length(self, k: int) -> float:
        """Length (s) of epoch k (0-based) of a horizon."""
        return self.epoch_s * self.growth ** k

    def _next_boundary(self) -> float:
        return self._epoch_start + self.epoch_length(self._epoch)

    def demand_matrix(self, coflows: Sequence[CoflowState]) -> np.ndarray:
        """(coflows x links) remaining seconds d_c^l = remaining bits / capacity."""
        L = self._L
        D = np.zeros((len(coflows), L))
        cap = self._cap[:L]
        for i, c in enumerate(coflows):
            g = self.group(c)
            if g.n == 0:
                continue
            if g.sizes is None:
                g.sizes = np.array([f.size_bytes for f in g.flows], dtype=float)
            rem = np.maximum(g.sizes - self.flow_sent(g), 0.0) * BITS
            w = np.repeat(rem, g.P.shape[1])
            idx = g.P.ravel()
            m = idx < L
            D[i] = np.bincount(idx[m], weights=w[m], minlength=L)
        return D / cap

    def order(self, coflows: Sequence[CoflowState]) -> List[CoflowState]:
        """BSSI order of ``coflows`` on their remaining demands (unit tie keys:
        largest link index for ports; later arrival placed last for coflows)."""
        if not coflows:
            return []
        D = self.demand_matrix(coflows)
        rank = {c.coflow_id: r for r, c in enumerate(
            sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id)))}
        idx = bssi_order(D, [c.weight for c in coflows],
                         coflow_tiebreak=[rank[c.coflow_id] for c in coflows])
        return [coflows[i] for i in idx]

    def _epoch_step(self, now: float, coflows: Sequence[CoflowState]) -> None:
        if self._horizon is None:
            self._horizon = now
            self._epoch_start = now
            self._epoch = 0
            self._start_epoch(now, coflows)
            return
        started = False
        while self._next_boundary() <= now + 1e-12:
            self._epoch_start = self._next_boundary()
            self._epoch += 1
            if self._epoch >= self.epochs_per_horizon:
                self._horizon = self._epoch_start
                self._epoch = 0
            started = True
        if started:
            self._start_epoch(self._epoch_start, coflows)

    def _start_epoch(self, t0: float, coflows: Sequence[CoflowState]) -> None:
        cand = [c for c in coflows if c.arrival_s <= t0 + 1e-12]
        self.epochs_run += 1
        if not cand:
            self._ordered = []
            return
        D = self.demand_matrix(cand)
        T = self.epoch_length(self._epoch)
        sel = bssi_lp_select(D, [c.weight for c in cand], np.full(D.shape[1], T))
        chosen = [c for c, s in zip(cand, sel) if s]
        self._ordered = [c.coflow_id for c in self.order(chosen)]

    def plan(self, now, coflows, rates):
        by_id = {c.coflow_id: c for c in coflows}
        if self.immediate:
            ordered = self.order(coflows)
            orphans: List[CoflowState] = []
        else:
            self._epoch_step(now, coflows)
            ordered = [by_id[cid] for cid in self._ordered if cid in by_id]
            inset = {c.coflow_id for c in ordered}
            rest = [c for c in coflows if c.coflow_id not in inset]
            if rest:
                rest.sort(key=lambda c: (c.arrival_s, c.coflow_id))
                oct_ = self.demand_matrix(rest).max(axis=1)
                idx = orphan_order(oct_, [c.arrival_s for c in rest], now, self.max_epoch_s)
                orphans = [rest[i] for i in idx]
            else:
                orphans = []
        seq = ordered + orphans
        res = self.fresh_residual()
        if seq and self.rates == "maxmin":
            self.strict_pass([(self.group(c), None) for c in seq],
                             res, rates)
        elif seq:
            groups = [self.group(c) for c in seq]
            P = np.concatenate([g.P for g in groups])
            r = greedy_rates(P, res, self._tol)
            o = 0
            for g in groups:
                rates[id(g)] += r[o:o + g.n]
                o += g.n
        return [c.coflow_id for c in seq], {"orphans": [c.coflow_id for c in orphans]}

    def next_wakeup(self, now: float) -> Optional[float]:
        """The next epoch boundary (s); none in the immediate variant."""
        if self.immediate or self._horizon is None:
            return None
        return self._next_boundary()


@register("sincronia-immediate")
class SincroniaImmediate(Sincronia):
    """Sincronia with BSSI recomputed at every coflow arrival and departure (the
    "immediate recomputation" mechanism of Sincronia Section 5.2, Figure 7(c)).
    Same arguments as :class:`Sincronia`; ``immediate`` is forced on."""

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 **kw):
        kw["immediate"] = True
        super().__init__(topology, seed, max_paths, **kw)


@register("sincronia-maxmin")
class SincroniaMaxMin(Sincronia):
    """Sincronia (epochs, BSSI, prioritized work conservation) with order-preserving
    max-min rates instead of Algorithm 2's greedy: coflows in Sincronia's order, each
    coflow's flows max-min fair on what earlier coflows left.  Theorem 1 (Section 3.2)
    covers any work-conserving, preemptive, order-preserving allocation.  Same
    arguments as :class:`Sincronia`; ``rates`` is forced to ``"maxmin"``."""

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 **kw):
        kw["rates"] = "maxmin"
        super().__init__(topology, seed, max_paths, **kw)


# ---------------------------------------------------------------------------------
# OPTAS
# ---------------------------------------------------------------------------------
@register("optas")
class Optas(_SeedScheduler):
    """OPTAS: tiny-task detection and FIFO priority for tiny coflows (seed 002).

    Source: OPTAS Section IV ("OPTAS sets one threshold to filtrate large tasks.  We
    compare the backlogged bytes in sendbuffer plus the transmitted bytes ... if the
    sum ... is larger than the threshold ... the flow is a long flow, the task it
    involved is a large task"; "a tiny task is all flows it involves are smaller than
    1MB, so we set the threshold 1MB"), Section III-C / IV (tiny tasks have priority
    over large ones; the task list is sorted by start time and its head gets bandwidth
    first; "subsequent tasks are not completely blocked"), Section V (large tasks fair
    share below the tiny ones, the "O" configuration of Fig. 9).

    A coflow is tiny until one of its flows has bytes_sent + backlog > ``threshold``;
    then it is large for good.  Tiny coflows are served FIFO by arrival, strict
    priority, each coflow's flows max-min fair, later tiny coflows back-filling;
    large coflows then share what is left per-flow max-min fairly.

    Args:
        threshold: bytes, default 1 MiB (the 1 MB send buffer of Section IV; MB read
            as 2^20 bytes like the Linux buffer size it stands for).

    Raises:
        SchedulerError: threshold <= 0.

    Readings: the backlog is the flow's send-buffer occupancy.  The flow model here
    exposes no backlog to a non-clairvoyant scheduler, so the scheduler uses
    ``flow.backlog_bytes`` when the model provides it and 0 otherwise: a flow is then
    found large once it has *sent* more than the threshold, which the scheduler
    catches exactly by asking to be woken at that instant.
    """

    clairvoyant = False
    #: per-flow bytes sent come from the simulator's counters (see ``flow_sent``)
    reads_progress = "vector"
    #: tiny coflows water-filled in FIFO order, then large ones water-filled on
    #: what is left: every flow ends on a saturated link
    work_conserving = "path"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 threshold: float = MIB):
        super().__init__(topology, seed, max_paths)
        if not threshold > 0:
            raise SchedulerError(f"threshold: must be > 0 bytes, got {threshold!r}")
        self.threshold = float(threshold)
        self._large: set = set()
        # (group, its flows' rates in bit/s) of every tiny coflow, from the last plan
        self._tiny: List[Tuple[_Group, np.ndarray]] = []

    @staticmethod
    def _backlog(flows: Sequence[FlowState]) -> Optional[np.ndarray]:
        """Per flow, the send-buffer backlog in bytes, or None when the flow model
        exposes none (the simulator's does not)."""
        if not flows or not hasattr(flows[0], "backlog_bytes"):
            return None
        return np.array([float(getattr(f, "backlog_bytes", 0.0) or 0.0) for f in flows])

    def is_large(self, c: CoflowState) -> bool:
        """Update and return whether ``c`` has been detected as a large task: one of
        its flows, finished or not, has bytes sent + backlog above the threshold."""
        if c.coflow_id in self._large:
            return True
        thr = self.threshold * (1 + CROSS_TOL)
        g = self.group(c)
        seen = self.flow_sent(g)
        back = self._backlog(g.flows)
        if back is not None:
            seen = seen + back
        if g.done_max > thr or (g.n and float(seen.max()) > thr):
            self._large.add(c.coflow_id)
            return True
        return False

    def plan(self, now, coflows, rates):
        live = {c.coflow_id for c in coflows}
        self._large &= live
        order = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id))
        tiny = [c for c in order if not self.is_large(c)]
        large = [c for c in order if c.coflow_id in self._large]
        res = self.fresh_residual()
        self.strict_pass([(self.group(c), None) for c in tiny], res, rates)
        if large:
            groups = [self.group(c) for c in large]
            P = np.concatenate([g.P for g in groups])
            r = waterfill(P, res, self._tol)
            o = 0
            for g in groups:
                rates[id(g)] += r[o:o + g.n]
                o += g.n
        self._tiny = [(g, rates[id(g)]) for g in map(self.group, tiny)]
        return [c.coflow_id for c in tiny + large], {"tiny": [c.coflow_id for c in tiny]}

    def next_wakeup(self, now: float) -> Optional[float]:
        """When the first flow of a tiny coflow will pass the threshold (s)."""
        best = None
        for g, r in self._tiny:
            pos = r > 0
            if not g.n or not pos.any():
                continue
            seen = self.flow_sent(g)
            back = self._backlog(g.flows)
            if back is not None:
                seen = seen + back
            need = self.threshold - seen[pos]
            t = now + np.maximum(need, 0.0) * BITS / r[pos]
            # wake just after the crossing so that "larger than" holds
            t = t + np.maximum(t * 1e-12, 1e-9)
            t = t[t > now]
            if t.size:
                v = float(t.min())
                if best is None or v < best:
                    best = v
        return best
