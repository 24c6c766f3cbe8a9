"""Sincronia (Agarwal et al., SIGCOMM 2018): BSSI ordering (Algorithm 1),
order-preserving greedy rates (Algorithm 2), the online epoch framework (Section 4.2)
and prioritized work conservation (Section 4.4).  Clairvoyant.

Registered names: ``sincronia``, ``sincronia-immediate`` (BSSI recomputed at every
arrival and departure, the "immediate recomputation" baseline of Section 5.2) and
``sincronia-maxmin`` (max-min instead of Algorithm 2's greedy rates).

Units: bytes for sizes, bit/s for rates, seconds for times.  Shared machinery:
:mod:`.base`; readings where the paper is silent: the class docstrings and
``docs/seed-schedulers.md``.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from topologies import Topology

from ... import kernels
from ...core.model import CoflowState
from ...kernels import sincronia as ksincronia
from ..base import SchedulerError
from ..registry import register
from .base import _SeedScheduler
from .passes import BITS, greedy_rates

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
        sets: ``"paper"`` (default) or ``"reselect"``; see "Ordered and unordered
            sets" below.

    Raises:
        SchedulerError: non-positive epoch_s, growth < 1, epochs_per_horizon < 1,
            unknown rates or sets.

    Ordered and unordered sets (Section 4.1, ``sets="paper"``, default): "The
    coordinator maintains a list of 'unordered coflows', those that have been
    registered but not yet ordered ... At the start of each epoch, the coordinator
    selects a subset of coflows from the unordered coflow list and uses the offline
    algorithm to order these coflows ... Once computed, the coordinator removes the
    ordered coflows from the unordered coflow list".  So the epoch LP runs over the
    unordered coflows that arrived by the epoch start, BSSI orders the selected ones,
    and they are appended to the ordered list; a coflow once ordered keeps its place
    until it finishes (across epochs and horizon resets).  ``sets="reselect"`` is
    this module's earlier reading: the LP over every live coflow at each
    epoch, the ordered list replaced.

    Readings where the text is silent: d_c^p is the coflow's remaining bits on link
    p (its flows' ECMP paths) divided by the link capacity, i.e. seconds; on the big
    switch the links are the paper's ingress and egress ports.  A new epoch's
    ordered coflows go after those of earlier epochs (the framework of [19] serves
    epochs in sequence; the paper says only that the "delta" of the ordered list is
    sent).  The LP budget is the epoch length on every port, not reduced by the load
    of coflows ordered earlier.  Epoch boundaries continue while the network is
    idle.  Ordered coflows' flows are served in coflow order, flows in flow order
    (Algorithm 2); orphans (the unordered coflows) follow in the OCT metric's order
    with the same greedy allocation.
    """

    #: remaining bytes come from the simulator's counters (see ``flow_sent``)
    reads_progress = "vector"
    #: Algorithm 2's greedy (each flow takes its path's residual) or max-min, over
    #: ordered coflows then orphans (Section 4.4): every flow ends on a full link
    work_conserving = "path"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 epoch_s: float = 0.1, growth: float = 2.0, epochs_per_horizon: int = 8,
                 immediate: bool = False, rates: str = "greedy", sets: str = "paper"):
        super().__init__(topology, seed, max_paths)
        if sets not in ("paper", "reselect"):
            raise SchedulerError(f"sets: must be 'paper' or 'reselect', got {sets!r}")
        self.sets = sets
        if rates not in ("greedy", "maxmin"):
            raise SchedulerError(f"rates: must be 'greedy' or 'maxmin', got {rates!r}")
        self.rates = rates
        #: Algorithm 2 gives about one flow per port a rate at a time: the simulator
        #: then touches only the sending flows (its sparse event step)
        self.few_senders = rates == "greedy"
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
        #: coflow_id -> (its group, its demand row in seconds), see demand_matrix
        self._dcache: dict = {}

    def epoch_length(self, k: int) -> float:
        """Length (s) of epoch k (0-based) of a horizon."""
        return self.epoch_s * self.growth ** k

    def _next_boundary(self) -> float:
        return self._epoch_start + self.epoch_length(self._epoch)

    def demand_matrix(self, coflows: Sequence[CoflowState]) -> np.ndarray:
        """(coflows x links) remaining seconds d_c^l = remaining bits / capacity.

        When the scheduler reads the simulator's bytes-sent array (``_sent_arr``),
        a coflow's row is kept from one call to the next while its active flows are
        the same (the same cached group) and it was given no bandwidth by the last
        decision (:meth:`emit`): then none of its counters moved, so the row is the
        one that would be recomputed, bit for bit.
        """
        groups = [self.group(c) for c in coflows]
        if self._sent_arr is None:  # counters read from the flows: not cached
            return self._demand_rows(groups)
        rows = [e[1] for e in self._cached_rows(coflows, groups)]
        return np.stack(rows) if rows else np.zeros((0, self._L))

    def _cached_rows(self, coflows: Sequence[CoflowState], groups) -> list:
        """Per coflow, its :meth:`demand_matrix` cache entry (group, row, the row's
        largest entry: the coflow's OCT in seconds), computing the missing rows."""
        cache = self._dcache
        out: list = [None] * len(groups)
        miss = []
        for i, (c, g) in enumerate(zip(coflows, groups)):
            e = cache.get(c.coflow_id)
            if e is not None and e[0] is g:
                out[i] = e
            else:
                miss.append(i)
        if miss:
            Dm = self._demand_rows([groups[i] for i in miss])
            octs = Dm.max(axis=1).tolist() if Dm.shape[1] else [0.0] * len(miss)
            for j, i in enumerate(miss):
                out[i] = cache[coflows[i].coflow_id] = (groups[i], Dm[j], octs[j])
        return out

    def octs(self, coflows: Sequence[CoflowState]) -> List[float]:
        """Each coflow's OCT (s): the largest entry of its :meth:`demand_matrix` row,
        bit for bit ``demand_matrix(coflows).max(axis=1)`` (a maximum is exact), kept
        with the cached row instead of stacking the rows at every decision point."""
        groups = [self.group(c) for c in coflows]
        if self._sent_arr is None or not coflows:
            return self.demand_matrix(coflows).max(axis=1).tolist() if coflows else []
        return [e[2] for e in self._cached_rows(coflows, groups)]

    def emit(self, coflows, rates, order, info=None):
        """:meth:`_SeedScheduler.emit`, then forget the demand rows
        (:meth:`demand_matrix`) of every coflow given bandwidth (or gone)."""
        out = super().emit(coflows, rates, order, info)
        last = self._last_rates
        self._dcache = {cid: e for cid, e in self._dcache.items()
                        if last.get(cid, 1.0) == 0.0}
        return out

    def _demand_rows(self, groups) -> np.ndarray:
        """(groups x links) remaining seconds of each :class:`_Group`'s active flows:
        compiled (:meth:`_demand_rows_compiled`) when the kernels are on, else numpy
        (:meth:`_demand_rows_numpy`); the same matrix bit for bit."""
        if kernels.ENABLED:
            return self._demand_rows_compiled(groups)
        return self._demand_rows_numpy(groups)

    def _demand_rows_compiled(self, groups) -> np.ndarray:
        """:meth:`_demand_rows` by :func:`~rapier_app.kernels.sincronia.demand_row_kernel`
        on the simulator's bytes-sent array (one call per group), else by
        :func:`~rapier_app.kernels.sincronia.demand_kernel` on the stacked groups."""
        L = self._L
        D = np.zeros((len(groups), L))
        cap = self._cap[:L]
        for g in groups:
            if g.sizes is None:
                g.sizes = np.array([f.size_bytes for f in g.flows], dtype=float)
        sent_arr = self._sent_arr
        if sent_arr is not None:
            # one compiled call per group on the simulator's array: no stacking
            for i, g in enumerate(groups):
                if g.n:
                    ksincronia.demand_row_kernel(g.P, g.idx, g.sizes, sent_arr, BITS, L,
                                                 D[i])
        elif groups:
            P, gptr, _ = self._stack(groups, None)
            sizes = np.concatenate([g.sizes for g in groups])
            sent = np.concatenate([self.flow_sent(g) for g in groups])
            ksincronia.demand_kernel(P, gptr, np.maximum(sizes - sent, 0.0) * BITS, L, D)
        return D / cap

    def _demand_rows_numpy(self, groups) -> np.ndarray:
        """:meth:`_demand_rows` group by group with ``np.bincount``."""
        L = self._L
        D = np.zeros((len(groups), L))
        cap = self._cap[:L]
        for i, g in enumerate(groups):
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
        """Section 4.1/4.2: at the start of an epoch, select (epoch LP) among the
        unordered coflows that arrived by ``t0``, order the selected ones by BSSI
        and move them to the ordered list (``sets="reselect"``: select among every
        live coflow and replace the ordered list)."""
        self.epochs_run += 1
        if self.sets == "paper":
            live = {c.coflow_id for c in coflows}
            self._ordered = [cid for cid in self._ordered if cid in live]
            done = set(self._ordered)
            cand = [c for c in coflows
                    if c.arrival_s <= t0 + 1e-12 and c.coflow_id not in done]
        else:
            self._ordered = []
            cand = [c for c in coflows if c.arrival_s <= t0 + 1e-12]
        if not cand:
            return
        D = self.demand_matrix(cand)
        T = self.epoch_length(self._epoch)
        sel = bssi_lp_select(D, [c.weight for c in cand], np.full(D.shape[1], T))
        chosen = [c for c, s in zip(cand, sel) if s]
        self._ordered.extend(c.coflow_id for c in self.order(chosen))

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
                oct_ = self.octs(rest)
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
            self.joint_pass([self.group(c) for c in seq], res, rates, greedy_rates)
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
