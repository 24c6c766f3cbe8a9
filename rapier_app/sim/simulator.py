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

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from topologies import Topology

from ..core.model import CoflowSpec, CoflowState, FlowState, InfoPolicy
from .. import kernels as _kernels
from ..errors import RapierError
from ..scheduling import Scheduler, UnknownSizeError
from . import steps
from .state import SimState

#: The values of ``Scheduler.reads_progress`` the simulator knows (see its docstring).
READS_PROGRESS = (True, False, "arrivals", "bytes", "coflow", "vector", "coflow-events",
                  "coflow-events+wakeups")
#: Relative slack on link capacity before a schedule counts as over capacity.
CAPACITY_SLACK = 1e-6
#: the capacity check sums every link's load exactly at least once per this many
#: events; in between it keeps the loads from the flows whose rate changed (their
#: rounding drift, about 1e-16 relative per update, stays far below CAPACITY_SLACK)
EXACT_CHECK_EVERY = 1000
#: the sparse event step (:func:`rapier_app.sim.steps.sparse_step`), for sticky-path
#: schedulers with the compiled kernels on: None (default) when the scheduler says
#: few of its flows send at a time (``few_senders``: Sincronia's greedy rates, one
#: flow per port); True for every sticky-path scheduler; False never (tests compare
#: both)
SPARSE_STEP = None


class SimulationError(RapierError, RuntimeError):
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
        hide_sizes: the scheduler is not told flow sizes (``rapier-sim
            --hide-sizes``): every coflow it sees carries
            :class:`~rapier_app.core.model.HiddenFlowSpec` s, whose ``size_bytes``
            raises :class:`~rapier_app.core.model.InformationError`, under a
            non-clairvoyant :class:`InfoPolicy`; it reads only what a controller
            observes (endpoints, arrival, width, bytes sent, completions).  The
            scheduler's ``expect_unknown_sizes`` runs first
            (:attr:`~rapier_app.scheduling.base.Scheduler.unknown_sizes`).

    Raises:
        SimulationError: ``reschedule_on`` or the scheduler's ``reads_progress`` is
            not a known value (at construction).
        UnknownSizeError: ``hide_sizes`` and a scheduler that needs sizes (its
            ``unknown_sizes`` is ``"refuse"``; at construction).

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
                 event_log: Optional[list] = None, hide_sizes: bool = False):
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
        self.hide_sizes = bool(hide_sizes)
        if self.hide_sizes:
            expect = getattr(scheduler, "expect_unknown_sizes", None)
            if expect is None:  # a duck-typed scheduler says nothing: sizes unused?
                if getattr(scheduler, "clairvoyant", True):
                    raise UnknownSizeError(f"scheduler: {scheduler.name} declares no "
                                           f"unknown_sizes and may read sizes")
            else:
                expect()
        self.policy = InfoPolicy(scheduler.clairvoyant and not self.hide_sizes)
        # the true specs by id: records read sizes here when the states hide them
        self._true = {c.coflow_id: c for c in self.specs} if self.hide_sizes else None
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
        except steps.StepError as exc:
            raise SimulationError(str(exc)) from None
        finally:
            unbind = getattr(sch, "bind_active", None)
            if unbind is not None:
                unbind(None)  # the run's list is not the scheduler's to keep
            if had is None:
                del sch.volatile_schedules
            else:
                sch.volatile_schedules = had

    def _run(self) -> SimResult:
        """The body of :meth:`run`: one loop over the events (module
        :mod:`rapier_app.sim.steps` holds each phase and the state they share)."""
        t_wall = time.perf_counter()
        sch = self.scheduler
        res = self.result = SimResult(sch.name)
        res.bytes_offered = sum(c.total_bytes for c in self.specs)
        st = self._state()
        step = steps.sparse_step if st.sparse else steps.dense_step
        arrivals = self.specs
        while st.ai < len(arrivals) or st.active:
            steps.admit(st, arrivals)
            if not st.active:
                st.now = arrivals[st.ai].arrival_s
                continue
            steps.sync_positions(st)
            res.events += 1
            if res.events > self.max_events:
                raise SimulationError(f"max_events: more than {self.max_events} events")
            states = list(st.active.values())
            steps.hand_over(st, sch)
            iv = step(st, sch.schedule(st.now, states))
            steps.check_capacity(st, iv, res, sch.name)
            t_next = steps.next_event(st, iv, arrivals, sch)
            steps.count_link_bytes(st, iv, t_next)
            if self.event_log is not None:
                self.event_log.append(EventRecord(*steps.event_fields(st, iv, t_next)))
            finished = steps.advance(st, iv, t_next)
            st.now = t_next
            if st.reads_coflow:
                steps.share_coflow_bytes(st, states)
            if finished:
                self._complete(st, states, finished)
        if st.reads_vector:
            sch.bind_counters(None)
        res.wall_s = time.perf_counter() - t_wall
        return res

    def _state(self) -> SimState:
        """A fresh :class:`~rapier_app.sim.state.SimState` for one run, with the step
        chosen: the sparse step (the per-event work runs over the sending positions
        only) needs sticky paths (a flow's links never change once validated) and
        the compiled kernels, and runs by default when the scheduler says few of its
        flows send at a time (one flow per port under Sincronia's greedy rates while
        600,000 are live in the all-at-0 hour).  With most flows sending, as under
        Aalo's, Philae's or OPTAS's max-min shares, the dense step's fused passes are
        as fast or faster (OPTAS's giants' window: 3.4 ms per decision point dense,
        4.0 ms sparse).  A scheduler with a ``decision_interval`` runs the dense
        step."""
        sch = self.scheduler
        by_coflow = self.reschedule_on == "coflow"
        wants = (bool(getattr(sch, "few_senders", False))
                 if SPARSE_STEP is None else SPARSE_STEP)
        sparse = (wants and bool(getattr(sch, "sticky_paths", False)) and _kernels.ENABLED
                  and not by_coflow and self.event_log is None
                  and not getattr(sch, "decision_interval", 0))
        cap = self.topology.capacity
        st = SimState(self.topology, sch, len(self.specs), self.policy,
                      by_coflow, sparse, cap * (1 + CAPACITY_SLACK) + 1e-6,
                      EXACT_CHECK_EVERY)
        st.hidden = self.hide_sizes
        return st

    def _complete(self, st: SimState, states: List[CoflowState],
                  finished: Dict[str, List[FlowState]]) -> None:
        """Flows ``finished`` (by coflow id) left their coflows (``states``, in
        arrival order); each coflow left without active flows completes: its
        records are added to the result and ``progress`` is called."""
        res = self.result
        for c in states:
            fl = finished.get(c.coflow_id)
            if fl is None:
                continue
            c._drop_finished(fl)
            if c.active_flows():
                continue
            c.finish_s = max(f.finish_s for f in c.flows)
            del st.active[c.coflow_id]
            st.cevent = True
            spec = c.spec if self._true is None else self._true[c.coflow_id]
            res.coflows.append(CoflowRecord(c.coflow_id, c.arrival_s, c.finish_s,
                                            c.finish_s - c.arrival_s, c.width,
                                            spec.total_bytes, c.weight))
            res.bytes_delivered += sum(f.bytes_sent for f in c.flows)
            if self.record_flows:
                for f in c.flows:
                    res.flows.append(FlowRecord(f.flow_id, f.coflow_id, f.src, f.dst,
                                                f.size_bytes, f.finish_s,
                                                f.finish_s - c.arrival_s))
            if self.progress:
                self.progress(len(res.coflows), len(self.specs), st.now)


def simulate(topology: Topology, coflows: Sequence[CoflowSpec], scheduler: Scheduler,
             **kw) -> SimResult:
    """Convenience wrapper: ``Simulator(topology, coflows, scheduler, **kw).run()``."""
    return Simulator(topology, coflows, scheduler, **kw).run()
