"""JSON-ready views of the controller's state for the REST API (``GET /coflows``,
``GET /coflows/<id>``, ``GET /schedule``, ``GET /topology``).

Units: bytes, bit/s, seconds.  Non-finite floats become ``null``.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from ..core.model import FlowState, Schedule
from .validation import PAUSE_EVERY


def _jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if hasattr(v, "item"):
        return _jsonable(v.item())
    return str(v)


def _num(v):
    """A number for JSON: finite floats and ints as they are, numpy scalars as
    Python ones, non-finite floats and None as None (:func:`_jsonable` for one
    scalar, without its walk)."""
    t = type(v)
    if t is int or v is None:
        return v
    if t is float:
        return v if math.isfinite(v) else None
    return _jsonable(v)


class ViewsMixin:
    """The REST views of :class:`.core.ControllerCore` (reads ``coflows``, ``state``,
    ``ended_s``, ``fallback``, ``last_schedule*``, ``installed``, ``errors``,
    ``settings``, ``topology``; never changes them)."""

    # -- views (JSON-ready) -------------------------------------------------------
    def flow_view(self, f: FlowState) -> Dict[str, Any]:
        """One flow for the REST API, JSON-ready (bytes, bit/s, seconds; non-finite
        numbers as None): ``index`` in its
        coflow, the match (``protocol``, also as ``proto``; ``src_port``,
        ``dst_port``: None = any), ``size_bytes`` (None while unknown; then
        ``estimate_bytes`` is the estimate the scheduler uses, :mod:`.openflows`),
        progress, path and rate."""
        tr = self.tracks.get(f.flow_id)
        proto = tr.proto if tr is not None else "tcp"
        known = tr is None or tr.size_known
        unknown = not known and not f.done
        size = _num(f.spec.size_bytes)
        fin = _num(f.finish_s)
        return {"flow_id": f.flow_id, "index": _num(f._ord), "src": f.src, "dst": f.dst,
                "src_ip": self.ip(f.src), "dst_ip": self.ip(f.dst), "proto": proto,
                "protocol": proto, "src_port": None if tr is None else _num(tr.src_port),
                "dst_port": _num(f.dst_port),
                "size_bytes": None if unknown else size, "size_known": bool(known),
                "estimate_bytes": size if unknown else None,
                "bytes_sent": _num(f.bytes_sent),
                "rate_bps": _num(f.rate_bps),
                "path": [str(n) for n in f.path] if f.path else None,
                "state": "done" if f.done else self.state[f.coflow_id],
                "finish_s": fin,
                "fct_s": None if f.finish_s is None else _num(f.finish_s - f.start_s)}

    def coflow_view(self, cid: str, flows: bool = True) -> Dict[str, Any]:
        """One coflow for ``GET /coflows/<id>`` (``flows``: with its flows; False:
        the summary of list pages, which costs no per-flow view).  Raises
        RequestError 404."""
        c = self.get(cid)
        out = {"id": cid, "state": self.state[cid], "arrival_s": c.arrival_s,
               "weight": c.weight, "width": c.width,
               "total_bytes": c.spec.total_bytes, "bytes_sent": c.bytes_sent,
               "finish_s": c.finish_s, "cct_s": c.cct_s,
               "ended_s": self.ended_s.get(cid),
               "fallback": self.fallback.get(cid),
               "open": cid in self.open_coflows and self.state[cid] == "active",
               "name": self.names.get(cid)}
        out = _jsonable(out)
        if flows:  # flow views are JSON-ready (no walk over them)
            pause = getattr(self, "_pause_every", None)  # the core's (.registry)
            views = out["flows"] = []
            for i, f in enumerate(c.flows):
                if pause is not None:
                    pause(i)  # the caller holds the lock: nothing changes meanwhile
                views.append(self.flow_view(f))
        return out

    def coflows_view(self) -> List[Dict[str, Any]]:
        """Every coflow (all states) in arrival order."""
        return [self.coflow_view(cid) for cid in self.coflows]

    def summary_view(self, now_s: Optional[float] = None) -> Dict[str, Any]:
        """A cheap summary for the dashboard (``GET /rapier/v1/summary``): ``now_s``
        (the controller's clock, s), ``scheduler``, ``counts`` (coflows in memory by
        state: active, done, cancelled) and ``ccts_s``, the completion times (s) of the
        done coflows in memory (``retention_s``), ascending.  One pass over the
        coflows; no flow is read."""
        counts = {"active": 0, "done": 0, "cancelled": 0}
        ccts = []
        for cid, st in self.state.items():
            counts[st] = counts.get(st, 0) + 1
            c = self.coflows.get(cid) if st == "done" else None
            if c is not None and c.cct_s is not None:
                ccts.append(c.cct_s)
        ccts.sort()
        return _jsonable({"now_s": now_s, "scheduler": self.settings.scheduler,
                          "counts": counts, "ccts_s": ccts})

    def schedule_view(self) -> Dict[str, Any]:
        """The schedule in force, for ``GET /schedule``: allocations of unfinished
        flows only (in ``coflow`` mode the last decision outlives flows that finished
        since), and ``reschedule_on``, the decision points in use.

        Built a flow at a time with the core's ``hold_pause`` (when set) every
        :data:`~.validation.PAUSE_EVERY` flows: with 20,000 flows in force the
        view takes a few hundred milliseconds, during which the event loop serves
        ``/health`` (the lock stays held: one snapshot)."""
        s = self.last_schedule or Schedule()
        pause = getattr(self, "hold_pause", None)
        live = set()
        i = 0
        for c in self.active():
            for f in c.active_flows():
                live.add(f.flow_id)
                i += 1
                if pause is not None and i % PAUSE_EVERY == 0:
                    pause()
        allocations = {}
        allocs = s.allocations
        for fid in sorted(allocs):
            if fid in live:
                a = allocs[fid]
                allocations[str(fid)] = {"path": [str(n) for n in a.path],
                                         "rate_bps": _num(a.rate_bps)}
                i += 1
                if pause is not None and i % PAUSE_EVERY == 0:
                    pause()
        head = _jsonable({
            "scheduler": self.settings.scheduler, "computed_at_s": self.last_schedule_s,
            "count": self.schedule_count, "solve_s": self.last_solve_s,
            "reschedule_on": self.reschedule_mode(),
            "order": list(s.order), "fallback": dict(s.fallback)})
        tail = _jsonable({"installed_rules": len(self.installed), "info": s.info,
                          "errors": self.errors[-20:]})
        return {**head, "allocations": allocations, **tail}

    def topology_view(self, observed: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The configured topology, its hosts' attachment points, and what was
        observed (``observed`` as given by the shell)."""
        topo = self.topology
        hosts = []
        for h in topo.hosts:
            sw, port = topo.attachment(h)
            d = topo.graph.nodes[h]
            hosts.append({"name": h, "ip": d["ip"], "mac": d["mac"], "switch": sw,
                          "dpid": self._dpid[sw], "port": port})
        return _jsonable({"spec": self.settings.topology, **topo.to_dict(), "hosts": hosts,
                          "observed": observed or {}})
