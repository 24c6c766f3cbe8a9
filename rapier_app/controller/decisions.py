"""One scheduling decision in three steps, so that the scheduler can run off the
event loop while reads, ``/health`` and submissions go on.

Part of :class:`.core.ControllerCore` (as :class:`DecisionMixin`).  A decision is

1. :meth:`DecisionMixin.begin_decision` (quick, under the shell's lock): the
   snapshot of the active coflows and the decision budget;
2. :meth:`DecisionMixin.run_decision` (the scheduler call, the slow part): touches
   the scheduler and reads the snapshot's coflows, nothing else of the core, so the
   Ryu shell runs it in a native thread (:mod:`.loop`) while the event loop serves
   reads, ``/health``, POSTs and DELETEs;
3. :meth:`DecisionMixin.end_decision` (under the lock): decision states, fallbacks
   and the rule and push changes (:meth:`~.applying.ApplyMixin._apply`, which only
   handles the flows whose allocation changed: step 2 found them off the event loop,
   :meth:`~.applying.ApplyMixin.plan_apply`).

:meth:`DecisionMixin.reschedule` runs the three at once.  While a decision is in
flight, or when the shell's decision worker takes every decision
(:attr:`DecisionMixin.worker_decides`), a call to :meth:`reschedule` (a cancel, a
completion, a link change) does not call the scheduler: it marks a decision due
(:attr:`DecisionMixin.decision_due`) and returns no action; the worker's next
decision, which comes at once, covers it.  Coflows cancelled or finished while a
decision ran are left out of its rules; coflows that arrived meanwhile keep what
they had (queued, or a background coflow's counting rules) until the next one.

The budget (``decision_budget_s``) bounds the decision itself: the scheduler's
``deadline`` hook (RAPIER: Algorithm 1 stops once it has passed,
:attr:`~rapier_app.scheduling.rapier.scheduler.Rapier.deadline`).  The coflows a
decision did not place (``Schedule.info["deferred"]``) get their ECMP paths and
Algorithm 3's leftover bandwidth and stay ``queued`` (those placed by an earlier
decision keep their paths and rates instead), and a follow-up decision is due at
once; it carries the cut pass on where it stopped (coflows that arrived meanwhile
join it), so a pass longer than the budget is spread over several decisions.  A decision that takes longer than the
budget anyway (a scheduler without the hook) is applied and counted
(``budget_exceeded``): no coflow goes to default forwarding for want of a decision.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from ..core.model import CoflowState, Schedule
from .admission import PROVISIONAL
from .coexist import BACKGROUND
from .metrics import fallback_reason
from .registry import ACTIVE, FALLBACK, QUEUED, SCHEDULED
from .rules import Actions

@dataclass
class DecisionJob:
    """One decision in flight (:meth:`DecisionMixin.begin_decision`).

    Attributes:
        now: the decision's time (s, controller clock).
        active: the active coflows at its start (arrival order).
        planned: those the scheduler is asked about (background ones left out).
        budget_s: its budget (s): ``decision_budget_s``.
        started: ``time.perf_counter()`` at its start (the deadline's origin).
        sched: the scheduler's answer (after :meth:`DecisionMixin.run_decision`).
        solve_s: the scheduler call's wall-clock time (s; 0 without ``wall_clock``).
        error: the scheduler's exception message, if it raised.
    """

    now: float
    active: List[CoflowState]
    planned: List[CoflowState]
    budget_s: float
    started: float
    sched: Optional[Schedule] = None
    solve_s: float = 0.0
    error: Optional[str] = None
    ids: set = field(default_factory=set)
    #: the flows whose allocation changed (:meth:`~.applying.ApplyMixin.plan_apply`)
    changed: Optional[dict] = None


class DecisionMixin:
    """Decisions of :class:`.core.ControllerCore` (see the module docstring).

    Uses the core's ``scheduler``, ``settings``, ``active``, ``is_background``,
    ``state``, ``decision``, ``fallback``, ``adds_pending``, ``metrics``,
    ``wall_clock``, ``_apply``, ``_log`` and ``errors``.
    """

    #: True when the shell's decision worker takes every decision (reschedule only
    #: marks one due); False (in-process core, tests): reschedule decides at once
    worker_decides = False
    #: a decision is wanted (set by a deferred :meth:`reschedule`, a cut decision)
    decision_due = False
    #: called when a decision becomes due (the shell wakes its worker); optional
    on_decision_due: Optional[Callable[[], None]] = None
    _job: Optional[DecisionJob] = None

    @property
    def deciding(self) -> bool:
        """True between :meth:`begin_decision` and :meth:`end_decision`."""
        return self._job is not None

    def _mark_due(self) -> None:
        self.decision_due = True
        if self.on_decision_due is not None:
            self.on_decision_due()

    def reschedule(self, now: float) -> Actions:
        """Call the scheduler and turn its decision into rule and agent changes (the
        three steps at once); deferred to the next decision (no action returned)
        while one is in flight or when the worker decides (module docstring).

        A scheduler exception (e.g. an LP failure) does not propagate: every active
        coflow falls back to default forwarding and the event is logged.  Coflows the
        scheduler itself reports in ``Schedule.fallback`` (RAPIER's LP time-out) get
        default forwarding too, with a counting rule on their first hop only.

        Args:
            now: current time (s).  ``self.wall_clock`` (optional ``() -> s``) only
                times the call for ``GET /schedule``.

        Returns:
            :class:`Actions` (rules to add/modify/delete, agent pushes).
        """
        if self.worker_decides or self.deciding:
            self._mark_due()
            return Actions()
        job = self.begin_decision(now)
        self.run_decision(job)
        return self.end_decision(job, now)

    def decide(self, now: float) -> Actions:
        """One decision when one is wanted (:meth:`wants_decision`), else nothing:
        the decision worker's call (:mod:`.worker`).  Returns its Actions."""
        if not self.wants_decision():
            return Actions()
        self.decision_due = False
        job = self.begin_decision(now)
        self.run_decision(job)
        return self.end_decision(job, now)

    def wants_decision(self) -> bool:
        """True when a coflow waits for its first (or a cut decision's follow-up)
        decision, flows were added to an open coflow
        (:attr:`~.openflows.OpenFlowsMixin.adds_pending`), or a deferred
        :meth:`reschedule` asked for one."""
        return self.decision_due or self.adds_pending or bool(self.queued())

    def queued(self) -> List[str]:
        """Ids of the active coflows waiting for Algorithm 1: ``decision`` ``queued``
        (no rules yet) or ``provisional`` (admitted on ECMP paths at leftover rates,
        :mod:`.admission`, or left out by a decision cut by the budget)."""
        return [c.coflow_id for c in self.active()
                if self.decision.get(c.coflow_id) in (QUEUED, PROVISIONAL)]

    def begin_decision(self, now: float) -> DecisionJob:
        """Step 1: the snapshot of the active coflows and the budget.

        Raises:
            RuntimeError: a decision is already in flight.
        """
        if self._job is not None:
            raise RuntimeError("a decision is already in flight")
        self.decision_due = False
        self.adds_pending = False
        active = self.active()
        # coflows below the size threshold are background: never scheduled (.coexist);
        # an open coflow with no unfinished flow has nothing to schedule (.openflows)
        planned = [c for c in active if not self.is_background(c) and c.active_flows()]
        job = DecisionJob(now, active, planned, self.settings.decision_budget_s,
                          time.perf_counter())
        job.ids = {c.coflow_id for c in active}
        self._job = job
        return job

    def _budget_target(self):
        """The scheduler (or the scheduler a wrapper holds) with a ``deadline`` hook."""
        s = self.scheduler
        for _ in range(8):
            if "deadline" in dir(type(s)):
                return s
            s = s.__dict__.get("inner") if hasattr(s, "__dict__") else None
            if s is None:
                return None
        return None

    def run_decision(self, job: DecisionJob) -> Schedule:
        """Step 2: the scheduler call on the snapshot, with the budget as the
        scheduler's ``deadline``; a scheduler exception becomes a fallback of every
        planned coflow (reported by :meth:`end_decision`).  Returns the schedule."""
        wall_clock = self.wall_clock
        t0 = wall_clock() if wall_clock else 0.0
        if job.planned:
            target = self._budget_target()
            if target is not None:
                target.deadline = job.started + job.budget_s
            try:
                sched = self.scheduler.schedule(job.now, job.planned)
            except Exception as exc:  # noqa: BLE001 -- any solver failure falls back
                job.error = f"scheduler {self.settings.scheduler} failed: {exc!r}"
                sched = Schedule(fallback={c.coflow_id: job.error for c in job.planned})
            finally:
                if target is not None:
                    target.deadline = None
        else:
            sched = Schedule()
        job.solve_s = (wall_clock() - t0) if wall_clock else 0.0
        job.sched = sched
        # what the rule-apply step has to do, found here (off the event loop)
        planned = job.active
        if sched.info.get("partial"):  # a cut slice: the coflows it hands over only
            held = self._held(sched)
            planned = [c for c in job.active if c.coflow_id not in held]
        try:
            job.changed = self.plan_apply(sched, planned)
        except Exception as exc:  # noqa: BLE001 -- the apply step finds it itself
            self._log("error", "planning the rule changes failed: %r", exc)
        return sched

    def _held(self, sched: Schedule) -> set:
        """Ids of the coflows a cut decision leaves as they are: those it did not
        reach that were placed or admitted before, and the picks of the pass's
        earlier slices a partial schedule leaves out (``info["held"]``)."""
        hold = {cid for cid in sched.info.get("deferred", ())
                if self.decision.get(cid) in (SCHEDULED, PROVISIONAL)}
        hold.update(cid for cid in sched.info.get("held", ()) if cid not in sched.fallback)
        return hold

    def end_decision(self, job: DecisionJob, now: float) -> Actions:
        """Step 3: decision states, fallbacks, the budget's follow-up and the rule
        and push changes of ``job`` (for its coflows still active)."""
        self._job = None
        if job.sched is None:  # the scheduler call never returned (its thread failed)
            job.error = job.error or "the decision failed before the scheduler answered"
            job.sched = Schedule(fallback={c.coflow_id: job.error for c in job.planned})
        sched = job.sched
        if job.error is not None:
            self._log("error", "%s; all active coflows use default forwarding", job.error)
            self.errors.append(f"{job.now:.3f}: {job.error}")
        self.last_solve_s = job.solve_s
        self.metrics.decision.observe(job.solve_s)
        budget = self.settings.decision_budget_s
        deferred = set(sched.info.get("deferred", ()))
        if job.solve_s > budget:
            self.budget_exceeded += 1
            self._log("warning", "decision took %.3f s (decision_budget_s %g s)%s",
                      job.solve_s, budget, "" if deferred else "; applied")
        if deferred:
            self._log("info", "decision cut by its budget (%.3f s) after %d coflows: %d "
                      "placed next", job.budget_s, len(sched.order), len(deferred))
        still = [c for c in job.active if self.state.get(c.coflow_id) == ACTIVE]
        # coflows placed before (or admitted) that this decision did not reach keep
        # their paths and rates; so do the picks of earlier slices of a cut pass
        # that a partial schedule leaves out (info["held"])
        hold = self._held(sched)
        for c in still:
            cid = c.coflow_id
            was = self.decision.get(cid)
            self.decision[cid] = BACKGROUND if self.is_background(c) else \
                FALLBACK if cid in sched.fallback else was if cid in hold else \
                PROVISIONAL if cid in deferred else SCHEDULED
            if self.decision[cid] == BACKGROUND and was != BACKGROUND:
                self.metrics.fallback.labels("background").inc()
        for cid, reason in sched.fallback.items():
            if self.fallback.get(cid) != reason:
                self._log("warning", "coflow %s falls back to default forwarding: %s",
                          cid, reason)
                self.metrics.fallback.labels(fallback_reason(reason)).inc()
            self.fallback[cid] = reason
        self.last_schedule = sched
        self.last_schedule_s = job.now
        self.schedule_count += 1
        # coflows that arrived while the decision ran keep their rules (and, when
        # admitted, their paths and rates: held)
        late = [c for c in self.active() if c.coflow_id not in job.ids]
        admitted = [c for c in late if self.decision.get(c.coflow_id) == PROVISIONAL]
        if sched.info.get("partial"):
            # a cut pass's slice: only what it decided changes, everything held
            # keeps its rules and rate limits untouched
            mine = [c for c in still if c.coflow_id not in hold]
            keep = {f.flow_id for c in late for f in c.flows}
            keep.update(f.flow_id for c in still if c.coflow_id in hold for f in c.flows)
            acts = self._apply(sched, mine, keep, (), partial=True, changed=job.changed)
        else:
            adm = {c.coflow_id for c in admitted}
            keep = {f.flow_id for c in late if c.coflow_id not in adm for f in c.flows}
            acts = self._apply(sched, still + admitted, keep, hold | adm,
                               changed=job.changed)
        if deferred and not self.worker_decides:
            self.decision_due = True
        elif deferred:
            self._mark_due()
        return acts


__all__ = ["DecisionJob", "DecisionMixin"]
