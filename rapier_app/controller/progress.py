"""Flow progress from switch byte counters, and completion detection.

Part of :class:`.core.ControllerCore` (as :class:`ProgressMixin`): the Ryu shell polls
flow stats of the first-hop switches (:meth:`ProgressMixin.stats_dpids`) and hands
the replies to :meth:`ProgressMixin.apply_flow_stats`; finished flows are closed,
their coflows too when they were the last, and the scheduler is called again.

Completion detection (documented here because the emulation relies on it): a flow
is identified on the wire by (src IP, dst IP, TCP, dst port).  Its first-hop rule
on the source host's switch counts every data packet of the flow's direction.  The
payload estimate is ``byte_count - packet_count * header_bytes`` with
``header_bytes = 66`` (Ethernet 14 + IPv4 20 + TCP 20 + timestamp option 12; valid
with the segmentation offloads off, as the emulation runs).  A flow is done when the
estimate reaches ``size_bytes - finish_slack_bytes``; its finish time is
interpolated linearly between the two polls that bracket that crossing.  As a second
signal, a flow whose counters have not moved for ``idle_finish_s`` seconds while its
estimate is at least ``(1 - idle_fraction) * size_bytes`` is done at the time of its
last counter change (covers sends without TCP timestamps, i.e. 12 bytes less
header per packet, and retransmission accounting).  Counter resets (a switch that
reconnected and got its rules re-added) are detected and accumulated.

A third signal: a receiver or host agent that has every byte of a flow
reports it (``POST /rapier/v1/coflows/<id>/flows/<n>/done``,
:meth:`ProgressMixin.report_flow_done`); the flow is done at the report's arrival,
without waiting for the next flow-statistics poll (0.5 s by default).  With the
setting ``stats_completion = false`` the reports are the only completion signal
(the emulation's choice: statistics count bytes at the first hop, before the
bottleneck queue, and retransmissions twice, so they can close a flow early).

After a controller restart a flow reloaded from the database starts from
its stored ``bytes_sent`` (written every ``store_progress_interval_s``).  Its
first-hop switch still holds the rule the crashed controller installed, whose
counters went on counting while the controller was down: when a switch connects,
the Ryu shell asks for its flow statistics *before* it clears the switch
(:meth:`ProgressMixin.expect_reconnect_counters`), and that first reply is read as
the old rules' counters (:meth:`ProgressMixin._reconnect_counters`): a reloaded flow
whose old rule counted ``size_bytes - finish_slack_bytes`` payload bytes finished
while the controller was down and is done at once (at its reload time), so the
flows queued behind it are released by the decision that follows; otherwise it
carries on from the larger of its stored bytes and the old counters (the re-added
rule counts from zero).  A flow the old counters do not settle is done by the size
rule, or by a relaxed idle rule (:meth:`ProgressMixin._restored_idle`).  A flow's
first counted bytes are written at once, so that a restart knows it started.

Flows of unknown size (registered without ``size_bytes``, :mod:`.openflows`) are
never done by reaching a size: their payload estimate feeds their size estimate
(doubled, and the scheduler called again, each time the payload reaches it), and
they finish by a done report or by the idle rule without its fraction condition
(counters still for ``idle_finish_s`` after they moved); their size is then the
payload counted.  Open coflows wait for their close before they are done.

Units: bytes, seconds.
"""

from __future__ import annotations

from typing import Iterable, List, Tuple

from ..core.model import FlowState
from ..httpjson import RequestError
from .registry import ACTIVE, DONE
from .rules import Actions
from .startup import STARTUP
from .store import StoreError


class ProgressMixin:
    """Progress tracking of :class:`.core.ControllerCore` (byte counters ->
    ``bytes_sent``, completions, the decision after a completion).

    Uses the core's ``settings``, ``scheduler``, ``tracks``, ``flow_by_cookie``,
    ``state``, ``ended_s``, ``errors``, ``last_schedule`` and its :meth:`active`,
    :meth:`reschedule`, ``_apply`` and ``_log``.
    """

    # -- progress -------------------------------------------------------------------
    def stats_dpids(self) -> List[int]:
        """dpids of the first-hop switches of active flows (to poll for flow stats)."""
        return sorted({self.tracks[f.flow_id].first_dpid for c in self.active()
                       for f in c.active_flows()})

    def apply_flow_stats(self, dpid: int, entries: Iterable[Tuple[int, int, int]],
                         now: float) -> Actions:
        """Update bytes sent from a flow-stats reply and detect completions.

        Args:
            dpid: the replying switch.
            entries: (cookie, byte_count, packet_count) per flow entry; entries that
                are not the first-hop rule of an active flow are ignored.
            now: time of the reply (s).

        Returns:
            The reschedule's :class:`Actions` when a flow finished (``finished``
            lists them), else empty actions.
        """
        finished: List[str] = []
        started: List[FlowState] = []
        grown: List[FlowState] = []
        hdr = self.settings.header_bytes
        if dpid in self.reconnect_due:  # the old rules' counters (module doc)
            self.reconnect_due.discard(dpid)
            entries = self._reconnect_counters(dpid, entries, now, finished)
        for cookie, nbytes, npkts in entries:
            f = self.flow_by_cookie.get(cookie)
            if f is None or f.done or self.state.get(f.coflow_id) != ACTIVE:
                continue
            tr = self.tracks[f.flow_id]
            if tr.first_dpid != dpid:
                continue
            if nbytes < tr.last_bytes or npkts < tr.last_packets:  # counters were reset
                tr.offset_bytes += max(tr.last_bytes - tr.last_packets * hdr, 0)
            tr.last_bytes, tr.last_packets = int(nbytes), int(npkts)
            payload = tr.offset_bytes + max(nbytes - npkts * hdr, 0)
            prev, t_prev = tr.last_payload, tr.last_poll_s
            if payload > prev:
                tr.last_change_s = now
            if not tr.size_known and self.grow_estimate(f, payload):  # (.openflows)
                grown.append(f)
            size = f.spec.size_bytes
            if (self.settings.stats_completion and tr.size_known
                    and payload >= size - self.settings.finish_slack_bytes):
                if t_prev is None or payload <= prev:
                    t_fin = now
                else:
                    frac = min(max((size - self.settings.finish_slack_bytes - prev)
                                   / (payload - prev), 0.0), 1.0)
                    t_fin = t_prev + frac * (now - t_prev)
                self._finish(f, max(t_fin, f.start_s))
                finished.append(f.flow_id)
            else:
                if f.bytes_sent <= 0 < payload:
                    started.append(f)
                # below the size while not done (stats_completion false): a
                # scheduler never sees a live flow with nothing left
                f.bytes_sent = max(f.bytes_sent, min(
                    payload, size - max(self.settings.finish_slack_bytes, 1)))
            tr.last_payload = max(prev, payload)
            tr.last_poll_s = now
        self._record_started(started, now)
        self.sizes_changed(grown, now)
        if grown and not finished:
            return self.reschedule(now)  # an estimate grew: decide again
        return self._after_finish(finished, now)

    def expect_reconnect_counters(self, dpid: int) -> None:
        """Switch ``dpid`` connected and was asked for its flow statistics before
        being cleared: its next flow-stats reply (:meth:`apply_flow_stats`) holds the
        counters of the rules it kept from before (a crashed controller's)."""
        self.reconnect_due.add(dpid)

    def _reconnect_counters(self, dpid: int, entries: Iterable[Tuple[int, int, int]],
                            now: float, finished: List[str]) -> List[Tuple[int, int, int]]:
        """Read the pre-clear counters of switch ``dpid`` for the flows reloaded after
        a restart that have no counter sample yet; returns the other entries (read as
        any reply).

        Such a flow's old first-hop rule counted its bytes since the crashed
        controller installed it, including those sent while no controller ran.  With
        ``est = max(stored bytes_sent, byte_count - packet_count * header_bytes)``
        (bytes): done at its reload time when ``est >= size_bytes -
        finish_slack_bytes`` and ``stats_completion`` is on (appended to
        ``finished``); otherwise ``est`` is its new starting point and the re-added
        rule's counters (from zero) add to it.  Units: bytes, seconds."""
        s = self.settings
        rest = []
        for cookie, nbytes, npkts in entries:
            f = self.flow_by_cookie.get(cookie)
            tr = None if f is None else self.tracks[f.flow_id]
            if (tr is None or f.done or tr.restored_s is None or tr.last_poll_s is not None
                    or tr.first_dpid != dpid or self.state.get(f.coflow_id) != ACTIVE):
                rest.append((cookie, nbytes, npkts))
                continue
            size = f.spec.size_bytes
            est = max(tr.offset_bytes, float(max(nbytes - npkts * s.header_bytes, 0)))
            tr.last_poll_s = now
            if s.stats_completion and est >= size - s.finish_slack_bytes:
                self._finish(f, max(tr.restored_s, f.start_s))
                finished.append(f.flow_id)
                continue
            if est > tr.offset_bytes:
                tr.last_change_s = now
            tr.offset_bytes = tr.last_payload = est
            tr.last_bytes = tr.last_packets = 0  # the re-added rule counts from zero
            f.bytes_sent = max(f.bytes_sent, min(est, size - max(s.finish_slack_bytes, 1)))
        return rest

    def report_flow_done(self, coflow_id: str, index: int, now: float) -> Tuple[bool, Actions]:
        """A receiver (or host agent) reports flow ``index`` of ``coflow_id`` complete.

        Args:
            coflow_id: the coflow's id.  index: the flow's position in the coflow
                (its id is ``<coflow_id>/<index>``), from 0.  now: arrival of the
                report (s, the core's clock): the flow's finish time.

        Returns:
            ``(finished, actions)``: ``finished`` is False when the flow was already
            done or its coflow is not active (the report changes nothing: repeated
            reports are harmless); otherwise the flow is closed as by a flow-stats
            completion and ``actions`` is the decision that follows
            (:meth:`_after_finish`).

        Raises:
            RequestError: 404 unknown coflow, 400 ``index`` not one of its flows.
        """
        c = self.coflows.get(coflow_id)
        if c is None:
            raise RequestError(404, "coflow_id", f"no such coflow {coflow_id!r}")
        if isinstance(index, bool) or not isinstance(index, int) or \
                not 0 <= index < len(c.flows):
            raise RequestError(400, "index", f"must be 0..{len(c.flows) - 1}, got {index!r}")
        f = c.flows[index]
        if f.done or self.state.get(coflow_id) != ACTIVE:
            return False, Actions()
        self._finish(f, max(now, f.start_s))
        return True, self._after_finish([f.flow_id], now)

    def _record_started(self, flows: List[FlowState], now: float) -> None:
        """Write at once the progress of flows whose first bytes were just counted
        (not only every ``store_progress_interval_s``): after a restart, a flow known
        to have started may be completed by the relaxed idle rule."""
        if self.store is None or not flows:
            return
        try:
            self.store.update_flows([(f.flow_id, float(f.bytes_sent), None) for f in flows])
        except StoreError as exc:
            self._log("error", "%s", exc)
            self.errors.append(f"{now:.3f}: {exc}")

    def check_idle(self, now: float) -> Actions:
        """The idle completion rule: a flow whose counters stood still for
        ``idle_finish_s`` with at least ``(1 - idle_fraction)`` of its bytes sent is
        done at its last counter change."""
        finished = []
        s = self.settings
        if not s.stats_completion:
            return Actions()
        for c in self.active():
            for f in list(c.active_flows()):
                tr = self.tracks[f.flow_id]
                if tr.restored_s is not None:  # reloaded after a restart (module doc)
                    t_done = self._restored_idle(tr, now)
                    if t_done is not None:
                        self._finish(f, max(t_done, f.start_s))
                        finished.append(f.flow_id)
                    continue
                if tr.last_change_s is None or now - tr.last_change_s < s.idle_finish_s:
                    continue
                # a flow of unknown size: idle counters after it moved suffice
                if not tr.size_known or \
                        tr.last_payload >= (1 - s.idle_fraction) * f.spec.size_bytes:
                    self._finish(f, tr.last_change_s)
                    finished.append(f.flow_id)
        return self._after_finish(finished, now)

    def _restored_idle(self, tr, now: float):
        """Completion time of a flow reloaded after a restart by the idle rule, or
        None.  Its byte counters restarted from zero when its rules were re-added and
        the bytes sent while the controller was down are unknown, so the fraction
        condition is dropped: counters still for ``idle_finish_s`` after they moved
        (done at the last change), or, for a flow that had sent bytes before the
        restart, no movement at all for ``5 * idle_finish_s`` after the reload with
        at least one counter sample (done at the reload); ``15 * idle_finish_s`` for
        a flow with no byte stored (it may have sent everything while the controller
        was down, or never started: after that long it is not held any more)."""
        s = self.settings
        if tr.last_change_s is not None:
            return tr.last_change_s if now - tr.last_change_s >= s.idle_finish_s else None
        quiet = (5 if tr.offset_bytes > 0 else 15) * s.idle_finish_s
        if tr.last_poll_s is not None and now - tr.restored_s >= quiet:
            return tr.restored_s
        return None

    def _finish(self, f: FlowState, t: float) -> None:
        if not self.tracks[f.flow_id].size_known:
            self.finished_unknown(f)  # its size: the bytes counted (.openflows)
        f.bytes_sent = f.spec.size_bytes
        f.finish_s = t
        f.rate_bps = 0.0
        # The scheduler's hook (RAPIER and Varys note the flow for their next
        # work-conservation pass).  Optional: any object with schedule() is a
        # scheduler here.  A failing hook must not abort the flow-stats reply half
        # way (the flow is already marked done, its coflow would never be closed):
        # it is logged, and the next decision still sees the flow finished.
        hook = getattr(self.scheduler, "flows_finished", None)
        if hook is not None:
            try:
                hook([f])
            except Exception as exc:  # noqa: BLE001 -- same policy as reschedule()
                msg = f"scheduler {self.settings.scheduler} flows_finished failed: {exc!r}"
                self._log("error", "%s", msg)
                self.errors.append(f"{t:.3f}: {msg}")
        self._log("info", "flow %s done at %.3f s", f.flow_id, t)
        STARTUP.mark("first_flow_done")

    def _record_finished(self, finished: List[str], ended, now: float) -> None:
        """Write finished flows and done coflows to the database (one transaction).
        A failed write is logged and kept in ``errors``; memory stays the truth and
        the next progress write retries the flows."""
        if self.store is None:
            return
        flows = [self.flow_by_cookie[self.tracks[fid].cookie] for fid in finished]
        try:
            with self.store.batch():
                self.store.update_flows([(f.flow_id, float(f.bytes_sent), f.finish_s)
                                         for f in flows])
                self.store.update_sizes([(f.flow_id, float(f.spec.size_bytes), False)
                                         for f in flows
                                         if not self.tracks[f.flow_id].size_known])
                for c in ended:
                    self.store.update_coflow(c.coflow_id, DONE, now, c.finish_s)
        except StoreError as exc:
            self._log("error", "%s", exc)
            self.errors.append(f"{now:.3f}: {exc}")

    def reschedule_mode(self) -> str:
        """``"flow"`` or ``"coflow"``: the decision points in use (the
        ``reschedule_on`` setting, ``auto`` resolved from the scheduler)."""
        mode = self.settings.reschedule_on
        if mode == "auto":
            mode = getattr(self.scheduler, "reschedule_on", "flow")
        return mode

    def _after_finish(self, finished: List[str], now: float) -> Actions:
        """Close finished coflows, then either call the scheduler again or, in
        ``coflow`` mode when no coflow ended (and no flow was added since the last
        decision, :mod:`.openflows`), re-apply the last decision to the remaining
        flows (the finished flows' rules and agent rates are removed)."""
        if not finished:
            return Actions()
        self.note_left(finished)  # their rules and limits go at the next apply
        coflow_done = False
        ended = []
        for c in self.active():
            c._invalidate()
            # an open coflow waits for its close (.openflows)
            if not c.active_flows() and c.coflow_id not in self.open_coflows:
                self.complete_coflow(c, now)
                coflow_done = True
                ended.append(c)
        self._record_finished(finished, ended, now)
        if (self.reschedule_mode() == "coflow" and not coflow_done
                and self.last_schedule is not None and not self.adds_pending):
            # the last decision again: nothing changed but the flows that left
            acts = self._apply(self.last_schedule, self.active(), changed={})
        else:
            acts = self.reschedule(now)
        acts.finished = finished
        return acts
