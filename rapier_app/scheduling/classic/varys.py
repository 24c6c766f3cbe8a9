"""``scheduling-only``: Varys (Chowdhury et al., SIGCOMM 2014): ECMP routes, SEBF
coflow order, MADD rates, work conservation, preemptive.
Units: bit/s for rates and capacities, bytes for sizes, seconds for times.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np

from topologies import Topology

from ...core.model import CoflowState, FlowState, Schedule
from ..conserve import WorkConservation
from ..registry import register
from .routed import _SENT, BITS, _Routed


@register("scheduling-only")
class Varys(_Routed):
    """Scheduling-only (Varys: Chowdhury, Zhong, Stoica, SIGCOMM 2014).

    Routes by ECMP.  Coflows are ordered by SEBF (smallest effective bottleneck
    first): Gamma_C = max over links l of (remaining bits of C on l) / capacity(l),
    with full capacities; ties by arrival then id.  In that order MADD gives every
    flow of C the rate remaining_bits / Gamma'_C, where Gamma'_C uses the residual
    capacities left by earlier coflows, so that all of C's flows finish together; a
    coflow with a flow on a saturated link (Gamma' infinite) gets no MADD rate.
    Work conservation then hands residual bandwidth to flows greedily in SEBF order.
    SEBF and MADD are recomputed at every coflow arrival and completion (Varys's
    coordinator reallocates on those events, Varys Section 5), hence preemptive.  At
    every other flow completion the survivors keep their paths and rates and the
    same greedy work conservation hands out the bandwidth the finished flows freed
    (:class:`~rapier_app.scheduling.conserve.WorkConservation`), so no link with a
    waiting flow on it idles between coflow events.  On a big switch the links are
    exactly Varys's ingress/egress ports.

    Args:
        topology, seed, max_paths, routes: as :class:`_Routed`.
        incremental: True (default): flow completions run only the work-conservation
            pass; False: every call is a full SEBF + MADD pass.
    """

    reschedule_on = "flow"
    #: bytes sent are read only at full passes (coflow arrivals and completions)
    reads_progress = "coflow-events"
    #: greedy work conservation (full passes and flow events) on fixed ECMP paths:
    #: every flow ends with a link at zero residual on its path
    work_conserving = "path"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 routes: Optional[Mapping[str, Sequence[str]]] = None,
                 incremental: bool = True):
        super().__init__(topology, seed, max_paths, routes)
        self.incremental = bool(incremental)
        if not self.incremental:
            self.reads_progress = True  # every call is a full pass: fresh counters
        self._wc = None
        self.stats = {"full_passes": 0, "wc_passes": 0}

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Forward finished flows to the work-conservation state and the cached
        active views (see the base class)."""
        super().flows_finished(flows)
        if self._wc is not None:
            self._wc.flows_finished(flows)

    def sebf_order(self, coflows: Sequence[CoflowState], paths: Dict[str, tuple]) -> List[CoflowState]:
        topo = self.topology
        keyed = []
        for c in coflows:
            load = {}
            for f in c.active_flows():
                for l in topo.path_links(paths[f.flow_id]):
                    load[l] = load.get(l, 0.0) + f.remaining_bytes * BITS
            gamma = max((v / topo.capacity[l] for l, v in load.items()), default=0.0)
            keyed.append((gamma, c.arrival_s, c.coflow_id, c))
        keyed.sort(key=lambda x: x[:3])
        return [k[3] for k in keyed]

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        # Vectorised per coflow; every sum and subtraction happens in the same order
        # as in the per-flow formulation above (bincount and ufunc.at accumulate in
        # input order), so the rates are bit-identical to it.
        topo = self.topology
        cap = topo.capacity
        L = len(cap)
        active = [c for c in coflows if c.active_flows()]
        if self.incremental and self._wc is not None and self._wc.matches(active):
            self.stats["wc_passes"] += 1
            return self._wc.flow_event()
        self.stats["full_passes"] += 1
        flows, paths, links, lens, all_links, sizes, lpy = self._active_routes(active)
        # remaining bytes exactly as FlowState.remaining_bytes (Varys is clairvoyant)
        sent = np.fromiter(map(_SENT, flows), float, len(flows))
        rem_bits = np.maximum(sizes - sent, 0.0) * BITS
        # per coflow: slice of flows, slice of link entries, bits per link entry
        bounds = np.cumsum([0] + [len(c.active_flows()) for c in active])
        ebounds = np.concatenate([[0], np.cumsum(lens)])
        ent_bits = np.repeat(rem_bits, lens)
        keyed = []
        loads = []
        for k, c in enumerate(active):
            a, b = int(ebounds[bounds[k]]), int(ebounds[bounds[k + 1]])
            ls = all_links[a:b]
            load = np.bincount(ls, weights=ent_bits[a:b], minlength=L)
            used = np.unique(ls)
            loads.append((load, used))
            gamma = float((load[used] / cap[used]).max()) if used.size else 0.0
            keyed.append((gamma, c.arrival_s, c.coflow_id, k))
        keyed.sort(key=lambda x: x[:3])
        order_k = [x[3] for x in keyed]
        residual = cap.astype(float).copy()
        rates = np.zeros(len(flows))
        for k in order_k:
            load, used = loads[k]
            ru = residual[used]
            if (ru <= 0).any():
                continue
            gamma = (load[used] / ru).max()
            f0, f1 = int(bounds[k]), int(bounds[k + 1])
            r = rem_bits[f0:f1] / gamma
            rates[f0:f1] = r
            a, b = int(ebounds[f0]), int(ebounds[f1])
            np.subtract.at(residual, all_links[a:b], np.repeat(r, lens[f0:f1]))
            np.maximum(residual, 0.0, out=residual)
        # greedy work conservation in SEBF order, on Python floats (same IEEE
        # arithmetic as the numpy version in work_conserve)
        # A flow with a link at zero residual now can get nothing later (residuals
        # only fall and stay >= 0), so only the others are visited.
        res = residual.tolist()
        rl = rates.tolist()
        if len(flows):
            room = np.minimum.reduceat(residual[all_links], ebounds[:-1]) > 0
        else:
            room = np.zeros(0, dtype=bool)
        for k in order_k:
            f0, f1 = int(bounds[k]), int(bounds[k + 1])
            for i in (np.flatnonzero(room[f0:f1]) + f0).tolist():
                ls = lpy[i]
                if len(ls) == 2:
                    l0, l1 = ls
                    x0, x1 = res[l0], res[l1]
                    extra = x0 if x0 <= x1 else x1
                    if extra > 0:
                        rl[i] += extra
                        res[l0] = x0 - extra
                        res[l1] = x1 - extra
                else:
                    extra = min([res[l] for l in ls])
                    if extra > 0:
                        rl[i] += extra
                        for l in ls:
                            res[l] -= extra
        order = [active[k].coflow_id for k in order_k]
        final = np.array(rl, dtype=float)
        if self.incremental:
            visit = (np.concatenate([np.arange(int(bounds[k]), int(bounds[k + 1]))
                                     for k in order_k]) if order_k else np.zeros(0, np.int64))
            self._wc = WorkConservation(cap, active, flows, paths, lpy, final, visit,
                                        order=order, volatile=self.volatile_schedules)
        return Schedule.from_vectors(flows, paths, final, order=order, tuple_paths=True)
