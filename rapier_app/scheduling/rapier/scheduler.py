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
* **waitTime** (Alg. 1 lines 2 and 7): the time since the coflow last had a
  positive rate (Algorithm 1 or 3; ``wait_reset``), since its arrival if never.  A coflow that waited longer than
  ``delta_s`` is scheduled next regardless of its CCT (the starvation guard),
  checked when Algorithm 1 runs (and at the wake-ups of ``guard_wakeup``).
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
  of Omega); AssignBandwidth must also give the bandwidth it finds to the flow and
  take it off R.  A routed flow keeps its path and tops up along it; an
  unscheduled one takes its candidate path with the most residual bandwidth.
  Flows go by non-increasing remaining volume; coflows (``wc_order``) by
  Algorithm 1's pick order (``"pick"``, default), or as line 2 says by
  non-increasing minimum CCT, unscheduled (T = inf) first, ties by ``wc_ties``.
* **LP failure or time-out** (``lp_time_limit_s``): the coflow is reported in
  ``Schedule.fallback`` with the reason, routed by ECMP, and served only by work
  conservation; the scheduler keeps going.

Modules: LP (4) and model (2) in :mod:`.lp4`, plans in :mod:`.plan`, rounding in
:mod:`.rounding`, Algorithm 3 and the work-conservation glue in :mod:`.alg3`, the
variants in :mod:`.variants`.
"""

from __future__ import annotations

import math
import operator
import time
from itertools import compress
from typing import Dict, List, Optional, Sequence

import numpy as np

from topologies import Topology

from ...core.model import CoflowState, FlowState, Schedule
from ..base import Scheduler, SchedulerError
from ..conserve import WorkConservation
from ..pathcache import pair_paths, path_link_tuple, path_link_tuples
from ..registry import register
from .alg3 import (AccessLinks, alg3_order, conservation_state, distribute_bandwidth,
                   newly_served, unserved_spans)
from .lp4 import BITS, LP4Structure, alpha_from_load, solver_supported
from .plan import _SENT, CoflowPlan, _CoflowArrays
from .rounding import LPRounding, argmax_routes


def _choice(name: str, value, allowed: tuple):
    """``value`` if it is one of ``allowed``.  Raises: SchedulerError naming ``name``."""
    if value not in allowed:
        raise SchedulerError(f"{name}: must be {' or '.join(map(repr, allowed))}, "
                             f"got {value!r}")
    return value


@register("rapier")
class Rapier(Scheduler):
    """RAPIER's online scheduler: Algorithms 1, 2 and 3 (see the module docstring).

    Args:
        topology, seed, max_paths: see :class:`~rapier_app.scheduling.base.Scheduler`.
        delta_s: starvation threshold delta (s; Alg. 1 line 7); 60 s by measurement.
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
            With ``route_on="reserved"`` a coflow without a valid plan is planned
            only when a lower bound on its completion time behind the reserved bits
            (its flows' bits on the links every candidate path crosses: a host's
            access links) could still beat the round's best plan, in the first
            round of a pass too (:meth:`_host_bound`).
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
        wc_ties: Algorithm 3's order among coflows tied in line 2 (unscheduled, T =
            inf): ``"order"`` (default) Algorithm 1's pick order; ``"arrival"``.
        wc_order: the coflow order of Algorithm 3's line 2: ``"pick"`` (default)
            every coflow in Algorithm 1's pick order (minimum CCT first, as Varys
            hands out its leftover: a short coflow's flows get ahead of schedule
            and a later arrival that preempts it costs less); ``"paper"``:
            non-increasing minimal CCT, unscheduled coflows first, as written.
            Measured in docs/results.md ("Algorithm 3's order"); neither wins
            every hand case (tests/test_work_conservation.py).
        tie_break: ``"spread"`` (default of ``rapier`` and ``rapier-bssi``): after
            Algorithm 2's argmax rounding, the coflow takes its flows' ECMP paths
            instead when they reach the same completion time behind the reserved
            volume (max over links of (B_l + load_l) / C_l, within 1e-9): LP (4) is
            degenerate when a coflow's host links bound it, and the argmax of a
            simplex vertex sends many coflows through the same core links.
            ``"none"``: the argmax rounding alone (the paper's text).
        wait_reset: what ends a coflow's waitTime (Alg. 1 line 7): ``"any"``
            (default) a positive rate after any decision, the flow-completion
            passes of work conservation included (a coflow served by them is not
            waiting); ``"full"``: only a positive rate after a full pass (Algorithm 1
            and 3), this project's reading before, under which a coflow fed by the
            flow-completion passes still counts as waiting and the guard can
            promote it.
        guard_wakeup: False (default): the starvation guard is checked only when
            Algorithm 1 runs (coflow arrivals and completions, as the paper invokes
            it).  True: the moment a coflow that got no bandwidth at the last full
            pass has waited ``delta_s`` is a decision point too
            (:meth:`next_wakeup`), so a coflow the guard served cannot hold the
            links until its own end while others wait far beyond ``delta_s``
            (hand case in tests/test_starvation_guard.py: 20 coflows of 0.8 s
            behind one of 80 s on one uplink, average CCT 38.7 s with checks at
            coflow events only, 12.5 s with the wake-ups or without the guard).

        lp: how LP (4) is solved: ``"exact"`` (default): the simplex (``solver``)
            at every solve; ``"fast"``: the greedy placement
            (largest flow first, each on the candidate path of least worst
            (B_l + load_l + v) / C_l) whenever LP duality proves it optimal for (4)
            within a relative 1e-9 (:func:`~.lp4.certify_routing`: a host's access
            links, or the tight links of the placement, carry that much whatever
            the routing), else the simplex.  Both are optimal solutions of (4);
            (4) has many, and they round to different routes (the ``"fast"`` one
            is already integral, and the tie-break then weighs only it and ECMP).
            The certificate held at every solve of ``rapier-bench --quick`` and of
            60 Facebook coflows on ``fattree:10`` (``stats["lp_certified"]``);
            about 10x less CPU per Algorithm 1 pass, but the Facebook hour on
            ``fattree:10`` averages 23.60 s against 23.30 s with ``"exact"``.

    Raises:
        SchedulerError: delta_s negative, lp_time_limit_s not positive, bad route_on,
            negative aggregate_min_paths, unknown tie_break, wc_ties, wc_order,
            wait_reset or lp, or a solver OR-Tools' model_builder does not offer here.
    """

    #: tie_break when none is given (variants that change the rounding keep "none")
    default_tie_break = "spread"
    #: lp when none is given: "exact" (GLOP's vertex); "fast" is measured 1.3 %
    #: behind it on the Facebook hour on fattree:10 (docs/schedulers.md)
    default_lp = "exact"
    #: the decision budget's hook: a ``time.perf_counter()`` time after which
    #: Algorithm 1 stops (checked after each LP plan and each pick); the coflows it
    #: did not place are listed in ``Schedule.info["deferred"]`` on their ECMP paths
    #: at rate 0, the schedule holds only this call's picks (``info["partial"]``,
    #: the earlier slices' picks in ``info["held"]``; Algorithm 3 runs when the pass
    #: is complete: :meth:`_partial_schedule`), and the next call with
    #: a deadline carries the cut pass on where it stopped (its reservations, picks
    #: and plans; new coflows join the pending ones, ended ones leave), unless a
    #: coflow's flows changed meanwhile (then a new pass).  Every call plans or
    #: places at least one coflow, so the pass ends.  None (default): no limit, the
    #: pass is unchanged.  Set by the controller around each decision
    #: (``decision_budget_s``).
    deadline: Optional[float] = None
    #: the state of a pass cut by :attr:`deadline` (None: the next pass is new)
    _resume: Optional[dict] = None

    clairvoyant = True
    #: Section IV-C: Algorithm 1 "is invoked whenever a new coflow comes or an
    #: existing coflow finishes"; at every other flow completion Algorithm 3 alone
    #: hands out the bandwidth the flow freed (``incremental``).
    reschedule_on = "flow"
    #: bytes sent are read only at full passes (coflow arrivals and completions)
    reads_progress = "coflow-events"
    #: work conservation (Algorithm 3 at every decision): a waiting flow of an
    #: unscheduled coflow may take any candidate path with room (rapier_app.sim.checker)
    work_conserving = "candidates"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 delta_s: float = 60.0, solver: str = "GLOP",
                 lp_time_limit_s: Optional[float] = None, route_on: str = "reserved",
                 fast: bool = True, aggregate: Optional[bool] = None,
                 aggregate_min_paths: int = 50_000, incremental: bool = True,
                 tie_break: Optional[str] = None, wc_ties: str = "order",
                 wc_order: str = "pick", wait_reset: str = "any",
                 guard_wakeup: bool = False, lp: Optional[str] = None):
        super().__init__(topology, seed, max_paths)
        self.lp = _choice("lp", self.default_lp if lp is None else lp, ("fast", "exact"))
        self.guard_wakeup = bool(guard_wakeup)
        self._guard_at = math.inf
        self.wc_ties = _choice("wc_ties", wc_ties, ("order", "arrival"))
        self.wc_order = _choice("wc_order", wc_order, ("paper", "pick"))
        self.wait_reset = _choice("wait_reset", wait_reset, ("any", "full"))
        #: coflow id -> (start, end) of its flows in ``_wc`` when the last full pass
        #: left it without bandwidth (:func:`~.alg3.unserved_spans`)
        self._unserved_spans: Dict[str, tuple] = {}
        #: a host's up- and downlinks, for work conservation
        self._access = AccessLinks(topology)
        self.tie_break = _choice("tie_break", self.default_tie_break if tie_break is None
                                 else tie_break, ("spread", "none"))
        self.route_on = _choice("route_on", route_on, ("reserved", "residual", "full"))
        self.incremental = bool(incremental)
        if not self.incremental:
            self.reads_progress = True  # every call is a full pass: fresh counters
        self._wc: Optional[WorkConservation] = None
        if delta_s < 0:
            raise SchedulerError(f"delta_s: must be >= 0, got {delta_s}")
        if lp_time_limit_s is not None and lp_time_limit_s <= 0:
            raise SchedulerError(f"lp_time_limit_s: must be positive, got {lp_time_limit_s}")
        if int(aggregate_min_paths) < 0:
            raise SchedulerError(f"aggregate_min_paths: must be >= 0, got {aggregate_min_paths}")
        if not solver_supported(solver):
            # else every LP (4) raises LPError and every coflow silently falls back
            raise SchedulerError(f"solver: OR-Tools LP solver {solver!r} is not "
                                 "available here (GLOP, PDLP or HIGHS are)")
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
        self.stats = {"lp_solves": 0, "lp_build_s": 0.0, "lp_solve_s": 0.0, "passes": 0,
                      "lp_reused": 0, "wc_passes": 0, "lb_skips": 0, "lp_certified": 0,
                      "lp_fast_s": 0.0}
        #: Algorithm 2's LP solve and rounding, with this scheduler's settings
        self._rounding = LPRounding(self.topology, self.solver, self.lp_time_limit_s,
                                    self.aggregate, self.aggregate_min_paths, self.tie_break,
                                    self.max_paths, self.stats, self.ecmp_path,
                                    self._path_links, self.lp,
                                    self.seed if type(self).ecmp_path is Scheduler.ecmp_path
                                    else None)

    # -- helpers --------------------------------------------------------------------
    def _candidates(self, f: FlowState) -> tuple:
        """(candidate paths, link matrix paths x hops or None if the paths differ in
        length, the pair's entry) of a flow: from the shared
        :class:`~rapier_app.scheduling.pathcache.PairPaths` of its (src, dst) pair
        (``paths`` and the unpadded ``mat``)."""
        pp = pair_paths(self.topology, f.src, f.dst, self.max_paths)
        return pp.paths, pp.mat, pp

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

    def coflows_changed(self, coflow_ids: Sequence[str]) -> None:
        """Flows added or sizes changed (:meth:`Scheduler.coflows_changed`): the
        cached arrays (their ``sizes``) and LP routes of those coflows are dropped,
        with the incremental work-conservation state."""
        super().coflows_changed(coflow_ids)
        for cid in coflow_ids:
            self._carr.pop(cid, None)
            self._full_routes.pop(cid, None)

    def capacity_changed(self) -> None:
        """New link capacities (:meth:`Scheduler.set_capacity`): the LP routes kept
        per coflow for the full-capacity case were solved on the old ones; dropped,
        with the incremental work-conservation state."""
        super().capacity_changed()
        self._full_routes.clear()

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
        rem = self.remaining(coflow, e, sent)
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
            if usable is cand and self.fast and struct is None and self.lp == "exact" and \
                    self.aggregate is not True and \
                    e.n_cand <= (self.aggregate_min_paths if self.aggregate is None
                                 else math.inf) and e.n_cand > e.n:
                struct = LP4Structure(topo, cand, use_mats)
                e.struct = struct
            routes, lp_alpha, build_s, solve_s, kidx = self._rounding.route(
                flows, vols, usable, lp_cap, use_mats, struct if usable is cand else None,
                e if usable is cand else None, res_b,
                None if type(self).round_routes is Rapier.round_routes else self.round_routes,
                self.round_index)
            ra = e.route_arrays(routes, topo, kidx if usable is cand else None)
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

    def _host_bound(self, c: CoflowState, mand: Dict[str, tuple],
                    reserved: np.ndarray) -> float:
        """A lower bound (s) on the ``t_s`` Algorithm 2 would give ``c`` behind the
        ``reserved`` bits per link (``route_on="reserved"``), without solving its LP:
        max over the links some flow of ``c`` crosses on every candidate path (a
        single-homed host's access links) of (B_l + bits the flows put there) / C_l,
        -inf when no such link carries bits.  Every routing loads those links with
        at least those bits (the same flow-order sums, so the bound holds in floating
        point too), and ``t_s`` is the max of (B_l + load_l) / C_l over the loaded
        links.  ``mand`` caches each coflow's (links, bits) for the pass.
        Source: RAPIER Algorithm 1 (the pick is the same as planning ``c``)."""
        ml, mb = self._mand_load(c, mand)
        if not ml.size:
            return -math.inf
        return float(np.max((reserved[ml] + mb) / self.topology.capacity[ml]))

    def _mand_load(self, c: CoflowState, mand: Dict[str, tuple]) -> tuple:
        """(links, bits > 0) that ``c``'s flows put on the links every candidate path
        of theirs crosses (:meth:`_CoflowArrays.mandatory_load` of the remaining
        bits), cached in ``mand`` for the pass (the volumes do not change in it)."""
        got = mand.get(c.coflow_id)
        if got is None:
            e = self._coflow_arrays(c)
            sent = np.fromiter(map(_SENT, e.flows), float, e.n)
            ml, mb = e.mandatory_load(self.remaining(c, e, sent) * BITS)
            keep = mb > 0
            got = mand[c.coflow_id] = (ml[keep], mb[keep])
        return got

    def _residual_bound(self, c: CoflowState, mand: Dict[str, tuple],
                        residual: np.ndarray) -> float:
        """A lower bound (s) on the ``t_s`` Algorithm 2 would give ``c`` on the
        residual rates R (``route_on="residual"``: t_s = 1 / alpha, alpha = min over
        the routed links of R_l / load_l), without solving its LP: max over the links
        every candidate path of a flow crosses of bits_l / R_l (inf where R_l <= 0),
        less a relative 1e-12 for the rounding of the sums.  Every routing loads
        those links with at least those bits, so alpha <= R_l / bits_l there.
        -inf when no such link carries bits.
        Source: RAPIER Algorithm 1 (the pick is the same as planning ``c``)."""
        ml, mb = self._mand_load(c, mand)
        if not ml.size:
            return -math.inf
        r = np.maximum(residual[ml], 0.0)
        with np.errstate(divide="ignore"):
            return float(np.max(mb / r)) * (1.0 - 1e-12)

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
        if self.incremental and self._wc is not None and self._wc.matches(active) \
                and now < self._guard_at and self._resume is None:
            self.stats["wc_passes"] += 1
            out = self._wc.flow_event()
            if self._unserved_spans:
                # a coflow without bandwidth at the last full pass that this pass gave
                # a rate counts as served from now on (its waitTime, Alg. 1 line 7,
                # restarts at the next decision; wait_reset="any")
                for cid in newly_served(self._wc, self._unserved_spans):
                    del self._unserved_spans[cid]
                    self._served_prev.add(cid)
            return out
        self.stats["passes"] += 1
        live = {c.coflow_id for c in active}
        for d in (self._last_served, self._full_routes, self._carr):
            for cid in [k for k in d if k not in live]:
                del d[cid]

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
        resumed = self._resumed(active) if self.deadline is not None else None
        self._resume = None
        if resumed is not None:  # carry on the pass the deadline cut
            pending, residual, reserved, plans, fallback, rates_c, paths_c, order, seen = \
                resumed
        start_n = len(order)  # picks made by earlier slices of this pass
        # per coflow without a plan yet: the bits its flows put on the links every
        # candidate path of theirs crosses (the volumes do not change within a pass)
        mand: Dict[str, tuple] = {}
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
                if self._out_of_time(pending):
                    break
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
            cut = False
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
                    elif old is None and reserved is not None and self.fast:
                        lb = self._host_bound(c, mand, reserved)
                    elif self.route_on == "residual" and self.fast:
                        lb = self._residual_bound(c, mand, residual)
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
                    cut = self._out_of_time(pending)
                    if cut:  # out of time within the round: no pick (resumed later)
                        break
            if cut:
                break
            if best is None:
                if guard and pending and pending[0].coflow_id in fallback:
                    continue  # the guarded coflow fell back; pick again
                break
            self._commit(best, plans[best.coflow_id], pending, order, paths_c, rates_c,
                         residual, reserved)
            if self._out_of_time(pending):
                break
        # Coflows the budget left out (pending after a break above): like fallback
        # coflows below, but not reported as fallback.
        deferred = [c.coflow_id for c in pending if c.coflow_id not in fallback] \
            if self.deadline is not None else []
        if deferred:
            self._resume = {
                "pending": list(pending), "residual": residual.copy(),
                "reserved": None if reserved is None else reserved.copy(),
                "plans": dict(plans), "fallback": dict(fallback),
                "rates_c": {k: v.copy() for k, v in rates_c.items()},
                "paths_c": {k: list(v) for k, v in paths_c.items()}, "order": list(order),
                "seen": dict(seen), "fids": {c.coflow_id: self._coflow_arrays(c).fids
                                             for c in active if c.coflow_id in plans}}
        for cid in deferred:
            plans.pop(cid, None)
        if deferred:
            return self._partial_schedule(active, order, start_n, plans, fallback, deferred,
                                          rates_c, paths_c)
        # Fallback coflows: ECMP routes, served only by work conservation.
        for c in active:
            if c.coflow_id in fallback or c.coflow_id in deferred:
                fl = self._coflow_arrays(c).flows
                paths_c[c.coflow_id] = [self.ecmp_path(f) for f in fl]
                rates_c[c.coflow_id] = np.zeros(len(fl))
        wc_order = distribute_bandwidth(
            alg3_order(active, plans, fallback, self.wc_priority(active), self.wc_order,
                       self.wc_ties, order),
            plans, fallback, residual, rates_c, paths_c, self._coflow_arrays)
        self._served_prev = {c.coflow_id for c in active
                             if c.coflow_id in rates_c and bool((rates_c[c.coflow_id] > 0).any())}
        self._guard_at = math.inf
        if self.guard_wakeup:
            # the first moment a coflow left without bandwidth has waited delta_s
            # (strictly more, as Alg. 1 line 7 compares)
            for c in active:
                if c.coflow_id not in self._served_prev:
                    t = self._last_served.get(c.coflow_id, c.arrival_s) + self.delta_s
                    self._guard_at = min(self._guard_at, t + 1e-9 * max(1.0, abs(t)))
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
        if deferred:
            info["deferred"] = deferred
        sched = Schedule.from_vectors(flows_out, paths_out, rates_all, order=order,
                                      fallback=fallback, info=info)
        if self.incremental:
            self._wc = conservation_state(self.topology.capacity, out_cof, flows_out, paths_out,
                                          rates_all, wc_order, order, fallback, info,
                                          self._coflow_arrays, self._path_links_many,
                                          self._access,
                                          self.volatile_schedules)
            # with wait_reset="any": where the flows of each coflow left without
            # bandwidth sit in the work-conservation state
            self._unserved_spans = (unserved_spans(out_cof, self._served_prev,
                                                   self._coflow_arrays)
                                    if self.wait_reset == "any" else {})
        return sched

    def _partial_schedule(self, active: Sequence[CoflowState], order: List[str],
                          start_n: int, plans: Dict[str, CoflowPlan],
                          fallback: Dict[str, str], deferred: List[str],
                          rates_c: Dict[str, np.ndarray], paths_c: Dict[str, list]
                          ) -> Schedule:
        """The schedule of a slice of a pass cut by :attr:`deadline`: the coflows
        this call picked (their routes and model (2) rates, bit/s), and the deferred
        and fallback ones on their ECMP paths at rate 0; the picks of earlier slices
        of the pass are left out and listed in ``info["held"]`` (they keep what
        they were given), ``info["partial"]`` is True.  Algorithm 3 runs once the
        pass is complete (its last slice is a full schedule): a slice costs its
        picks, not a pass over every flow."""
        new = set(order[start_n:])
        flows_out: list = []
        paths_out: list = []
        rates_out = []
        for c in active:
            cid = c.coflow_id
            if cid in new:
                flows_out.extend(self._coflow_arrays(c).flows)
                paths_out.extend(paths_c[cid])
                rates_out.append(rates_c[cid])
            elif cid in fallback or cid in deferred:
                fl = self._coflow_arrays(c).flows
                flows_out.extend(fl)
                paths_out.extend(self.ecmp_path(f) for f in fl)
                rates_out.append(np.zeros(len(fl)))
        self._served_prev = self._served_prev | {
            cid for cid in new if bool((rates_c[cid] > 0).any())}
        self._wc = None  # the next call carries the pass on (no work-conservation pass)
        self._unserved_spans = {}
        info = {"t_min_s": {cid: p.t_s for cid, p in plans.items()}, "deferred": deferred,
                "held": list(order[:start_n]), "partial": True}
        return Schedule.from_vectors(flows_out, paths_out,
                                     np.concatenate(rates_out) if rates_out else np.zeros(0),
                                     order=list(order), fallback=dict(fallback), info=info)

    def remaining(self, coflow: CoflowState, e: _CoflowArrays,
                  sent: np.ndarray) -> np.ndarray:
        """The remaining bytes Algorithm 2 plans ``coflow``'s active flows on (``e``
        its arrays, ``sent`` their bytes sent, in ``e.flows`` order): the exact
        ``max(size - sent, 0)`` (= ``FlowState.remaining_bytes``).  ``rapier-nc``
        plans on estimated sizes instead."""
        return np.maximum(e.sizes - sent, 0.0)

    #: a variant's :meth:`round_routes` on the flows' path blocks, from the argmax
    #: indexes (:data:`.rounding.IndexRoundFn`; the same routes, compiled), or None.
    #: A subclass that overrides :meth:`round_routes` overrides this too (or sets None).
    round_index = None

    def round_routes(self, flows: Sequence[FlowState], vols: List[float],
                     usable: List[List[tuple]], ms: List[np.ndarray],
                     lp_cap: np.ndarray) -> Dict[str, tuple]:
        """Alg. 2 lines 3-7: each flow takes the path of its largest m_jk (first on
        ties, :func:`~.rounding.argmax_routes`).  Subclasses may improve the rounding
        (``rapier-ls``, ``rapier-spread``); the default one is vectorised.

        Args: flows, their volumes in bits, usable candidate paths, LP values m_jk
        (1/s), the capacities (bit/s) the LP routed on.  Returns flow_id -> path.
        """
        return argmax_routes(flows, usable, ms)

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Forward finished flows to the work-conservation state (see the base class)."""
        if self._wc is not None:
            self._wc.flows_finished(flows)

    def next_wakeup(self, now: float) -> Optional[float]:
        """With ``guard_wakeup``: the time (s) at which a coflow that got no
        bandwidth at the last full pass has waited more than ``delta_s`` (a full
        pass then runs, Alg. 1 lines 7-10); None otherwise or when none waits."""
        if self.guard_wakeup and math.isfinite(self._guard_at) and self._guard_at > now:
            return self._guard_at
        return None

    def coflow_order(self, now: float, active: Sequence[CoflowState]
                     ) -> Optional[List[CoflowState]]:
        """A fixed priority order of ``active`` for the full pass, or None (default)
        for Algorithm 1's greedy minimum-CCT order with the starvation guard.
        Subclasses (``rapier-bssi``) override it."""
        return None

    def wc_priority(self, active: Sequence[CoflowState]) -> Optional[List[CoflowState]]:
        """The coflow order of work conservation, or None (default) for Algorithm 3's:
        ``wc_order``."""
        return None

    def _out_of_time(self, pending: list) -> bool:
        """True when coflows are still pending and :attr:`deadline` has passed."""
        return bool(pending) and self.deadline is not None and \
            time.perf_counter() >= self.deadline

    def _resumed(self, active: Sequence[CoflowState]) -> Optional[tuple]:
        """The state of the pass the deadline cut (:attr:`_resume`), brought to
        ``active``: (pending, R, B, plans, fallback, rates, paths, order, seen), or
        None for a new pass (none was cut, or a planned coflow's flows changed)."""
        st = self._resume
        if st is None:
            return None
        live = {c.coflow_id: c for c in active}
        for cid, fids in st["fids"].items():
            if cid in live and self._coflow_arrays(live[cid]).fids != fids:
                return None
        known = set(st["order"]) | set(st["fallback"]) | {c.coflow_id for c in st["pending"]}
        pending = [live[c.coflow_id] for c in st["pending"] if c.coflow_id in live] + \
            [c for c in active if c.coflow_id not in known]
        order = [cid for cid in st["order"] if cid in live]
        return (pending, st["residual"], st["reserved"],
                {k: v for k, v in st["plans"].items() if k in live},
                {k: v for k, v in st["fallback"].items() if k in live},
                {k: st["rates_c"][k] for k in order}, {k: st["paths_c"][k] for k in order},
                order, {k: v for k, v in st["seen"].items() if k in live})

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
        """Link indices of path ``p`` as a tuple of ints (the shared
        :func:`~rapier_app.scheduling.pathcache.path_link_tuple` cache)."""
        return path_link_tuple(self.topology, p)

    def _path_links_many(self, paths: list) -> list:
        """:meth:`_path_links` of every path of ``paths`` (one cache lookup for the
        list: :func:`~rapier_app.scheduling.pathcache.path_link_tuples`)."""
        return path_link_tuples(self.topology, paths)

    def _plan_or_fallback(self, c: CoflowState, residual: np.ndarray,
                          fallback: Dict[str, str], pending: list,
                          reserved: Optional[np.ndarray] = None) -> Optional[CoflowPlan]:
        """Algorithm 2 for ``c``; on solver trouble (:class:`LPError`, or a
        ``RuntimeError`` from OR-Tools) record the fallback, drop ``c`` from
        ``pending`` and return None.

        Raises:
            Any other exception of :meth:`minimum_cct` (a defect, not solver
            trouble): it propagates instead of turning into a silent fallback,
            which would otherwise put the coflow on default forwarding and skew a
            simulation's results without a word.
        """
        try:
            return self.minimum_cct(c, residual, reserved)
        except RuntimeError as exc:  # LPError (a RuntimeError) or OR-Tools trouble
            fallback[c.coflow_id] = str(exc)
            pending.remove(c)
            return None
