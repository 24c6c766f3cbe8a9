"""The decision loop of the Ryu app: decisions off the event loop, and what waits
for them (a mixin of :class:`~.app.RapierController`; no Ryu import).

The decision worker (:mod:`.worker`) calls :meth:`DecisionLoopMixin._decide_batch`,
which runs one decision in the core's three steps (:mod:`.decisions`): the snapshot
and the rule changes under the app's lock, the scheduler call in between *without*
it, in a native thread (``offload``: ``eventlet.tpool.execute`` under
``ryu-manager``), so that the event loop keeps serving ``/health``, reads, POSTs and
DELETEs while the scheduler works.  Two things must not change under the scheduler's
feet, and wait for the decision's end behind the *decision gate* (a lock held by
the worker from snapshot to rules):

* progress: flow-stats replies are queued and applied in order by whoever holds the
  gate next (the worker right after its decision, or the reply's own handler when
  no decision runs); flow-done reports wait for the gate; the poller skips the idle
  rule and the site broker's round while a decision runs (next round);
* the fabric: discovery updates and link changes wait for the gate.

Everything else that would call the scheduler (a cancel, a completion, a link change)
only marks a decision due (:attr:`~.decisions.DecisionMixin.worker_decides`) and
wakes the worker: arrivals, completions and cancels that come during a decision are
batched into the next one, which comes at once.

Uses the app's ``core``, ``worker``, ``_lock``, ``_core_call`` and ``now``.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, Optional


class DecisionLoopMixin:
    """Decisions off the event loop (see the module docstring)."""

    def _init_loop(self, offload: Optional[Callable[..., Any]] = None) -> None:
        """Set up the decision gate and the queue of late flow-stats replies.

        Args:
            offload: ``offload(fn, *args)`` runs ``fn(*args)`` off the event loop and
                returns its result (``eventlet.tpool.execute``); used only while the
                worker runs (None, or the worker not started: called in place).
        """
        #: held from a decision's snapshot to its rules (module docstring)
        self._gate = threading.Lock()
        self._late_stats: deque = deque()
        self._offload = offload

    def _start_loop(self) -> None:
        """The worker runs: every decision is its (the core defers the others)."""
        self.core.worker_decides = True
        self.core.on_decision_due = self.worker.wake

    def _decide_batch(self, ids) -> bool:
        """One decision (the worker's callback), for the queued coflows ``ids`` and
        whatever else became due; returns True when another decision is due at once
        (a decision cut by its budget, events deferred during this one)."""
        with self._gate:
            with self._lock:
                job = self.core.begin_decision(self.now()) if self.core.wants_decision() \
                    else None
            if job is not None:
                try:
                    if self._offload is not None and self.worker.running:
                        self._offload(self.core.run_decision, job)
                    else:
                        self.core.run_decision(job)
                finally:
                    self._core_call(lambda now: self.core.end_decision(job, now))
            self._apply_late_stats()
        return self.core.wants_decision()

    def _stats_arrived(self, dpid: int, entries) -> None:
        """A complete flow-stats reply of ``dpid``: applied now, or after the
        decision in progress (in arrival order)."""
        self._late_stats.append((dpid, entries))
        if self._gate.acquire(blocking=False):
            try:
                self._apply_late_stats()
            finally:
                self._gate.release()

    def _apply_late_stats(self) -> None:
        """Apply the queued flow-stats replies (the gate held)."""
        while self._late_stats:
            dpid, entries = self._late_stats.popleft()
            self._core_call(lambda now: self.core.apply_flow_stats(dpid, entries, now))

    def _gated(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` once no decision runs (progress and fabric changes)."""
        with self._gate:
            return fn()


__all__ = ["DecisionLoopMixin"]
