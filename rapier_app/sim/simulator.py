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

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from topologies import Topology, TopologyError

from ..core.model import CoflowSpec, CoflowState, FlowState, InfoPolicy
from ..scheduling.base import Scheduler

BITS = 8.0
#: Relative slack on link capacity before a schedule counts as over capacity.
CAPACITY_SLACK = 1e-6


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


class Simulator:
    """Drive one scheduler over one workload on one topology.

    Args:
        topology: the fabric.
        coflows: the workload (any order; sorted by arrival then id).
        scheduler: the scheduler instance (fresh: schedulers keep state).
        progress: optional callback ``progress(done_coflows, total_coflows, now_s)``
            called after each coflow completes.
        record_flows: keep per-flow records (memory grows with the flow count).
        max_events: safety limit on decision points (SimulationError beyond).

    Raises (from :meth:`run`):
        SimulationError: a path that does not exist or does not join the flow's
            endpoints, a link over capacity, or flows left with no bandwidth and no
            future event to wait for.
        TopologyError: a flow names a host that is not in the topology.
    """

    def __init__(self, topology: Topology, coflows: Sequence[CoflowSpec], scheduler: Scheduler,
                 progress: Optional[Callable[[int, int, float], None]] = None,
                 record_flows: bool = True, max_events: int = 50_000_000):
        self.topology = topology
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

    def run(self) -> SimResult:
        """Run to completion of every coflow and return the :class:`SimResult`."""
        t_wall = time.perf_counter()
        topo = self.topology
        cap = topo.capacity
        res = SimResult(self.scheduler.name)
        res.bytes_offered = sum(c.total_bytes for c in self.specs)
        arrivals = list(self.specs)
        ai = 0
        now = 0.0
        active: Dict[str, CoflowState] = {}
        total = len(self.specs)
        while ai < len(arrivals) or active:
            while ai < len(arrivals) and arrivals[ai].arrival_s <= now:
                spec = arrivals[ai]
                active[spec.coflow_id] = CoflowState(spec, self.policy)
                ai += 1
            if not active:
                now = arrivals[ai].arrival_s
                continue
            res.events += 1
            if res.events > self.max_events:
                raise SimulationError(f"max_events: more than {self.max_events} events")
            states = list(active.values())
            sched = self.scheduler.schedule(now, states)
            flows: List[FlowState] = []
            rates: List[float] = []
            link_arrays: List[np.ndarray] = []
            alloc = sched.allocations
            for c in states:
                for f in c.active_flows():
                    a = alloc.get(f.flow_id)
                    if a is None or a.rate_bps <= 0:
                        f.rate_bps = 0.0
                        f.path = None if a is None else tuple(a.path)
                        continue
                    p = a.path
                    if p[0] != f.src or p[-1] != f.dst:
                        raise SimulationError(f"path: flow {f.flow_id} ({f.src}->{f.dst}) got "
                                              f"path {'-'.join(p)} with wrong endpoints")
                    try:
                        ls = topo.path_links(p)
                    except TopologyError as exc:
                        raise SimulationError(f"flow {f.flow_id}: {exc}") from None
                    if not math.isfinite(a.rate_bps):
                        raise SimulationError(f"rate_bps: flow {f.flow_id} got rate {a.rate_bps}")
                    f.path = tuple(p)
                    f.rate_bps = float(a.rate_bps)
                    flows.append(f)
                    rates.append(f.rate_bps)
                    link_arrays.append(ls)
            rate_arr = np.array(rates)
            if flows:
                lens = np.fromiter((len(x) for x in link_arrays), np.int64, len(link_arrays))
                load = np.bincount(np.concatenate(link_arrays), weights=np.repeat(rate_arr, lens),
                                   minlength=len(cap))
                util = load / cap
                worst = int(np.argmax(util))
                res.max_link_utilisation = max(res.max_link_utilisation, float(util[worst]))
                if load[worst] > cap[worst] * (1 + CAPACITY_SLACK) + 1e-6:
                    u, v = topo.links[worst]
                    raise SimulationError(
                        f"capacity: link {u}->{v} carries {load[worst]:.6g} bit/s over its "
                        f"capacity {cap[worst]:.6g} bit/s at t={now:.9g} s "
                        f"(scheduler {self.scheduler.name})")
            remaining = np.array([f._true_remaining() for f in flows])
            ttf = remaining * BITS / rate_arr if flows else np.zeros(0)
            t_next = now + (float(ttf.min()) if flows else math.inf)
            if ai < len(arrivals):
                t_next = min(t_next, arrivals[ai].arrival_s)
            wake = self.scheduler.next_wakeup(now)
            if wake is not None and wake > now:
                t_next = min(t_next, wake)
            if not math.isfinite(t_next):
                waiting = sum(len(c.active_flows()) for c in states)
                raise SimulationError(f"deadlock: scheduler {self.scheduler.name} left {waiting} "
                                      f"flows without bandwidth at t={now:.9g} s and no event "
                                      f"is pending")
            dt = t_next - now
            if flows:
                finished = ttf <= dt * (1 + 1e-9) + 1e-12
                sent = rate_arr * dt / BITS
                for i, f in enumerate(flows):
                    if finished[i]:
                        f.bytes_sent = f.spec.size_bytes
                        f.finish_s = t_next
                    else:
                        f.bytes_sent += sent[i]
            now = t_next
            for c in states:
                c._invalidate()
                if not c.active_flows():
                    c.finish_s = max(f.finish_s for f in c.flows)
                    del active[c.coflow_id]
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
        res.wall_s = time.perf_counter() - t_wall
        return res


def simulate(topology: Topology, coflows: Sequence[CoflowSpec], scheduler: Scheduler,
             **kw) -> SimResult:
    """Convenience wrapper: ``Simulator(topology, coflows, scheduler, **kw).run()``."""
    return Simulator(topology, coflows, scheduler, **kw).run()
