"""Admission: an arriving coflow gets rules at once, before Algorithm 1 places it.

Part of :class:`.core.ControllerCore` (as :class:`AdmissionMixin`).  With the
decision worker running (``POST /coflows`` only queues the coflow for the next
decision, :mod:`.worker`), a coflow would otherwise wait for the decision in flight
to end and for the next one to reach it: on a 1,024-server fabric with 100 coflows
of 128 flows in flight, seconds.  :meth:`AdmissionMixin.admit` (called by the POST
handler, under the shell's lock, not behind the decision gate) gives the new
coflow, in a few milliseconds:

* each flow its ECMP path (the scheduler's seeded hash,
  :meth:`~rapier_app.scheduling.base.Scheduler.ecmp_path`), and
* a rate out of the capacity the rates in force leave on that path, as Algorithm 3
  (DistributeBandwidth, RAPIER Section IV-C) hands out leftover bandwidth: flows by
  non-increasing remaining volume, each the least residual of its path's links,
  taken off the residual.  On a loaded fabric that is often 0; the host agent then
  holds the flow at ``min_rate_bps`` until Algorithm 1 gives it its share.

Its rules and rate limits are handed to the switches and agents at once, and its
``decision`` is ``provisional`` (:data:`PROVISIONAL`): on its ECMP paths at
leftover rates, not yet placed by Algorithm 1.  The next decision, due at once,
places it (``scheduled``) and may move it; a decision in flight when it arrived
leaves its rules alone (:meth:`~.decisions.DecisionMixin.end_decision`), and so
does a decision cut by ``decision_budget_s`` that did not reach it.

The residual is computed from the paths and rates in force once per decision (a
pass over the active flows) and kept up to date by the admissions after it; rates
freed by cancels and completions since the last decision are not counted free
(conservative).  Without the worker (in-process core, the simulator) coflows are
decided in the POST itself and nothing is admitted.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..core.model import CoflowState
from ..scheduling.pathcache import path_link_tuple
from .pushes import flow_limit
from .registry import ACTIVE, QUEUED
from .rules import Actions

#: ``decision`` of a coflow admitted on its ECMP paths at leftover rates, not yet
#: placed by the scheduler (``GET /coflows/<id>``, ``/metrics``, the dashboard)
PROVISIONAL = "provisional"


class AdmissionMixin:
    """Admission of arriving coflows (see the module docstring).

    Uses the core's ``coflows``, ``state``, ``decision``, ``scheduler``,
    ``settings``, ``tracks``, ``desired``, ``schedule_count``, ``active``,
    ``is_background``, ``_valid_path``, ``_flow_rules``, ``_dpid``, ``_pushes``,
    ``ip`` and the submission's yield points (``_pause_step``, ``_pause_every``).
    """

    #: (key, residual bit/s per link) of :meth:`_admission_residual`
    _adm_residual: Optional[tuple] = None
    #: coflows admitted so far (``GET /schedule``'s ``admitted``)
    admitted_count = 0

    def _route_target(self):
        """The scheduler (or the one a wrapper holds) with ``ecmp_path`` and a
        ``topology`` (RAPIER and the baselines: :class:`~rapier_app.scheduling.base.
        Scheduler`); None when there is none."""
        s = self.scheduler
        for _ in range(8):
            if s is None:
                return None
            if "ecmp_path" in dir(type(s)) and hasattr(s, "topology"):
                return s
            s = s.__dict__.get("inner") if hasattr(s, "__dict__") else None
        return None

    def _admission_residual(self, topo) -> np.ndarray:
        """Capacity (bit/s per link index of ``topo``) minus the rates in force: made
        once per decision (every active flow with a path and a rate), then lowered
        by each admission (:meth:`admit`).  Returns the array kept (mutable)."""
        cap = np.asarray(topo.capacity, dtype=float)
        key = (self.schedule_count, id(topo), cap.size)
        got = self._adm_residual
        if got is not None and got[0] == key:
            return got[1]
        by_path: Dict[tuple, float] = {}
        for c in self.active():
            self._pause_step()  # the POST's yield point (lock kept, .registry)
            for f in c.active_flows():
                p, r = f.path, f.rate_bps
                if p and r > 0:
                    by_path[p] = by_path.get(p, 0.0) + r
        load = np.zeros(cap.size)
        if by_path:
            idx: List[int] = []
            w: List[float] = []
            for p, r in by_path.items():
                ls = path_link_tuple(topo, p)
                idx.extend(ls)
                w.extend([r] * len(ls))
            load = np.bincount(np.asarray(idx, dtype=np.int64), weights=np.asarray(w),
                               minlength=cap.size)[:cap.size]
        res = cap - load
        self._adm_residual = (key, res)
        return res

    def admit(self, cid: str, now: float) -> Actions:
        """Give the queued coflow ``cid`` its ECMP paths and leftover rates at once
        (module docstring): its rules, its hosts' rate limits, ``decision``
        :data:`PROVISIONAL`.

        Args:
            cid: a coflow just accepted (``decision`` ``queued``).
            now: current time (s; unused, for the core's call convention).

        Returns:
            :class:`~.rules.Actions` (the coflow's rules, agent pushes); empty when
            the coflow is not queued and active, is background, has no active flow,
            or the scheduler has no ECMP hash.
        """
        c: Optional[CoflowState] = self.coflows.get(cid)
        if c is None or self.state.get(cid) != ACTIVE or self.decision.get(cid) != QUEUED:
            return Actions()
        flows = c.active_flows()
        target = self._route_target()
        if not flows or target is None or self.is_background(c):
            return Actions()
        topo = target.topology
        residual = self._admission_residual(topo)
        acts = Actions()
        desired = self.desired
        limits: List[Tuple[str, Dict[str, Any]]] = []
        for i, f in enumerate(sorted(flows, key=lambda f: -(f.spec.size_bytes - f.bytes_sent))):
            self._pause_every(i)  # the POST's yield points (lock kept, .registry)
            fid = f.flow_id
            path = tuple(target.ecmp_path(f))
            if not self._valid_path(f, path):
                continue  # stays on default forwarding until the decision
            ls = list(path_link_tuple(topo, path))
            rate = max(0.0, float(residual[ls].min())) if ls else 0.0
            if rate > 0:
                residual[ls] -= rate
            self.tracks[fid].first_dpid = self._dpid[path[1]]
            _, rules = self._flow_rules(f, path)
            for k in [k for k in desired._by_flow.get(fid, {})]:
                del desired[k]  # none for a new coflow
            for r in rules:
                desired[(r.dpid, fid)] = r
                acts.rules.append(r)
            f.path, f.rate_bps = path, rate
            tr = self.tracks[fid]
            limits.append((f.src, flow_limit(
                fid, self.ip(f.src), self.ip(f.dst), f.dst_port,
                rate if rate > 0 else self.settings.min_rate_bps, tr.proto, tr.src_port)))
        if not acts.rules:
            return acts
        self.decision[cid] = PROVISIONAL
        self.admitted_count += 1
        for host, entry in limits:  # the pushes of its hosts only (.pushes.PushBook)
            self._pushes.want(host, entry)
        acts.pushes.extend(self._pushes.update_changed(push=bool(self.settings.agent_url)))
        return acts


__all__ = ["PROVISIONAL", "AdmissionMixin"]
