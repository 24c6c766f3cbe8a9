"""RAPIER's LP relaxation (4) and the fixed-route model (2) (Zhao et al., INFOCOM 2015).

The readings of the paper are documented in :mod:`.scheduler`.

* :func:`route_load`, :func:`alpha_from_load`, :func:`fixed_route_alpha`: model (2)
  with the routes fixed, in closed form (alpha = min_l R_l / load_l).
* :class:`LP4Structure`: the sparsity structure of (4) for one coflow, reusable
  while its flows and candidate paths do not change.
* :func:`solve_lp4` (OR-Tools ``model_builder`` from sparse arrays, GLOP by default)
  and :func:`solve_lp4_reference` (the original per-variable ``pywraplp`` build).
* :func:`lp4_commodities` and :func:`solve_lp4_aggregated`: (4) solved on
  commodities (flows between the same first and last hop) and expanded to an
  optimal per-flow solution.

Units: volumes in bits, capacities and residuals in bit/s, alpha in 1/s; the LP
itself is scaled to Mbit and Mbit/s.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Dict, List, Optional, Tuple

import numpy as np

from topologies import Topology

from ... import kernels
from ...core.model import FlowState
from ...errors import RapierError
from ...kernels import rapier as krapier

BITS = 8.0
MEGA = 1e6


class LPError(RapierError, RuntimeError):
    """The LP (4) could not be solved to optimality (infeasible, time-out, error)."""


def solver_supported(solver_name: str) -> bool:
    """Whether OR-Tools ``model_builder`` (the build of :func:`solve_lp4` and
    :func:`solve_lp4_aggregated`) can solve LPs with ``solver_name`` on this
    machine (e.g. "GLOP", "PDLP", "HIGHS"; case-insensitive).  About 2 us.
    Raises nothing: an unknown name is False."""
    from ortools.linear_solver.python import model_builder_helper as mbh
    return bool(mbh.ModelSolverHelper(str(solver_name)).solver_is_supported())


def route_load(topology: Topology, paths: Sequence[tuple],
               volumes_bits: Sequence[float]) -> Tuple[np.ndarray, np.ndarray]:
    """Bits each link carries when flow j (``volumes_bits[j]`` bits) takes ``paths[j]``.

    Returns:
        (links, bits): the loaded link indices (sorted int array) and their loads in
        bits (float array).  Sums run in flow order (so results are bit-identical
        however often they are recomputed).
    Source: RAPIER Section IV-A, the left side of (2a) with x fixed.
    """
    if not len(paths):
        return np.zeros(0, np.int64), np.zeros(0)
    try:  # the links of paths asked before, from Topology.path_links's cache
        pl = list(map(topology._path_links_cache.__getitem__, paths))
    except (KeyError, TypeError):
        pl = [topology.path_links(p) for p in paths]
    lens = np.fromiter(map(len, pl), dtype=np.int64, count=len(pl))
    idx = np.concatenate(pl)
    w = np.repeat(np.asarray(volumes_bits, dtype=float), lens)
    load = np.bincount(idx, weights=w, minlength=len(topology.capacity))
    links = np.flatnonzero(load > 0)
    return links, load[links]


def alpha_from_load(load_links: np.ndarray, load_bits: np.ndarray,
                    residual: np.ndarray) -> float:
    """Model (2) with fixed routes: alpha = min_l R_l / load_l over loaded links (1/s).

    ``residual`` in bit/s, loads in bits; negative residuals count as 0; inf when no
    link is loaded.  Source: RAPIER Section IV-A, model (2) (Alg. 2 line 8).
    """
    if not len(load_links):
        return math.inf
    return float(np.min(np.maximum(residual[load_links], 0.0) / load_bits))


def fixed_route_alpha(topology: Topology, flows: Sequence[FlowState], routes: Dict[str, tuple],
                      residual: np.ndarray, volumes_bits: Sequence[float]) -> float:
    """Optimum of model (2) for fixed routes: max alpha with alpha * load_l <= R_l.

    Args:
        flows: the coflow's flows; routes: flow_id -> path; residual: R_l in bit/s;
        volumes_bits: per flow, its volume in bits (same order as ``flows``).

    Returns alpha in 1/s (0 when a loaded link has no residual capacity; inf when no
    link is loaded).
    Source: RAPIER Section IV-A, model (2) with x fixed (Alg. 2 line 8).
    """
    links, bits = route_load(topology, [routes[f.flow_id] for f in flows], volumes_bits)
    return alpha_from_load(links, bits, residual)


class LP4Structure:
    """The sparsity structure of LP (4) for one coflow's flows and candidate paths,
    reusable while those do not change (only the volumes and capacities do).

    Columns: alpha (0), then m_jk flow by flow, path by path.  Rows: one (4b) row per
    flow (sum_k m_jk - alpha = 0), then one (4a) row per link in order of first
    appearance.  Volumes are scaled to Mbit and capacities to Mbit/s.  The CSR
    matrix is built once; :meth:`matrix` only rewrites its values, so the model
    handed to the solver is identical to one built from scratch.

    Args:
        topology: the fabric.
        paths: per flow, its candidate paths (at least one each).
        link_mats: optional, per flow, a (paths x hops) int array of the link
            indices of its paths (same order as ``paths``).

    Attributes:
        n_paths: per flow, its number of paths; links: all links of the paths
        (sorted unique int array); link_of_row: the link of each (4a) row.
    """

    def __init__(self, topology: Topology, paths: Sequence[Sequence[tuple]],
                 link_mats: Optional[Sequence[np.ndarray]] = None):
        import scipy.sparse as sp

        n = len(paths)
        n_paths = np.fromiter((len(ps) for ps in paths), dtype=np.int64, count=n)
        P = int(n_paths.sum())
        var_flow = np.repeat(np.arange(n), n_paths)
        if link_mats is not None:
            plen = np.repeat(np.fromiter((m.shape[1] for m in link_mats), dtype=np.int64,
                                         count=n), n_paths)
            links = (np.concatenate([m.ravel() for m in link_mats]) if P
                     else np.zeros(0, np.int64))
        else:
            pl = [topology.path_links(p) for ps in paths for p in ps]
            plen = np.fromiter((len(a) for a in pl), dtype=np.int64, count=P)
            links = np.concatenate(pl) if P else np.zeros(0, np.int64)
        var_of_entry = np.repeat(np.arange(1, P + 1), plen)
        uniq, first = np.unique(links, return_index=True)
        order = np.argsort(first, kind="stable")
        link_of_row = uniq[order]
        pos = np.empty(len(uniq), dtype=np.int64)
        pos[order] = np.arange(len(uniq))
        link_row = n + pos[np.searchsorted(uniq, links)]
        rows = np.concatenate([np.arange(n), var_flow, link_row])
        cols = np.concatenate([np.zeros(n, np.int64), np.arange(1, P + 1), var_of_entry])
        self.n, self.n_rows, self.n_cols = n, n + len(uniq), P + 1
        self.n_paths = n_paths
        self.links = uniq
        self.link_of_row = link_of_row
        self._const = np.concatenate([-np.ones(n), np.ones(P)])
        self._entry_flow = var_flow[var_of_entry - 1]
        nnz = len(rows)
        tmpl = sp.csr_matrix((np.arange(1, nnz + 1, dtype=float), (rows, cols)),
                             shape=(self.n_rows, self.n_cols))
        self._perm = tmpl.data.astype(np.int64) - 1
        self._mat = tmpl
        self.row_lb = np.concatenate([np.zeros(n), np.full(self.n_rows - n, -np.inf)])
        self.obj = np.zeros(self.n_cols)
        self.obj[0] = 1.0
        self.var_lb = np.zeros(self.n_cols)
        self.var_ub = np.full(self.n_cols, np.inf)

    def matrix(self, volumes_bits: Sequence[float],
               reserved_bits: Optional[np.ndarray] = None):
        """The constraint matrix (scipy CSR, shared and overwritten by the next call)
        for per-flow volumes in bits.

        ``reserved_bits`` (per topology link, bits) adds the term alpha * B_l to each
        (4a) row: the volume that coflows ahead in Algorithm 1's order still have to
        send over link l (see :func:`solve_lp4`).  Zero entries add nothing, so with
        no reservation the matrix is exactly the plain LP (4)'s."""
        vol_m = np.asarray(volumes_bits, dtype=float) / MEGA
        vals = np.concatenate([self._const, vol_m[self._entry_flow]])
        self._mat.data = vals[self._perm]
        if reserved_bits is None:
            return self._mat
        b = np.asarray(reserved_bits, dtype=float)[self.link_of_row] / MEGA
        nz = np.flatnonzero(b > 0)
        if not nz.size:
            return self._mat
        import scipy.sparse as sp

        extra = sp.csr_matrix((b[nz], (self.n + nz, np.zeros(nz.size, np.int64))),
                              shape=self._mat.shape)
        out = (self._mat + extra).tocsr()
        out.sort_indices()
        return out

    def row_ub(self, residual: np.ndarray) -> np.ndarray:
        """Row upper bounds: 0 for (4b) rows, R_l in Mbit/s (negative -> 0) for (4a)."""
        return np.concatenate([np.zeros(self.n),
                               np.maximum(residual[self.link_of_row], 0.0) / MEGA])


def _solve(st: "LP4Structure", capacity: np.ndarray, volumes_bits, solver_name: str,
           time_limit_s: Optional[float], what: str,
           reserved_bits: Optional[np.ndarray] = None) -> Tuple[np.ndarray, float, float]:
    """Fill OR-Tools' model_builder from ``st`` (row bounds from ``capacity`` in
    bit/s, coefficients from ``volumes_bits``), maximise alpha and return (variable
    values, fill seconds, solve seconds).

    Raises:
        LPError: solver unavailable, or not optimal within ``time_limit_s``.
    """
    from ortools.linear_solver.python import model_builder_helper as mbh

    t0 = time.perf_counter()
    helper = mbh.ModelBuilderHelper()
    helper.fill_model_from_sparse_data(st.var_lb, st.var_ub, st.obj, st.row_lb,
                                       st.row_ub(capacity),
                                       st.matrix(volumes_bits, reserved_bits))
    helper.set_maximize(True)
    solver = mbh.ModelSolverHelper(solver_name)
    if not solver.solver_is_supported():
        raise LPError(f"solver: OR-Tools solver {solver_name!r} is not available")
    if time_limit_s is not None:
        solver.set_time_limit_in_seconds(float(time_limit_s))
    t1 = time.perf_counter()
    solver.solve(helper)
    solve_s = time.perf_counter() - t1
    status = solver.status()
    if status != mbh.SolveStatus.OPTIMAL:
        raise LPError(f"LP (4) not solved to optimality (status {status.name}, "
                      f"{what}, {solve_s:.3f} s)")
    return np.asarray(solver.variable_values(), dtype=float), t1 - t0, solve_s


def solve_lp4(topology: Topology, volumes_bits: Sequence[float],
              paths: Sequence[Sequence[tuple]], residual: np.ndarray,
              solver_name: str = "GLOP", time_limit_s: Optional[float] = None,
              link_mats: Optional[Sequence[np.ndarray]] = None,
              structure: Optional[LP4Structure] = None,
              reserved_bits: Optional[np.ndarray] = None
              ) -> Tuple[float, List[np.ndarray], float, float]:
    """Solve the LP relaxation (4) of RAPIER for one coflow.

    maximize alpha  s.t.  sum_j sum_{k: l in p_jk} v_j m_jk <= R_l  (4a),
    sum_k m_jk = alpha  (4b),  m_jk >= 0  (4c).

    With ``reserved_bits`` B (bits per link), (4a) becomes
    sum v_j m_jk + alpha * B_l <= R_l: routing on the capacity left over by the
    coflows ahead in Algorithm 1's order.  With t = 1/alpha and x = m / alpha it
    reads load_l(x) + B_l <= R_l * t: by time t link l must carry the B_l bits
    committed ahead of this coflow and this coflow's own, so alpha* is the
    coflow's earliest completion time behind those commitments (``rapier``'s
    default reading of Algorithm 2 line 2, see the module docstring).

    The model is filled from sparse arrays through OR-Tools' ``model_builder``
    (one call; about 20x cheaper than per-variable ``pywraplp`` calls), with the
    same column and row order as :func:`solve_lp4_reference`, so GLOP walks the same
    pivots.  Falls back to :func:`solve_lp4_reference` when scipy is missing.

    Args:
        volumes_bits: v_j, remaining volume of flow j in bits (length n).
        paths: per flow, its candidate paths (tuples of node names), at least one.
        residual: R_l per link in bit/s (length = number of links).
        solver_name: OR-Tools solver id ("GLOP" default, "PDLP", "HIGHS", ...).
        time_limit_s: optional solver time limit in seconds.
        link_mats: optional, per flow, the link indices of its paths as a
            (paths x hops) int array in the order of ``paths`` (saves the per-path
            lookups; the model is the same).
        structure: optional :class:`LP4Structure` of these flows and paths, reused
            from an earlier call (the model is the same as one built afresh).
        reserved_bits: optional B_l per link in bits (None or zeros: plain (4)).

    Returns:
        (alpha in 1/s, per-flow arrays of m_jk in 1/s, build seconds, solve seconds).

    Raises:
        LPError: solver unavailable, infeasible, or not optimal within the limit.

    Source: RAPIER Section IV-A, model (4).
    """
    try:
        import scipy.sparse  # noqa: F401
    except ImportError:  # pragma: no cover - scipy is a declared dependency
        return solve_lp4_reference(topology, volumes_bits, paths, residual,
                                   solver_name, time_limit_s, reserved_bits)
    t0 = time.perf_counter()
    st = structure if structure is not None else LP4Structure(topology, paths, link_mats)
    t1 = time.perf_counter()
    x, fill_s, solve_s = _solve(st, residual, volumes_bits, solver_name, time_limit_s,
                                f"{len(volumes_bits)} flows", reserved_bits)
    ms = np.split(x[1:], np.cumsum(st.n_paths)[:-1]) if st.n else []
    return float(x[0]), list(ms), t1 - t0 + fill_s, solve_s


def solve_lp4_reference(topology: Topology, volumes_bits: Sequence[float],
                        paths: Sequence[Sequence[tuple]], residual: np.ndarray,
                        solver_name: str = "GLOP", time_limit_s: Optional[float] = None,
                        reserved_bits: Optional[np.ndarray] = None
                        ) -> Tuple[float, List[np.ndarray], float, float]:
    """LP (4) built variable by variable through ``pywraplp`` (the original, slow
    build; kept as the reference for tests and the benchmark).  Same arguments,
    returns and errors as :func:`solve_lp4`.  Source: RAPIER Section IV-A, model (4).
    """
    from ortools.linear_solver import pywraplp

    t0 = time.perf_counter()
    solver = pywraplp.Solver.CreateSolver(solver_name)
    if solver is None:
        raise LPError(f"solver: OR-Tools solver {solver_name!r} is not available")
    if time_limit_s is not None:
        solver.SetTimeLimit(max(1, int(time_limit_s * 1000)))
    inf = solver.infinity()
    alpha = solver.NumVar(0.0, inf, "alpha")
    rows: Dict[int, list] = {}
    m_vars: List[list] = []
    for j, (v, ps) in enumerate(zip(volumes_bits, paths)):
        vm = v / MEGA
        row = solver.Constraint(0.0, 0.0)
        row.SetCoefficient(alpha, -1.0)
        mv = []
        for k, p in enumerate(ps):
            m = solver.NumVar(0.0, inf, "")
            row.SetCoefficient(m, 1.0)
            mv.append(m)
            for l in topology.path_links(p):
                rows.setdefault(int(l), []).append((m, vm))
        m_vars.append(mv)
    for l, terms in rows.items():
        c = solver.Constraint(-inf, max(float(residual[l]), 0.0) / MEGA)
        if reserved_bits is not None and reserved_bits[l] > 0:
            c.SetCoefficient(alpha, float(reserved_bits[l]) / MEGA)
        for m, vm in terms:
            c.SetCoefficient(m, c.GetCoefficient(m) + vm)
    solver.Maximize(alpha)
    t1 = time.perf_counter()
    status = solver.Solve()
    t2 = time.perf_counter()
    if status != pywraplp.Solver.OPTIMAL:
        raise LPError(f"LP (4) not solved to optimality (status {status}, "
                      f"{len(volumes_bits)} flows, {t2 - t1:.3f} s)")
    ms = [np.array([m.solution_value() for m in mv]) for mv in m_vars]
    return alpha.solution_value(), ms, t1 - t0, t2 - t1


def certify_routing(load: np.ndarray, cap: np.ndarray, all_links: np.ndarray,
                    blocks: Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                    vols_bits: np.ndarray, mand: Tuple[np.ndarray, np.ndarray],
                    reserved_bits: Optional[np.ndarray] = None) -> Tuple[float, float]:
    """How far one integral routing of a coflow is from the optimum of LP (4).

    With t = 1/alpha, LP (4) (with ``reserved_bits`` B) reads: minimise t such that
    B_l + load_l(x) <= C_l t on every link l of the candidate paths, x a fractional
    routing.  A routing with loads ``load`` reaches t_route = max_l (B_l + load_l) /
    C_l over those links.  LP duality bounds the optimum from below: for any
    weights y >= 0 on the links, t* >= (sum_l y_l B_l + sum_j v_j min_k y(p_jk)) /
    sum_l y_l C_l.  Three weightings are taken, and the largest bound kept:
    one link at a time for the links every candidate of a flow crosses (``mand``:
    a host's access links), y = 1 on the routing's tight links (within 1e-6 of
    t_route: an edge switch's uplinks, a pod's core links), and B_l / C_l on each
    candidate link alone (row (4a) with no load).  When the bound meets t_route the
    routing is an optimal solution of (4) (alpha* = 1 / t_route), whatever solver
    would have been used.

    Args:
        load: bits per link of the routing (float64[L]).
        cap: C_l per link in bit/s (the capacities (4) routes on).
        all_links: the candidate paths' links (sorted int array, LP (4)'s rows).
        blocks: the flows' candidate paths as path blocks ``(off, npaths, nhops,
            mflat)`` (:meth:`~.plan._CoflowArrays.path_blocks`, sentinel L).
        vols_bits: v_j per flow in bits.
        mand: (links, bits) every routing puts on those links
            (:meth:`~.plan._CoflowArrays.mandatory_load`).
        reserved_bits: B_l per link in bits, or None (no reservation).

    Returns:
        (t_route, t_lower) in seconds: the routing's 1/alpha on (4)'s rows and a lower
        bound on 1/alpha*; (inf, 0.0) when a candidate link has no capacity.

    Source: RAPIER Section IV-A, model (4), and its LP dual.
    """
    if not all_links.size:
        return math.inf, 0.0
    c = cap[all_links]
    if not np.all(c > 0):
        return math.inf, 0.0
    B = reserved_bits
    lb = 0.0
    if B is None:
        u = load[all_links] / c
    else:
        b = B[all_links]
        u = (b + load[all_links]) / c
        lb = float(np.max(b / c))
    t_route = float(np.max(u))
    ml, mb = mand
    if ml.size:
        lb = max(lb, float(np.max(((mb if B is None else B[ml] + mb)) / cap[ml])))
    tight = all_links[u >= t_route * (1.0 - 1e-6)]
    L = len(cap)
    w = np.zeros(L + 1)
    w[tight] = 1.0
    off, npaths, nhops, mflat = blocks
    if kernels.ENABLED:
        cross = krapier.min_crossings_kernel(off, npaths, nhops, mflat,
                                             np.asarray(vols_bits, dtype=float), w)
    else:
        cross = 0.0
        for j in range(len(off)):
            K, H, o = int(npaths[j]), int(nhops[j]), int(off[j])
            best = float(w[mflat[o:o + K * H]].reshape(K, H).sum(axis=1).min())
            if best > 0.0:
                cross += float(vols_bits[j]) * best
    bt = 0.0 if B is None else float(B[tight].sum())
    lb = max(lb, (bt + cross) / float(cap[tight].sum()))
    return t_route, lb


class Commodities:
    """The commodities of LP (4) for one set of flows (see :func:`solve_lp4_aggregated`),
    reusable while the flows and their candidate paths do not change.

    Attributes: ``members`` (per commodity, its flow indices), ``inner`` (per
    commodity, the (paths x hops) link matrix between first and last hop),
    ``host_first``/``host_last`` (per flow, its first/last link; -1 when the flow is
    a commodity of its own), ``comm_of`` (per flow, its commodity), ``lp_rows``
    (commodities with a routing choice), ``struct`` (the commodity LP's
    :class:`LP4Structure`, built on first use).
    """

    __slots__ = ("members", "inner", "host_first", "host_last", "comm_of", "lp_rows", "struct",
                 "kern")


def lp4_commodities(link_mats: Sequence[np.ndarray]) -> Optional[Commodities]:
    """Group flows into LP (4) commodities: single-homed flows with the same inner
    candidate paths (same order) share one; others are their own.  Returns None when
    no two flows share a commodity.  ``link_mats``: per flow, (paths x hops) link
    indices.  Source: RAPIER model (4), exact reformulation of
    :func:`solve_lp4_aggregated`."""
    n = len(link_mats)
    groups: Dict[tuple, List[int]] = {}
    host_first = np.full(n, -1, np.int64)
    host_last = np.full(n, -1, np.int64)
    inner: List[np.ndarray] = []
    comm_of = np.empty(n, dtype=np.int64)
    for j, mat in enumerate(link_mats):
        if mat.shape[1] >= 2 and (mat[:, 0] == mat[0, 0]).all() and \
                (mat[:, -1] == mat[0, -1]).all():
            inn = mat[:, 1:-1]
            host_first[j], host_last[j] = mat[0, 0], mat[0, -1]
            key = (inn.shape, inn.tobytes())
        else:  # multi-homed: a commodity of its own, every link in the rows
            key = ("flow", j)
            inn = mat
        g = groups.get(key)
        if g is None:
            comm_of[j] = len(inner)
            groups[key] = [j]
            inner.append(inn)
        else:
            comm_of[j] = comm_of[g[0]]
            g.append(j)
    if len(groups) == n:
        return None
    cm = Commodities()
    cm.members = list(groups.values())
    cm.inner = inner
    cm.host_first, cm.host_last, cm.comm_of = host_first, host_last, comm_of
    cm.lp_rows = [g for g in range(len(inner)) if inner[g].shape[0] > 1 and inner[g].shape[1] > 0]
    cm.struct = None
    cm.kern = None
    return cm


def commodities_subset(cm: Optional[Commodities], keep) -> Optional[Commodities]:
    """:func:`lp4_commodities` of the flows ``keep`` (bool per flow) selects, from
    the commodities ``cm`` of all of them, without reading their matrices: a
    commodity is a key shared by its flows, so the survivors' commodities are the
    old ones restricted, numbered again in order of their first surviving flow, as
    a fresh grouping numbers them.  None when no two survivors share one (or ``cm``
    is None).  Source: RAPIER model (4), as :func:`lp4_commodities`."""
    if cm is None:
        return None
    keep = np.asarray(keep, dtype=bool)
    co = cm.comm_of[keep]
    n = co.shape[0]
    uniq, first = np.unique(co, return_index=True)
    old_g = uniq[np.argsort(first, kind="stable")]
    G = old_g.shape[0]
    if G == n:
        return None
    remap = np.full(len(cm.inner), -1, np.int64)
    remap[old_g] = np.arange(G, dtype=np.int64)
    comm_of = remap[co]
    srt = np.argsort(comm_of, kind="stable")
    bounds = np.cumsum(np.bincount(comm_of, minlength=G))[:-1]
    out = Commodities()
    out.members = [a.tolist() for a in np.split(srt, bounds)]
    out.inner = [cm.inner[g] for g in old_g.tolist()]
    out.host_first, out.host_last = cm.host_first[keep], cm.host_last[keep]
    out.comm_of = comm_of
    out.lp_rows = [g for g in range(G)
                   if out.inner[g].shape[0] > 1 and out.inner[g].shape[1] > 0]
    out.struct = None
    out.kern = None
    return out


class RowBlocks(Sequence):
    """Per-flow rows of LP (4) values (1/s) stored in one flat array: row j is
    ``flat[starts[j]:starts[j] + lens[j]]`` (a view).  What the compiled
    :func:`solve_lp4_aggregated` returns instead of a list of arrays; indexing and
    iteration give the same rows."""

    __slots__ = ("flat", "starts", "lens")

    def __init__(self, flat: np.ndarray, starts: np.ndarray, lens: np.ndarray):
        self.flat, self.starts, self.lens = flat, starts, lens

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self[i] for i in range(*j.indices(len(self)))]
        a = int(self.starts[j])
        return self.flat[a:a + int(self.lens[j])]


def _commodity_layout(cm: "Commodities", n: int) -> tuple:
    """The flat arrays :func:`~rapier_app.kernels.rapier.
    expand_commodities_kernel` reads, kept on ``cm``: (members flat, member
    offsets, paths per commodity, per-flow row offsets, per-flow row lengths)."""
    if cm.kern is None:
        members = cm.members
        mptr = np.zeros(len(members) + 1, np.int64)
        np.cumsum([len(m) for m in members], out=mptr[1:])
        mflat = np.fromiter((j for m in members for j in m), np.int64, int(mptr[-1]))
        K = np.array([a.shape[0] for a in cm.inner], np.int64)
        lens = K[cm.comm_of]
        fo = np.zeros(n, np.int64)
        if n:
            np.cumsum(lens[:-1], out=fo[1:])
        cm.kern = (mflat, mptr, K, fo, lens)
    return cm.kern


def solve_lp4_aggregated(volumes_bits: Sequence[float], link_mats: Sequence[np.ndarray],
                         capacity: np.ndarray, solver_name: str = "GLOP",
                         time_limit_s: Optional[float] = None,
                         commodities: Optional[Commodities] = None,
                         reserved_bits: Optional[np.ndarray] = None
                         ) -> Optional[Tuple[float, List[np.ndarray], float, float, int]]:
    """LP (4) for one coflow, solved on commodities instead of flows, returning an
    optimal solution of the per-flow LP (4).

    Flows whose candidate paths all start with the same link and end with the same
    link (single-homed hosts: every fat-tree, VL2, leaf-spine and big-switch host)
    and share the same inner paths (between their first and last switch, in the same
    order) form one commodity g of volume V_g = sum of their v_j.  The host links'
    load v_j * alpha does not depend on the routing, so they only bound alpha
    (alpha <= R_h / V_h); the commodity LP has one (4b) row per commodity and (4a)
    rows for the inner links.  Its optimum alpha* equals that of the per-flow LP
    (4): split each commodity's m_gk over its flows in the same proportions and the
    loads are the same, and conversely.  From it an optimal per-flow solution is
    built: the commodity's flows, by non-increasing volume, fill its paths in order
    up to their quotas V_g m_gk / alpha*; at most one flow per path boundary is split.
    Algorithm 2's argmax rounding then applies unchanged.  On the Facebook trace on
    a k=10 fat-tree a 21k-flow coflow has at most 50 x 49 commodities, so the LP
    shrinks about 10x.

    Args:
        volumes_bits: v_j per flow (bits); link_mats: per flow, its candidate paths'
        link indices as a (paths x hops) int array; capacity: R_l per link (bit/s);
        solver_name, time_limit_s: as :func:`solve_lp4`.
        commodities: optional :func:`lp4_commodities` of these flows, reused.
        reserved_bits: optional B_l per link in bits, as :func:`solve_lp4` (host
            links: alpha * (V_h + B_h) <= R_h).

    Returns:
        (alpha in 1/s, per-flow m_jk arrays in 1/s, build s, solve s, commodities),
        or None when no flow can be aggregated (then use :func:`solve_lp4`).

    Raises:
        LPError: as :func:`solve_lp4`.

    Source: RAPIER Section IV-A, model (4) (an exact reformulation).
    """
    t0 = time.perf_counter()
    n = len(volumes_bits)
    vols = np.asarray(volumes_bits, dtype=float)
    cm = commodities if commodities is not None else lp4_commodities(link_mats)
    if cm is None:
        return None
    members, inner, host_first, host_last = cm.members, cm.inner, cm.host_first, cm.host_last
    G = len(members)
    V = np.bincount(cm.comm_of, weights=vols, minlength=G)
    # host links bound alpha: alpha * (bits through h) <= R_h
    hosts = np.concatenate([host_first[host_first >= 0], host_last[host_last >= 0]])
    hv = np.concatenate([vols[host_first >= 0], vols[host_last >= 0]])
    alpha_ub = np.inf
    if hosts.size:
        hl = np.bincount(hosts, weights=hv, minlength=len(capacity))
        used = np.flatnonzero(hl > 0)
        den = hl[used] if reserved_bits is None else hl[used] + reserved_bits[used]
        alpha_ub = float(np.min(np.maximum(capacity[used], 0.0) / MEGA / (den / MEGA)))
    lp_rows = cm.lp_rows
    m_g: List[Optional[np.ndarray]] = [None] * G
    solve_s = 0.0
    if lp_rows:
        if cm.struct is None:
            cm.struct = LP4Structure(None, [[None] * inner[g].shape[0] for g in lp_rows],
                                     [inner[g] for g in lp_rows])
            cm.struct.var_ub = cm.struct.var_ub.copy()
        st = cm.struct
        st.var_ub[0] = alpha_ub
        t1 = time.perf_counter()
        x, fill_s, solve_s = _solve(st, capacity, V[lp_rows], solver_name, time_limit_s,
                                    f"{G} commodities of {n} flows", reserved_bits)
        t1 += fill_s
        alpha = float(x[0])
        for g, mg in zip(lp_rows, np.split(x[1:], np.cumsum(st.n_paths)[:-1])):
            m_g[g] = mg
    else:
        alpha = alpha_ub
        if not np.isfinite(alpha):
            raise LPError("LP (4) unbounded: the coflow crosses no link")
    ms = _expand(cm, n, vols, lp_rows, st if lp_rows else None, x if lp_rows else None,
                 m_g, alpha)
    return alpha, ms, t1 - t0 if lp_rows else time.perf_counter() - t0, solve_s, G


def _expand(cm: "Commodities", n: int, vols: np.ndarray, lp_rows: list,
            st: Optional["LP4Structure"], x: Optional[np.ndarray],
            m_g: List[Optional[np.ndarray]], alpha: float):
    """The optimal per-flow solution of LP (4) from the commodity solution (``m_g``
    per commodity, None for those without an LP row; ``alpha`` in 1/s): each
    commodity's flows, by non-increasing volume (``vols``, bits), fill its paths in
    order up to their quotas (:func:`solve_lp4_aggregated`).  Returns the m_jk rows
    per flow (1/s): compiled (:func:`_expand_compiled`, as :class:`RowBlocks`) when
    the kernels are on, else numpy (:func:`_expand_numpy`, a list); the same values
    bit for bit."""
    if kernels.ENABLED:
        return _expand_compiled(cm, n, vols, lp_rows, st, x, m_g, alpha)
    return _expand_numpy(cm, n, vols, m_g, alpha)


def _expand_compiled(cm: "Commodities", n: int, vols: np.ndarray, lp_rows: list,
                     st: Optional["LP4Structure"], x: Optional[np.ndarray],
                     m_g: List[Optional[np.ndarray]], alpha: float) -> "RowBlocks":
    """:func:`_expand` compiled (:func:`~rapier_app.kernels.rapier.
    expand_commodities_kernel`): the same per-flow rows, bit for bit, as flat blocks."""
    G = len(cm.members)
    mflat, mptr, K, fo, lens = _commodity_layout(cm, n)
    has_m = np.zeros(G, np.int64)
    mg_off = np.zeros(G, np.int64)
    tot = np.zeros(G)
    mg_flat = np.zeros(0)
    if lp_rows:
        mg_flat = np.ascontiguousarray(x[1:], dtype=float)
        o = 0
        for g, k in zip(lp_rows, st.n_paths.tolist()):
            has_m[g] = 1
            mg_off[g] = o
            tot[g] = float(m_g[g].sum())  # numpy's (pairwise) sum, as below
            o += k
    flat = np.empty(int(lens.sum()))
    krapier.expand_commodities_kernel(vols, mflat, mptr, K, has_m, mg_flat, mg_off, tot,
                                      float(alpha), fo, flat)
    return RowBlocks(flat, fo, lens)


def _expand_numpy(cm: "Commodities", n: int, vols: np.ndarray,
                  m_g: List[Optional[np.ndarray]], alpha: float) -> List[np.ndarray]:
    """:func:`_expand` in numpy, commodity by commodity."""
    members, inner = cm.members, cm.inner
    ms: List[Optional[np.ndarray]] = [None] * n
    for g, mem in enumerate(members):
        K = inner[g].shape[0]
        mg = m_g[g]
        if mg is None or K == 1:  # one path (or no inner link: any path is as good)
            for j in mem:
                m = np.zeros(K)
                m[0] = alpha
                ms[j] = m
            continue
        idx = np.array(mem)
        order = idx[np.argsort(-vols[idx], kind="stable")]
        v = vols[order]
        c_hi = np.cumsum(v)
        c_lo = c_hi - v
        tot = float(mg.sum())
        frac = mg / tot if tot > 0 else np.full(K, 1.0 / K)
        q_hi = np.cumsum(frac) * c_hi[-1]
        q_hi[-1] = c_hi[-1]
        q_lo = np.concatenate([[0.0], q_hi[:-1]])
        over = np.clip(np.minimum(c_hi[:, None], q_hi[None, :]) -
                       np.maximum(c_lo[:, None], q_lo[None, :]), 0.0, None)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(v[:, None] > 0, over / v[:, None], frac[None, :]) * alpha
        for r, j in enumerate(order.tolist()):
            ms[j] = share[r]
    return ms
