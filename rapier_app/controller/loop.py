"""The decision loop of the Ryu app: decisions off the event loop, and what waits
for them (a mixin of :class:`~.app.RapierController`; no Ryu import).

The decision worker (:mod:`.worker`) calls :meth:`DecisionLoopMixin._decide_batch`,
which runs one decision in the core's three steps (:mod:`.decisions`): the snapshot
and the rule changes under the app's lock, the scheduler call in between *without*
it, in a native thread (``offload``: ``eventlet.tpool.execute`` on green threads;
on native threads the worker is a thread of its own), so that the event loop keeps serving ``/health``, reads, POSTs and
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

import contextlib
import gc
import logging
import sys
import threading
import time
from collections import deque
from typing import Any, Callable, Optional

from ..warmup import ensure_warm
from .startup import STARTUP

LOG = logging.getLogger("rapier.controller")


class DecisionLoopMixin:
    """Decisions off the event loop (see the module docstring)."""

    #: freeze the collector's view after each decision (:meth:`_settle_gc`); set by
    #: ``RapierController.start`` (``ryu-manager``), off for an app built in-process
    settle_gc = False
    #: a full collection once the frozen objects grew by this factor since the last
    GC_FULL_GROWTH = 4.0
    #: young collections between two full ones (Python's default: 10)
    GC_GEN2_THRESHOLD = 1000
    #: the interpreter's allocated memory blocks after the last full collection
    #: (``sys.getallocatedblocks``: about 0.5 ms with 9 million; ``gc.get_freeze_count``
    #: walks every frozen object, 20-50 ms with 20,000 flows held)
    _gc_full_at = 0

    def _settle_gc(self) -> None:
        """After a decision: collect the young generations, then move every object
        that survived into the collector's permanent generation (``gc.freeze``), so
        that a full collection -- which walks every tracked object and holds the
        event loop for as long: half a second with 20,000 flows and their rules --
        only walks what was made since.  A full collection of everything
        (``gc.unfreeze``) runs when no coflow is active (the heap is small then) or
        once the heap (the interpreter's allocated blocks) grew :attr:`GC_FULL_GROWTH`
        times since the last one, so that garbage cycles frozen alive are still
        reclaimed.  Costs the young objects, not the heap."""
        if not self.settle_gc:
            return
        blocks = sys.getallocatedblocks()
        full = not self.core.active() or \
            blocks > self.GC_FULL_GROWTH * self._gc_full_at > 0
        if full:
            gc.unfreeze()
            gc.collect()
        else:
            gc.collect(1)
        gc.freeze()
        if full or not self._gc_full_at:
            self._gc_full_at = sys.getallocatedblocks() if full else blocks

    def _init_loop(self, offload: Optional[Callable[..., Any]] = None,
                   sleep: Optional[Callable[[float], Any]] = None,
                   build_slot: Any = None) -> None:
        """Set up the decision gate and the queue of late flow-stats replies.

        Args:
            offload: ``offload(fn, *args)`` runs ``fn(*args)`` off the event loop and
                returns its result (``eventlet.tpool.execute``); used only while the
                worker runs (None, or the worker not started: called in place).
            sleep: ``sleep(0)`` yields to the event loop (``hub.sleep``; default
                ``time.sleep``), see :meth:`_pause`.
            build_slot: a green semaphore (``hub.Semaphore(1)``) held by each
                offloaded build of flow mods (:meth:`_offload_build`); None: builds
                are not serialised.
        """
        self._sleep = sleep or time.sleep
        self._build_slot = build_slot
        #: held from a decision's snapshot to its rules (module docstring)
        self._gate = threading.Lock()
        #: False until the first decision after a deferred start (:meth:`_first_decisions`):
        #: until then no agent is sent a set (the restored rates are not decided yet)
        self.start_decided = True
        self._late_stats: deque = deque()
        self._offload = offload

    def _load_kernels(self) -> None:
        """Compile (or load from numba's cache) the scheduler's kernels
        (:func:`rapier_app.warmup.ensure_warm`): a cold first decision takes seconds."""
        warm_s = ensure_warm(self.core.settings.scheduler)
        STARTUP.mark("kernels")
        if warm_s is not None:
            LOG.info("kernels ready for %s in %.2f s", self.core.settings.scheduler, warm_s)

    def _first_decisions(self) -> None:
        """The worker's first step (``prepare`` of :meth:`.worker.DecisionWorker.loop`)
        when the app defers its start-up work (``ryu-manager``): the REST and
        OpenFlow servers already listen, so that reports, submissions and switches
        are taken in while the kernels load (``offload``: in a native thread, the
        event loop serving meanwhile); then one decision for the restored coflows
        and whatever came meanwhile, whose pushes give every agent its full set."""
        try:
            if self._offload is not None and self.worker.running:
                self._offload(self._load_kernels)
            else:
                self._load_kernels()
        except Exception:  # noqa: BLE001 -- decide anyway (the first one compiles)
            LOG.exception("loading the scheduler's kernels failed")
        try:
            self._decide_batch([])
        finally:
            self.start_decided = True

    def _start_loop(self) -> None:
        """The worker runs: every decision is its (the core defers the others); the
        collector's full collections become rare (:meth:`_settle_gc`)."""
        if self.settle_gc:
            g0, g1, _ = gc.get_threshold()
            gc.set_threshold(g0, g1, self.GC_GEN2_THRESHOLD)
        self.core.worker_decides = True
        self.core.on_decision_due = self.worker.wake
        self.core.apply_pause = self._pause_apply
        self.core.hold_pause = self._pause  # a POST yields keeping the lock
        self._on_loop = self.green
        self._health_unlocked = True
        if self.SWITCH_INTERVAL_S is not None:
            sys.setswitchinterval(self.SWITCH_INTERVAL_S)

    #: the interpreter's switch interval (s) once the worker runs (Python's default:
    #: 0.005).  Each time the event loop makes a system call (every yield polls its
    #: sockets) a native thread running Python (a decision, a batch of flow mods)
    #: takes the interpreter lock, and the loop waits up to this long to get it back:
    #: a 1,000-flow POST yields about ten times.  None: left as it is
    SWITCH_INTERVAL_S: Optional[float] = 0.001

    #: the app runs on green threads (eventlet: Ryu); False on native threads, where
    #: the worker is a thread like the REST server's and reads take the app's lock
    green = True

    #: the worker runs on the event loop (:meth:`_start_loop`): ``/health`` reads
    #: without the app's lock (:meth:`_health_guard`), replies are encoded in slices
    _on_loop = False

    @property
    def encode_pause(self) -> Optional[Callable[[], None]]:
        """What the REST replies call between slices of their JSON
        (:func:`.jsonslices.dumps_sliced`): :meth:`_pause` once the worker runs on
        the event loop, else None (encoded in one piece)."""
        return self._pause if self._on_loop else None

    #: ``/health`` reads without the app's lock (:meth:`_health_guard`): set once the
    #: worker runs (:meth:`_start_loop`)
    _health_unlocked = False

    def _health_guard(self):
        """What ``/health`` holds while it reads: nothing once the worker runs on the
        event loop (:meth:`_start_loop`) -- green threads switch only where they
        yield, every yield point leaves the fabric's state whole, and a POST
        yields while holding the lock -- else the app's lock (an app built
        in-process and served by OS threads).  On native threads too once the worker
        runs: ``/health`` reads only the fabric's state, which POSTs and decisions do
        not write; a fabric change in the middle of the read raises ``RuntimeError``
        (a set or dict changed size), and the caller reads again under the lock
        (:meth:`~.app.RapierController.health`)."""
        return contextlib.nullcontext() if self._health_unlocked else self._lock

    def _health_read(self, read: Callable[[], Any]) -> Any:
        """``read()`` under :meth:`_health_guard`; again under the app's lock when a
        fabric change raced it on native threads (``RuntimeError``: a set or dict
        changed size)."""
        try:
            with self._health_guard():
                return read()
        except RuntimeError:
            with self._lock:
                return read()

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
                self._settle_gc()
                STARTUP.mark("first_decision")
            self._apply_late_stats()
        return self.core.wants_decision()

    #: flow mods to build for one switch from which a native thread builds them
    #: (``app._send_batch`` through ``offload``; fewer: on the loop, in slices)
    OFFLOAD_BUILD_MIN = 64

    def _offload_build(self, fn: Callable[..., Any], *args) -> Any:
        """``offload(fn, *args)`` (a switch's batch of flow mods), one at a time:
        every native thread running Python code competes with the event loop for
        the interpreter lock, and the loop waits for it after each of its system
        calls (a burst of POSTs handed several switches' batches to as many
        threads at once, and ``/health`` waited 0.1-0.2 s)."""
        if self._build_slot is None:
            return self._offload(fn, *args)
        with self._build_slot:
            return self._offload(fn, *args)

    #: longest stretch (s) of rule-apply or message-building work, or of a page of
    #: coflows, before the event loop gets a turn (:meth:`_pause`)
    SLICE_S = 0.005

    def _pause(self) -> None:
        """Yield to the event loop (``/health``, reads) once the current stretch of
        work ran over :attr:`SLICE_S` (called between flow mods of a batch, between
        switches, between the coflows of a page)."""
        if time.perf_counter() - getattr(self, "_slice_t0", 0.0) > self.SLICE_S:
            self._sleep(0)
            self._slice_t0 = time.perf_counter()

    #: ``spawn(fn, *args)`` runs ``fn`` in a green thread of its own (``hub.spawn``,
    #: set by ``RapierController.start``); None: in place
    _spawn: Optional[Callable[..., Any]] = None

    def _flush_soon(self, dpids) -> None:
        """Hand the queued rules of ``dpids`` to their switches: in a green thread of
        its own when one can be spawned, so that a POST answers before its
        admission's flow mods are built (4,500 for 1,000 flows on ``fattree:4``); they
        are queued already, in order, and go out at the event loop's next turn."""
        if self._spawn is not None and dpids:
            self._spawn(self.flush, set(dpids))
        else:
            self.flush(dpids)

    def _pause_apply(self) -> None:
        """The core's rule-apply step is at a consistent point
        (:attr:`~.applying.ApplyMixin.apply_pause`): once the current stretch ran
        over ``SLICE_S``, release the app's lock, let the event loop serve
        ``/health``, reads, POSTs and DELETEs, and take the lock back.  Progress and
        fabric changes still wait (the decision gate stays held)."""
        t = time.perf_counter()
        if t - getattr(self, "_slice_t0", 0.0) <= self.SLICE_S:
            return
        try:
            self._lock.release()
        except RuntimeError:  # not called under the lock: only yield
            self._sleep(0)
        else:
            try:
                self._sleep(0)
            finally:
                self._lock.acquire()
        self._slice_t0 = time.perf_counter()

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
