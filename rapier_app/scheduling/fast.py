"""``rapier-ls``: RAPIER with a better rounding of LP (4).

Algorithm 2 (RAPIER Section IV-B, lines 3-7) rounds the LP by giving each flow the
path of its largest m_jk.  LP (4) usually has many optimal solutions, and which one
a solver returns decides the rounding: measured on k=8 fat-trees with width-128
coflows, argmax rounding of GLOP's vertex keeps 0.80-0.97 of the LP's alpha and of
PDLP's interior point only 0.11-0.66 (``rapier-bench`` prints the current figures).

``rapier-ls`` keeps Algorithm 1, the LP and Algorithm 3 of ``rapier`` and changes
only the rounding:

1. candidates: the argmax rounding, and a greedy placement (flows by non-increasing
   volume, each on the candidate path that minimises the largest load/capacity
   ratio along it);
2. the better of the two by fixed-route alpha (model (2)) on the capacities the LP
   routed on;
3. local search: while possible, take the most loaded link (largest load/capacity)
   and move one of its flows (largest first) to the candidate path whose links stay
   below that ratio after the move (choosing the one with the smallest resulting
   maximum).  Each move lowers the bottleneck link or the number of links at the
   bottleneck ratio, so alpha never decreases; at most ``4 * n_flows`` moves.

The LP optimum bounds the result: alpha_fixed <= alpha_LP.  Units: volumes in bits,
capacities in bit/s.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from topologies import Topology

from ..core.model import FlowState
from .base import register
from .rapier import Rapier, route_load


def _ratio_max(topology: Topology, paths: Sequence[tuple], vols: np.ndarray,
               cap: np.ndarray) -> float:
    links, bits = route_load(topology, paths, vols)
    with np.errstate(divide="ignore"):
        return float(np.max(bits / cap[links])) if len(links) else 0.0


def greedy_routes(topology: Topology, flows: Sequence[FlowState], vols: Sequence[float],
                  paths: Sequence[Sequence[tuple]], cap: np.ndarray) -> Dict[str, tuple]:
    """Greedy placement: flows by non-increasing volume (ties: flow order), each on the
    candidate path minimising max over its links of (load + v) / capacity (first path
    on ties).

    Args: flows and their volumes (bits), per-flow candidate paths, capacities
    (bit/s, > 0 on every candidate link).  Returns flow_id -> path.
    """
    load = np.zeros(len(cap))
    out: Dict[str, tuple] = {}
    order = sorted(range(len(flows)), key=lambda j: (-vols[j], j))
    for j in order:
        v = vols[j]
        best, best_r, best_ls = None, np.inf, None
        for p in paths[j]:
            ls = topology.path_links(p)
            r = float(np.max((load[ls] + v) / cap[ls]))
            if r < best_r:
                best, best_r, best_ls = p, r, ls
        out[flows[j].flow_id] = best
        load[best_ls] += v
    return out


def local_search_routes(topology: Topology, flows: Sequence[FlowState], vols: Sequence[float],
                        paths: Sequence[Sequence[tuple]], routes: Dict[str, tuple],
                        cap: np.ndarray, max_moves: Optional[int] = None) -> Dict[str, tuple]:
    """Bottleneck local search from ``routes`` (see the module docstring, step 3).

    Args: as :func:`greedy_routes`, plus the starting ``routes`` (flow_id -> path)
    and ``max_moves`` (default 4 * number of flows).  Returns new routes whose
    fixed-route alpha on ``cap`` is >= that of ``routes``.
    """
    n = len(flows)
    vols = np.asarray(vols, dtype=float)
    cur = [routes[f.flow_id] for f in flows]
    links_of = [topology.path_links(p) for p in cur]
    load = np.zeros(len(cap))
    for j in range(n):
        load[links_of[j]] += vols[j]
    safe_cap = np.where(cap > 0, cap, np.inf)
    moves = 0
    limit = 4 * n if max_moves is None else max_moves
    while moves < limit:
        ratio = load / safe_cap
        lstar = int(np.argmax(ratio))
        rstar = float(ratio[lstar])
        if rstar <= 0:
            break
        on = [j for j in range(n) if lstar in links_of[j]]
        on.sort(key=lambda j: (-vols[j], j))
        moved = False
        for j in on:
            if len(paths[j]) < 2:
                continue
            load[links_of[j]] -= vols[j]
            best, best_r, best_ls = None, rstar * (1 - 1e-12), None
            for p in paths[j]:
                ls = topology.path_links(p)
                if lstar in ls:
                    continue
                r = float(np.max((load[ls] + vols[j]) / safe_cap[ls]))
                if r < best_r:
                    best, best_r, best_ls = p, r, ls
            if best is None:
                load[links_of[j]] += vols[j]
                continue
            cur[j], links_of[j] = best, best_ls
            load[best_ls] += vols[j]
            moved = True
            moves += 1
            break
        if not moved:
            break
    return {f.flow_id: p for f, p in zip(flows, cur)}


def improved_routes(topology: Topology, flows: Sequence[FlowState], vols: Sequence[float],
                    paths: Sequence[Sequence[tuple]], argmax_routes: Dict[str, tuple],
                    cap: np.ndarray) -> Dict[str, tuple]:
    """Steps 1-3 of the module docstring: best of argmax and greedy, then local search.
    Returns flow_id -> path; its fixed-route alpha on ``cap`` is >= argmax's."""
    g = greedy_routes(topology, flows, vols, paths, cap)
    ra = _ratio_max(topology, [argmax_routes[f.flow_id] for f in flows], vols, cap)
    rg = _ratio_max(topology, [g[f.flow_id] for f in flows], vols, cap)
    start = g if rg < ra else argmax_routes
    return local_search_routes(topology, flows, vols, paths, start, cap)


@register("rapier-ls")
class RapierLS(Rapier):
    """RAPIER (Algorithms 1-3, ``route_on="full"``) with the improved rounding of
    :func:`improved_routes` in place of Algorithm 2's argmax.  Same parameters as
    :class:`~rapier_app.scheduling.rapier.Rapier`."""

    def round_routes(self, flows, vols, usable, ms, lp_cap):
        """Argmax rounding (Alg. 2 lines 3-7) improved by greedy + local search."""
        base = super().round_routes(flows, vols, usable, ms, lp_cap)
        return improved_routes(self.topology, flows, vols, usable, base, lp_cap)
