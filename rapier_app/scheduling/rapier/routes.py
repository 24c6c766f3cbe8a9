"""Route heuristics that improve on Algorithm 2's rounding of LP (4): greedy
placement, local search (``rapier-ls``) and ECMP spreading (``rapier-spread``);
the variants themselves are in :mod:`.variants`.

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

from ... import kernels
from ...core.model import FlowState
from ...kernels import rapier as krapier
from ..pathcache import pair_paths
from .lp4 import route_load


def _ratio_max(topology: Topology, paths: Sequence[tuple], vols: np.ndarray,
               cap: np.ndarray) -> float:
    links, bits = route_load(topology, paths, vols)
    with np.errstate(divide="ignore"):
        return float(np.max(bits / cap[links])) if len(links) else 0.0


def _mats(topology: Topology, paths: Sequence[Sequence[tuple]],
          flows: Optional[Sequence[FlowState]] = None,
          max_paths: Optional[int] = None) -> List[np.ndarray]:
    """Per flow, its candidate paths' link indices as a (paths x hops) array, or a
    list of arrays when the paths differ in length.  With ``flows``, a flow whose
    ``paths`` entry is its host pair's shared candidate list (the same list as
    :func:`~rapier_app.scheduling.pathcache.pair_paths` with ``max_paths`` holds)
    takes the pair's cached link matrix."""
    out = []
    for j, ps in enumerate(paths):
        if flows is not None:
            f = flows[j]
            pp = pair_paths(topology, f.src, f.dst, max_paths)
            if pp.paths is ps:
                m = pp.mat
                out.append(m if m is not None else pp.arrays)
                continue
        arrs = [topology.path_links(p) for p in ps]
        out.append(np.array(arrs) if len({len(a) for a in arrs}) == 1 else arrs)
    return out


def _path_ratios(mat, load: np.ndarray, v: float, cap: np.ndarray) -> np.ndarray:
    """Per candidate path: max over its links of (load + v) / cap."""
    if isinstance(mat, np.ndarray):
        return ((load[mat] + v) / cap[mat]).max(axis=1)
    return np.array([float(np.max((load[ls] + v) / cap[ls])) for ls in mat])


def _blocks(mats):
    """The kernels' block layout of per-flow link matrices (:func:`_mats`), as
    ``(off, npaths, nhops, mflat)`` (int64 arrays; flow j's paths are the
    ``npaths[j] x nhops[j]`` row-major block of ``mflat`` at ``off[j]``), or None
    when a flow's paths differ in length (a list, not a matrix) or there is no flow."""
    if not mats or not all(isinstance(m, np.ndarray) for m in mats):
        return None
    n = len(mats)
    npaths = np.fromiter((m.shape[0] for m in mats), np.int64, n)
    nhops = np.fromiter((m.shape[1] for m in mats), np.int64, n)
    off = np.zeros(n, np.int64)
    np.cumsum((npaths * nhops)[:-1], out=off[1:])
    mflat = np.concatenate([m.ravel() for m in mats]).astype(np.int64, copy=False)
    return off, npaths, nhops, mflat


def greedy_index(vol: np.ndarray, blocks: tuple, cap: np.ndarray) -> np.ndarray:
    """:func:`greedy_routes` on path blocks, compiled
    (:func:`~rapier_app.kernels.rapier.greedy_place_kernel`).

    Args: ``vol`` (float64[n], bits), ``blocks`` ``(off, npaths, nhops, mflat)`` as
    :func:`_blocks` or ``_CoflowArrays.path_blocks`` (sentinel ``L = len(cap)``),
    ``cap`` (float64[L], bit/s).  Returns each flow's path index (int64[n])."""
    k = np.zeros(len(vol), np.int64)
    krapier.greedy_place_kernel(np.argsort(-vol, kind="stable"), vol, *blocks,
                                np.zeros(len(cap) + 1), np.append(cap, np.inf), k)
    return k


def ratio_max_index(vol: np.ndarray, blocks: tuple, k: np.ndarray, cap: np.ndarray) -> float:
    """:func:`_ratio_max` of flow j on path ``k[j]`` of its block: the largest
    load/capacity ratio (1/s; 1 / the fixed-route alpha of model (2)) over the loaded
    links, 0 when none is loaded.  The loads are summed as :func:`.lp4.route_load`
    sums them (:func:`~rapier_app.kernels.rapier.route_load_kernel`), so the value
    is the same bit for bit."""
    off, _, nhops, mflat = blocks
    load = np.zeros(len(cap))
    krapier.route_load_kernel(vol, off, nhops, k, mflat, len(cap), load)
    ll = np.flatnonzero(load > 0)
    with np.errstate(divide="ignore"):
        return float(np.max(load[ll] / cap[ll])) if len(ll) else 0.0


def local_search_index(vol: np.ndarray, blocks: tuple, k: np.ndarray, cap: np.ndarray,
                       limit: int) -> np.ndarray:
    """:func:`local_search_routes` on path blocks from the path indexes ``k``
    (int64[n], changed in place and returned), at most ``limit`` moves, compiled
    (:func:`~rapier_app.kernels.rapier.local_search_kernel`: the same moves).  Args
    as :func:`greedy_index`."""
    off, _, nhops, mflat = blocks
    L = len(cap)
    load = np.zeros(L + 1)
    krapier.route_load_kernel(vol, off, nhops, k, mflat, L, load)
    capx = np.append(np.where(cap > 0, cap, np.inf), np.inf)
    krapier.local_search_kernel(np.argsort(-vol, kind="stable"), vol, *blocks, k, load,
                                capx, L, limit)
    return k


def improved_index(vol: np.ndarray, blocks: tuple, argmax_k: np.ndarray,
                   cap: np.ndarray) -> np.ndarray:
    """:func:`improved_routes` on path blocks: the better of the argmax rounding
    (``argmax_k``, path indexes) and :func:`greedy_index` by :func:`ratio_max_index`
    (argmax on ties), then :func:`local_search_index` (at most 4 n moves).  Args as
    :func:`greedy_index`; returns the path indexes (int64[n])."""
    g = greedy_index(vol, blocks, cap)
    ra = ratio_max_index(vol, blocks, argmax_k, cap)
    rg = ratio_max_index(vol, blocks, g, cap)
    start = g if rg < ra else argmax_k.astype(np.int64, copy=True)
    return local_search_index(vol, blocks, start, cap, 4 * len(vol))


def spread_index(vol: np.ndarray, blocks: tuple, base_k: np.ndarray, ecmp_k: np.ndarray,
                 cap: np.ndarray) -> np.ndarray:
    """:func:`spread_routes` on path blocks: the ECMP indexes ``ecmp_k`` when their
    :func:`ratio_max_index` is at most ``base_k``'s (times 1 + 1e-9), else
    ``base_k``.  Args as :func:`greedy_index`."""
    a_ecmp = ratio_max_index(vol, blocks, ecmp_k, cap)
    a_base = ratio_max_index(vol, blocks, base_k, cap)
    return ecmp_k.copy() if a_ecmp <= a_base * (1 + 1e-9) else base_k


def greedy_routes(topology: Topology, flows: Sequence[FlowState], vols: Sequence[float],
                  paths: Sequence[Sequence[tuple]], cap: np.ndarray,
                  max_paths: Optional[int] = None) -> Dict[str, tuple]:
    """Greedy placement: flows by non-increasing volume (ties: flow order), each on the
    candidate path minimising max over its links of (load + v) / capacity (first path
    on ties).

    Args: flows and their volumes (bits), per-flow candidate paths, capacities
    (bit/s, > 0 on every candidate link), the scheduler's ``max_paths`` (to find
    the host pairs' cached link matrices, :func:`_mats`).  Returns flow_id -> path.
    """
    load = np.zeros(len(cap))
    mats = _mats(topology, paths, flows, max_paths)
    blocks = _blocks(mats) if kernels.ENABLED else None
    if blocks is not None:  # compiled (greedy_index)
        k = greedy_index(np.asarray(vols, dtype=float), blocks, cap)
        return {f.flow_id: ps[i] for f, ps, i in zip(flows, paths, k.tolist())}
    out: Dict[str, tuple] = {}
    order = sorted(range(len(flows)), key=lambda j: (-vols[j], j))
    for j in order:
        v = vols[j]
        k = int(np.argmin(_path_ratios(mats[j], load, v, cap)))
        out[flows[j].flow_id] = paths[j][k]
        load[mats[j][k]] += v
    return out


def local_search_routes(topology: Topology, flows: Sequence[FlowState], vols: Sequence[float],
                        paths: Sequence[Sequence[tuple]], routes: Dict[str, tuple],
                        cap: np.ndarray, max_moves: Optional[int] = None,
                        max_paths: Optional[int] = None) -> Dict[str, tuple]:
    """Bottleneck local search from ``routes`` (see the module docstring, step 3).

    Args: as :func:`greedy_routes`, plus the starting ``routes`` (flow_id -> path)
    and ``max_moves`` (default 4 * number of flows).  Returns new routes whose
    fixed-route alpha on ``cap`` is >= that of ``routes``.  When every flow's paths
    have one length and the kernels are on, the search runs compiled
    (:func:`~rapier_app.kernels.rapier.local_search_kernel`: the same moves).
    """
    n = len(flows)
    vols = np.asarray(vols, dtype=float)
    mats = _mats(topology, paths, flows, max_paths)
    idx = [paths[j].index(routes[flows[j].flow_id]) for j in range(n)]
    limit = 4 * n if max_moves is None else max_moves
    blocks = _blocks(mats) if kernels.ENABLED else None
    if blocks is not None:  # compiled (local_search_index)
        k = local_search_index(vols, blocks, np.array(idx, np.int64), cap, limit)
        return {f.flow_id: paths[j][i] for j, (f, i) in enumerate(zip(flows, k.tolist()))}
    cur_links = [mats[j][idx[j]] for j in range(n)]
    load = np.zeros(len(cap))
    for j in range(n):
        load[cur_links[j]] += vols[j]
    safe_cap = np.where(cap > 0, cap, np.inf)
    # flow x link incidence of the current routes, to find a link's flows quickly
    hops = {len(a) for a in cur_links}
    # equal lengths: the routes' links as one (flows x hops) array, kept up to date
    cur_arr = np.array(cur_links) if len(hops) == 1 else None
    moves = 0
    while moves < limit:
        ratio = load / safe_cap
        lstar = int(np.argmax(ratio))
        rstar = float(ratio[lstar])
        if rstar <= 0:
            break
        if cur_arr is not None:
            on = np.flatnonzero((cur_arr == lstar).any(axis=1)).tolist()
        else:
            on = [j for j in range(n) if lstar in cur_links[j]]
        on.sort(key=lambda j: (-vols[j], j))
        moved = False
        for j in on:
            if len(paths[j]) < 2:
                continue
            load[cur_links[j]] -= vols[j]
            r = _path_ratios(mats[j], load, vols[j], safe_cap)
            if isinstance(mats[j], np.ndarray):
                r[(mats[j] == lstar).any(axis=1)] = np.inf
            else:
                for k, ls in enumerate(mats[j]):
                    if lstar in ls:
                        r[k] = np.inf
            k = int(np.argmin(r))
            if not r[k] < rstar * (1 - 1e-12):
                load[cur_links[j]] += vols[j]
                continue
            idx[j] = k
            cur_links[j] = mats[j][k]
            if cur_arr is not None:
                if len(cur_links[j]) != cur_arr.shape[1]:  # a longer or shorter path
                    cur_arr = None
                else:
                    cur_arr[j] = cur_links[j]
            load[cur_links[j]] += vols[j]
            moved = True
            moves += 1
            break
        if not moved:
            break
    return {f.flow_id: paths[j][idx[j]] for j, f in enumerate(flows)}


def improved_routes(topology: Topology, flows: Sequence[FlowState], vols: Sequence[float],
                    paths: Sequence[Sequence[tuple]], argmax_routes: Dict[str, tuple],
                    cap: np.ndarray, max_paths: Optional[int] = None) -> Dict[str, tuple]:
    """Steps 1-3 of the module docstring: best of argmax and greedy, then local search.
    ``max_paths``: the scheduler's (:func:`_mats`).
    Returns flow_id -> path; its fixed-route alpha on ``cap`` is >= argmax's."""
    g = greedy_routes(topology, flows, vols, paths, cap, max_paths)
    ra = _ratio_max(topology, [argmax_routes[f.flow_id] for f in flows], vols, cap)
    rg = _ratio_max(topology, [g[f.flow_id] for f in flows], vols, cap)
    start = g if rg < ra else argmax_routes
    return local_search_routes(topology, flows, vols, paths, start, cap,
                               max_paths=max_paths)


def spread_routes(topology: Topology, flows: Sequence[FlowState], vols: Sequence[float],
                  usable: Sequence[Sequence[tuple]], base: Dict[str, tuple],
                  cap: np.ndarray, ecmp) -> Dict[str, tuple]:
    """ECMP routes when they lose nothing against Algorithm 2's rounding, else ``base``.

    LP (4) is degenerate when a coflow's host links bound its alpha (any
    non-blocking fabric): many routings are optimal, and the argmax rounding of a
    solver's vertex sends many coflows through the same core switches
    (measured on the Facebook trace on fattree:10: the busiest of 25 cores carried
    3.2x the mean; CHANGELOG.md, "Benchmarks history").  For each coflow, the routing where every
    flow takes its ECMP path (``ecmp(flow)``, when usable) replaces ``base`` if its
    fixed-route alpha (model (2), on ``cap`` in bit/s, volumes in bits) is at least
    ``base``'s; otherwise ``base`` stands.  So the coflow's own CCT alone never gets
    worse, and ties go to the spread routes.

    Returns:
        flow_id -> path.
    """
    vol = np.asarray(vols, dtype=float)
    paths_ecmp = []
    for f, ps in zip(flows, usable):
        p = ecmp(f)
        if p not in ps:
            return base
        paths_ecmp.append(p)
    base_paths = [base[f.flow_id] for f in flows]
    a_ecmp = _ratio_max(topology, paths_ecmp, vol, cap)
    a_base = _ratio_max(topology, base_paths, vol, cap)
    # the largest load/capacity ratio is 1 / alpha: smaller is better
    if a_ecmp <= a_base * (1 + 1e-9):
        return {f.flow_id: p for f, p in zip(flows, paths_ecmp)}
    return base
