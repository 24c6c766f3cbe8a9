"""RAPIER: joint routing and scheduling of coflows (Zhao et al., INFOCOM 2015).

Implements Algorithm 1 (MinimizeMeanCCT), Algorithm 2 (MinimumCCT, built on the
LP relaxation (4) and the fixed-route model (2)) and Algorithm 3
(DistributeBandwidth) of the paper.  The LP is solved with OR-Tools (GLOP by
default).

Readings of the pseudo-code, where the text is incomplete or has typos:

* **Units.** v_ij is a flow's *remaining* volume in bits, R_l a link's residual
  capacity in bit/s, so alpha is in 1/s and t = 1/alpha in seconds.  The LP is
  scaled to Mbit and Mbit/s for numerical comfort.
* **Which capacities LP (4) routes on.**  Algorithm 2 line 2 solves (4) "with
  network resource utilization information".  Three readings are implemented:

  - ``route_on="reserved"`` (default, ``rapier``): route on the capacity left by
    the coflows ahead in Algorithm 1's order, counted as *volume over the
    coflow's horizon*: (4a) becomes sum v m + alpha * B_l <= C_l, where B_l is the
    bits the coflows already picked in this pass still send over link l.  With
    t = 1/alpha it says link l carries those B_l bits and this coflow's own by
    time t, so 1/alpha* is the coflow's earliest completion behind the
    commitments ahead of it, and that time (max over its routed links of
    (B_l + load_l) / C_l) is Algorithm 1's ordering key T_C.  Rates still come
    from model (2) on the residual R; a coflow whose routes cross a saturated
    link gets alpha = 0 for now and is served by Algorithm 3.  On Fig. 1 this
    gives b the routing of Fig. 1(c) (b/1 beside a/0, b/0 beside a/1: t = 1.6 s),
    so RAPIER reaches the optimum 1.0 s and 1.6 s.
  - ``route_on="residual"`` (``rapier-residual``): R read literally as rates.  A
    coflow scheduled after others is packed into whatever rate is left now, and
    on Fig. 1 b is packed on the one path with 60 Mbit/s left: 1.0 s and 1.625 s,
    not the optimum.  The reading cannot reach it: at t = 0 the rate-optimal
    routing of b is unique (both flows on the path with room), so no tie-break
    among LP optima can change it.
  - ``route_on="full"`` (``rapier-isolated``, this project's default before issue
    12): each coflow routed by (4) on the empty fabric.  Later coflows' routes
    then cross saturated links and model (2) gives them alpha = 0 (59 % of the
    coflow plans at width 128 on ``fattree512``).
* **Rounding and its tie-break** (``tie_break="spread"``, default): besides
  Algorithm 2's argmax rounding, the flows' ECMP paths and a greedy placement
  (largest flow first, each on the candidate path with the smallest
  (B_l + load_l) / C_l) are scored by the completion time behind the reserved
  volume; among those reaching the best one, the routing with the smallest sum of
  squared link utilisations (B + load) / C wins (exact ties: ECMP, then the
  argmax).  LP (4) is degenerate when a coflow's host links bound it, and the
  argmax of a simplex vertex sends many coflows through the same core links;
  ``tie_break="none"`` keeps the argmax alone.
* **Candidate paths** are the flow's ECMP set (equal-cost shortest paths), capped
  at ``max_paths`` (K of Theorem 1).  Paths crossing a link with no residual
  capacity are left out of (4): (4a) would force their m to 0 anyway.
* **Model (2) with fixed routes** has the closed form
  alpha = min_l R_l / (sum of v_ij over flows routed on l); it is computed directly
  rather than by a second LP (same optimum, no solver call).
* **Rounding** (Alg. 2 lines 3-7): each flow takes the path of its largest m_ij^k;
  ties go to the lexicographically first path.
* **waitTime** (Alg. 1 lines 2 and 7): the time since the coflow last received a
  rate from Algorithm 1 (since its arrival if never).  A coflow that waited longer
  than ``delta_s`` is scheduled next regardless of its CCT (the starvation guard).
  Ties in waiting time and in T_C go to the earlier arrival, then the smaller id.
* **Algorithm 1** re-solves, in each round, only the coflows whose LP inputs
  changed in the previous round (reserved bits on their candidate links, or, for
  ``"residual"``, lost capacity there); a stale coflow whose lower bound (its host
  links' load behind the reserved bits) cannot beat the round's best plan is not
  re-solved that round.  Both are exact: the pick is the one re-solving every
  coflow would make.
* **Decision points.**  Algorithm 1 runs in full "whenever a new coflow comes or an
  existing coflow finishes" (Section IV-C).  At every other flow completion only
  Algorithm 3 runs, on the capacity the finished flows freed, with the survivors'
  paths and rates kept (:mod:`~rapier_app.scheduling.conserve`): otherwise that
  capacity idles until the next coflow event.
* **A coflow whose fixed-route alpha is 0** (one of its flows only has saturated
  paths) has T_C = infinity: it is "not scheduled" in the sense of Section IV-C and
  gets bandwidth only from Algorithm 3.
* **Algorithm 3** has two evident typos.  Line 5 loops over the flows f of C (not
  of Omega); AssignBandwidth must, besides finding the largest bottleneck
  bandwidth over the flow's candidate paths, give that bandwidth to the flow and
  remove it from R.  A flow already routed by Algorithm 1 keeps its path (a flow
  has one path) and only tops up along it; an unscheduled flow takes the candidate
  path with the most residual bandwidth.  Coflows are visited non-increasingly by
  their minimum CCT (unscheduled, T = infinity, first), flows non-increasingly by
  remaining volume.  Line 2 cannot order the unscheduled coflows among
  themselves (all have T = infinity); they are visited in Algorithm 1's pick
  order, the shortest completion behind the reserved volume first
  (``wc_ties="order"``; ``"arrival"``, by arrival, was this project's reading
  before issue 12 and gives old coflows the spare capacity first).
* **LP failure or time-out** (``lp_time_limit_s``): the coflow is reported in
  ``Schedule.fallback`` with the reason, routed by ECMP, and served only by work
  conservation; the scheduler keeps going.
"""

from __future__ import annotations

import math
import operator
import time
import weakref
from dataclasses import dataclass
from itertools import compress
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ..core.model import Allocation, CoflowState, FlowState, Schedule
from .base import Scheduler, SchedulerError, register
from .conserve import WorkConservation, best_candidate

BITS = 8.0
MEGA = 1e6

#: topology -> {(src, dst, max_paths): (paths, link matrix)}; topologies are frozen.
_PAIR_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
#: topology -> {id(candidate list): (candidate list, links all its paths cross)}
_MAND_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class LPError(RuntimeError):
    """The LP (4) could not be solved to optimality (infeasible, time-out, error)."""


@dataclass
class CoflowPlan:
    """Result of Algorithm 2 for one coflow.

    Attributes:
        t_s: minimum CCT in seconds under the residual capacities (inf if alpha=0).
        alpha: 1/t_s in 1/s (rates are alpha * remaining bits).
        routes: flow_id -> chosen path.
        lp_alpha: optimum of the relaxation (4) (an upper bound on alpha), or None
            when the LP was skipped because every flow had a single usable path.
        links: link indices of all the coflow's candidate paths.
        build_s, solve_s: LP build and solve wall times in seconds.
        load_links, load_bits: the links the chosen routes cross (int array) and the
            bits routed over each (float array, same length): model (2)'s alpha on
            residual R is min(R[load_links] / load_bits).
        rem_bytes: per active flow (coflow order), remaining bytes when planned.
        paths: per active flow, its chosen path (same order as ``rem_bytes``).
        r_lidx, r_lens: the chosen paths' link indices, concatenated, and the number
            of links per path (int arrays).
        mand_links, mand_bits: (``route_on="reserved"``) links every candidate path
            of some flow crosses and the bits on them (a routing-independent lower
            bound on the load; Algorithm 1 skips re-planning with it).
    """

    t_s: float
    alpha: float
    routes: Dict[str, tuple]
    lp_alpha: Optional[float]
    links: np.ndarray
    build_s: float = 0.0
    solve_s: float = 0.0
    load_links: Optional[np.ndarray] = None
    load_bits: Optional[np.ndarray] = None
    rem_bytes: Optional[np.ndarray] = None
    paths: Optional[list] = None
    r_lidx: Optional[np.ndarray] = None
    r_lens: Optional[np.ndarray] = None
    mand_links: Optional[np.ndarray] = None
    mand_bits: Optional[np.ndarray] = None


_SENT = operator.attrgetter("bytes_sent")


class _CoflowArrays:
    """One coflow's active flows as arrays for Algorithms 1-3, cached by
    :class:`Rapier` while the set of active flows is unchanged.

    Attributes: ``act`` (the active-flow list it was built from), ``flows``, ``fids``,
    ``n``, ``sizes`` (bytes), ``cand`` and ``mats`` (per flow: candidate paths and
    their (paths x hops) link matrix, None if ragged), ``uniform_mats``, ``all_links``
    (every candidate link, sorted), ``fid_rank`` (rank of each flow id in sorted
    order, for Algorithm 3's tie-break), ``n_cand`` (candidate paths in all),
    ``struct`` (the :class:`LP4Structure`, once built).
    """

    __slots__ = ("act", "fids", "flows", "n", "sizes", "cand", "mats", "uniform_mats",
                 "all_links", "fid_rank", "n_cand", "struct", "topo", "_room", "comm",
                 "_mand")

    def __init__(self, act: List[FlowState], fids: tuple, cinfo: Optional[list],
                 topo: Topology, _from: Optional[tuple] = None):
        self.act = act
        self.flows = list(act)
        self.fids = fids
        self.n = n = len(act)
        self.topo = topo
        if _from is None:
            self.sizes = np.array([f.spec.size_bytes for f in act], dtype=float)
            self.cand = [ci[0] for ci in cinfo]
            self.mats = [ci[1] for ci in cinfo]
            rank = np.empty(n, dtype=np.int64)
            rank[sorted(range(n), key=fids.__getitem__)] = np.arange(n)
        else:
            self.sizes, self.cand, self.mats, old_rank = _from
            rank = np.empty(n, dtype=np.int64)
            rank[np.argsort(old_rank, kind="stable")] = np.arange(n)
        self.fid_rank = rank
        self.uniform_mats = all(m is not None for m in self.mats)
        self.all_links = (np.unique(np.concatenate(
            [m.ravel() if m is not None else
             np.concatenate([topo.path_links(p) for p in ps])
             for ps, m in zip(self.cand, self.mats)])) if n else np.zeros(0, np.int64))
        self.n_cand = sum(map(len, self.cand))
        self.struct = None
        self.comm = None  # Commodities of LP (4), False: none share one
        self._room = None
        self._mand = None

    def subset(self, act: List[FlowState], fids: tuple, keep: List[bool]) -> "_CoflowArrays":
        """The arrays of the flows ``keep`` selects (``act``, in the same order)."""
        m = np.array(keep, dtype=bool)
        return _CoflowArrays(act, fids, None, self.topo,
                             (self.sizes[m], list(compress(self.cand, keep)),
                              list(compress(self.mats, keep)), self.fid_rank[m]))

    def route_arrays(self, routes: Dict[str, tuple], topo: Topology) -> tuple:
        """(paths per flow, their link indices concatenated, links per path)."""
        if self.n_cand == self.n and self.uniform_mats:  # one path per flow
            paths = [c[0] for c in self.cand]
            shapes = {m.shape for m in self.mats}
            if len(shapes) == 1:
                h = self.mats[0].shape[1]
                return (paths, np.concatenate(self.mats).ravel() if self.n else
                        np.zeros(0, np.int64), np.full(self.n, h, dtype=np.int64))
        paths = [routes[f] for f in self.fids]
        if self.uniform_mats:
            ls = [m[0] if len(c) == 1 else m[c.index(p)]
                  for p, c, m in zip(paths, self.cand, self.mats)]
        else:
            ls = [topo.path_links(p) for p in paths]
        lens = np.fromiter(map(len, ls), np.int64, len(ls))
        return paths, (np.concatenate(ls) if ls else np.zeros(0, np.int64)), lens

    def mandatory_load(self, vols_bits: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Links every candidate path of a flow crosses (a single-homed host's first
        and last link; every link of a single-path flow) and the bits the flows put
        on them whatever the routing: ``(links, bits)``, sorted unique links.  A lower
        bound on any routing's load there."""
        if self._mand is None:
            ent_flow, ent_link = [], []
            cache = _MAND_CACHE.setdefault(self.topo, {})
            for j, (ps, m) in enumerate(zip(self.cand, self.mats)):
                got = cache.get(id(ps))
                if got is None or got[0] is not ps:
                    if m is None:
                        sets = [set(self.topo.path_links(p).tolist()) for p in ps]
                        common = sorted(set.intersection(*sets)) if sets else []
                    else:
                        common = [int(x) for x in np.unique(m[0])
                                  if (m == x).any(axis=1).all()]
                    got = (ps, common)
                    if len(cache) > 200_000:
                        cache.clear()
                    cache[id(ps)] = got
                common = got[1]
                ent_flow.extend([j] * len(common))
                ent_link.extend(common)
            self._mand = (np.array(ent_flow, dtype=np.int64),
                          np.array(ent_link, dtype=np.int64))
        ef, el = self._mand
        if not el.size:
            return el, np.zeros(0)
        load = np.bincount(el, weights=vols_bits[ef])
        links = np.unique(el)
        return links, load[links]

    def cand_links(self, j: int) -> list:
        """Flow j's candidate paths' link indices, as lists of ints."""
        m = self.mats[j]
        if m is not None:
            return m.tolist()
        return [self.topo.path_links(p).tolist() for p in self.cand[j]]

    def any_room(self, residual: np.ndarray) -> np.ndarray:
        """Per flow: does some candidate path have residual > 0 on every link?"""
        if self._room is None:
            rows, plens, npaths = [], [], []
            for ps, m in zip(self.cand, self.mats):
                arrs = list(m) if m is not None else [self.topo.path_links(p) for p in ps]
                rows.extend(arrs)
                plens.extend(map(len, arrs))
                npaths.append(len(arrs))
            pst = np.concatenate([[0], np.cumsum(plens)[:-1]]).astype(np.int64)
            fst = np.concatenate([[0], np.cumsum(npaths)[:-1]]).astype(np.int64)
            self._room = (np.concatenate(rows), pst, fst)
        cl, pst, fst = self._room
        ok = (np.minimum.reduceat(residual[cl], pst) > 0).astype(np.int8)
        return np.maximum.reduceat(ok, fst) > 0


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
    pl = [topology.path_links(p) for p in paths]
    lens = np.fromiter((len(a) for a in pl), dtype=np.int64, count=len(pl))
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
        solver_name: OR-Tools solver id ("GLOP" default, "PDLP", "CLP", ...).
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

    __slots__ = ("members", "inner", "host_first", "host_last", "comm_of", "lp_rows", "struct")


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
    return cm


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
    return alpha, ms, t1 - t0 if lp_rows else time.perf_counter() - t0, solve_s, G


@register("rapier")
class Rapier(Scheduler):
    """RAPIER's online scheduler: Algorithms 1, 2 and 3 (see the module docstring).

    Args:
        topology, seed, max_paths: see :class:`~rapier_app.scheduling.base.Scheduler`.
        delta_s: starvation threshold delta in seconds (Alg. 1 line 7).
        solver: OR-Tools LP solver id for (4), "GLOP" by default (chosen by
            measurement: ``rapier-bench``; PDLP is slower and rounds worse).
        lp_time_limit_s: time limit per LP solve in seconds (None: no limit).
        route_on: what LP (4) routes on (module docstring): ``"reserved"`` (default:
            full capacities minus, over the coflow's horizon, the volume that coflows
            ahead in Algorithm 1's order still send over each link), ``"residual"``
            (the residual rates R of Alg. 1 read literally) or ``"full"`` (each coflow
            routed as in an empty network); rates always come from model (2) on R.
        incremental: True (default): at a flow completion that ends no coflow (the
            same live coflows as the last call), the survivors keep their paths and
            rates and Algorithm 3 hands out the freed capacity
            (:class:`~rapier_app.scheduling.conserve.WorkConservation`); Algorithm 1
            runs in full at coflow arrivals and completions.  False: every call is a
            full pass.
        fast: True (default) for the exact fast path: an LP is solved again only
            when its inputs changed (a coflow's LP on full capacities depends only on
            its remaining volumes, so it is reused within a pass and across passes
            while those volumes are bit-identical; with ``route_on="residual"`` only
            coflows whose candidate links lost capacity are re-solved), and model (2)
            is re-evaluated only for coflows whose routed links lost capacity.
            False: the literal Algorithm 1, which re-runs Algorithm 2 (LP and all)
            for every pending coflow in every round.  Both give the same schedule
            (tests/test_rapier_fast.py).
        aggregate: solve LP (4) on commodities (flows between the same pair of
            first-hop and last-hop switches) and expand the optimum to an optimal
            per-flow solution (:func:`solve_lp4_aggregated`): the same optimum
            alpha, an LP up to ~10x smaller on trace coflows.  The two may round to
            different routes, as two solvers may (LP (4) has many optimal
            solutions).  None (default): only when the per-flow LP would have more
            than ``aggregate_min_paths`` path variables (so every small case keeps
            the per-flow LP's decisions); True: always; False: never.
        aggregate_min_paths: the threshold of ``aggregate=None`` (default 50,000:
            a per-flow GLOP solve of that size takes about a second here).
        wc_ties: how Algorithm 3 orders coflows tied in line 2's sort (every
            unscheduled coflow has minimal CCT = inf): ``"order"`` (default) in
            Algorithm 1's pick order, the shortest completion behind the reserved
            volume first; ``"arrival"``: by arrival (this project's reading before
            issue 12).
        tie_break: ``"spread"`` (default of ``rapier`` and ``rapier-bssi``): after
            Algorithm 2's argmax rounding, the coflow takes its flows' ECMP paths
            instead when they reach the same completion time behind the reserved
            volume (max over links of (B_l + load_l) / C_l, within 1e-9): LP (4) is
            degenerate when a coflow's host links bound it, and the argmax of a
            simplex vertex sends many coflows through the same core links.
            ``"none"``: the argmax rounding alone (the paper's text).

    Raises:
        SchedulerError: delta_s negative, lp_time_limit_s not positive, bad route_on,
            negative aggregate_min_paths, unknown tie_break.
    """

    #: tie_break when none is given (variants that change the rounding keep "none")
    default_tie_break = "spread"

    clairvoyant = True
    #: Section IV-C: Algorithm 1 "is invoked whenever a new coflow comes or an
    #: existing coflow finishes"; at every other flow completion Algorithm 3 alone
    #: hands out the bandwidth the flow freed (``incremental``).
    reschedule_on = "flow"
    #: bytes sent are read only at full passes (coflow arrivals and completions)
    reads_progress = "coflow-events"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 delta_s: float = 10.0, solver: str = "GLOP",
                 lp_time_limit_s: Optional[float] = None, route_on: str = "reserved",
                 fast: bool = True, aggregate: Optional[bool] = None,
                 aggregate_min_paths: int = 50_000, incremental: bool = True,
                 tie_break: Optional[str] = None, wc_ties: str = "order"):
        super().__init__(topology, seed, max_paths)
        if wc_ties not in ("order", "arrival"):
            raise SchedulerError(f"wc_ties: must be 'order' or 'arrival', got {wc_ties!r}")
        self.wc_ties = wc_ties
        if tie_break is None:
            tie_break = self.default_tie_break
        if tie_break not in ("spread", "none"):
            raise SchedulerError(f"tie_break: must be 'spread' or 'none', got {tie_break!r}")
        self.tie_break = tie_break
        self._cur_reserved: Optional[np.ndarray] = None
        if route_on not in ("reserved", "residual", "full"):
            raise SchedulerError(f"route_on: must be 'reserved', 'residual' or 'full', "
                                 f"got {route_on!r}")
        self.route_on = route_on
        self.incremental = bool(incremental)
        if not self.incremental:
            self.reads_progress = True  # every call is a full pass: fresh counters
        self._wc: Optional[WorkConservation] = None
        self._plinks: Dict[tuple, tuple] = {}
        if delta_s < 0:
            raise SchedulerError(f"delta_s: must be >= 0, got {delta_s}")
        if lp_time_limit_s is not None and lp_time_limit_s <= 0:
            raise SchedulerError(f"lp_time_limit_s: must be positive, got {lp_time_limit_s}")
        if int(aggregate_min_paths) < 0:
            raise SchedulerError(f"aggregate_min_paths: must be >= 0, got {aggregate_min_paths}")
        self.delta_s = float(delta_s)
        self.solver = solver
        self.lp_time_limit_s = lp_time_limit_s
        self.fast = bool(fast)
        self.aggregate = None if aggregate is None else bool(aggregate)
        self.aggregate_min_paths = int(aggregate_min_paths)
        self._last_served: Dict[str, float] = {}
        self._served_prev: set = set()
        # coflow_id -> (volume key, routes, lp_alpha, build_s, solve_s): routing by (4)
        # on the full capacities, valid while the remaining volumes are identical.
        self._full_routes: Dict[str, tuple] = {}
        # coflow_id -> _CoflowArrays of its active flows (candidate paths, link
        # matrices, sizes, LP4Structure), valid while the active flows are the same.
        self._carr: Dict[str, _CoflowArrays] = {}
        # (src, dst, max_paths) -> (candidate paths, 2-D link-index array or None if
        # ragged); shared by every RAPIER instance on the same topology object.
        self._cand: Dict[tuple, tuple] = _PAIR_CACHE.setdefault(topology, {})
        self.stats = {"lp_solves": 0, "lp_build_s": 0.0, "lp_solve_s": 0.0, "passes": 0,
                      "lp_reused": 0, "wc_passes": 0, "lb_skips": 0}

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Forward finished flows to the work-conservation state (see the base class)."""
        if self._wc is not None:
            self._wc.flows_finished(flows)

    # -- helpers --------------------------------------------------------------------
    def _candidates(self, f: FlowState) -> tuple:
        """(candidate paths, link matrix paths x hops or None if the paths differ in
        length) of a flow, cached per (src, dst) pair."""
        key = (f.src, f.dst, self.max_paths)
        got = self._cand.get(key)
        if got is None:
            ps = self.candidates(f)
            arrs = [self.topology.path_links(p) for p in ps]
            mat = np.array(arrs, dtype=np.int64) if len({len(a) for a in arrs}) == 1 else None
            got = (ps, mat)
            self._cand[key] = got
        return got

    def _route_by_lp(self, flows: Sequence[FlowState], vols: List[float],
                     usable: List[List[tuple]], lp_cap: np.ndarray,
                     link_mats: Optional[list] = None,
                     structure: Optional[LP4Structure] = None,
                     carr: Optional["_CoflowArrays"] = None,
                     reserved: Optional[np.ndarray] = None) -> tuple:
        """Alg. 2 lines 2-7: solve (4) on ``lp_cap`` (with ``reserved`` bits per link,
        see :func:`solve_lp4`) and round. Returns (routes, lp_alpha, build_s,
        solve_s)."""
        if all(len(ps) == 1 for ps in usable):
            return dict(zip([f.flow_id for f in flows], [ps[0] for ps in usable])), \
                None, 0.0, 0.0
        agg = None
        if link_mats is not None and (self.aggregate or (
                self.aggregate is None and
                sum(m.shape[0] for m in link_mats) > self.aggregate_min_paths)):
            cm = None
            if carr is not None:
                if carr.comm is None:
                    carr.comm = lp4_commodities(link_mats) or False
                cm = carr.comm
            agg = None if cm is False else solve_lp4_aggregated(
                vols, link_mats, lp_cap, self.solver, self.lp_time_limit_s, cm or None,
                reserved)
        if agg is not None:
            lp_alpha, ms, build_s, solve_s, _ = agg
            self.stats["lp_solves"] += 1
            self.stats["lp_build_s"] += build_s
            self.stats["lp_solve_s"] += solve_s
            return (self._tie(flows, vols, usable, self.round_routes(flows, vols, usable, ms,
                                                                      lp_cap), lp_cap),
                    lp_alpha, build_s, solve_s)
        lp_alpha, ms, build_s, solve_s = solve_lp4(self.topology, vols, usable, lp_cap,
                                                   self.solver, self.lp_time_limit_s,
                                                   link_mats, structure, reserved)
        self.stats["lp_solves"] += 1
        self.stats["lp_build_s"] += build_s
        self.stats["lp_solve_s"] += solve_s
        routes = self._tie(flows, vols, usable, self.round_routes(flows, vols, usable, ms,
                                                                  lp_cap), lp_cap)
        return routes, lp_alpha, build_s, solve_s

    def _tie(self, flows: Sequence[FlowState], vols: List[float], usable: List[List[tuple]],
             base: Dict[str, tuple], lp_cap: np.ndarray) -> Dict[str, tuple]:
        """The ``tie_break`` rule (class docstring) applied to the rounded ``base``
        routes: flow_id -> path."""
        if self.tie_break != "spread":
            return base
        ecmp = []
        for f, ps in zip(flows, usable):
            p = self.ecmp_path(f)
            if p not in ps:
                return base
            ecmp.append(p)
        vol = np.asarray(vols, dtype=float)
        B = self._cur_reserved

        def score(paths) -> Tuple[float, float]:
            # (worst (B + load) / C over the links the coflow loads, the sum of the
            # squared utilisations (B + load) / C of those links: the spread)
            links, bits = route_load(self.topology, paths, vol)
            if B is not None:
                bits = bits + B[links]
            if not len(links):
                return 0.0, 0.0
            u = bits / lp_cap[links]
            return float(np.max(u)), float(np.dot(u, u))

        cands = [(score(ecmp), ecmp), (score([base[f.flow_id] for f in flows]), None),
                 (score(g := self._greedy_paths(flows, vol, usable, lp_cap, B)), g)]
        best_w = min(c[0][0] for c in cands)
        tied = [c for c in cands if c[0][0] <= best_w * (1 + 1e-9)]
        best_s = min(c[0][1] for c in tied)
        # among routings with the best completion time, the most spread one; exact
        # ties go to ECMP, then the LP's rounding, then the greedy placement
        for (w, s2), paths in tied:
            if s2 <= best_s * (1 + 1e-9):
                return base if paths is None else {f.flow_id: p for f, p in zip(flows, paths)}
        return base

    def _greedy_paths(self, flows: Sequence[FlowState], vol: np.ndarray,
                      usable: List[List[tuple]], cap: np.ndarray,
                      reserved: Optional[np.ndarray]) -> List[tuple]:
        """Greedy placement behind the reserved volume: flows by non-increasing
        volume (bits), each on the usable candidate path that minimises the largest
        (B_l + load_l + v) / C_l along it (first on ties).  Per-flow paths."""
        topo = self.topology
        L = len(cap)
        load = np.zeros(L + 1)
        if reserved is not None:
            load[:L] = reserved
        capx = np.append(cap, np.inf)
        out: List[Optional[tuple]] = [None] * len(flows)
        for j in np.argsort(-vol, kind="stable").tolist():
            ps = usable[j]
            v = float(vol[j])
            if len(ps) == 1:
                p = ps[0]
            else:
                rows = [self._path_links(q) for q in ps]
                h = max(map(len, rows))
                M = np.full((len(rows), h), L, dtype=np.int64)
                for r, ls in enumerate(rows):
                    M[r, :len(ls)] = ls
                p = ps[int(np.argmin(((load[M] + v) / capx[M]).max(axis=1)))]
            load[list(self._path_links(p))] += v
            out[j] = p
        return out

    def round_routes(self, flows: Sequence[FlowState], vols: List[float],
                     usable: List[List[tuple]], ms: List[np.ndarray],
                     lp_cap: np.ndarray) -> Dict[str, tuple]:
        """Alg. 2 lines 3-7: each flow takes the path of its largest m_jk (first on
        ties).  Subclasses may improve the rounding (``rapier-ls``).

        Args: flows, their volumes in bits, usable candidate paths, LP values m_jk
        (1/s), the capacities (bit/s) the LP routed on.  Returns flow_id -> path.
        """
        return {f.flow_id: ps[int(np.argmax(m))] for f, ps, m in zip(flows, usable, ms)}

    # -- per-coflow arrays ----------------------------------------------------------
    def _coflow_arrays(self, coflow: CoflowState) -> "_CoflowArrays":
        """Cached :class:`_CoflowArrays` of ``coflow``'s active flows (rebuilt when
        the set of active flows changes)."""
        act = coflow.active_flows()
        e = self._carr.get(coflow.coflow_id)
        if e is not None and e.act is act:
            return e
        fids = tuple([f.flow_id for f in act])
        if e is not None and e.fids == fids:
            e.act = act
            return e
        if e is not None and len(act) < e.n:
            # flows only finish: filter the cached arrays when act is what is left
            keep = [f.finish_s is None for f in e.flows]
            if sum(keep) == len(act) and all(map(operator.is_, act, compress(e.flows, keep))):
                e = e.subset(act, fids, keep)
                self._carr[coflow.coflow_id] = e
                return e
        e = _CoflowArrays(act, fids, [self._candidates(f) for f in act], self.topology)
        self._carr[coflow.coflow_id] = e
        return e

    # -- Algorithm 2 ----------------------------------------------------------------
    def minimum_cct(self, coflow: CoflowState, residual: np.ndarray,
                    reserved: Optional[np.ndarray] = None) -> CoflowPlan:
        """Algorithm 2: minimum CCT of ``coflow`` given residual capacities R (bit/s)
        and, for ``route_on="reserved"``, the bits ``reserved`` per link by coflows
        ahead of it in Algorithm 1's order (None: nothing ahead).

        Returns a :class:`CoflowPlan`.  Its ``alpha`` is model (2) on R for the
        chosen routes (0 when a routed link has no residual capacity); its ``t_s``
        (Algorithm 1's ordering key) is 1/alpha for ``"full"`` and ``"residual"``
        (inf when alpha = 0 or a flow has no usable path) and, for ``"reserved"``,
        max over routed links of (B_l + load_l) / C_l: the coflow's completion time
        behind the commitments ahead of it (finite even when alpha = 0).

        Raises:
            LPError: the LP (4) failed or hit its time limit.

        Source: RAPIER Section IV-B, Algorithm 2 (readings: module docstring).
        """
        topo = self.topology
        e = self._coflow_arrays(coflow)
        flows = e.flows
        sent = np.fromiter(map(_SENT, flows), float, len(flows))
        rem = np.maximum(e.sizes - sent, 0.0)  # = FlowState.remaining_bytes
        vols_arr = rem * BITS
        cid = coflow.coflow_id
        cand, mats, all_links = e.cand, e.mats, e.all_links
        mode = self.route_on
        res_b = None
        key = vols_arr.tobytes()
        if mode == "reserved" and reserved is not None:
            rb = reserved[all_links]
            if np.any(rb > 0):
                res_b = reserved
                key += rb.tobytes()
        full = mode in ("full", "reserved") or bool(np.array_equal(residual, topo.capacity))
        lp_cap = topo.capacity if full else residual
        cached = self._full_routes.get(cid) if (full and self.fast) else None
        if cached is not None and cached[0] == key and cached[1] is e:
            _, _, routes, lp_alpha, build_s, solve_s, ra = cached
            self.stats["lp_reused"] += 1
            build_s = solve_s = 0.0
        else:
            vols = vols_arr.tolist()
            if full and not np.any(topo.capacity[all_links] <= 0):
                usable = cand  # every link has positive capacity
            else:
                usable = []
                for ps, mat in zip(cand, mats):
                    if mat is not None:
                        ok = lp_cap[mat].min(axis=1) > 0
                        usable.append([p for p, o in zip(ps, ok) if o])
                    else:
                        usable.append([p for p in ps if lp_cap[topo.path_links(p)].min() > 0])
                if all(len(u) == len(c) for u, c in zip(usable, cand)):
                    usable = cand  # nothing was left out: same paths, same structure
            if any(not ps for ps in usable):
                paths = [ps[0] for ps in cand]
                return CoflowPlan(math.inf, 0.0, dict(zip(e.fids, paths)), 0.0, all_links,
                                  rem_bytes=rem, paths=paths)
            use_mats = mats if usable is cand and e.uniform_mats else None
            struct = e.struct
            if usable is cand and self.fast and struct is None and \
                    self.aggregate is not True and \
                    e.n_cand <= (self.aggregate_min_paths if self.aggregate is None
                                 else math.inf) and e.n_cand > e.n:
                struct = LP4Structure(topo, cand, use_mats)
                e.struct = struct
            self._cur_reserved = res_b
            routes, lp_alpha, build_s, solve_s = self._route_by_lp(
                flows, vols, usable, lp_cap, use_mats, struct if usable is cand else None,
                e if usable is cand else None, res_b)
            self._cur_reserved = None
            ra = e.route_arrays(routes, topo)
            if full and self.fast:
                self._full_routes[cid] = (key, e, routes, lp_alpha, build_s, solve_s, ra)
        paths, r_lidx, r_lens = ra
        load = np.bincount(r_lidx, weights=np.repeat(vols_arr, r_lens),
                           minlength=len(topo.capacity))
        ll = np.flatnonzero(load > 0)
        lb = load[ll]
        alpha = alpha_from_load(ll, lb, residual)
        if mode == "reserved":
            tot = lb if reserved is None else lb + reserved[ll]
            t = float(np.max(tot / topo.capacity[ll])) if ll.size else 0.0
        else:
            t = math.inf if alpha <= 0 else 1.0 / alpha
        plan = CoflowPlan(t, alpha, routes, lp_alpha, all_links, build_s, solve_s, ll, lb,
                          rem_bytes=rem, paths=paths, r_lidx=r_lidx, r_lens=r_lens)
        if mode == "reserved":
            plan.mand_links, plan.mand_bits = e.mandatory_load(vols_arr)
        return plan

    def _revalidate(self, cid: str, plan: CoflowPlan, seen: dict, residual: np.ndarray,
                    reserved: Optional[np.ndarray]) -> Optional[CoflowPlan]:
        """``plan`` brought up to date with R and B, or None when its LP must be
        solved again (its inputs changed).  Exact: Algorithm 2 on the same inputs
        gives the same routes."""
        dep, was, bdep, bwas = seen[cid]
        if reserved is not None and np.any(reserved[bdep] != bwas):
            return None
        if np.any(residual[dep] < was):
            if self.route_on in ("full", "reserved") and plan.load_links is not None:
                # routes do not depend on R: only model (2) changes
                a = alpha_from_load(plan.load_links, plan.load_bits, residual)
                plan.alpha = a
                if self.route_on == "full":
                    plan.t_s = math.inf if a <= 0 else 1.0 / a
                seen[cid] = (dep, residual[dep], bdep, bwas)
            else:
                return None
        return plan

    # -- Algorithm 1 ----------------------------------------------------------------
    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        """Algorithm 1 (MinimizeMeanCCT) followed by Algorithm 3, at time ``now`` (s).

        At a flow completion that ended no coflow (``incremental``), only Algorithm 3
        runs, on the capacity the finished flows freed.  Otherwise a full pass:
        returns the :class:`Schedule` (path and rate in bit/s per active flow; the
        order in which Algorithm 1 picked coflows in ``order``; LP failures in
        ``fallback``; per-coflow minimum CCTs in ``info["t_min_s"]``).  Per-coflow
        work runs on arrays (one entry per flow).  With ``route_on="reserved"`` a
        coflow whose plan went stale is re-planned only if a lower bound on its
        CCT (its host links' load behind the reserved bits) could still beat the
        best plan of the round: the pick is the same as re-planning every coflow.
        Source: RAPIER Section IV-C, Algorithm 1.
        """
        topo = self.topology
        for cid in self._served_prev:
            self._last_served[cid] = now
        active = [c for c in coflows if c.active_flows()]
        if self.incremental and self._wc is not None and self._wc.matches(active):
            self.stats["wc_passes"] += 1
            return self._wc.flow_event()
        self.stats["passes"] += 1
        live = {c.coflow_id for c in active}
        for d in (self._last_served, self._full_routes, self._carr):
            for cid in [k for k in d if k not in live]:
                del d[cid]
        if len(self._cand) > 200_000:  # bound memory on huge fabrics
            self._cand.clear()
        if len(self._plinks) > 500_000:
            self._plinks.clear()

        def wait(c: CoflowState) -> float:
            return now - self._last_served.get(c.coflow_id, c.arrival_s)

        pending = sorted(active, key=lambda c: (-wait(c), c.arrival_s, c.coflow_id))
        residual = topo.capacity.astype(float).copy()
        reserved = np.zeros(len(residual)) if self.route_on == "reserved" else None
        plans: Dict[str, CoflowPlan] = {}
        fallback: Dict[str, str] = {}
        rates_c: Dict[str, np.ndarray] = {}
        paths_c: Dict[str, list] = {}
        order: List[str] = []
        # Fast path: per coflow, the inputs its plan depends on (R on its routed or
        # candidate links, B on its candidate links) when it was made.
        seen: Dict[str, tuple] = {}
        full_mode = self.route_on in ("full", "reserved")
        cap = topo.capacity
        fixed = self.coflow_order(now, active)
        if fixed is not None:
            pending = list(fixed)
        while pending:
            if fixed is not None:
                # a fixed priority order (subclasses): plan the next coflow behind
                # the ones ahead of it
                best = pending[0]
                plan = self._plan_or_fallback(best, residual, fallback, pending, reserved)
                if plan is None:
                    continue
                plans[best.coflow_id] = plan
                self._commit(best, plan, pending, order, paths_c, rates_c, residual,
                             reserved)
                continue
            guard = wait(pending[0]) > self.delta_s  # Alg. 1 lines 7-10
            best, best_key = None, None
            stale = []
            for pos, c in enumerate(pending if not guard else pending[:1]):
                plan = plans.get(c.coflow_id)
                if plan is not None and self.fast:
                    plan = self._revalidate(c.coflow_id, plan, seen, residual, reserved)
                if plan is None or not self.fast:
                    stale.append((pos, c))
                    continue
                k = (plan.t_s, pos)
                if best_key is None or k < best_key:
                    best, best_key = c, k
            if stale:
                items = []
                for pos, c in stale:
                    old = plans.get(c.coflow_id)
                    lb = -math.inf
                    if old is not None and reserved is not None and self.fast and \
                            getattr(old, "mand_links", None) is not None and \
                            old.mand_links.size:
                        ml = old.mand_links
                        lb = float(np.max((reserved[ml] + old.mand_bits) / cap[ml]))
                    items.append((lb, pos, c))
                items.sort(key=lambda x: (x[0], x[1]))
                for lb, pos, c in items:
                    if best_key is not None and (lb, pos) > best_key:
                        self.stats["lb_skips"] += 1
                        continue
                    cid = c.coflow_id
                    plan = self._plan_or_fallback(c, residual, fallback, pending, reserved)
                    if plan is None:
                        plans.pop(cid, None)
                        continue
                    dep = (plan.load_links if full_mode and plan.load_links is not None
                           else plan.links)
                    seen[cid] = (dep, residual[dep], plan.links,
                                 None if reserved is None else reserved[plan.links])
                    plans[cid] = plan
                    k = (plan.t_s, pos)
                    if best_key is None or k < best_key:
                        best, best_key = c, k
            if best is None:
                if guard and pending and pending[0].coflow_id in fallback:
                    continue  # the guarded coflow fell back; pick again
                break
            self._commit(best, plans[best.coflow_id], pending, order, paths_c, rates_c,
                         residual, reserved)
        # Fallback coflows: ECMP routes, served only by work conservation.
        for c in active:
            if c.coflow_id in fallback:
                fl = self._coflow_arrays(c).flows
                paths_c[c.coflow_id] = [self.ecmp_path(f) for f in fl]
                rates_c[c.coflow_id] = np.zeros(len(fl))
        wc_order = self._distribute_bandwidth(active, plans, fallback, residual, rates_c,
                                              paths_c, order)
        self._served_prev = {c.coflow_id for c in active
                             if c.coflow_id in rates_c and bool((rates_c[c.coflow_id] > 0).any())}
        out_cof = [c for c in active if c.coflow_id in paths_c]
        flows_out: list = []
        paths_out: list = []
        rates_out = []
        for c in out_cof:
            cid = c.coflow_id
            flows_out.extend(self._coflow_arrays(c).flows)
            paths_out.extend(paths_c[cid])
            rates_out.append(rates_c[cid])
        rates_all = np.concatenate(rates_out) if rates_out else np.zeros(0)
        info = {"t_min_s": {cid: p.t_s for cid, p in plans.items()}}
        sched = Schedule.from_vectors(flows_out, paths_out, rates_all, order=order,
                                      fallback=fallback, info=info)
        if self.incremental:
            self._wc = self._conservation(out_cof, flows_out, paths_out, rates_all, wc_order,
                                          order, fallback, info)
        return sched

    def coflow_order(self, now: float, active: Sequence[CoflowState]
                     ) -> Optional[List[CoflowState]]:
        """A fixed priority order of ``active`` for the full pass, or None (default)
        for Algorithm 1's greedy minimum-CCT order with the starvation guard.
        Subclasses (``rapier-bssi``) override it."""
        return None

    def wc_priority(self, active: Sequence[CoflowState]) -> Optional[List[CoflowState]]:
        """The coflow order of work conservation, or None (default) for Algorithm 3's:
        unscheduled coflows first, then by non-increasing minimum CCT."""
        return None

    def _commit(self, best: CoflowState, plan: CoflowPlan, pending: list, order: list,
                paths_c: dict, rates_c: dict, residual: np.ndarray,
                reserved: Optional[np.ndarray]) -> None:
        """Alg. 1 lines 11-14: ``best`` is scheduled next with ``plan``: its rates
        (model (2), bit/s) come off R and its routed bits are reserved."""
        pending.remove(best)
        cid = best.coflow_id
        order.append(cid)
        paths_c[cid] = list(plan.paths)
        if plan.alpha > 0 and math.isfinite(plan.t_s):
            r = (plan.alpha * plan.rem_bytes) * BITS
            rates_c[cid] = r
            if plan.r_lidx is None:
                ra = self._coflow_arrays(best).route_arrays(plan.routes, self.topology)
                plan.r_lidx, plan.r_lens = ra[1], ra[2]
            np.subtract.at(residual, plan.r_lidx, np.repeat(r, plan.r_lens))
        else:
            rates_c[cid] = np.zeros(len(plan.paths))
        np.maximum(residual, 0.0, out=residual)
        if reserved is not None and plan.load_links is not None:
            reserved[plan.load_links] += plan.load_bits

    def _path_links(self, p: tuple) -> tuple:
        """Link indices of path ``p`` as a tuple of ints (cached per path)."""
        ls = self._plinks.get(p)
        if ls is None:
            ls = tuple(self.topology.path_links(p).tolist())
            self._plinks[p] = ls
        return ls

    def _conservation(self, out_cof, flows_out, paths_out, rates, wc_order, order,
                      fallback, info) -> WorkConservation:
        """The :class:`WorkConservation` state of this full pass: Algorithm 3's visiting
        order, and flows of unscheduled coflows still without a rate left flexible."""
        offs: Dict[str, int] = {}
        o = 0
        for c in out_cof:
            offs[c.coflow_id] = o
            o += len(self._coflow_arrays(c).flows)
        n = len(flows_out)
        flexible = np.zeros(n, dtype=bool)
        owner: Dict[int, Tuple[_CoflowArrays, int]] = {}
        parts = []
        for cid, perm, flex, e in wc_order:
            base = offs[cid]
            parts.append(perm + base)
            if flex:
                flexible[base:base + e.n] = True
                owner[base] = (e, base)
        starts = sorted(owner)

        def candidates(j: int):
            import bisect
            e, base = owner[starts[bisect.bisect_right(starts, j) - 1]]
            k = j - base
            return e.cand[k], e.cand_links(k)

        visit = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        links = [self._path_links(p) for p in paths_out]
        return WorkConservation(self.topology.capacity, out_cof, flows_out, paths_out, links,
                                rates, visit, flexible, candidates, order=order,
                                fallback=fallback, info=info)

    def _plan_or_fallback(self, c: CoflowState, residual: np.ndarray,
                          fallback: Dict[str, str], pending: list,
                          reserved: Optional[np.ndarray] = None) -> Optional[CoflowPlan]:
        """Algorithm 2 for ``c``; on solver trouble record the fallback, drop ``c``
        from ``pending`` and return None."""
        try:
            return self.minimum_cct(c, residual, reserved)
        except Exception as exc:  # LPError or solver trouble: fall back
            fallback[c.coflow_id] = str(exc)
            pending.remove(c)
            return None

    # -- Algorithm 3 ----------------------------------------------------------------
    def _distribute_bandwidth(self, active: Sequence[CoflowState], plans: Dict[str, CoflowPlan],
                              fallback: Dict[str, str], residual: np.ndarray,
                              rates_c: Dict[str, np.ndarray],
                              paths_c: Dict[str, list],
                              pick_order: Optional[List[str]] = None) -> list:
        """Algorithm 3 (DistributeBandwidth) with AssignBandwidth, read as documented
        in the module docstring; updates ``rates_c`` and ``paths_c`` (per coflow, per
        active flow: rate in bit/s and path) and ``residual`` in place.  A flow with no
        residual capacity on its path (scheduled coflows) or on every candidate path
        (unscheduled ones) when its coflow's turn comes cannot get any (residuals only
        fall), so only the others are visited.

        Returns the visiting order, for later flow events: per coflow in Algorithm
        3's order, ``(coflow_id, flow permutation, unscheduled?, its arrays)``.
        Source: RAPIER Section IV-C, Algorithm 3."""
        def t_of(c: CoflowState) -> float:
            p = plans.get(c.coflow_id)
            if p is None or c.coflow_id in fallback or not math.isfinite(p.t_s) or p.alpha <= 0:
                return math.inf
            return p.t_s

        prio = self.wc_priority(active)
        if prio is not None:
            order = prio
        else:
            # ties in line 2 (every unscheduled coflow has T = inf): Algorithm 1's
            # pick order ("order": the shortest completion behind the reserved
            # volume first) or arrival order ("arrival")
            pos = {cid: i for i, cid in enumerate(pick_order or [])} \
                if self.wc_ties == "order" else {}
            order = sorted(active, key=lambda c: (-t_of(c), pos.get(c.coflow_id, 0),
                                                  c.arrival_s, c.coflow_id))
        visits = []
        # Per-flow steps on Python floats (the same IEEE arithmetic as numpy's);
        # ``res`` is the residual, copied back into ``residual`` at the end.
        res = residual.tolist()
        for c in order:
            cid = c.coflow_id
            if cid not in paths_c:
                continue
            e = self._coflow_arrays(c)
            plan = plans.get(cid)
            if plan is not None and plan.rem_bytes is not None:
                rem = plan.rem_bytes
            else:
                rem = np.maximum(e.sizes - np.fromiter(map(_SENT, e.flows), float, e.n), 0.0)
            rates = rates_c[cid]
            paths = paths_c[cid]
            visit = np.lexsort((e.fid_rank, -rem))
            scheduled = math.isfinite(t_of(c))
            visits.append((cid, visit, not scheduled, e))
            now_res = np.array(res)
            if scheduled:
                r_lidx, r_lens = plan.r_lidx, plan.r_lens
                starts = np.concatenate([[0], np.cumsum(r_lens)[:-1]])
                room = np.minimum.reduceat(now_res[r_lidx], starts) > 0
                sel = visit[room[visit]]
                if not sel.size:
                    continue
                rl = rates.tolist()
                st = starts.tolist()
                ln = r_lens.tolist()
                lk = r_lidx.tolist()
                for j in sel.tolist():
                    ls = lk[st[j]:st[j] + ln[j]]
                    bw = min([res[l] for l in ls])
                    if not bw > 0.0:
                        continue
                    rl[j] += bw
                    for l in ls:
                        res[l] -= bw
                rates[:] = rl
            else:
                room = e.any_room(now_res)
                sel = visit[room[visit]]
                if not sel.size:
                    continue
                rl = rates.tolist()
                for j in sel.tolist():
                    best, best_ls, best_bw = best_candidate(e.cand[j], e.cand_links(j), res)
                    if best is None:
                        continue
                    paths[j] = best
                    rl[j] += best_bw
                    for l in best_ls:
                        res[l] -= best_bw
                rates[:] = rl
        residual[:] = res
        return visits


@register("rapier-residual")
class RapierResidual(Rapier):
    """RAPIER with LP (4) solved on the residual capacities R (the literal reading of
    Algorithm 2 line 2; see the module docstring)."""

    def __init__(self, topology: Topology, seed: int = 0, **kw):
        kw.setdefault("route_on", "residual")
        super().__init__(topology, seed, **kw)


@register("rapier-isolated")
class RapierIsolated(Rapier):
    """RAPIER with LP (4) solved on the full capacities: each coflow routed as if the
    fabric were empty (``route_on="full"``, this project's default before issue 12).
    Kept to show what routing on the leftover capacity buys: later coflows' routes
    cross saturated links and model (2) gives them alpha = 0.  Argmax rounding
    alone (``tie_break="none"``), as before."""

    default_tie_break = "none"

    def __init__(self, topology: Topology, seed: int = 0, **kw):
        kw.setdefault("route_on", "full")
        super().__init__(topology, seed, **kw)


@register("rapier-bssi")
class RapierBSSI(Rapier):
    """Beyond the papers: RAPIER's joint routing with Sincronia's BSSI coflow order.

    At every full pass (coflow arrivals and completions):

    1. each coflow's isolation routing (LP (4) on the full capacities, argmax
       rounding) gives its remaining demand per link, d_c^l = bits / C_l (s);
    2. Sincronia's Bottleneck-Select-Scale-Iterate (Sincronia Algorithm 1,
       :func:`~rapier_app.scheduling.seeds.bssi_order`, weights = coflow weights)
       orders the coflows on those demands;
    3. in that order each coflow is routed again by LP (4) on the capacity left by
       the coflows ahead (``route_on="reserved"``) and gets model (2) rates on the
       residual R (Algorithm 2), as in ``rapier``;
    4. work conservation hands the rest out in BSSI order (Sincronia Section 4.4's
       prioritized work conservation; ``wc="alg3"``: RAPIER's Algorithm 3 order),
       at full passes and at every other flow completion.

    No starvation guard: BSSI's order is what Sincronia's 4-approximation (Theorem
    1) covers.  Args as :class:`Rapier`, plus ``wc`` (``"order"`` default, or
    ``"alg3"``).

    Raises:
        SchedulerError: as :class:`Rapier`; unknown ``wc``.
    """

    def __init__(self, topology: Topology, seed: int = 0, wc: str = "order", **kw):
        kw.setdefault("route_on", "reserved")
        super().__init__(topology, seed, **kw)
        if wc not in ("order", "alg3"):
            raise SchedulerError(f"wc: must be 'order' or 'alg3', got {wc!r}")
        self.wc = wc
        self._prio: Optional[List[CoflowState]] = None

    def coflow_order(self, now: float, active: Sequence[CoflowState]
                     ) -> Optional[List[CoflowState]]:
        """BSSI order of ``active`` on their isolation-routed demands (class doc)."""
        from .seeds import bssi_order

        if not active:
            self._prio = []
            return []
        cap = self.topology.capacity
        D = np.zeros((len(active), len(cap)))
        for i, c in enumerate(active):
            plan = self.minimum_cct(c, cap, None)
            if plan.load_links is not None and plan.load_links.size:
                D[i, plan.load_links] = plan.load_bits / cap[plan.load_links]
        rank = {c.coflow_id: r for r, c in enumerate(
            sorted(active, key=lambda c: (c.arrival_s, c.coflow_id)))}
        idx = bssi_order(D, [c.weight for c in active],
                         coflow_tiebreak=[rank[c.coflow_id] for c in active])
        self._prio = [active[i] for i in idx]
        return list(self._prio)

    def wc_priority(self, active: Sequence[CoflowState]) -> Optional[List[CoflowState]]:
        if self.wc == "alg3" or self._prio is None:
            return None
        live = {c.coflow_id for c in active}
        return [c for c in self._prio if c.coflow_id in live]
