"""The RAPIER paper's comparison schemes (Section V): baseline, routing-only, Varys.

* ``baseline``: ECMP routes, per-flow max-min fair sharing.
* ``routing-only``: each new flow placed on the candidate path that balances load,
  then per-flow max-min fair sharing.
* ``scheduling-only`` (Varys, Chowdhury et al. SIGCOMM 2014): ECMP routes, SEBF
  coflow order, MADD rates, work conservation, preemptive.

``FixedRouting`` lets a test pin flows to given paths (RAPIER Fig. 1(a)/(b)).
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ..core.model import Allocation, CoflowState, FlowState, Schedule
from .base import Scheduler, SchedulerError, max_min_fair, register

BITS = 8.0


class _Routed(Scheduler):
    """A scheduler whose flows keep one path for life (ECMP, load-balanced or pinned).

    ``routes`` pins flows: flow_id -> path (tuple of node names); pinned flows skip
    the scheme's own routing.  Used to reproduce the routings of RAPIER Fig. 1.
    """

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 routes: Optional[Mapping[str, Sequence[str]]] = None):
        super().__init__(topology, seed, max_paths)
        self._routes: Dict[str, tuple] = {k: tuple(v) for k, v in (routes or {}).items()}
        for fid, p in self._routes.items():
            topology.path_links(p)  # raises TopologyError on a path that does not exist

    def route(self, flow: FlowState) -> tuple:
        """The flow's path: pinned, or chosen once by :meth:`pick_path`."""
        p = self._routes.get(flow.flow_id)
        if p is None:
            p = self.pick_path(flow)
            self._routes[flow.flow_id] = p
        return p

    def pick_path(self, flow: FlowState) -> tuple:
        return self.ecmp_path(flow)


def fair_share(topology: Topology, flows: List[FlowState], paths: List[tuple],
               capacity: Optional[np.ndarray] = None) -> np.ndarray:
    """Per-flow max-min fair rates (bit/s) for ``flows`` on ``paths``."""
    links = [topology.path_links(p) for p in paths]
    return max_min_fair(links, topology.capacity if capacity is None else capacity)


@register("baseline")
class Baseline(_Routed):
    """RAPIER's baseline (Section V): ECMP routing and per-flow max-min fair sharing.

    Models TCP sharing at flow level.  Source: RAPIER Section V, "Baseline".
    """

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        flows = [f for c in coflows for f in c.active_flows()]
        paths = [self.route(f) for f in flows]
        rates = fair_share(self.topology, flows, paths)
        return Schedule({f.flow_id: Allocation(p, float(r))
                         for f, p, r in zip(flows, paths, rates)},
                        order=[c.coflow_id for c in coflows])


@register("fair")
class PerFlowFair(Baseline):
    """Per-flow max-min fair sharing on ECMP routes (TCP-like), the normaliser used
    by the Aalo and Sincronia evaluations.  Identical to ``baseline``."""


@register("routing-only")
class RoutingOnly(_Routed):
    """RAPIER's routing-only scheme (Section V): load-balanced routing, fair sharing.

    When a flow first appears it is placed on the candidate path that minimises the
    largest ratio (bytes routed on the link + the flow's bytes) / capacity over the
    path's links, where "bytes routed" counts the remaining bytes of active flows
    already placed.  New flows are placed coflow by coflow in arrival order, larger
    flows first.  Flows keep their path; rates are per-flow max-min fair.
    Ties go to the lexicographically first path.
    """

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        topo = self.topology
        flows = [f for c in coflows for f in c.active_flows()]
        new = [f for f in flows if f.flow_id not in self._routes]
        if new:
            load = np.zeros(len(topo.capacity))
            for f in flows:
                p = self._routes.get(f.flow_id)
                if p is not None:
                    load[topo.path_links(p)] += f.remaining_bytes * BITS
            order = sorted(range(len(new)),
                           key=lambda i: (coflows_index(coflows, new[i].coflow_id),
                                          -new[i].remaining_bytes, new[i].flow_id))
            for i in order:
                f = new[i]
                v = f.remaining_bytes * BITS
                best, best_cost = None, None
                for p in self.candidates(f):
                    ls = topo.path_links(p)
                    cost = float(np.max((load[ls] + v) / topo.capacity[ls]))
                    if best_cost is None or cost < best_cost - 1e-12:
                        best, best_cost = p, cost
                self._routes[f.flow_id] = best
                load[topo.path_links(best)] += v
        paths = [self._routes[f.flow_id] for f in flows]
        rates = fair_share(topo, flows, paths)
        return Schedule({f.flow_id: Allocation(p, float(r))
                         for f, p, r in zip(flows, paths, rates)},
                        order=[c.coflow_id for c in coflows])


def coflows_index(coflows: Sequence[CoflowState], cid: str) -> int:
    for i, c in enumerate(coflows):
        if c.coflow_id == cid:
            return i
    return len(coflows)


def work_conserve(topology: Topology, residual: np.ndarray,
                  items: Sequence[Tuple[FlowState, tuple]], rates: Dict[str, float]) -> None:
    """Greedy work conservation: in the given order, each flow takes the residual
    bandwidth left on its path (bit/s), which is then removed from ``residual``.

    ``rates`` (flow_id -> bit/s) is updated in place.
    """
    for f, p in items:
        ls = topology.path_links(p)
        extra = float(residual[ls].min())
        if extra > 0:
            rates[f.flow_id] = rates.get(f.flow_id, 0.0) + extra
            residual[ls] -= extra


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
    Recomputed at every event, hence preemptive.  On a big switch the links are
    exactly Varys's ingress/egress ports.
    """

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
        topo = self.topology
        active = [c for c in coflows if c.active_flows()]
        paths = {f.flow_id: self.route(f) for c in active for f in c.active_flows()}
        order = self.sebf_order(active, paths)
        residual = topo.capacity.astype(float).copy()
        rates: Dict[str, float] = {}
        for c in order:
            load = {}
            for f in c.active_flows():
                for l in topo.path_links(paths[f.flow_id]):
                    load[l] = load.get(l, 0.0) + f.remaining_bytes * BITS
            if any(residual[l] <= 0 for l in load):
                continue
            gamma = max(v / residual[l] for l, v in load.items())
            for f in c.active_flows():
                r = f.remaining_bytes * BITS / gamma
                rates[f.flow_id] = r
                residual[topo.path_links(paths[f.flow_id])] -= r
            np.maximum(residual, 0.0, out=residual)
        work_conserve(topo, residual,
                      [(f, paths[f.flow_id]) for c in order for f in c.active_flows()], rates)
        return Schedule({fid: Allocation(p, rates.get(fid, 0.0)) for fid, p in paths.items()},
                        order=[c.coflow_id for c in order])
