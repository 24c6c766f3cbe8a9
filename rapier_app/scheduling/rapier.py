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
  network resource utilization information".  Read literally (R = residual
  capacity), a coflow scheduled after others is packed into whatever is left and
  keeps that packing; on the paper's own Fig. 1 this gives CCTs 1.0 s and 1.625 s,
  not the optimum 1.0 s and 1.6 s the paper says RAPIER reaches.  The default
  (``route_on="full"``) routes each coflow by (4) on the full link capacities (the
  routing that minimises its CCT in an empty network) and then computes its rates by
  model (2) on the residual capacities R; a coflow whose routes cross a saturated
  link gets alpha = 0 and waits for Algorithm 3.  This reproduces Fig. 1(c)/(f)
  exactly.  The literal reading is kept as ``route_on="residual"``, registered as the
  scheduler ``rapier-residual``.
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
* **Algorithm 1** re-solves, in each round, only the coflows whose candidate links
  lost capacity in the previous round: the others' LPs have the same inputs, so
  their T_C is unchanged (this is exact, not an approximation).
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
  remaining volume.
* **LP failure or time-out** (``lp_time_limit_s``): the coflow is reported in
  ``Schedule.fallback`` with the reason, routed by ECMP, and served only by work
  conservation; the scheduler keeps going.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ..core.model import Allocation, CoflowState, FlowState, Schedule
from .base import Scheduler, SchedulerError, register

BITS = 8.0
MEGA = 1e6


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
    """

    t_s: float
    alpha: float
    routes: Dict[str, tuple]
    lp_alpha: Optional[float]
    links: np.ndarray
    build_s: float = 0.0
    solve_s: float = 0.0


def fixed_route_alpha(topology: Topology, flows: Sequence[FlowState], routes: Dict[str, tuple],
                      residual: np.ndarray, volumes_bits: Sequence[float]) -> float:
    """Optimum of model (2) for fixed routes: max alpha with alpha * load_l <= R_l.

    Returns alpha in 1/s (0 when a loaded link has no residual capacity).
    Source: RAPIER Section IV-A, model (2) with x fixed (Alg. 2 line 8).
    """
    load = np.zeros(len(residual))
    for f, v in zip(flows, volumes_bits):
        load[topology.path_links(routes[f.flow_id])] += v
    used = load > 0
    if not used.any():
        return math.inf
    return float(np.min(np.maximum(residual[used], 0.0) / load[used]))


def _lp4_arrays(topology: Topology, volumes_bits: Sequence[float],
                paths: Sequence[Sequence[tuple]], residual: np.ndarray):
    """Sparse arrays of LP (4) for one coflow, in the reference variable/row order.

    Columns: alpha (0), then m_jk flow by flow, path by path.  Rows: one (4b) row per
    flow (sum_k m_jk - alpha = 0), then one (4a) row per link in order of first
    appearance.  Volumes are scaled to Mbit and capacities to Mbit/s.

    Returns:
        (rows, cols, vals, n_rows, n_cols, row_ub, link_of_row, var_flow) as numpy
        arrays; ``row_ub`` is +/-inf-free for link rows and 0 for flow rows.
    """
    n = len(paths)
    n_paths = np.fromiter((len(ps) for ps in paths), dtype=np.int64, count=n)
    P = int(n_paths.sum())
    var_flow = np.repeat(np.arange(n), n_paths)
    flat = [p for ps in paths for p in ps]
    pl = [topology.path_links(p) for p in flat]
    plen = np.fromiter((len(a) for a in pl), dtype=np.int64, count=P)
    links = np.concatenate(pl) if P else np.zeros(0, np.int64)
    var_of_entry = np.repeat(np.arange(1, P + 1), plen)
    vol_m = np.asarray(volumes_bits, dtype=float) / MEGA
    coef = vol_m[var_flow][var_of_entry - 1]
    uniq, first = np.unique(links, return_index=True)
    order = np.argsort(first, kind="stable")
    link_of_row = uniq[order]
    pos = np.empty(len(uniq), dtype=np.int64)
    pos[order] = np.arange(len(uniq))
    link_row = n + pos[np.searchsorted(uniq, links)]
    rows = np.concatenate([np.arange(n), var_flow, link_row])
    cols = np.concatenate([np.zeros(n, np.int64), np.arange(1, P + 1), var_of_entry])
    vals = np.concatenate([-np.ones(n), np.ones(P), coef])
    row_ub = np.concatenate([np.zeros(n), np.maximum(residual[link_of_row], 0.0) / MEGA])
    return rows, cols, vals, n + len(uniq), P + 1, row_ub, var_flow, n_paths


def solve_lp4(topology: Topology, volumes_bits: Sequence[float],
              paths: Sequence[Sequence[tuple]], residual: np.ndarray,
              solver_name: str = "GLOP", time_limit_s: Optional[float] = None
              ) -> Tuple[float, List[np.ndarray], float, float]:
    """Solve the LP relaxation (4) of RAPIER for one coflow.

    maximize alpha  s.t.  sum_j sum_{k: l in p_jk} v_j m_jk <= R_l  (4a),
    sum_k m_jk = alpha  (4b),  m_jk >= 0  (4c).

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

    Returns:
        (alpha in 1/s, per-flow arrays of m_jk in 1/s, build seconds, solve seconds).

    Raises:
        LPError: solver unavailable, infeasible, or not optimal within the limit.

    Source: RAPIER Section IV-A, model (4).
    """
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - scipy is a declared dependency
        return solve_lp4_reference(topology, volumes_bits, paths, residual,
                                   solver_name, time_limit_s)
    from ortools.linear_solver.python import model_builder_helper as mbh

    t0 = time.perf_counter()
    rows, cols, vals, n_rows, n_cols, row_ub, var_flow, n_paths = _lp4_arrays(
        topology, volumes_bits, paths, residual)
    n = len(paths)
    mat = sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_cols))
    row_lb = np.concatenate([np.zeros(n), np.full(n_rows - n, -np.inf)])
    obj = np.zeros(n_cols)
    obj[0] = 1.0
    helper = mbh.ModelBuilderHelper()
    helper.fill_model_from_sparse_data(np.zeros(n_cols), np.full(n_cols, np.inf), obj,
                                       row_lb, row_ub, mat)
    helper.set_maximize(True)
    solver = mbh.ModelSolverHelper(solver_name)
    if not solver.solver_is_supported():
        raise LPError(f"solver: OR-Tools solver {solver_name!r} is not available")
    if time_limit_s is not None:
        solver.set_time_limit_in_seconds(float(time_limit_s))
    t1 = time.perf_counter()
    solver.solve(helper)
    t2 = time.perf_counter()
    status = solver.status()
    if status != mbh.SolveStatus.OPTIMAL:
        raise LPError(f"LP (4) not solved to optimality (status {status.name}, "
                      f"{len(volumes_bits)} flows, {t2 - t1:.3f} s)")
    x = np.asarray(solver.variable_values(), dtype=float)
    ms = np.split(x[1:], np.cumsum(n_paths)[:-1]) if n else []
    return float(x[0]), list(ms), t1 - t0, t2 - t1


def solve_lp4_reference(topology: Topology, volumes_bits: Sequence[float],
                        paths: Sequence[Sequence[tuple]], residual: np.ndarray,
                        solver_name: str = "GLOP", time_limit_s: Optional[float] = None
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


@register("rapier")
class Rapier(Scheduler):
    """RAPIER's online scheduler: Algorithms 1, 2 and 3 (see the module docstring).

    Args:
        topology, seed, max_paths: see :class:`~rapier_app.scheduling.base.Scheduler`.
        delta_s: starvation threshold delta in seconds (Alg. 1 line 7).
        solver: OR-Tools LP solver id for (4), "GLOP" by default.
        lp_time_limit_s: time limit per LP solve in seconds (None: no limit).
        route_on: capacities that LP (4) routes on: ``"residual"`` (R of Alg. 1,
            the paper's text) or ``"full"`` (each coflow routed as in an empty network,
            rates from model (2) on the residual capacities).

    Raises:
        SchedulerError: delta_s negative, lp_time_limit_s not positive.
    """

    clairvoyant = True

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 delta_s: float = 10.0, solver: str = "GLOP",
                 lp_time_limit_s: Optional[float] = None, route_on: str = "full"):
        super().__init__(topology, seed, max_paths)
        if route_on not in ("residual", "full"):
            raise SchedulerError(f"route_on: must be 'residual' or 'full', got {route_on!r}")
        self.route_on = route_on
        if delta_s < 0:
            raise SchedulerError(f"delta_s: must be >= 0, got {delta_s}")
        if lp_time_limit_s is not None and lp_time_limit_s <= 0:
            raise SchedulerError(f"lp_time_limit_s: must be positive, got {lp_time_limit_s}")
        self.delta_s = float(delta_s)
        self.solver = solver
        self.lp_time_limit_s = lp_time_limit_s
        self._last_served: Dict[str, float] = {}
        self._served_prev: set = set()
        self.stats = {"lp_solves": 0, "lp_build_s": 0.0, "lp_solve_s": 0.0, "passes": 0}

    # -- Algorithm 2 ----------------------------------------------------------------
    def minimum_cct(self, coflow: CoflowState, residual: np.ndarray) -> CoflowPlan:
        """Algorithm 2: minimum CCT of ``coflow`` given residual capacities (bit/s).

        Raises:
            LPError: the LP (4) failed or hit its time limit.
        """
        topo = self.topology
        flows = coflow.active_flows()
        vols = [f.remaining_bytes * BITS for f in flows]
        cand = [self.candidates(f) for f in flows]
        all_links = np.unique(np.concatenate([topo.path_links(p) for ps in cand for p in ps]))
        lp_cap = residual if self.route_on == "residual" else topo.capacity
        usable = [[p for p in ps if lp_cap[topo.path_links(p)].min() > 0] for ps in cand]
        if any(not ps for ps in usable):
            return CoflowPlan(math.inf, 0.0, {f.flow_id: ps[0] for f, ps in zip(flows, cand)},
                              0.0, all_links)
        lp_alpha = None
        build_s = solve_s = 0.0
        if all(len(ps) == 1 for ps in usable):
            routes = {f.flow_id: ps[0] for f, ps in zip(flows, usable)}
        else:
            lp_alpha, ms, build_s, solve_s = solve_lp4(topo, vols, usable, lp_cap,
                                                       self.solver, self.lp_time_limit_s)
            self.stats["lp_solves"] += 1
            self.stats["lp_build_s"] += build_s
            self.stats["lp_solve_s"] += solve_s
            routes = {}
            for f, ps, m in zip(flows, usable, ms):
                routes[f.flow_id] = ps[int(np.argmax(m))]  # first max on ties
        alpha = fixed_route_alpha(topo, flows, routes, residual, vols)
        t = math.inf if alpha <= 0 else 1.0 / alpha
        return CoflowPlan(t, alpha, routes, lp_alpha, all_links, build_s, solve_s)

    # -- Algorithm 1 ----------------------------------------------------------------
    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        """Algorithm 1 (MinimizeMeanCCT) followed by Algorithm 3, at time ``now``."""
        topo = self.topology
        self.stats["passes"] += 1
        for cid in self._served_prev:
            self._last_served[cid] = now
        active = [c for c in coflows if c.active_flows()]
        live = {c.coflow_id for c in active}
        for cid in [k for k in self._last_served if k not in live]:
            del self._last_served[cid]

        def wait(c: CoflowState) -> float:
            return now - self._last_served.get(c.coflow_id, c.arrival_s)

        pending = sorted(active, key=lambda c: (-wait(c), c.arrival_s, c.coflow_id))
        residual = topo.capacity.astype(float).copy()
        plans: Dict[str, CoflowPlan] = {}
        fallback: Dict[str, str] = {}
        rates: Dict[str, float] = {}
        paths: Dict[str, tuple] = {}
        order: List[str] = []
        changed: Optional[np.ndarray] = None  # links that lost capacity last round
        while pending:
            best, best_t = None, math.inf
            for c in list(pending):
                plan = plans.get(c.coflow_id)
                if plan is None or changed is None or np.any(changed[plan.links]):
                    try:
                        plan = self.minimum_cct(c, residual)
                    except Exception as exc:  # LPError or solver trouble: fall back
                        fallback[c.coflow_id] = str(exc)
                        pending.remove(c)
                        continue
                    plans[c.coflow_id] = plan
                if wait(c) > self.delta_s:
                    best, best_t = c, plan.t_s
                    break
                if plan.t_s < best_t or best is None:
                    if best is None or plan.t_s < best_t:
                        best, best_t = c, plan.t_s
            if best is None:
                break
            pending.remove(best)
            order.append(best.coflow_id)
            plan = plans[best.coflow_id]
            before = residual.copy()
            for f in best.active_flows():
                p = plan.routes[f.flow_id]
                paths[f.flow_id] = p
                if plan.alpha > 0 and math.isfinite(plan.t_s):
                    r = plan.alpha * f.remaining_bytes * BITS
                    rates[f.flow_id] = r
                    residual[topo.path_links(p)] -= r
            np.maximum(residual, 0.0, out=residual)
            changed = residual < before
        # Fallback coflows: ECMP routes, served only by work conservation.
        for c in active:
            if c.coflow_id in fallback:
                for f in c.active_flows():
                    paths[f.flow_id] = self.ecmp_path(f)
        self._distribute_bandwidth(active, plans, fallback, residual, rates, paths)
        self._served_prev = {c.coflow_id for c in active
                             if any(rates.get(f.flow_id, 0) > 0 for f in c.active_flows())}
        sched = Schedule({fid: Allocation(p, rates.get(fid, 0.0)) for fid, p in paths.items()},
                         order=order, fallback=fallback)
        sched.info["t_min_s"] = {cid: p.t_s for cid, p in plans.items()}
        return sched

    # -- Algorithm 3 ----------------------------------------------------------------
    def _distribute_bandwidth(self, active: Sequence[CoflowState], plans: Dict[str, CoflowPlan],
                              fallback: Dict[str, str], residual: np.ndarray,
                              rates: Dict[str, float], paths: Dict[str, tuple]) -> None:
        """Algorithm 3 (DistributeBandwidth) with AssignBandwidth, read as documented
        in the module docstring; updates ``rates``, ``paths`` and ``residual`` in place."""
        topo = self.topology

        def t_of(c: CoflowState) -> float:
            p = plans.get(c.coflow_id)
            if p is None or c.coflow_id in fallback or not math.isfinite(p.t_s) or p.alpha <= 0:
                return math.inf
            return p.t_s

        order = sorted(active, key=lambda c: (-t_of(c), c.arrival_s, c.coflow_id))
        for c in order:
            scheduled = math.isfinite(t_of(c))
            for f in sorted(c.active_flows(), key=lambda f: (-f.remaining_bytes, f.flow_id)):
                if scheduled:
                    cands = [paths[f.flow_id]]
                else:
                    cands = self.candidates(f)
                best, best_bw = None, 0.0
                for p in cands:
                    bw = float(residual[topo.path_links(p)].min())
                    if bw > best_bw:
                        best, best_bw = p, bw
                if best is None:
                    continue
                if not scheduled:
                    paths[f.flow_id] = best
                rates[f.flow_id] = rates.get(f.flow_id, 0.0) + best_bw
                residual[topo.path_links(best)] -= best_bw


@register("rapier-residual")
class RapierResidual(Rapier):
    """RAPIER with LP (4) solved on the residual capacities R (the literal reading of
    Algorithm 2 line 2; see the module docstring)."""

    def __init__(self, topology: Topology, seed: int = 0, **kw):
        kw.setdefault("route_on", "residual")
        super().__init__(topology, seed, **kw)
