"""Coflows whose flows are registered over time, and flows of unknown size.

Part of :class:`.core.ControllerCore` (as :class:`OpenFlowsMixin`).  An application
that does not know every flow of a coflow up front (a shuffle: flows appear as tasks
connect, sizes are known late or never) creates the coflow *open*
(``POST /coflows`` with ``"open": true``), adds flows with ``POST
/coflows/<id>/flows`` (:meth:`OpenFlowsMixin.add_flows`), and *closes* it
(``POST /coflows/<id>/close``, :meth:`OpenFlowsMixin.close_coflow`) once no more
flows will come.  A coflow completes when it is closed and every flow of it is done
(reported done, or detected from the counters, :mod:`.progress`).

Flows are matched on the wire by source and destination, protocol and the ports
given (:mod:`.matches`; OpenFlow rules :func:`.rules.flow_match`, agent filters
:func:`.pushes.flow_limit`).  A flow whose match overlaps a live flow's (this
coflow's or another's) is refused (:class:`~.matches.MatchIndex`: a few dict
look-ups, not a scan of every flow).

Unknown sizes: a flow registered without ``size_bytes`` is given to the scheduler
with an estimate (:mod:`rapier_app.core.estimate`): at first
:func:`~rapier_app.core.estimate.initial_estimate` of the sizes of its coflow's flows
that have one; each time its counted bytes (:meth:`~.progress.ProgressMixin.
apply_flow_stats`) reach the estimate it doubles (:meth:`OpenFlowsMixin.
grow_estimates`) and the scheduler decides again.  Such a flow is finished by a done
report or by idle counters, never by reaching its (estimated) size; once finished,
its size is the bytes counted.

Everything is in the database (:mod:`.store`): the open flag and name of a coflow,
each flow's ports, protocol, estimate (``size_known`` 0) and the time it was added,
so a restarted controller keeps open coflows open (:mod:`.durability`).

Units: bytes, seconds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..core.estimate import initial_estimate, next_estimate
from ..core.model import CoflowState, FlowSpec, FlowState
from ..httpjson import RequestError
from .matches import Match, MatchIndex
from .registry import ACTIVE, DONE, FlowTrack, coflow_spec
from .rules import Actions, cookie_for, flow_match
from .store import FlowRecord, StoreError
from .validation import FlowRequest, parse_add_flows_request


class OpenFlowsMixin:
    """Open coflows, flows added over time, closing, unknown sizes (module doc).

    Uses the core's ``coflows``, ``state``, ``tracks``, ``flow_by_cookie``,
    ``policy``, ``store``, ``settings``, ``topology``, ``_dpid``, ``_next_cookie``
    and its :meth:`decide`, :meth:`_known_state`, ``_log``.
    """

    def setup_open_flows(self) -> None:
        """Initialise the state of this mixin (called by the core's constructor)."""
        #: ids of the coflows still accepting flows
        self.open_coflows: Set[str] = set()
        #: coflow id -> its ``name`` (free text), when given
        self.names: Dict[str, str] = {}
        #: live flows by match (:class:`~.matches.MatchIndex`; FlowState keys)
        self.match_index = MatchIndex(self._flow_live)
        #: flows were added since the last decision (:meth:`decide` must run)
        self.adds_pending = False

    def _flow_live(self, f: FlowState) -> bool:
        return (not f.done and self.state.get(f.coflow_id) == ACTIVE
                and self.coflows.get(f.coflow_id) is not None)

    # -- matches ------------------------------------------------------------------
    def flow_match_of(self, f: FlowState) -> Match:
        """Flow ``f``'s :class:`~.matches.Match` (host names)."""
        tr = self.tracks[f.flow_id]
        return Match(f.src, f.dst, tr.proto, tr.src_port, f.dst_port)

    def rule_match(self, f: FlowState) -> Tuple[Tuple[str, Any], ...]:
        """The OpenFlow match of flow ``f``'s rules (:func:`.rules.flow_match`)."""
        tr = self.tracks[f.flow_id]
        return flow_match(self.ip(f.src), self.ip(f.dst), tr.proto, tr.src_port, f.dst_port)

    def check_overlaps(self, cid: str, reqs: Sequence[FlowRequest], first: int,
                       status: int) -> None:
        """Refuse ``reqs`` (to become flows ``first``, ``first + 1``, ... of ``cid``)
        when one overlaps a live flow.

        Raises:
            RequestError: ``status`` (400 for ``POST /coflows``, as before open
            coflows existed; 409 for ``POST /coflows/<id>/flows``) naming
            ``flows[i]``, the message naming both flows (``<coflow>/<index>``).
        """
        for i, r in enumerate(reqs):
            self._pause_every(i)
            other = self.match_index.find(r.match)
            if other is None:
                continue
            om = self.flow_match_of(other)
            if status == 400:
                raise RequestError(400, f"flows[{i}]", f"duplicate flow: "
                                   f"{r.match.describe()} is already used by active "
                                   f"flow {other.flow_id} ({om.describe()})")
            raise RequestError(status, f"flows[{i}]", f"flow {cid}/{first + i} "
                               f"({r.match.describe()}) overlaps live flow "
                               f"{other.flow_id} ({om.describe()})")

    # -- building flows -------------------------------------------------------------
    def prepare_flows(self, cid: str, reqs: Sequence[FlowRequest], first: int,
                      start_s: Optional[float], known: Sequence[float]
                      ) -> List[Tuple[FlowSpec, FlowTrack, FlowRecord]]:
        """Specs, tracks and database records of new flows ``first``, ... of ``cid``
        (cookies from ``_next_cookie``, not yet advanced).  A flow of unknown size
        gets :func:`~rapier_app.core.estimate.initial_estimate` of ``known`` (the
        sizes of the coflow's flows that have one).  ``start_s``: the time the flows
        were added (None: the coflow's arrival)."""
        est = None
        out = []
        for i, r in enumerate(reqs):
            self._pause_every(i)
            idx = first + i
            fid = f"{cid}/{idx}"
            size = r.size_bytes
            if size is None:
                if est is None:
                    est = initial_estimate(known, self.settings.unknown_size_floor_bytes)
                size = est
            cookie = cookie_for(self._next_cookie + i)
            spec = FlowSpec(fid, cid, r.src, r.dst, float(size), r.dst_port)
            first_dpid = self._dpid[self.topology.attachment(r.src)[0]]
            tr = FlowTrack(cookie, first_dpid, proto=r.protocol, src_port=r.src_port,
                           size_known=r.size_bytes is not None)
            rec = FlowRecord(fid, idx, r.src, r.dst, float(size), r.dst_port, cookie,
                             src_port=r.src_port, proto=r.protocol,
                             size_known=r.size_bytes is not None, start_s=start_s)
            out.append((spec, tr, rec))
        return out

    def attach_flows(self, flows: Sequence[FlowState], tracks: Sequence[FlowTrack]) -> None:
        """Register ``flows`` (in their coflow already) with their tracks: cookies
        map back to them, live ones are filed in :attr:`match_index`."""
        for i, (f, tr) in enumerate(zip(flows, tracks)):
            self._pause_every(i)
            self.tracks[f.flow_id] = tr
            self.flow_by_cookie[tr.cookie] = f
            if not f.done:
                self.match_index.add(f, self.flow_match_of(f))

    @staticmethod
    def respec(c: CoflowState) -> None:
        """Rebuild ``c.spec`` from its flows' specs (after flows were added or a
        size changed) and forget its cached active list."""
        c.spec = coflow_spec(c.coflow_id, c.arrival_s, [f.spec for f in c.flows], c.weight)
        c._invalidate(finished_only=False)

    # -- REST: add, close ---------------------------------------------------------------
    def add_flows(self, cid: str, body, now: float, schedule: bool = True
                  ) -> Tuple[List[FlowState], Actions]:
        """Add flows to open coflow ``cid`` (``POST /coflows/<id>/flows``).

        Args:
            body: ``{"flows": [FLOW, ...]}`` (:func:`~.validation.parse_add_flows_request`).
            now: current time (s): the flows' start.
            schedule: True: :meth:`decide` now; False: the caller (the decision
                worker) will (:attr:`adds_pending` is set either way).

        Returns:
            (the new flows, in index order; the decision's actions).

        Raises:
            RequestError: 404 unknown coflow; 409 coflow closed, done or cancelled;
            400 bad input naming the field; 413 more than ``max_flows_per_coflow``
            flows in the coflow; 409 a flow overlapping a live flow (naming both);
            503 the database write failed.  Nothing is added then.
        """
        st = self._known_state(cid)
        if st is None:
            raise RequestError(404, "id", f"no coflow {cid!r}")
        if st != ACTIVE:
            raise RequestError(409, "id", f"coflow {cid!r} is {st}: no flows can be added")
        if cid not in self.open_coflows:
            raise RequestError(409, "id", f"coflow {cid!r} is closed: no flows can be added")
        reqs = parse_add_flows_request(body, self.topology)
        c = self.coflows[cid]
        cap = self.settings.max_flows_per_coflow
        if len(c.flows) + len(reqs) > cap:
            raise RequestError(413, "flows", f"at most {cap} flows per coflow: it has "
                                             f"{len(c.flows)}, {len(reqs)} more refused")
        first = len(c.flows)
        self.check_overlaps(cid, reqs, first, 409)
        known = [f.spec.size_bytes for f in c.flows if self.tracks[f.flow_id].size_known]
        known += [r.size_bytes for r in reqs if r.size_bytes is not None]
        prepared = self.prepare_flows(cid, reqs, first, now, known)
        if self.store is not None:
            try:
                with self.store.batch():
                    self.store.add_flows(cid, [rec for _, _, rec in prepared])
                    self.store.set_meta("next_cookie", self._next_cookie + len(prepared))
            except StoreError as exc:
                self._log("error", "flows of coflow %s not accepted: %s", cid, exc)
                raise RequestError(503, "store", f"the flows could not be recorded: "
                                                 f"{exc}") from None
        self._next_cookie += len(prepared)
        new = []
        for i, (spec, _, _) in enumerate(prepared):
            f = FlowState(spec, self.policy, max(float(now), c.arrival_s))
            f._ord = first + i
            new.append(f)
        c.flows = c.flows + new  # a new list: caches keyed on its identity see the change
        self.respec(c)
        self.attach_flows(new, [tr for _, tr, _ in prepared])
        self.notify_scheduler([cid])
        self.adds_pending = True
        self._log("info", "coflow %s: %d flows added at %.3f s (%d in all)", cid, len(new),
                  now, len(c.flows))
        return new, (self.decide(now) if schedule else Actions())

    def close_coflow(self, cid: str, now: float) -> Actions:
        """Close coflow ``cid`` (``POST /coflows/<id>/close``): no more flows; it
        completes now if every flow of it is done (its finish is the last flow's,
        or ``now`` for a coflow that never had a flow).  Idempotent.

        Raises:
            RequestError: 404 unknown coflow; 503 the database write failed
            (nothing changed).
        """
        st = self._known_state(cid)
        if st is None:
            raise RequestError(404, "id", f"no coflow {cid!r}")
        if cid not in self.open_coflows or st != ACTIVE:  # closed already, or ended
            self.open_coflows.discard(cid)
            return Actions()
        c = self.coflows[cid]
        done = not c.active_flows()
        if self.store is not None:
            try:
                with self.store.batch():
                    self.store.set_open(cid, False)
                    if done:
                        self.store.update_coflow(cid, DONE, now, self._finish_time(c, now))
            except StoreError as exc:
                raise RequestError(503, "store", f"the close could not be recorded: "
                                                 f"{exc}") from None
        self.open_coflows.discard(cid)
        self._log("info", "coflow %s closed at %.3f s (%d flows)", cid, now, len(c.flows))
        if done:
            self.complete_coflow(c, now)
        return Actions()

    @staticmethod
    def _finish_time(c: CoflowState, now: float) -> float:
        return max((f.finish_s for f in c.flows), default=max(now, c.arrival_s))

    def complete_coflow(self, c: CoflowState, now: float) -> None:
        """Mark coflow ``c`` done (every flow done and it is closed), in memory."""
        c.finish_s = self._finish_time(c, now)
        self.state[c.coflow_id] = DONE
        self.ended_s[c.coflow_id] = now
        self.metrics.cct.observe(c.cct_s)
        self._log("info", "coflow %s done: CCT %.3f s", c.coflow_id, c.cct_s)

    def is_open(self, cid: str) -> bool:
        """True while coflow ``cid`` accepts flows."""
        return cid in self.open_coflows

    # -- unknown sizes ------------------------------------------------------------------
    def grow_estimate(self, f: FlowState, sent_bytes: float) -> bool:
        """Flow ``f`` of unknown size has sent ``sent_bytes``: when they reached its
        estimate, double it (:func:`~rapier_app.core.estimate.next_estimate`) and
        return True (the caller decides again), else False."""
        est = f.spec.size_bytes
        new = next_estimate(sent_bytes, est)
        if new == est:
            return False
        f.spec = replace(f.spec, size_bytes=new)
        self.respec(self.coflows[f.coflow_id])
        self._log("info", "flow %s: %.0f bytes counted, size estimate %.0f -> %.0f bytes",
                  f.flow_id, sent_bytes, est, new)
        return True

    def sizes_changed(self, flows: Sequence[FlowState], now: float) -> None:
        """Estimates of ``flows`` changed: tell the scheduler
        (:meth:`notify_scheduler`) and write them to the database (a failed write is
        logged)."""
        if not flows:
            return
        self.notify_scheduler({f.coflow_id for f in flows})
        if self.store is not None:
            try:
                self.store.update_sizes([(f.flow_id, float(f.spec.size_bytes),
                                          self.tracks[f.flow_id].size_known) for f in flows])
            except StoreError as exc:
                self._log("error", "%s", exc)
                self.errors.append(f"{now:.3f}: {exc}")

    def notify_scheduler(self, coflow_ids) -> None:
        """Call the scheduler's optional hook ``coflows_changed(ids)``
        (:meth:`~rapier_app.scheduling.base.Scheduler.coflows_changed`: flows added,
        sizes changed; it drops what it derived from them).  A failing hook is
        logged, as :meth:`~.progress.ProgressMixin._finish` does."""
        hook = getattr(self.scheduler, "coflows_changed", None)
        if hook is None:
            return
        try:
            hook(sorted(coflow_ids))
        except Exception as exc:  # noqa: BLE001 -- the next decision still runs
            msg = f"scheduler {self.settings.scheduler} coflows_changed failed: {exc!r}"
            self._log("error", "%s", msg)
            self.errors.append(msg)

    def finished_unknown(self, f: FlowState) -> None:
        """Flow ``f`` of unknown size finished: its size becomes the bytes counted
        (at least 1), its coflow's spec follows."""
        tr = self.tracks[f.flow_id]
        size = max(float(tr.last_payload), float(f.bytes_sent), 1.0)
        f.spec = replace(f.spec, size_bytes=size)
        self.respec(self.coflows[f.coflow_id])


__all__ = ["OpenFlowsMixin", "coflow_spec"]
