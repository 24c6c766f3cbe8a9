"""Algorithm 2's LP solve and rounding for RAPIER (Zhao et al., INFOCOM 2015,
Section IV-B lines 2-7) with this project's tie-break (``tie_break="spread"``).

:class:`LPRounding`, a helper :class:`~rapier_app.scheduling.rapier.scheduler.Rapier`
builds once with its settings (topology, solver, time limit, aggregation, tie-break,
its ECMP hash and path-link lookup) and calls per coflow, turns one coflow's LP (4)
into routes: :meth:`~LPRounding.route` (per-flow or aggregated solve, then the
rounding), :meth:`~LPRounding._tie` (argmax vs ECMP vs greedy spread) and
:meth:`~LPRounding._greedy_paths`.  :func:`argmax_routes` is Algorithm 2's own
rounding (``rapier-ls`` and ``rapier-spread`` pass their improved one).  The
readings are documented in :mod:`.scheduler`.

Units: volumes in bits, capacities in bit/s.
"""

from __future__ import annotations

import math
import operator
import zlib
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ... import kernels
from topologies import Topology

from ...core.model import FlowState
from ...kernels import rapier as krapier
from ..pathcache import pad_rows, pair_paths
from .lp4 import (LP4Structure, certify_routing, lp4_commodities, route_load, solve_lp4,
                  solve_lp4_aggregated)
from .plan import _CoflowArrays


def argmax_routes(flows: Sequence[FlowState], usable: List[List[tuple]],
                  ms: List[np.ndarray]) -> Dict[str, tuple]:
    """Alg. 2 lines 3-7: each flow takes the path of its largest m_jk (first on
    ties).  Args: flows, their usable candidate paths, LP values m_jk (1/s).
    Returns flow_id -> path."""
    k = krapier.argmax_rows(ms)  # the same first maxima, over all rows at once
    if k is None or len(k) != len(flows):
        return {f.flow_id: ps[int(np.argmax(m))] for f, ps, m in zip(flows, usable, ms)}
    return dict(zip([f.flow_id for f in flows], map(operator.getitem, usable, k.tolist())))


#: a rounding of LP (4): (flows, volumes in bits, usable paths, m_jk rows in 1/s,
#: capacities in bit/s the LP routed on) -> flow_id -> path
RoundFn = Callable[[Sequence[FlowState], List[float], List[List[tuple]], List[np.ndarray],
                    np.ndarray], Dict[str, tuple]]


#: a variant's rounding on the flows' path blocks: (flows, volumes (float64[n],
#: bits), their ``_CoflowArrays``, the argmax rounding's path indexes (int64[n]),
#: capacities in bit/s the LP routed on) -> path indexes (int64[n]) or None (then
#: its ``RoundFn`` rounds)
IndexRoundFn = Callable[[Sequence[FlowState], np.ndarray, "_CoflowArrays", np.ndarray,
                         np.ndarray], Optional[np.ndarray]]


class LPRounding:
    """LP (4) solve and rounding of Algorithm 2 for one scheduler (see the module
    docstring).

    Args:
        topology: the fabric; capacities in bit/s.
        solver, lp_time_limit_s: as :func:`solve_lp4`.
        aggregate, aggregate_min_paths: solve on commodities always (True), never
            (False) or when the coflow has more than ``aggregate_min_paths`` path
            variables (None) (:func:`solve_lp4_aggregated`).
        tie_break: ``"spread"`` (argmax vs ECMP vs greedy placement, the most spread
            of the fastest) or ``"none"`` (the rounding alone).
        max_paths: candidate paths per host pair (:func:`pair_paths`).
        stats: the scheduler's counters; ``lp_solves``, ``lp_build_s`` and
            ``lp_solve_s`` are increased in place.
        ecmp_path: the scheduler's ECMP hash (flow -> path).
        path_links: path -> its link indices (int array).
        lp: ``"exact"`` (always the simplex, ``solver``) or ``"fast"`` (the greedy
            placement when LP duality certifies it optimal for (4), else the
            simplex: :meth:`_certified`).  Both give an optimal solution of (4); they
            may be different optimal solutions, so the rounding may differ.
        ecmp_seed: the seed of ``ecmp_path`` when it is the base scheduler's hash
            (:meth:`_ecmp_hash_index` then computes it in place), else None.
    """

    def __init__(self, topology: Topology, solver: str, lp_time_limit_s: Optional[float],
                 aggregate: Optional[bool], aggregate_min_paths: int, tie_break: str,
                 max_paths: Optional[int], stats: dict,
                 ecmp_path: Callable[[FlowState], tuple],
                 path_links: Callable[[tuple], np.ndarray], lp: str = "exact",
                 ecmp_seed: Optional[int] = None):
        self.topology = topology
        self.lp = lp
        self.ecmp_seed = ecmp_seed
        self._capx = None  # the capacities with an inf for the sentinel link
        self.solver = solver
        self.lp_time_limit_s = lp_time_limit_s
        self.aggregate = aggregate
        self.aggregate_min_paths = aggregate_min_paths
        self.tie_break = tie_break
        self.max_paths = max_paths
        self.stats = stats
        self.ecmp_path = ecmp_path
        self.path_links = path_links

    def route(self, flows: Sequence[FlowState], vols: List[float],
              usable: List[List[tuple]], lp_cap: np.ndarray,
              link_mats: Optional[list] = None,
              structure: Optional[LP4Structure] = None,
              carr: Optional["_CoflowArrays"] = None,
              reserved: Optional[np.ndarray] = None,
              round_routes: Optional[RoundFn] = None,
              round_index: Optional[IndexRoundFn] = None) -> tuple:
        """Alg. 2 lines 2-7: solve (4) on ``lp_cap`` (with ``reserved`` bits per link,
        see :func:`solve_lp4`) and round (``round_routes``, default
        :func:`argmax_routes`, vectorised on ``carr`` with the compiled kernels;
        ``round_index``: the same rounding as ``round_routes`` on ``carr``'s path
        blocks, from the argmax indexes, used in its place when it can be).
        Returns (routes, lp_alpha, build_s, solve_s, kidx): ``kidx`` is, per flow,
        the index of its route in its candidate list when known (the compiled path
        with ``carr``), else None."""
        if all(len(ps) == 1 for ps in usable):
            return dict(zip([f.flow_id for f in flows], [ps[0] for ps in usable])), \
                None, 0.0, 0.0, None
        if self.lp == "fast" and carr is not None and usable is carr.cand:
            got = self._certified(flows, vols, usable, lp_cap, carr, reserved, round_routes)
            if got is not None:
                return got
        agg = None
        if link_mats is not None and (self.aggregate or (
                self.aggregate is None and
                (carr.n_cand if carr is not None and link_mats is carr.mats else
                 sum(m.shape[0] for m in link_mats)) > self.aggregate_min_paths)):
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
        else:
            lp_alpha, ms, build_s, solve_s = solve_lp4(self.topology, vols, usable, lp_cap,
                                                       self.solver, self.lp_time_limit_s,
                                                       link_mats, structure, reserved)
        self.stats["lp_solves"] += 1
        self.stats["lp_build_s"] += build_s
        self.stats["lp_solve_s"] += solve_s
        kidx = None
        if carr is not None and usable is carr.cand and kernels.ENABLED and \
                (round_routes is None or round_index is not None):
            # the argmax rounding (round_routes) vectorised: the same first maxima
            kidx = krapier.argmax_rows(ms)
            if kidx is not None and round_routes is not None:
                kidx = round_index(flows, np.asarray(vols, dtype=float), carr, kidx,
                                   lp_cap)
        if kidx is not None:
            base = dict(zip(carr.fids if flows is carr.flows else [f.flow_id for f in flows],
                            map(operator.getitem, usable, kidx.tolist())))
        else:
            base = (argmax_routes(flows, usable, ms) if round_routes is None
                    else round_routes(flows, vols, usable, ms, lp_cap))
        routes, kidx = self._tie(flows, vols, usable, base, lp_cap, reserved, carr, kidx)
        return routes, lp_alpha, build_s, solve_s, kidx

    def _certified(self, flows: Sequence[FlowState], vols: List[float],
                   usable: List[List[tuple]], lp_cap: np.ndarray, carr: "_CoflowArrays",
                   reserved: Optional[np.ndarray],
                   round_routes: Optional[RoundFn]) -> Optional[tuple]:
        """``lp="fast"``: LP (4) solved by the greedy placement when LP duality
        certifies it optimal (:func:`~.lp4.certify_routing`, within a relative 1e-9),
        else None (the caller solves (4) by simplex).

        The greedy placement (:meth:`_greedy_paths`, behind ``reserved``) is an
        integral solution of (4): m_jk = alpha on flow j's placed path.  When its
        1/alpha meets the dual bound it is an optimal solution of (4), the argmax
        rounding keeps it as it is, and the tie-break then weighs it against the
        ECMP routing as usual.  Returns what :meth:`route` returns, with the
        certificate's wall time as build seconds and no solve seconds."""
        import time

        t0 = time.perf_counter()
        vol = np.asarray(vols, dtype=float)
        L = len(lp_cap)
        load = np.zeros(L)
        if kernels.ENABLED:
            gk = self._greedy_index(vol, carr, lp_cap, reserved)
            off, npaths, nhops, mflat = carr.path_blocks()
            krapier.route_load_kernel(vol, off, nhops, gk, mflat, L, load)
            gpaths = [ps[k] for ps, k in zip(usable, gk.tolist())]
            greedy = gk
        else:
            gk = None
            gpaths = self._greedy_paths(flows, vol, usable, lp_cap, reserved)
            ll, lb = route_load(self.topology, gpaths, vol)
            load[ll] = lb
            greedy = gpaths
        t_route, t_lower = certify_routing(load, lp_cap, carr.all_links, carr.path_blocks(),
                                           vol, carr.mandatory_load(vol), reserved)
        if not (math.isfinite(t_route) and t_route > 0 and
                t_lower >= t_route * (1.0 - 1e-9)):
            self.stats["lp_fast_s"] += time.perf_counter() - t0
            return None
        lp_alpha = 1.0 / t_route
        base = dict(zip([f.flow_id for f in flows], gpaths))
        base_k = gk
        if round_routes is not None:  # a variant's own rounding of the LP values
            ms = []
            for ps, p in zip(usable, gpaths):
                m = np.zeros(len(ps))
                m[ps.index(p)] = lp_alpha
                ms.append(m)
            base = round_routes(flows, vols, usable, ms, lp_cap)
            base_k = None
        self.stats["lp_solves"] += 1
        self.stats["lp_certified"] += 1
        routes, kidx = self._tie(flows, vols, usable, base, lp_cap, reserved, carr, base_k,
                                 greedy)
        dt = time.perf_counter() - t0
        self.stats["lp_fast_s"] += dt
        return routes, lp_alpha, dt, 0.0, kidx

    def _tie(self, flows: Sequence[FlowState], vols: List[float], usable: List[List[tuple]],
             base: Dict[str, tuple], lp_cap: np.ndarray, reserved: Optional[np.ndarray],
             carr: Optional["_CoflowArrays"] = None,
             base_k: Optional[np.ndarray] = None, greedy=None) -> tuple:
        """The ``tie_break`` rule (class docstring) applied to the rounded ``base``
        routes behind the ``reserved`` bits per link: returns (flow_id -> path, the
        routes' candidate indexes or None).
        With ``carr`` (the flows' cached arrays, ``usable`` their full candidate
        lists) and the compiled kernels, the ECMP and greedy routings are placed and
        loaded by :mod:`.kernels` on the flows' path blocks (``base_k``: the
        indexes of ``base``, when known): the same loads, scores and choice bit
        for bit."""
        if self.tie_break != "spread":
            return base, base_k
        vol = np.asarray(vols, dtype=float)
        B = reserved
        fast = carr is not None and kernels.ENABLED and usable is carr.cand
        if fast:
            ek = self._ecmp_index(flows, carr)
            if ek is None:
                return base, base_k
        else:
            ecmp = []
            for f, ps in zip(flows, usable):
                p = self.ecmp_path(f)
                if p not in ps:
                    return base, base_k
                ecmp.append(p)

        def score_of(links, bits) -> Tuple[float, float]:
            # (worst (B + load) / C over the links the coflow loads, the sum of the
            # squared utilisations (B + load) / C of those links: the spread)
            if B is not None:
                bits = bits + B[links]
            if not len(links):
                return 0.0, 0.0
            u = bits / lp_cap[links]
            return float(np.max(u)), float(np.dot(u, u))

        def score(paths) -> Tuple[float, float]:
            return score_of(*route_load(self.topology, paths, vol))

        if fast:
            off, npaths, nhops, mflat = carr.path_blocks()
            L = len(lp_cap)

            def score_k(kidx) -> Tuple[float, float]:
                load = np.zeros(L)
                krapier.route_load_kernel(vol, off, nhops, kidx, mflat, L, load)
                links = np.flatnonzero(load > 0)
                return score_of(links, load[links])

            gk = greedy if greedy is not None else self._greedy_index(vol, carr, lp_cap, B)
            s_base = (score([base[f.flow_id] for f in flows]) if base_k is None
                      else score_k(base_k))
            # lp="fast": the rounding is the greedy placement itself (same scores)
            cands = [(score_k(ek), ek), (s_base, None),
                     (s_base if gk is base_k else score_k(gk), gk)]
        else:
            cands = [(score(ecmp), ecmp), (score([base[f.flow_id] for f in flows]), None),
                     (score(g := greedy if greedy is not None else
                            self._greedy_paths(flows, vol, usable, lp_cap, B)), g)]
        best_w = min(c[0][0] for c in cands)
        tied = [c for c in cands if c[0][0] <= best_w * (1 + 1e-9)]
        best_s = min(c[0][1] for c in tied)
        # among routings with the best completion time, the most spread one; exact
        # ties go to ECMP, then the LP's rounding, then the greedy placement
        for (w, s2), paths in tied:
            if s2 <= best_s * (1 + 1e-9):
                if paths is None:
                    return base, base_k
                if fast:
                    k = paths
                    return dict(zip(carr.fids if flows is carr.flows else
                                    [f.flow_id for f in flows],
                                    map(operator.getitem, usable, k.tolist()))), k
                return {f.flow_id: p for f, p in zip(flows, paths)}, None
        return base, base_k

    def _ecmp_index(self, flows: Sequence[FlowState],
                    carr: "_CoflowArrays") -> Optional[np.ndarray]:
        """Per flow of ``carr``, the index of its :meth:`ecmp_path` in its candidate
        list (int64 array, cached on ``carr``), or None when some flow's ECMP path
        is not a candidate (then the tie-break keeps the rounding)."""
        ek = carr.ecmp_k
        if ek is None and self.ecmp_seed is not None:
            ek = carr.ecmp_k = self._ecmp_hash_index(flows, carr)
        if ek is None:
            out = np.empty(len(flows), np.int64)
            for j, (f, ps) in enumerate(zip(flows, carr.cand)):
                p = self.ecmp_path(f)
                if len(ps) == 1:
                    if p != ps[0]:
                        out = False
                        break
                    out[j] = 0
                    continue
                try:
                    out[j] = ps.index(p)
                except ValueError:
                    out = False
                    break
            ek = carr.ecmp_k = out
        return None if ek is False else ek

    def _ecmp_hash_index(self, flows: Sequence[FlowState],
                         carr: "_CoflowArrays") -> Optional[np.ndarray]:
        """:meth:`_ecmp_index` from the hash of
        :meth:`~rapier_app.scheduling.base.Scheduler.ecmp_path` itself (crc32 of
        seed, endpoints and flow id, modulo the number of candidates), without
        looking each path up in its list: the same index when every candidate
        list is the pair's whole ECMP set of equal-length paths (else None)."""
        seed = self.ecmp_seed
        out = np.zeros(len(flows), np.int64)
        crc = zlib.crc32
        for j, (f, ps) in enumerate(zip(flows, carr.cand)):
            K = len(ps)
            if K > 1:
                if len(ps[-1]) != len(ps[0]):
                    return None
                out[j] = crc(f"{seed}|{f.src}|{f.dst}|{f.flow_id}".encode()) % K
        return out

    def _greedy_index(self, vol: np.ndarray, carr: "_CoflowArrays", cap: np.ndarray,
                      reserved: Optional[np.ndarray]) -> np.ndarray:
        """:meth:`_greedy_paths` of ``carr``'s flows over their full candidate lists,
        compiled (:func:`~rapier_app.kernels.rapier.greedy_place_kernel`): the
        chosen path index per flow (int64 array)."""
        off, npaths, nhops, mflat = carr.path_blocks()
        L = len(cap)
        load = np.zeros(L + 1)
        if reserved is not None:
            load[:L] = reserved
        capx = self._capx
        if capx is None or capx.shape[0] != L + 1 or not np.array_equal(capx[:L], cap):
            capx = self._capx = np.append(cap, np.inf)  # kept: the same values
        out = np.zeros(len(vol), np.int64)
        krapier.greedy_place_kernel(np.argsort(-vol, kind="stable"), vol, off, npaths, nhops,
                                    mflat, load, capx, out)
        return out

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
        # per list of usable paths (flows of one pair share the pair's list): its
        # padded link matrix transposed (hops x paths, contiguous: the max over a
        # path's hops is a vectorised max across rows), the capacities along it and
        # each path's link array (the list itself is kept so its id is not reused
        # during this call)
        mats: Dict[int, tuple] = {}
        amax = np.maximum.reduce
        path_links = topo.path_links
        for j in np.argsort(-vol, kind="stable").tolist():
            ps = usable[j]
            v = float(vol[j])
            if len(ps) == 1:
                p = ps[0]
                la = path_links(p)
            else:
                got = mats.get(id(ps))
                if got is None:
                    f = flows[j]
                    pp = pair_paths(topo, f.src, f.dst, self.max_paths)
                    # the pair's padded matrix when every candidate is usable, else
                    # the usable ones padded the same way (sentinel L)
                    if ps is pp.paths:
                        M, arrs = pp.padded, pp.arrays
                    else:
                        M = pad_rows([self.path_links(q) for q in ps], L)
                        arrs = [path_links(q) for q in ps]
                    MT = np.ascontiguousarray(M.T)
                    got = mats[id(ps)] = (MT, capx[MT], arrs, ps)
                MT, capT, arrs, _ = got
                # (load + v) / cap per hop, max over hops, first path with the least
                X = load[MT]
                X += v
                X /= capT
                k = int(amax(X, axis=0).argmin())
                p = ps[k]
                la = arrs[k]
            load[la] += v
            out[j] = p
        return out
