"""The decision worker: scheduling and rule pushes out of the REST handler.

``POST /coflows`` validates the body, writes the coflow to the database, records it
``queued`` (:meth:`.registry.RegistryMixin.submit` with ``schedule=False``), puts its
id on a queue and answers 201 at once.  One worker green thread (``hub.spawn`` in the
Ryu app) waits on the queue; when woken it takes every id queued by then (a *batch*)
and runs **one** decision for all of them (:meth:`.core.ControllerCore.decide`: one
scheduler call over every active coflow), then sends the rules and agent pushes.
Submissions that arrive while a decision runs wait for the next one, so a burst of
N POSTs costs far fewer than N scheduler calls.

Decisions wanted for other reasons (a cancel, a completion, a link change while the
worker decides, :mod:`.decisions`) wake the worker with :meth:`DecisionWorker.wake`.
When ``decide`` answers that another decision is due at once (a decision cut by
``decision_budget_s``, events that came during it), the worker runs it at once, with
whatever was queued meanwhile, instead of waiting for the next arrival.

Pure of Ryu: the queue is any object with ``get()`` (blocking) and
``get_nowait()`` raising ``empty_exc`` (``ryu.lib.hub.Queue`` / ``eventlet.queue`` in
the app, :class:`queue.Queue` in tests).
"""

from __future__ import annotations

import time
from typing import Any, Callable, List, Optional, Type


class DecisionWorker:
    """Drains a queue of coflow ids into batched decisions.

    Args:
        queue: the queue (``put``/``get``/``get_nowait``).
        empty_exc: the exception ``get_nowait`` raises on an empty queue.
        decide: ``decide(ids)`` -- run one decision for the batch ``ids`` (list of
            coflow ids, arrival order; empty for a wake-up alone) and carry out its
            actions; a true result asks for another decision at once.  Exceptions
            are caught by :meth:`loop` (logged through ``log``), not by
            :meth:`run_once`.
        clock: ``() -> s`` to time decisions (default :func:`time.perf_counter`).
        log: optional ``logging.Logger``.

    Attributes:
        decisions: number of decisions run.
        submissions: number of ids decided.
        largest_batch: most ids decided in one decision.
        last_decision_s: wall-clock time of the last decision (s).
        failures: decisions that raised.
    """

    def __init__(self, queue, empty_exc: Type[BaseException],
                 decide: Callable[[List[str]], Any], clock: Optional[Callable[[], float]] = None,
                 log=None):
        self.queue = queue
        self.empty_exc = empty_exc
        self.decide = decide
        self.clock = clock or time.perf_counter
        self.log = log
        self.decisions = 0
        self.submissions = 0
        self.largest_batch = 0
        self.last_decision_s = 0.0
        self.failures = 0
        self.running = False

    def put(self, coflow_id: str) -> None:
        """Queue ``coflow_id`` for the next decision."""
        self.queue.put(coflow_id)

    def wake(self) -> None:
        """Ask for a decision without a new coflow (a wake-up counted as none)."""
        self.queue.put(None)

    def backlog(self) -> int:
        """Ids queued and not yet taken by a decision."""
        try:
            return self.queue.qsize()
        except (AttributeError, NotImplementedError):
            return 0

    def drain(self, block: bool) -> List[str]:
        """Every id queued now (waiting for the first one when ``block``)."""
        ids: List[str] = []
        if block:
            ids.append(self.queue.get())
        while True:
            try:
                ids.append(self.queue.get_nowait())
            except self.empty_exc:
                return ids

    def run_once(self, block: bool = True) -> List[str]:
        """Take the queued ids (waiting for one when ``block``) and run one decision
        for them, then at once the follow-ups ``decide`` asks for (each with the ids
        queued meanwhile); returns the ids decided (empty: none was queued)."""
        raw = self.drain(block)
        done: List[str] = []
        while raw:
            ids = [i for i in raw if i is not None]
            t0 = self.clock()
            try:
                again = self.decide(ids)
            finally:
                self.last_decision_s = self.clock() - t0
                self.decisions += 1
                self.submissions += len(ids)
                self.largest_batch = max(self.largest_batch, len(ids))
            done.extend(ids)
            raw = self.drain(False)
            if again and not raw:
                raw = [None]
        return done

    def loop(self, prepare: Optional[Callable[[], Any]] = None) -> None:
        """Run decisions forever (the worker green thread); a failed decision is
        logged and counted, the loop carries on.

        Args:
            prepare: called once first, with :attr:`running` already True (coflows
                submitted meanwhile are queued, not decided in the REST handler):
                the controller loads its kernels and decides the restored coflows
                there; an exception is logged and counted as a failure.
        """
        self.running = True
        if prepare is not None:
            try:
                prepare()
            except Exception:  # noqa: BLE001 -- the worker must survive
                self.failures += 1
                if self.log is not None:
                    self.log.exception("decision worker: start-up step failed")
        while True:
            try:
                self.run_once(block=True)
            except Exception:  # noqa: BLE001 -- the worker must survive
                self.failures += 1
                if self.log is not None:
                    self.log.exception("decision worker: decision failed")

    def stats(self) -> dict:
        """Counters for ``GET /health``."""
        return {"decisions": self.decisions, "submissions": self.submissions,
                "largest_batch": self.largest_batch, "backlog": self.backlog(),
                "last_decision_s": round(self.last_decision_s, 6), "failures": self.failures}
