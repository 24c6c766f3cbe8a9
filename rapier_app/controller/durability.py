"""Restart, progress writes, retention and the paginated coflow list.

Part of :class:`.core.ControllerCore` (as :class:`DurabilityMixin`), on top of the
database of :mod:`.store`:

* :meth:`DurabilityMixin.restore`: after a restart, reload the active coflows and
  the recently ended ones, with their flows' cookies, bytes sent and finish times
  (and, :mod:`.openflows`, open flags, names, matches and size estimates),
  and decide again for the active ones; every host agent is pushed its full rate
  set (``[]`` clears the stale limits of a host with no flow left);
* :meth:`DurabilityMixin.persist_progress`: the flows' ``bytes_sent`` every
  ``store_progress_interval_s`` (arrivals, cancels and completions are written
  when they happen, by :mod:`.registry` and :mod:`.progress`);
* :meth:`DurabilityMixin.prune`: done and cancelled coflows leave memory
  ``retention_s`` after they ended (the database keeps them);
* :meth:`DurabilityMixin.coflows_page`: ``GET /coflows`` with ``limit``, ``offset``
  and a state filter, from the database when there is one (so pruned coflows are
  listed too), else from memory.

Times in seconds on the controller clock, sizes in bytes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ..core.model import CoflowState, FlowSpec
from ..httpjson import RequestError
from .pushes import FAILED
from .registry import ACTIVE, CANCELLED, DONE, FlowTrack, coflow_spec
from .rules import Actions
from .store import CoflowRecord, StoreError
from .validation import PAUSE_EVERY
from .views import _jsonable

#: coflows in a ``GET /coflows`` page when ``?limit=`` is not given (at most
#: ``page_limit``)
PAGE_DEFAULT = 50

#: ``?state=`` values of ``GET /coflows``; ``finished`` is done or cancelled.
STATE_FILTERS = {ACTIVE: (ACTIVE,), DONE: (DONE,), CANCELLED: (CANCELLED,),
                 "finished": (DONE, CANCELLED)}
#: Number of error messages kept in memory (``GET /schedule`` shows the last 20).
MAX_ERRORS = 200


class DurabilityMixin:
    """Restart, progress writes, retention and paging of
    :class:`.core.ControllerCore` (uses its ``store``, ``coflows``, ``state``,
    ``ended_s``, ``fallback``, ``tracks``, ``flow_by_cookie``, ``_pushes``,
    ``errors``, ``settings`` and :meth:`reschedule`)."""

    _progress_written_s: Optional[float] = None
    #: flow id -> the ``bytes_sent`` last written for it (active flows only)
    _progress_bytes: Optional[Dict[str, float]] = None
    #: True when the database had been used by an earlier run (a restart).
    restarted: bool = False

    # -- restart ----------------------------------------------------------------
    def clock_epoch(self, unix_now: float) -> float:
        """The Unix time at which this controller's clock reads 0: stored on first
        use, so that a restarted controller carries on the same clock (coflow times
        stay comparable).  Without a database: ``unix_now``."""
        if self.store is None:
            return unix_now
        v = self.store.get_meta("epoch_unix")
        self.restarted = v is not None
        if v is None:
            self.store.set_meta("epoch_unix", repr(float(unix_now)))
            return float(unix_now)
        return float(v)

    def restore(self, now: float) -> Actions:
        """Reload the coflows of the database and carry on.

        Loads every active coflow and those ended less than ``retention_s`` ago
        (arrival order), with the flows' cookies (the switches' counters map back),
        ``bytes_sent`` and finish times; then decides again for the active ones and
        pushes every host agent its full set when the database was used before
        (:attr:`restarted`, or coflows stored): hosts with no flow get ``[]``,
        clearing limits a crashed controller left.

        Args:
            now: the controller clock (s), e.g. seconds since :meth:`clock_epoch`.

        Returns:
            The reschedule's :class:`~.rules.Actions` (rules and pushes).

        Raises:
            RuntimeError: when coflows are already registered (call it first).
        """
        if self.store is None:
            return Actions()
        if self.coflows:
            raise RuntimeError("restore: the core already holds coflows")
        recs = self.store.load(ended_after_s=now - self.settings.retention_s)
        max_cookie = int(self.store.get_meta("next_cookie") or 1)
        self._next_auto = max(self._next_auto, int(self.store.get_meta("next_auto") or 1))
        for rec in recs:
            self._restore_one(rec, now)
            max_cookie = max([max_cookie] + [(f.cookie & 0xFFFFFFFFFFFF) for f in rec.flows])
        self._next_cookie = max(self._next_cookie, max_cookie)
        n_active = sum(1 for st in self.state.values() if st == ACTIVE)
        self._log("info", "restored %d coflows from %s (%d active)", len(recs),
                  self.store.path, n_active)
        if recs or self.restarted:
            for h in self.topology.hosts:  # unknown agent state: push everyone
                self._pushes.pushed[h] = FAILED
        return self.reschedule(now)

    def _restore_one(self, rec: CoflowRecord, now: float) -> None:
        specs = [FlowSpec(fr.flow_id, rec.id, fr.src, fr.dst, float(fr.size_bytes),
                          fr.dst_port) for fr in rec.flows]
        c = CoflowState(coflow_spec(rec.id, rec.arrival_s, specs, rec.weight), self.policy)
        tracks = []
        for f, fr in zip(c.flows, rec.flows):
            if fr.start_s is not None:
                f.start_s = float(fr.start_s)
            if fr.finish_s is not None:
                f.bytes_sent = f.spec.size_bytes
                f.finish_s = fr.finish_s
                f.rate_bps = 0.0
            else:
                f.bytes_sent = min(float(fr.bytes_sent), f.spec.size_bytes)
            first = self.topology.attachment(f.src)[0]
            tr = FlowTrack(int(fr.cookie), self._dpid[first], proto=fr.proto or "tcp",
                           src_port=fr.src_port, size_known=bool(fr.size_known))
            if rec.state == ACTIVE and not f.done:
                tr.offset_bytes = tr.last_payload = f.bytes_sent
                tr.restored_s = now
            tracks.append(tr)
        c._invalidate()
        c.finish_s = rec.finish_s
        self.coflows[rec.id] = c
        self.state[rec.id] = rec.state
        if rec.open and rec.state == ACTIVE:
            self.open_coflows.add(rec.id)
        if rec.name is not None:
            self.names[rec.id] = rec.name
        self.attach_flows(c.flows, tracks)
        if rec.ended_s is not None:
            self.ended_s[rec.id] = rec.ended_s

    # -- progress writes and retention -------------------------------------------
    #: rows per database write of :meth:`persist_progress`; the core's
    #: ``hold_pause`` runs between two writes (and every :data:`PAUSE_EVERY` flows
    #: of the scan), so a poller round with 20,000 active flows does not hold the
    #: event loop for the whole write (about 50 ms in one piece)
    PROGRESS_CHUNK = 1000

    def persist_progress(self, now: float, force: bool = False) -> int:
        """Write the active flows' ``bytes_sent`` when ``store_progress_interval_s``
        passed since the last write (or ``force``): only the flows whose
        ``bytes_sent`` changed since it was last written (``force``: every active
        flow), :attr:`PROGRESS_CHUNK` rows per write with the core's ``hold_pause``
        between them.  Returns the number of flows written (0 without a database).
        A failed write is logged, not raised (the flows not written are written at
        the next call)."""
        if self.store is None:
            return 0
        last = self._progress_written_s
        if not force and last is not None and now - last < self.settings.store_progress_interval_s:
            return 0
        self._progress_written_s = now
        pause = getattr(self, "hold_pause", None)
        written = {} if force else (self._progress_bytes or {})
        seen: Dict[str, float] = {}
        rows = []
        i = 0
        for c in self.active():
            for f in c.active_flows():
                b = float(f.bytes_sent)
                fid = f.flow_id
                if written.get(fid) != b:
                    rows.append((fid, b, None))
                else:
                    seen[fid] = b
                i += 1
                if pause is not None and i % PAUSE_EVERY == 0:
                    pause()
        for k in range(0, len(rows), self.PROGRESS_CHUNK):
            part = rows[k:k + self.PROGRESS_CHUNK]
            if k and pause is not None:
                pause()
            try:
                self.store.update_flows(part)
            except StoreError as exc:
                self._log("error", "%s", exc)
                self.errors.append(f"{now:.3f}: {exc}")
                self._progress_bytes = seen
                return k
            for fid, b, _ in part:
                seen[fid] = b
        self._progress_bytes = seen
        return len(rows)

    def prune(self, now: float) -> List[str]:
        """Drop from memory the done and cancelled coflows that ended at least
        ``retention_s`` ago (with their flow tracking and fallback notes); trim the
        error list to :data:`MAX_ERRORS`.  Returns the ids dropped, oldest first."""
        keep = self.settings.retention_s
        gone = [cid for cid, st in self.state.items()
                if st != ACTIVE and now - self.ended_s.get(cid, now) >= keep]
        for cid in gone:
            c = self.coflows.pop(cid)
            del self.state[cid]
            self.ended_s.pop(cid, None)
            self.fallback.pop(cid, None)
            self.names.pop(cid, None)
            self.open_coflows.discard(cid)
            for f in c.flows:
                if f.flow_id in self.tracks:  # its entry in the index of live matches
                    self.match_index.remove(f, self.flow_match_of(f))
                tr = self.tracks.pop(f.flow_id, None)
                if tr is not None:
                    self.flow_by_cookie.pop(tr.cookie, None)
        if len(self.errors) > MAX_ERRORS:
            del self.errors[:len(self.errors) - MAX_ERRORS]
        if gone:
            self._log("info", "%d ended coflows left memory (retention %.0f s)", len(gone), keep)
        return gone

    # -- listing ----------------------------------------------------------------
    def coflows_page(self, state: Optional[str] = None, limit: Optional[int] = None,
                     offset: int = 0, flows: bool = False) -> Dict[str, Any]:
        """``GET /coflows``: a page of coflows in arrival order.

        Args:
            state: ``active``, ``done``, ``cancelled``, ``finished`` (done or
                cancelled), or a comma-separated list of them; None for all.
            limit: page size, 1..``page_limit`` (None: :data:`PAGE_DEFAULT`, at
                most ``page_limit``).
            offset: coflows to skip (>= 0).
            flows: False (default): each coflow's summary (its view without
                ``flows``: the page costs no per-flow view); True: full views.

        Returns:
            ``{"coflows": [view, ...], "total": N, "offset": ..., "limit": ...,
            "next_offset": offset of the next page or None}``.

        Raises:
            RequestError: 400 naming ``state``, ``limit`` or ``offset``.
        """
        page = self.page_ids(state, limit, offset)
        views = [self.coflow_view(cid, flows) for cid in page.pop("ids")]
        return {"coflows": views, **page}

    def page_ids(self, state: Optional[str] = None, limit: Optional[int] = None,
                 offset: int = 0) -> Dict[str, Any]:
        """The ids of a page of :meth:`coflows_page` without their views:
        ``{"ids": [...], "total", "offset", "limit", "next_offset"}`` (arguments and
        errors as :meth:`coflows_page`), so that a caller can build the views one
        coflow at a time."""
        states = self._parse_states(state)
        cap = self.settings.page_limit
        if limit is None:
            limit = min(PAGE_DEFAULT, cap)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= cap:
            raise RequestError(400, "limit", f"must be an integer 1..{cap}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise RequestError(400, "offset", "must be an integer >= 0")
        if self.store is not None:
            total, ids = self.store.page(states, limit, offset)
        else:
            ids = [cid for cid, st in self.state.items() if states is None or st in states]
            total = len(ids)
            ids = ids[offset:offset + limit]
        nxt = offset + len(ids)
        return {"ids": list(ids), "total": total, "offset": offset, "limit": limit,
                "next_offset": nxt if nxt < total else None}

    @staticmethod
    def _parse_states(state: Optional[str]) -> Optional[Sequence[str]]:
        if state is None or state == "":
            return None
        out: List[str] = []
        for part in str(state).split(","):
            if part not in STATE_FILTERS:
                raise RequestError(400, "state", f"must be one of "
                                                 f"{', '.join(sorted(STATE_FILTERS))} "
                                                 f"(comma-separated), got {part[:32]!r}")
            out.extend(s for s in STATE_FILTERS[part] if s not in out)
        return out

    def stored_view(self, cid: str, with_flows: bool = True) -> Dict[str, Any]:
        """The view of a coflow that left memory, from the database (same keys as
        :meth:`~.views.ViewsMixin.coflow_view`, ``flows`` left out when
        ``with_flows`` is False; no path or rate: it has ended).

        Raises:
            RequestError: 404 when the database does not know ``cid`` either.
        """
        rec = None if self.store is None else self.store.get(cid)
        if rec is None:
            raise RequestError(404, "id", f"no coflow {cid!r}")
        flows = []
        for fr in rec.flows:
            unknown = not fr.size_known and fr.finish_s is None
            flows.append({"flow_id": fr.flow_id, "index": fr.idx, "src": fr.src,
                          "dst": fr.dst, "src_ip": self.ip(fr.src), "dst_ip": self.ip(fr.dst),
                          "proto": fr.proto, "protocol": fr.proto, "src_port": fr.src_port,
                          "dst_port": fr.dst_port,
                          "size_bytes": None if unknown else fr.size_bytes,
                          "size_known": bool(fr.size_known),
                          "estimate_bytes": fr.size_bytes if unknown else None,
                          "bytes_sent": fr.bytes_sent, "rate_bps": 0.0, "path": None,
                          "state": "done" if fr.finish_s is not None else rec.state,
                          "finish_s": fr.finish_s,
                          "fct_s": None if fr.finish_s is None else fr.finish_s - rec.arrival_s})
        total = sum(fr.size_bytes for fr in rec.flows)
        out = {"id": rec.id, "state": rec.state, "arrival_s": rec.arrival_s,
               "weight": rec.weight, "width": len(rec.flows), "total_bytes": total,
               "bytes_sent": sum(fr.bytes_sent for fr in rec.flows),
               "finish_s": rec.finish_s,
               "cct_s": None if rec.finish_s is None else rec.finish_s - rec.arrival_s,
               "ended_s": rec.ended_s, "fallback": None,
               "open": bool(rec.open) and rec.state == ACTIVE, "name": rec.name}
        if with_flows:
            out["flows"] = flows
        return _jsonable(out)
