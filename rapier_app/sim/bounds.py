"""Lower bounds on coflow completion times (CCT).

The bound of a coflow is its CCT alone in an empty network when every flow may be
split fractionally over its candidate paths: ``1 / alpha*`` where ``alpha*`` is the
optimum of RAPIER's LP relaxation (4) with the *full* link capacities and the
coflow's *full* flow sizes (RAPIER, Zhao et al., INFOCOM 2015, Section IV-A, model
(4)).

Why it is a lower bound for any scheduler that routes each flow over its candidate
paths (the ECMP set, as every scheduler here does): if a coflow finishes T seconds
after it arrives, the time-averaged rate of flow j over those T seconds is v_j / T,
split over the paths it used; time-averaging keeps every link within its capacity
(the constraints are linear), so ``m_jk = (bits of j sent on path k) / (v_j T)`` is
feasible for (4) with ``alpha = 1/T``; hence ``1/T <= alpha*``.  Other coflows only
take capacity away, so the bound holds in any mix.  The average-CCT bound is the
mean of the per-coflow bounds; it ignores contention *between* coflows, so it can
be far from reachable in loaded runs.

When every flow has a single candidate path the LP is not needed:
``alpha* = min_l C_l / (sum of v_j over flows crossing l)`` (closed form).
Otherwise (4) is solved on commodities (:func:`~rapier_app.scheduling.rapier.lp4.
solve_lp4_aggregated`: flows between the same first-hop and last-hop switches
pooled, host links as bounds on alpha), the exact reformulation the RAPIER
scheduler uses: the same optimum alpha* as the per-flow LP, so the same bound, from
an LP about 10x smaller on trace coflows (30 Facebook coflows on a k=10 fat-tree:
57 s -> 8 s here).  The per-flow LP remains for coflows where no two flows share a
commodity.

Units: sizes in bytes, capacities in bit/s, bounds in seconds.
"""

from __future__ import annotations

import math
from typing import Callable, Dict, Optional, Sequence

import numpy as np

from topologies import Topology

from ..core.model import CoflowSpec

BITS = 8.0


def coflow_lower_bound(topology: Topology, coflow: CoflowSpec,
                       max_paths: Optional[int] = None, solver: str = "GLOP",
                       pair_cache: Optional[dict] = None) -> float:
    """Lower bound (seconds) on the CCT of one coflow: 1/alpha* of LP (4), full capacities.

    Args:
        topology: the fabric (capacities in bit/s).
        coflow: the coflow (flow sizes in bytes).
        max_paths: cap K on candidate paths per flow, as given to the schedulers
            (None: the whole ECMP set).  Fewer paths give a larger (still valid for
            schedulers with that cap) bound.
        solver: OR-Tools LP solver id for (4).
        pair_cache: optional dict ``(src, dst) -> (paths, link matrix)`` filled and
            reused across calls with the same topology and ``max_paths``.

    Returns:
        The bound in seconds (> 0).

    Raises:
        TopologyError: a flow names an unknown host or has no path.
        LPError: the LP could not be solved.

    Source: RAPIER Section IV-A, model (4) (and model (2) with fixed routes for the
    single-path closed form).
    """
    from ..scheduling.rapier.lp4 import solve_lp4, solve_lp4_aggregated

    cap = topology.capacity.astype(float)
    vols = np.array([f.size_bytes * BITS for f in coflow.flows])
    pair_mats: Dict[tuple, tuple] = {} if pair_cache is None else pair_cache
    paths, mats = [], []
    for f in coflow.flows:
        pm = pair_mats.get((f.src, f.dst))
        if pm is None:
            ps = topology.candidate_paths(f.src, f.dst, max_paths)
            pm = (ps, _link_matrix(topology, ps))
            pair_mats[(f.src, f.dst)] = pm
        paths.append(pm[0])
        mats.append(pm[1])
    if all(len(ps) == 1 for ps in paths):
        load = np.zeros(len(cap))
        for v, ps in zip(vols, paths):
            load[topology.path_links(ps[0])] += v
        used = load > 0
        alpha = float(np.min(cap[used] / load[used]))
    else:
        agg = None
        if all(m is not None for m in mats):
            agg = solve_lp4_aggregated(vols, mats, cap, solver)
        if agg is not None:
            alpha = agg[0]
        else:
            alpha, _, _, _ = solve_lp4(topology, vols, paths, cap, solver,
                                       link_mats=mats if all(m is not None for m in mats)
                                       else None)
    if not alpha > 0:
        return math.inf
    return 1.0 / alpha


def _link_matrix(topology: Topology, paths: Sequence[tuple]) -> Optional[np.ndarray]:
    """(paths x hops) int array of the link indices of ``paths``; None when the paths
    have different lengths (then the per-flow LP is built from the paths)."""
    links = [topology.path_links(p) for p in paths]
    if len({len(a) for a in links}) != 1:
        return None
    return np.stack(links)


def coflow_lower_bounds(topology: Topology, coflows: Sequence[CoflowSpec],
                        max_paths: Optional[int] = None, solver: str = "GLOP",
                        progress: Optional[Callable[[int, int], None]] = None
                        ) -> Dict[str, float]:
    """Per-coflow CCT lower bounds: ``{coflow_id: seconds}``.

    See :func:`coflow_lower_bound` (same arguments and errors) and the module
    docstring for why this is a bound.  ``progress``, if given, is called as
    ``progress(done, total)`` after each coflow (coflows counted).
    Source: RAPIER Section IV-A, model (4).
    """
    out: Dict[str, float] = {}
    pairs: Dict[tuple, tuple] = {}
    for i, c in enumerate(coflows):
        out[c.coflow_id] = coflow_lower_bound(topology, c, max_paths, solver, pairs)
        if progress is not None:
            progress(i + 1, len(coflows))
    return out


def avg_cct_lower_bound(topology: Topology, coflows: Sequence[CoflowSpec],
                        max_paths: Optional[int] = None, solver: str = "GLOP",
                        progress: Optional[Callable[[int, int], None]] = None) -> float:
    """Lower bound (seconds) on the average CCT of ``coflows``: the mean of the
    per-coflow bounds of :func:`coflow_lower_bounds` (``progress`` as there).

    Raises:
        ValueError: ``coflows`` is empty.
        TopologyError, LPError: as :func:`coflow_lower_bound`.
    """
    if not coflows:
        raise ValueError("coflows: need at least one coflow for an average")
    b = coflow_lower_bounds(topology, coflows, max_paths, solver, progress)
    return float(np.mean(list(b.values())))
