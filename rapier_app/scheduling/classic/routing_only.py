"""``routing-only``: each new flow placed on the candidate path that balances load,
then per-flow max-min fair sharing (RAPIER Section V's routing-only scheme).
Units: bit/s for rates, bytes for sizes.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ...core.model import CoflowState, Schedule
from ..maxmin import max_min_fair_flat
from ..pathcache import pair_paths
from ..registry import register
from .routed import BITS, _Routed


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

    #: remaining bytes are read only when new flows are placed, i.e. at arrivals
    reads_progress = "arrivals"
    #: max-min fair on the chosen paths: every flow ends on a saturated link
    work_conserving = "path"

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        topo = self.topology
        # Only a coflow not seen before can bring unplaced flows (a coflow arrives
        # with all its flows), so the per-flow scan is limited to those.
        seen = self.__dict__.setdefault("_seen_coflows", set())
        fresh = [c for c in coflows if c.coflow_id not in seen]
        new = [f for c in fresh for f in c.active_flows() if f.flow_id not in self._routes]
        seen.update(c.coflow_id for c in fresh)
        if len(seen) > 2 * len(coflows) + 64:
            seen.intersection_update(c.coflow_id for c in coflows)
        if new:
            flows = [f for c in coflows for f in c.active_flows()]
            L = len(topo.capacity)
            load = np.zeros(L)
            placed = [f for f in flows if f.flow_id in self._routes]
            if placed:
                _, pl = self.routes_and_links(placed)
                vol = np.array([f.remaining_bytes * BITS for f in placed])
                lens = np.fromiter(map(len, pl), np.int64, len(pl))
                # bincount adds each link's volumes in flow order, exactly as the
                # per-flow loop did
                load = np.bincount(np.concatenate(pl), weights=np.repeat(vol, lens),
                                   minlength=L)
            pos = {c.coflow_id: i for i, c in enumerate(coflows)}
            order = sorted(range(len(new)),
                           key=lambda i: (pos.get(new[i].coflow_id, len(coflows)),
                                          -new[i].remaining_bytes, new[i].flow_id))
            # per (src, dst): the candidates' links as the shared padded matrix
            # (pathcache: sentinel link L, zero load, infinite capacity) so a flow's
            # costs are one array op
            load = np.append(load, 0.0)
            capx = np.append(topo.capacity, np.inf)
            for i in order:
                f = new[i]
                v = f.remaining_bytes * BITS
                pp = pair_paths(topo, f.src, f.dst, self.max_paths)
                cands = pp.paths
                M = pp.padded
                costs = ((load[M] + v) / capx[M]).max(axis=1).tolist()
                # first candidate strictly (1e-12) better than every earlier one
                b, best_cost = 0, costs[0]
                for r in range(1, len(costs)):
                    if costs[r] < best_cost - 1e-12:
                        b, best_cost = r, costs[r]
                best = cands[b]
                self._routes[f.flow_id] = best
                load[topo.path_links(best)] += v
        flows, paths, _, lens, lidx, _, _ = self._active_routes(coflows, (0, 1, 3, 4))
        rates = max_min_fair_flat(lens, lidx, topo.capacity)
        return Schedule.from_vectors(flows, paths, rates, order=[c.coflow_id for c in coflows],
                                     tuple_paths=True)
