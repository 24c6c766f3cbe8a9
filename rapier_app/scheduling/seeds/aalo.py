"""Aalo's D-CLAS (Chowdhury and Stoica, SIGCOMM 2015), Section 4.4 and Pseudocode 1:
registered as ``aalo``.  Non-clairvoyant.

Units: bytes for sizes and counters, bit/s for rates, seconds for times.  Shared
machinery: :mod:`.base`; readings where the paper is silent: the class docstring
and ``docs/seed-schedulers.md``.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import numpy as np

from topologies import Topology

from ...core.model import CoflowState
from ..base import SchedulerError
from ..registry import register
from .base import _SeedScheduler
from .passes import BITS, CROSS_TOL, MIB

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
        rounds: ``None`` (default): Pseudocode 1 in full, weighted rounds until the
            fabric is saturated; an int caps the rounds and hands what is left out
            by strict priority (``rounds=2``: two weighted rounds, then strict
            priority).  See :meth:`_SeedScheduler.weighted_pass`.
        decision_interval: seconds; rates are recalculated "periodic (delta)"
            (Philae, Table 1, Aalo's row; Aalo Section 6.2: the coordinator sends its
            schedule every Delta): a flow completion is acted on at the first
            multiple of this interval at or after it, and a flow that finishes in
            between leaves its bandwidth idle until then (the simulator's
            ``decision_interval``, :func:`rapier_app.sim.steps.next_event`).
            Coflow arrivals and queue changes are acted on at once.  ``None``
            (default): ``delta``; ``0``: at every flow completion (2.3 to 3.6 times
            the decision points of 10 ms on the Facebook hour).

    Raises:
        SchedulerError: K < 1, E <= 1, q1_hi <= 0, delta < 0, rounds < 0 (when
            given) or decision_interval < 0.

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
    #: reads no size (bytes sent and completions only)
    unknown_sizes = "unused"
    #: D-CLAS reads only each coflow's total bytes sent (the coordinator's view)
    reads_progress = "coflow"
    #: weighted rounds repeat until no flow can grow (Pseudocode 1 line 2, "while
    #: Fabric is not saturated"; line 14: unused share goes to the other queues),
    #: at each decision point (a finished flow's bandwidth idles until the next
    #: one, at most ``decision_interval`` later)
    work_conserving = "path"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 K: int = 10, E: float = 10.0, q1_hi: float = 10 * MIB, delta: float = 0.010,
                 rounds: Optional[int] = None, decision_interval: Optional[float] = None):
        super().__init__(topology, seed, max_paths)
        if int(K) < 1:
            raise SchedulerError(f"K: must be >= 1, got {K!r}")
        if not E > 1:
            raise SchedulerError(f"E: must be > 1, got {E!r}")
        if not q1_hi > 0:
            raise SchedulerError(f"q1_hi: must be > 0 bytes, got {q1_hi!r}")
        if not delta >= 0:
            raise SchedulerError(f"delta: must be >= 0 s, got {delta!r}")
        if rounds is not None and int(rounds) < 0:
            raise SchedulerError(f"rounds: must be >= 0 or None, got {rounds!r}")
        self.K = int(K)
        self.E = float(E)
        self.q1_hi = float(q1_hi)
        self.delta = float(delta)
        self.rounds = None if rounds is None else int(rounds)
        decision_interval = self.delta if decision_interval is None else float(
            decision_interval)
        if not decision_interval >= 0:
            raise SchedulerError(f"decision_interval: must be >= 0 s, got "
                                 f"{decision_interval!r}")
        #: flow completions are acted on at the next multiple of this (s; 0: at once)
        self.decision_interval = float(decision_interval)
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
