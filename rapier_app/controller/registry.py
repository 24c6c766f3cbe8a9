"""The coflow registry of the controller: coflows submitted, cancelled, listed.

Part of :class:`.core.ControllerCore` (as :class:`RegistryMixin`).  Coflows are kept
as :class:`~rapier_app.core.model.CoflowState` objects shared with the scheduler (one
:class:`~rapier_app.core.model.InfoPolicy`, as in the simulator), each in one of the
states ``active``, ``done`` and ``cancelled``.  Every change returns the
reschedule's :class:`~.rules.Actions`.  Times in seconds, sizes in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..core.model import CoflowSpec, CoflowState, FlowSpec
from ..httpjson import RequestError
from .rules import Actions
from .store import CoflowRecord, StoreError
from .validation import PAUSE_EVERY, parse_coflow_request

#: The states of a coflow in the registry.
ACTIVE, DONE, CANCELLED = "active", "done", "cancelled"
#: The scheduling decision of a coflow (``decision`` in ``GET /coflows/<id>``): accepted
#: and waiting for the decision worker, given paths/rates by the scheduler, or put on
#: default forwarding (scheduler fallback, failure, or decision budget exceeded).
QUEUED, SCHEDULED, FALLBACK = "queued", "scheduled", "fallback"


def coflow_spec(cid: str, arrival_s: float, flows: Sequence[FlowSpec],
                weight: float) -> CoflowSpec:
    """A :class:`~rapier_app.core.model.CoflowSpec` of ``flows`` (possibly none: an
    open coflow before its first flow, which :class:`CoflowSpec` itself refuses; it
    is never handed to a scheduler while it has no active flow)."""
    if flows:
        return CoflowSpec(cid, float(arrival_s), tuple(flows), float(weight))
    spec = object.__new__(CoflowSpec)
    for name, value in (("coflow_id", cid), ("arrival_s", float(arrival_s)), ("flows", ()),
                        ("weight", float(weight))):
        object.__setattr__(spec, name, value)
    return spec


@dataclass
class FlowTrack:
    """Controller-side bookkeeping of one flow.

    Attributes:
        cookie: the cookie of every rule of the flow.
        first_dpid: dpid of the flow's first-hop switch (whose counters count).
        last_bytes, last_packets: last raw counters of the first-hop rule.
        offset_bytes: payload bytes accumulated before a counter reset.
        last_payload: last payload estimate (bytes).
        last_poll_s: time of the last counter sample (s).
        last_change_s: time the payload estimate last grew (s).
        restored_s: time the flow was reloaded from the database after a restart
            (None for a flow accepted by this run); see :mod:`.progress`.
        proto: ``"tcp"`` or ``"udp"``.  src_port: the source port matched, or None
            (the destination port is the flow's ``dst_port``).
        size_known: False for a flow registered without a size: its
            ``spec.size_bytes`` is an estimate (:mod:`.openflows`).
    """

    cookie: int
    first_dpid: int
    last_bytes: int = 0
    last_packets: int = 0
    offset_bytes: float = 0.0
    last_payload: float = 0.0
    last_poll_s: Optional[float] = None
    last_change_s: Optional[float] = None
    restored_s: Optional[float] = None
    proto: str = "tcp"
    src_port: Optional[int] = None
    size_known: bool = True


class RegistryMixin:
    """Submit, look up, cancel and list coflows (``POST``/``GET``/``DELETE /coflows``).

    Uses the core's ``topology``, ``policy``, ``coflows``, ``state``, ``ended_s``,
    ``tracks``, ``flow_by_cookie``, ``_dpid``, ``_next_cookie``, ``_next_auto``,
    ``store`` (a :class:`~.store.Store` or None), and its :meth:`reschedule`, :meth:`decide`
    and ``_log``.
    """

    #: called between the steps of :meth:`submit` and every :data:`PAUSE_EVERY` flows
    #: inside them (validation, overlap check, database write, admission), and
    #: while a coflow's view is built (None: never).  The Ryu app yields to the
    #: event loop there (``app._pause``, once a stretch ran over its ``SLICE_S``:
    #: ``/health`` is served) *keeping* its lock, so that no reader sees a
    #: half-added coflow; set by ``app._start_loop``
    hold_pause: Optional[Callable[[], None]] = None

    def _pause_every(self, i: int) -> None:
        """Call :attr:`hold_pause` when ``i`` (a flow's position in a loop) is a
        non-zero multiple of :data:`PAUSE_EVERY`."""
        if i and i % PAUSE_EVERY == 0 and self.hold_pause is not None:
            self.hold_pause()

    def _pause_step(self) -> None:
        """Call :attr:`hold_pause` between two steps of a submission."""
        if self.hold_pause is not None:
            self.hold_pause()

    # -- REST operations ------------------------------------------------------------
    def parse_submission(self, body, pause: Optional[Callable[[], None]] = None
                         ) -> Dict[str, Any]:
        """Validate a ``POST /coflows`` body against the topology in force
        (:func:`~.validation.parse_coflow_request`, ``pause`` called every
        :data:`PAUSE_EVERY` flows) without changing anything: the Ryu app runs it
        before it takes its lock.  Returns the parsed request plus ``"topology"``,
        the topology it was checked against (:meth:`submit` checks again if that
        changed).  Raises RequestError 400 as :meth:`submit`."""
        topo = self.topology
        req = parse_coflow_request(body, topo, pause)
        req["topology"] = topo
        return req

    def submit(self, body, now: float, schedule: bool = True,
               parsed: Optional[Dict[str, Any]] = None) -> Tuple[CoflowState, Actions]:
        """Accept a new coflow (``POST /coflows``): validate, record it (``decision``
        ``queued``), then decide.  With ``"open": true`` it may have no flow yet and
        accepts more (:mod:`.openflows`).

        The one way a coflow enters the controller: the Ryu app
        (:meth:`~.app.RapierController.submit`, behind the REST route) passes
        ``schedule=False`` and leaves :meth:`decide` to the decision worker
        (:mod:`.worker`); the in-process core (tests) decides here.

        Args:
            body: request body (see :func:`parse_coflow_request`).
            now: current time in seconds; becomes the coflow's arrival time.
            schedule: True: run :meth:`decide` at ``now`` before returning; False:
                only accept and record it (the returned Actions are empty).
            parsed: ``body`` already validated by :meth:`parse_submission` (used
                when the topology in force is still the one it was checked against).

        Returns:
            (the coflow's state, the actions of the decision).

        Raises:
            RequestError: 400 for bad input or a duplicate coflow id; 409 for a
            flow whose match overlaps a live flow's (:mod:`.matches`: the rules
            would collide; the message names both); 503 when the database write fails.  Nothing is changed then
            (the database write is the last step before the coflow is accepted).
        """
        req = parsed
        if req is None or req.get("topology") is not self.topology:
            req = parse_coflow_request(body, self.topology, self.hold_pause)
        cid = req["id"]
        next_auto = self._next_auto
        if cid is None:
            while self._known_state(f"c{next_auto}") is not None:
                next_auto += 1
            cid = f"c{next_auto}"
            next_auto += 1
        elif self._known_state(cid) is not None:
            raise RequestError(400, "id", f"coflow {cid!r} already exists "
                                          f"(state {self._known_state(cid)})")
        self.check_overlaps(cid, req["flows"], 0, 409)
        self._pause_step()
        arrival = max(float(now), 0.0)
        known = [r.size_bytes for r in req["flows"] if r.size_bytes is not None]
        prepared = self.prepare_flows(cid, req["flows"], 0, None, known)
        self._pause_step()
        spec = coflow_spec(cid, arrival, [p[0] for p in prepared], req["weight"])
        c = CoflowState(spec, self.policy)
        if self.store is not None:  # durable before it is accepted
            rec = CoflowRecord(cid, float(c.weight), float(c.arrival_s), ACTIVE,
                               flows=[p[2] for p in prepared], open=req["open"],
                               name=req["name"])
            try:
                with self.store.batch():
                    self.store.add_coflow(rec, self.hold_pause)
                    self.store.set_meta("next_cookie", self._next_cookie + len(prepared))
                    self.store.set_meta("next_auto", next_auto)
            except StoreError as exc:
                self._log("error", "coflow %s not accepted: %s", cid, exc)
                raise RequestError(503, "store", f"the coflow could not be recorded: "
                                                 f"{exc}") from None
            self._pause_step()
        self._next_auto = next_auto
        self._next_cookie += len(prepared)
        self.coflows[cid] = c
        self.state[cid] = ACTIVE
        if req["open"]:
            self.open_coflows.add(cid)
        if req["name"] is not None:
            self.names[cid] = req["name"]
        self.attach_flows(c.flows, [p[1] for p in prepared])
        self._log("info", "coflow %s arrived at %.3f s: %d flows, %.0f bytes", cid, now,
                  len(c.flows), spec.total_bytes)
        if self.is_background(c):
            # below the size threshold: default forwarding at once, no decision
            # to wait for (.coexist)
            self.decision[cid] = "background"
            acts = Actions()
            for f in c.flows:  # a counting rule on the first hop (ECMP action)
                r = self._counting_rule(f)
                self.desired[(r.dpid, f.flow_id)] = r
                acts.rules.append(r)
            return c, (acts.extend(self.decide(now)) if schedule else acts)
        self.decision[cid] = QUEUED
        if not schedule:
            return c, Actions()
        return c, self.decide(now)

    def get(self, cid: str) -> CoflowState:
        """The coflow ``cid``.  Raises RequestError 404 naming ``id``."""
        c = self.coflows.get(cid)
        if c is None:
            raise RequestError(404, "id", f"no coflow {cid!r}")
        return c

    def _known_state(self, cid: str) -> Optional[str]:
        """State of ``cid`` in memory or, once pruned from memory, in the database;
        None for an id never accepted."""
        st = self.state.get(cid)
        if st is None and self.store is not None:
            rec = self.store.get(cid)
            st = None if rec is None else rec.state
        return st

    def cancel(self, cid: str, now: float) -> Actions:
        """Cancel coflow ``cid`` (``DELETE /coflows/<id>``): its rules and rate limits
        go, the others are rescheduled.

        Raises:
            RequestError: 404 for an unknown id; 400 when it is already done or
            cancelled (also once it left memory: the database answers); 503 when the
            database write fails (nothing changed).
        """
        st = self._known_state(cid)
        if st is None:
            raise RequestError(404, "id", f"no coflow {cid!r}")
        if st != ACTIVE:
            raise RequestError(400, "id", f"coflow {cid!r} is already {st}")
        c = self.coflows[cid]
        if self.store is not None:
            try:
                self.store.update_coflow(cid, CANCELLED, now, None)
            except StoreError as exc:
                raise RequestError(503, "store", f"the cancel could not be recorded: "
                                                 f"{exc}") from None
        self.state[cid] = CANCELLED
        self.ended_s[cid] = now
        for f in c.flows:
            f.rate_bps = 0.0
        self.note_left(f.flow_id for f in c.flows)  # rules and limits: next apply
        self._log("info", "coflow %s cancelled at %.3f s", cid, now)
        return self.reschedule(now)

    def active(self) -> List[CoflowState]:
        """Active coflows in arrival order."""
        return [c for cid, c in self.coflows.items() if self.state[cid] == ACTIVE]
