"""Coflows, flows, and what a scheduler may know about them.

Units everywhere in the core: sizes and byte counters in **bytes**, rates in
**bit/s**, times in **seconds**.

Two layers:

* :class:`FlowSpec` / :class:`CoflowSpec`: immutable workload definitions (what a
  trace line or a REST request describes).
* :class:`FlowState` / :class:`CoflowState`: the live state that the simulator or the
  controller keeps and hands to a scheduler.  The size of an unfinished flow is
  guarded by an :class:`InfoPolicy`: a non-clairvoyant scheduler (Aalo, Philae, OPTAS)
  that reads ``size_bytes`` or ``remaining_bytes`` gets :class:`InformationError`, so
  its results can be trusted not to use knowledge it may not have.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress, repeat
from operator import attrgetter, is_
from typing import List, Optional, Sequence, Tuple

from ..errors import RapierError


class InformationError(RapierError, RuntimeError):
    """A non-clairvoyant scheduler asked for a flow size it may not know."""


class WorkloadError(RapierError, ValueError):
    """Bad workload input: the message names the field (and line, for traces)."""


@dataclass(frozen=True)
class FlowSpec:
    """One flow of a coflow.

    Attributes:
        flow_id: unique id, conventionally ``"<coflow_id>/<n>"``.
        coflow_id: id of the owning coflow.
        src, dst: host names in the topology.  ``src == dst`` is allowed: on a big
            switch it is a flow from a port's ingress to the same port's egress (the
            Facebook trace has such mapper/reducer pairs).
        size_bytes: volume in bytes (> 0).
        dst_port: TCP destination port that identifies the flow on the wire
            (controller and emulation only; optional in simulation).
    """

    flow_id: str
    coflow_id: str
    src: str
    dst: str
    size_bytes: float
    dst_port: Optional[int] = None

    def __post_init__(self) -> None:
        if not (self.size_bytes > 0):
            raise WorkloadError(f"size_bytes: flow {self.flow_id} must have a positive "
                                f"size, got {self.size_bytes!r}")

    #: the size is given (a :class:`HiddenFlowSpec` says False)
    size_known = True


@dataclass(frozen=True)
class CoflowSpec:
    """A coflow: flows that finish together count, arriving at ``arrival_s`` seconds.

    Attributes:
        coflow_id: unique id (string).
        arrival_s: arrival time in seconds from the start of the run (>= 0).
        flows: the flows (at least one).
        weight: coflow weight (Sincronia's weighted CCT; 1.0 elsewhere).
    """

    coflow_id: str
    arrival_s: float
    flows: Tuple[FlowSpec, ...]
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not self.flows:
            raise WorkloadError(f"flows: coflow {self.coflow_id} has no flows")
        if self.arrival_s < 0:
            raise WorkloadError(f"arrival_s: coflow {self.coflow_id} arrives before 0")
        if not (self.weight > 0):
            raise WorkloadError(f"weight: coflow {self.coflow_id} must have a positive weight")

    @property
    def total_bytes(self) -> float:
        """Sum of the flow sizes in bytes."""
        return sum(f.size_bytes for f in self.flows)

    @property
    def width(self) -> int:
        """Number of flows (the coflow's width)."""
        return len(self.flows)


def make_coflow(coflow_id: str, arrival_s: float,
                flows: Sequence[Tuple[str, str, float]], weight: float = 1.0,
                dst_ports: Optional[Sequence[int]] = None) -> CoflowSpec:
    """Build a :class:`CoflowSpec` from ``(src, dst, size_bytes)`` triples.

    Flow ids are ``f"{coflow_id}/{n}"`` with n counting from 0.
    """
    specs = tuple(FlowSpec(f"{coflow_id}/{n}", coflow_id, s, d, float(v),
                           None if dst_ports is None else dst_ports[n])
                  for n, (s, d, v) in enumerate(flows))
    return CoflowSpec(str(coflow_id), float(arrival_s), specs, float(weight))


class HiddenFlowSpec:
    """A :class:`FlowSpec` whose size is hidden from schedulers (``rapier-sim
    --hide-sizes``, :class:`~rapier_app.sim.Simulator` ``hide_sizes=True``): what a
    controller knows of a flow whose application gave no size.

    It has every field of the spec it hides but ``size_bytes``, which raises
    :class:`InformationError` whoever reads it, finished flow or not (a finished
    flow's size is :attr:`FlowState.size_bytes`, its bytes delivered).  The true
    spec stays with the simulator, never with the scheduler's states.

    Attributes:
        flow_id, coflow_id, src, dst, dst_port: as the hidden :class:`FlowSpec`'s.
        size_known: False.
    """

    __slots__ = ("flow_id", "coflow_id", "src", "dst", "dst_port")
    size_known = False

    def __init__(self, spec: FlowSpec):
        self.flow_id = spec.flow_id
        self.coflow_id = spec.coflow_id
        self.src = spec.src
        self.dst = spec.dst
        self.dst_port = spec.dst_port

    @property
    def size_bytes(self) -> float:
        """Raises :class:`InformationError`: the size is hidden."""
        raise InformationError(f"flow {self.flow_id}: size is hidden (hide_sizes); a "
                               f"scheduler reads bytes sent and completions only")

    def __repr__(self) -> str:
        return f"HiddenFlowSpec({self.flow_id} {self.src}->{self.dst})"


class HiddenCoflowSpec:
    """A :class:`CoflowSpec` with its flows' sizes hidden (:class:`HiddenFlowSpec`):
    ``coflow_id``, ``arrival_s``, ``weight``, ``flows`` and ``width`` as the hidden
    spec's; ``total_bytes`` raises :class:`InformationError`."""

    __slots__ = ("coflow_id", "arrival_s", "flows", "weight")

    def __init__(self, spec: CoflowSpec):
        self.coflow_id = spec.coflow_id
        self.arrival_s = spec.arrival_s
        self.weight = spec.weight
        self.flows = tuple(HiddenFlowSpec(f) for f in spec.flows)

    @property
    def total_bytes(self) -> float:
        """Raises :class:`InformationError`: the sizes are hidden."""
        raise InformationError(f"coflow {self.coflow_id}: sizes are hidden (hide_sizes)")

    @property
    def width(self) -> int:
        """Number of flows."""
        return len(self.flows)


def hide_sizes(spec: CoflowSpec) -> HiddenCoflowSpec:
    """``spec`` as a scheduler that is not told flow sizes sees it
    (:class:`HiddenCoflowSpec`)."""
    return HiddenCoflowSpec(spec)


class InfoPolicy:
    """Decides whether unfinished flow sizes are visible (set per scheduler run)."""

    __slots__ = ("clairvoyant",)

    def __init__(self, clairvoyant: bool = True):
        self.clairvoyant = clairvoyant


class FlowState:
    """Live state of one flow, as a scheduler sees it.

    Always visible: ``flow_id``, ``coflow_id``, ``src``, ``dst``, ``dst_port``,
    ``bytes_sent`` (bytes), ``done`` and ``finish_s``.  ``size_bytes`` and
    ``remaining_bytes`` raise :class:`InformationError` for a non-clairvoyant policy
    while the flow is unfinished (after it finishes, its size is its bytes sent).
    ``path`` and ``rate_bps`` hold the allocation currently in force.
    """

    __slots__ = ("spec", "flow_id", "coflow_id", "src", "dst", "dst_port", "bytes_sent",
                 "finish_s", "path", "rate_bps", "_policy", "start_s", "_sim_idx", "_ord")

    def __init__(self, spec: FlowSpec, policy: InfoPolicy, start_s: float):
        self.spec = spec
        self.flow_id = spec.flow_id
        self.coflow_id = spec.coflow_id
        self.src = spec.src
        self.dst = spec.dst
        self.dst_port = spec.dst_port
        self.bytes_sent = 0.0
        self.finish_s: Optional[float] = None
        self.path: Optional[Tuple[str, ...]] = None
        self.rate_bps = 0.0
        self._policy = policy
        self.start_s = start_s
        # Index of the flow in the simulator's flow arrays (-1: no simulator owns it).
        self._sim_idx = -1
        self._ord = -1  # position in its CoflowState's flows (set there; -1: none)

    @property
    def done(self) -> bool:
        """True once every byte has been delivered."""
        return self.finish_s is not None

    @property
    def size_bytes(self) -> float:
        """Flow volume in bytes.  Raises InformationError when not clairvoyant (or
        the size is hidden: :class:`HiddenFlowSpec`) and the flow is unfinished; a
        finished flow's size is its bytes sent."""
        if self.finish_s is None:
            if not self._policy.clairvoyant:
                raise InformationError(f"flow {self.flow_id}: size is unknown to a "
                                       f"non-clairvoyant scheduler")
        elif not self.spec.size_known:
            return self.bytes_sent
        return self.spec.size_bytes

    @property
    def size_known(self) -> bool:
        """True when the scheduler may read this flow's size: the policy is
        clairvoyant and the size is given (not a :class:`HiddenFlowSpec`), or the
        flow has finished."""
        return self.finish_s is not None or (self._policy.clairvoyant
                                             and self.spec.size_known)

    @property
    def remaining_bytes(self) -> float:
        """Bytes still to send.  Raises InformationError when not clairvoyant."""
        return max(self.size_bytes - self.bytes_sent, 0.0)

    def _true_remaining(self) -> float:
        # For the simulator/controller only, never for schedulers.
        return max(self.spec.size_bytes - self.bytes_sent, 0.0)

    def __repr__(self) -> str:
        return (f"FlowState({self.flow_id} {self.src}->{self.dst} sent={self.bytes_sent:.0f}"
                f" rate={self.rate_bps:.3g} done={self.done})")


_FINISH = attrgetter("finish_s")


class CoflowState:
    """Live state of one coflow: its spec, its :class:`FlowState` s and timing.

    ``flows`` lists every flow (finished ones too: Philae learns from them);
    :meth:`active_flows` lists the unfinished ones.  ``finish_s`` is set when the last
    flow finishes; ``cct_s`` is then ``finish_s - arrival_s``.
    """

    __slots__ = ("spec", "coflow_id", "arrival_s", "weight", "flows", "finish_s", "_active",
                 "_stale", "_sent")

    def __init__(self, spec: CoflowSpec, policy: InfoPolicy):
        self.spec = spec
        self.coflow_id = spec.coflow_id
        self.arrival_s = spec.arrival_s
        self.weight = spec.weight
        self.flows: List[FlowState] = [FlowState(f, policy, spec.arrival_s) for f in spec.flows]
        for i, f in enumerate(self.flows):
            f._ord = i
        self.finish_s: Optional[float] = None
        self._active: Optional[List[FlowState]] = None
        self._stale: Optional[List[FlowState]] = None
        # Total bytes sent, kept by a simulator that does not write every flow's
        # counter (None: sum the flows' counters).
        self._sent: Optional[float] = None

    def active_flows(self) -> List[FlowState]:
        """Unfinished flows, in flow order (a new list object whenever the set changed:
        callers may cache on its identity)."""
        if self._active is None:
            # after _invalidate(finished_only=True) only the last active list needs
            # filtering: O(active flows), not O(all flows) per completion
            fl = self.flows if self._stale is None else self._stale
            self._active = list(compress(fl, map(is_, map(_FINISH, fl), repeat(None))))
            self._stale = None
        return self._active

    def _invalidate(self, finished_only: bool = True) -> None:
        """Forget the cached active list.  ``finished_only``: the only change since
        the last :meth:`active_flows` is that flows finished (a finished flow never
        becomes active again)."""
        self._stale = self._active if finished_only else None
        self._active = None

    def _drop_finished(self, flows: Sequence["FlowState"]) -> None:
        """The only change since the last :meth:`active_flows` is that ``flows`` (all
        in the active list) finished: remove them from a copy of the cached list (a
        new list object, as callers cache on identity).  A C-speed memmove per flow
        instead of re-filtering every active flow; many at once fall back to
        :meth:`_invalidate`."""
        act = self._active
        if act is None or len(flows) > 16:
            self._invalidate()
            return
        lst = act.copy()
        for f in flows:
            # the active list is in flow order: find f by bisection on _ord
            k = f._ord
            lo, hi = 0, len(lst)
            while lo < hi:
                mid = (lo + hi) // 2
                if lst[mid]._ord < k:
                    lo = mid + 1
                else:
                    hi = mid
            if k < 0 or lo == len(lst) or lst[lo] is not f:
                # not in the cached list: filter from scratch
                self._invalidate(finished_only=False)
                return
            del lst[lo]
        self._active = lst
        self._stale = None

    @property
    def bytes_sent(self) -> float:
        """Total bytes sent by all the coflow's flows (bytes).

        A simulator running a scheduler whose ``reads_progress`` is ``"coflow"`` keeps
        this total itself and does not update unfinished flows' own counters."""
        if self._sent is not None:
            return self._sent
        return sum(f.bytes_sent for f in self.flows)

    @property
    def width(self) -> int:
        """Number of flows."""
        return len(self.flows)

    @property
    def done(self) -> bool:
        """True when every flow has finished."""
        return self.finish_s is not None

    @property
    def cct_s(self) -> Optional[float]:
        """Coflow completion time in seconds, once done."""
        return None if self.finish_s is None else self.finish_s - self.arrival_s

    def __repr__(self) -> str:
        return f"CoflowState({self.coflow_id} flows={len(self.flows)} done={self.done})"


@dataclass
class Allocation:
    """A scheduler's decision for one flow: its path (node names) and rate in bit/s."""

    path: Tuple[str, ...]
    rate_bps: float


class Schedule:
    """What a scheduler returns at one decision point.

    Attributes:
        allocations: flow_id -> :class:`Allocation` for every active flow that gets
            a path; a flow that is absent, or present with rate 0, waits.
            Flows absent from the dict keep no path.
        order: coflow ids in the scheduler's priority order (informational).
        fallback: coflow ids whose optimisation failed and that the controller must
            put on default forwarding (RAPIER's LP time-out), with reasons.
        info: free-form diagnostics (e.g. LP solve times) for logs and the REST API.

    A schedule built with :meth:`from_vectors` keeps its allocations as parallel
    vectors (flows, paths, rates) and builds the ``allocations`` dict only when it is
    first read, so that the simulator can apply it without one Python object per
    flow.  Both forms mean the same thing.
    """

    def __init__(self, allocations: Optional[dict] = None, order: Optional[List[str]] = None,
                 fallback: Optional[dict] = None, info: Optional[dict] = None):
        self._allocations = {} if allocations is None else allocations
        self.order = [] if order is None else order
        self.fallback = {} if fallback is None else fallback
        self.info = {} if info is None else info
        self._vec = None
        self._nz = None

    @classmethod
    def from_vectors(cls, flows: Sequence["FlowState"], paths: Sequence[Sequence[str]],
                     rates, order: Optional[List[str]] = None, fallback: Optional[dict] = None,
                     info: Optional[dict] = None, tuple_paths: bool = False,
                     nonzero=None) -> "Schedule":
        """A schedule given as parallel vectors: ``flows[i]`` gets ``paths[i]`` (node
        names; ``None``: no allocation, the flow waits with no path) at ``rates[i]``
        bit/s.  Equivalent to ``Schedule({f.flow_id: Allocation(p, float(r))})``
        (a later duplicate flow id wins), but the dict is only built on first access
        to :attr:`allocations`; the simulator reads the vectors directly.  Paths are
        stored as tuples (other sequences are converted); the simulator skips
        re-validating a flow whose path is the same tuple object as at the previous
        event, so reuse path tuples across calls.  ``tuple_paths=True`` promises that
        every path already is a tuple or ``None`` and skips the O(flows) check (the
        schedulers' route caches hold tuples).  ``nonzero`` (optional, int64,
        increasing) promises that every rate outside those positions is +0.0: the
        simulator then finds the sending flows among them instead of scanning every
        rate (:meth:`nonzero_hint`).

        Raises:
            ValueError: the three vectors differ in length.
        """
        import numpy as np

        r = np.asarray(rates, dtype=float)
        if not (len(flows) == len(paths) == r.shape[0]):
            raise ValueError(f"from_vectors: {len(flows)} flows, {len(paths)} paths and "
                             f"{r.shape[0]} rates differ in length")
        if not tuple_paths and not set(map(type, paths)) <= {tuple, type(None)}:
            paths = [p if (p is None or type(p) is tuple) else tuple(p) for p in paths]
        s = cls(None, order, fallback, info)
        s._allocations = None
        s._vec = (flows, paths, r)
        s._nz = nonzero
        return s

    def nonzero_hint(self):
        """The ``nonzero`` positions given to :meth:`from_vectors` (every other rate
        is +0.0), or None: none given, or the schedule is no longer in vector form."""
        return self._nz if self._allocations is None else None

    def vectors(self):
        """``(flows, paths, rates)`` when the schedule is still in vector form (built by
        :meth:`from_vectors` and :attr:`allocations` never read), else ``None``.
        ``rates`` is a float numpy array in bit/s."""
        return self._vec if self._allocations is None else None

    @property
    def allocations(self) -> dict:
        """flow_id -> :class:`Allocation` (built from the vectors on first access)."""
        if self._allocations is None:
            flows, paths, rates = self._vec
            self._allocations = {f.flow_id: Allocation(p, r)
                                 for f, p, r in zip(flows, paths, rates.tolist())
                                 if p is not None}
        return self._allocations

    @allocations.setter
    def allocations(self, value: dict) -> None:
        self._allocations = value
        self._vec = None

    def __eq__(self, other) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return ((self.allocations, self.order, self.fallback, self.info)
                == (other.allocations, other.order, other.fallback, other.info))

    def __repr__(self) -> str:
        return (f"Schedule(allocations={self.allocations!r}, order={self.order!r}, "
                f"fallback={self.fallback!r}, info={self.info!r})")
