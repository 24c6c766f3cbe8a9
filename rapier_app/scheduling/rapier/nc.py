"""Non-clairvoyant RAPIER (``rapier-nc``): RAPIER's Algorithms 1-3 on estimated flow
sizes.  This mode is the project's own: no paper has it (RAPIER, Zhao et al. 2015,
assumes every flow size is known when its coflow arrives).

What it estimates: each flow's **total size in bytes**, by the rules of
:mod:`rapier_app.core.estimate` (:func:`~rapier_app.core.estimate.flow_estimates`:
a floor, or the mean size of the coflow's finished flows if larger, grown by
``factor`` as the coflow's flows send), from what a controller observes: endpoints, arrival, width, bytes sent and
completions.  LP (4) routing, Algorithm 1's minimum-completion order and model
(2)'s rates then run on the estimated remaining volumes (estimate - bytes sent)
exactly as ``rapier`` runs on the true ones.  Flows whose size is known (sizes not
hidden, or a size the application gave) are planned on it: with every size known
``rapier-nc`` decides exactly as ``rapier``.

Units: bytes for sizes, bit/s for rates, seconds for times.
"""

from __future__ import annotations

import math
from typing import Dict, Optional, Sequence

import numpy as np

from topologies import Topology

from ...core.estimate import FACTOR, flow_estimates
from ...core.model import CoflowState, FlowState, Schedule
from ..base import SchedulerError
from ..registry import register
from .lp4 import BITS
from .plan import _CoflowArrays
from .scheduler import Rapier


@register("rapier-nc")
class RapierNC(Rapier):
    """RAPIER on estimated sizes when sizes are unknown (module docstring; the
    project's own mode, no paper has it).

    At a full pass (coflow arrivals and completions, as ``rapier``) each coflow
    whose flows' sizes are unknown is planned on estimated sizes
    (:func:`~rapier_app.core.estimate.flow_estimates`).  Estimates are only as good
    as the bytes sent behind them, so the scheduler asks for a decision point
    (:meth:`next_wakeup`) at the first moment a flow of unknown size reaches its
    estimate at the rate it was given: a full pass then runs with fresh counters,
    and that coflow's estimate grows ``factor``-fold (the doubling estimate for 2).
    A short coflow therefore finishes on its first estimate, ahead of coflows that
    have sent more (Aalo's least-attained-service idea), and a long one falls back
    in Algorithm 1's order as its estimate grows.  The starvation guard
    (``delta_s``) is ``rapier``'s.

    Args:
        topology, seed, max_paths, and every keyword of
            :class:`~rapier_app.scheduling.rapier.scheduler.Rapier`.
        floor_bytes: the estimate of a flow that has sent nothing, when no flow of
            its coflow has finished (bytes; default 1 MiB, the smallest flow of the
            Facebook trace).
        factor: the estimate's growth factor (> 1; default 2).
        scope: ``"coflow"`` (default: one estimate for all the coflow's flows of
            unknown size, from the most bytes any of them sent) or ``"flow"``
            (each flow's own bytes sent).
        rule: ``"threshold"`` (the controller's: the first ``floor * factor**k``
            above the bytes sent) or ``"sent"`` (``factor`` times the bytes sent);
            :func:`~rapier_app.core.estimate.flow_estimates`.

    Raises:
        SchedulerError: a bad ``floor_bytes``, ``factor``, ``scope`` or ``rule``
            (named), or
            any of :class:`Rapier`'s.
    """

    #: it reads sizes where they are given (the exact mode) ...
    clairvoyant = True
    #: ... and estimates the others
    unknown_sizes = "estimate"
    #: byte counters at full passes and at its own wake-ups (re-estimates)
    reads_progress = "coflow-events+wakeups"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 floor_bytes: float = float(2 ** 20), factor: float = FACTOR,
                 scope: str = "coflow", rule: str = "sent", **kw):
        super().__init__(topology, seed, max_paths, **kw)
        try:  # the estimator checks its arguments (ValueError naming them)
            flow_estimates(np.array([np.nan]), np.zeros(1), 0.0, floor_bytes, factor,
                           scope, rule)
        except ValueError as exc:
            raise SchedulerError(str(exc)) from None
        self.floor_bytes = float(floor_bytes)
        self.factor = float(factor)
        self.scope = scope
        self.rule = rule
        #: coflow id -> [finished flows, their bytes]: the sample of the estimate
        self._done: Dict[str, list] = {}
        #: coflow id -> estimated remaining bytes of its active flows (e.flows
        #: order) planned at the last full pass (coflows with an unknown size only)
        self._est_rem: Dict[str, np.ndarray] = {}
        #: when a flow of unknown size reaches its estimate (s): a full pass
        self._reest_at = math.inf
        self.stats["reestimates"] = 0

    def remaining(self, coflow: CoflowState, e: _CoflowArrays,
                  sent: np.ndarray) -> np.ndarray:
        """Remaining bytes to plan on: exact where the size is known, estimated
        (:func:`~rapier_app.core.estimate.flow_estimates`) minus bytes sent
        elsewhere (always > 0 there)."""
        sizes = e.sizes
        if not np.isnan(sizes).any():
            self._est_rem.pop(coflow.coflow_id, None)
            return np.maximum(sizes - sent, 0.0)
        done = self._done.get(coflow.coflow_id)
        est = flow_estimates(sizes, sent, 0.0 if done is None else done[1] / done[0],
                             self.floor_bytes, self.factor, self.scope, self.rule)
        rem = np.maximum(est - sent, 0.0)
        self._est_rem[coflow.coflow_id] = rem
        return rem

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Keep each finished flow's size (its bytes delivered) as its coflow's
        sample, then as :class:`Rapier`."""
        super().flows_finished(flows)
        for f in flows:
            d = self._done.get(f.coflow_id)
            if d is None:
                d = self._done[f.coflow_id] = [0, 0.0]
            d[0] += 1
            d[1] += f.size_bytes

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        """As :meth:`Rapier.schedule`; at or after the re-estimation time a full pass
        runs (Algorithm 1 on new estimates) even if no coflow arrived or finished.
        After a full pass, the re-estimation time is the first moment a flow of
        unknown size would reach its estimate at its new rate."""
        if now >= self._reest_at:
            self._wc = None  # no incremental pass: Algorithm 1 runs in full
            self.stats["reestimates"] += 1
        passes = self.stats["passes"]
        sched = super().schedule(now, coflows)
        if self.stats["passes"] != passes:
            live = {c.coflow_id for c in coflows}
            for d in (self._done, self._est_rem):
                for cid in [k for k in d if k not in live]:
                    del d[cid]
            self._reest_at = now + self._time_to_estimate(sched)
        return sched

    def _time_to_estimate(self, sched: Schedule) -> float:
        """Seconds until the first flow of unknown size reaches its estimate at the
        rates of ``sched`` (inf: none sends)."""
        if not self._est_rem:
            return math.inf
        vec = sched.vectors()
        if vec is None:  # (a full pass returns vectors, each coflow's flows in a run)
            return math.inf
        flows, _paths, rates = vec
        t = math.inf
        i, n = 0, len(flows)
        while i < n:
            cid = flows[i].coflow_id
            e = self._carr[cid]
            k = e.n
            rem = self._est_rem.get(cid)
            if rem is not None:
                r = rates[i:i + k]
                pos = r > 0
                if pos.any():
                    t = min(t, float((rem[pos] * BITS / r[pos]).min()))
            i += k
        return t

    def next_wakeup(self, now: float) -> Optional[float]:
        """The re-estimation time (s; see :meth:`schedule`) or :class:`Rapier`'s
        wake-up, whichever comes first; None when neither is pending."""
        w = super().next_wakeup(now)
        t = self._reest_at if self._reest_at > now else math.inf
        if w is not None:
            t = min(t, w)
        return None if math.isinf(t) else t
