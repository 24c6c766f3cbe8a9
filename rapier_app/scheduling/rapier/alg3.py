"""Algorithm 3 (DistributeBandwidth) of RAPIER (Zhao et al., INFOCOM 2015, Section
IV-C) and the glue to flow-event work conservation, as functions of explicit inputs.

* :func:`alg3_order`: the coflow order of Algorithm 3 (line 2, read as the module
  docstring of :mod:`~rapier_app.scheduling.rapier.scheduler` documents);
* :func:`distribute_bandwidth`: Algorithm 3 with AssignBandwidth on the capacity
  Algorithm 1 leaves;
* :func:`conservation_state`: the
  :class:`~rapier_app.scheduling.conserve.WorkConservation` state kept for the flow
  completions between full passes, with :class:`AccessLinks` (a host's up- and
  downlinks);
* :func:`unserved_spans` and :func:`newly_served`: which coflows left without
  bandwidth by a full pass got some at a flow completion (waitTime bookkeeping).

Units: rates and residuals in bit/s, sizes in bytes, times in seconds.
"""

from __future__ import annotations

import bisect
import math
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from topologies import Topology

from ... import kernels
from ...core.model import CoflowState
from ...kernels import rapier as krapier
from ..conserve import WorkConservation, best_candidate
from .plan import _SENT, CoflowPlan, _CoflowArrays

#: a coflow's cached arrays (:meth:`~.scheduler.Rapier._coflow_arrays`)
CoflowArraysOf = Callable[[CoflowState], _CoflowArrays]


def coflow_t(c: CoflowState, plans: Dict[str, CoflowPlan], fallback: Dict[str, str]) -> float:
    """Algorithm 1's T_C of ``c`` (s): its plan's minimum CCT, or infinity when it has
    no plan, fell back, or its fixed-route alpha is 0 (not scheduled)."""
    p = plans.get(c.coflow_id)
    if p is None or c.coflow_id in fallback or not math.isfinite(p.t_s) or p.alpha <= 0:
        return math.inf
    return p.t_s


def alg3_order(active: Sequence[CoflowState], plans: Dict[str, CoflowPlan],
               fallback: Dict[str, str], prio: Optional[List[CoflowState]], wc_order: str,
               wc_ties: str, pick_order: Optional[List[str]] = None) -> List[CoflowState]:
    """The order in which Algorithm 3 visits ``active``: ``prio`` when given (a
    variant's own priority), else with ``wc_order="pick"`` Algorithm 1's pick order
    (``pick_order``, coflow ids), else line 2's: non-increasing T_C
    (:func:`coflow_t`), unscheduled coflows first, their ties by ``wc_ties``
    (``"order"``: pick order, ``"arrival"``), then arrival and id.
    Source: RAPIER Section IV-C, Algorithm 3 line 2."""
    if prio is not None:
        return list(prio)
    if wc_order == "pick":
        pos = {cid: i for i, cid in enumerate(pick_order or [])}
        return sorted(active, key=lambda c: (pos.get(c.coflow_id, len(pos)),
                                             c.arrival_s, c.coflow_id))
    # ties in line 2 (every unscheduled coflow has T = inf): Algorithm 1's
    # pick order ("order": the shortest completion behind the reserved
    # volume first) or arrival order ("arrival")
    pos = {cid: i for i, cid in enumerate(pick_order or [])} \
        if wc_ties == "order" else {}
    return sorted(active, key=lambda c: (-coflow_t(c, plans, fallback),
                                         pos.get(c.coflow_id, 0), c.arrival_s, c.coflow_id))


def distribute_bandwidth(order: Sequence[CoflowState], plans: Dict[str, CoflowPlan],
                         fallback: Dict[str, str], residual: np.ndarray,
                         rates_c: Dict[str, np.ndarray], paths_c: Dict[str, list],
                         coflow_arrays: CoflowArraysOf) -> list:
    """Algorithm 3 (DistributeBandwidth) with AssignBandwidth, read as documented
    in the module docstring of :mod:`~rapier_app.scheduling.rapier.scheduler`, visiting
    the coflows in ``order`` (:func:`alg3_order`); updates ``rates_c`` and
    ``paths_c`` (per coflow, per active flow: rate in bit/s and path) and
    ``residual`` in place.  A flow with no residual capacity on its path (scheduled
    coflows) or on every candidate path (unscheduled ones) when its coflow's turn
    comes cannot get any (residuals only fall), so only the others are visited.

    Returns the visiting order, for later flow events: per coflow in Algorithm
    3's order, ``(coflow_id, flow permutation, unscheduled?, its arrays)``.
    Source: RAPIER Section IV-C, Algorithm 3."""
    visits = []
    # Per-flow steps on Python floats (the same IEEE arithmetic as numpy's);
    # ``res`` is the residual, copied back into ``residual`` at the end.
    res = residual.tolist()
    for c in order:
        cid = c.coflow_id
        if cid not in paths_c:
            continue
        e = coflow_arrays(c)
        plan = plans.get(cid)
        if plan is not None and plan.rem_bytes is not None:
            rem = plan.rem_bytes
        else:
            # (a hidden size, NaN, counts as nothing left: rapier-nc's fallbacks)
            rem = np.nan_to_num(np.maximum(
                e.sizes - np.fromiter(map(_SENT, e.flows), float, e.n), 0.0))
        rates = rates_c[cid]
        paths = paths_c[cid]
        visit = np.lexsort((e.fid_rank, -rem))
        scheduled = math.isfinite(coflow_t(c, plans, fallback))
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
            if kernels.ENABLED and rates.dtype == np.float64 and rates.flags.c_contiguous:
                # compiled on the flows' candidate path blocks: the same choices,
                # rates and residuals (krapier.assign_bandwidth_kernel)
                off, npaths, nhops, mflat = e.path_blocks()
                rx = np.empty(now_res.shape[0] + 1)
                rx[:-1] = now_res
                rx[-1] = np.inf
                choice = np.empty(sel.shape[0], np.int64)
                krapier.assign_bandwidth_kernel(sel.astype(np.int64), off, npaths, nhops,
                                                mflat, rx, rates, choice)
                for j, k in zip(sel.tolist(), choice.tolist()):
                    if k >= 0:
                        paths[j] = e.cand[j][k]
                res = rx[:-1].tolist()
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


def conservation_state(capacity: np.ndarray, out_cof: Sequence[CoflowState],
                       flows_out: list, paths_out: list, rates: np.ndarray, wc_order: list,
                       order: list, fallback: Dict[str, str], info: dict,
                       coflow_arrays: CoflowArraysOf,
                       path_links: Callable[[list], list],
                       access: "AccessLinks", volatile: bool) -> WorkConservation:
    """The :class:`WorkConservation` state of a full pass (the schedule's coflows,
    flows, paths and rates in bit/s; ``capacity`` per link in bit/s): Algorithm 3's
    visiting order (``wc_order``, from :func:`distribute_bandwidth`), and flows of
    unscheduled coflows still without a rate left flexible.  ``path_links(paths)``:
    the link-index tuples of a list of paths
    (:func:`~rapier_app.scheduling.pathcache.path_link_tuples`)."""
    offs: Dict[str, int] = {}
    o = 0
    for c in out_cof:
        offs[c.coflow_id] = o
        o += len(coflow_arrays(c).flows)
    n = len(flows_out)
    flexible = np.zeros(n, dtype=bool)
    owner: Dict[int, Tuple[_CoflowArrays, int]] = {}
    parts = []
    for cid, perm, flex, e in wc_order:
        base = offs[cid]
        parts.append(perm + base)
        if flex and e.n_cand > e.n:
            # a flow with one candidate path has nothing to choose: it is visited
            # as a fixed-path flow (the same bandwidth; fixed paths let the pass
            # stop once every link they can use is full)
            flexible[base:base + e.n] = [len(c) > 1 for c in e.cand]
            owner[base] = (e, base)
    starts = sorted(owner)

    def candidates(j: int):
        e, base = owner[starts[bisect.bisect_right(starts, j) - 1]]
        k = j - base
        return e.cand[k], e.cand_links(k)

    visit = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    links = path_links(paths_out)
    return WorkConservation(capacity, out_cof, flows_out, paths_out, links, rates, visit,
                            flexible, candidates, order=order, fallback=fallback,
                            info=info, access=access, volatile=volatile)


class AccessLinks:
    """Link indices of a host's uplinks and downlinks (its edges in the topology
    graph), cached per host; called by :class:`WorkConservation`."""

    def __init__(self, topology: Topology):
        self.topology = topology
        self._memo: Dict[str, Tuple[Tuple[int, ...], Tuple[int, ...]]] = {}

    def __call__(self, host: str) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
        """(uplink indices, downlink indices) of ``host``."""
        got = self._memo.get(host)
        if got is None:
            g = self.topology.graph
            pl = self.topology.path_links
            got = self._memo[host] = (tuple(pl((host, v))[0] for v in g.successors(host)),
                                      tuple(pl((u, host))[0] for u in g.predecessors(host)))
        return got


def unserved_spans(out_cof: Sequence[CoflowState], served: Set[str],
                   coflow_arrays: CoflowArraysOf) -> Dict[str, Tuple[int, int]]:
    """Where the flows of each coflow a full pass left without bandwidth (not in
    ``served``) sit in its work-conservation state: coflow id -> (start, end)."""
    spans: Dict[str, Tuple[int, int]] = {}
    o = 0
    for c in out_cof:
        n = len(coflow_arrays(c).flows)
        if c.coflow_id not in served:
            spans[c.coflow_id] = (o, o + n)
        o += n
    return spans


def newly_served(wc: WorkConservation, spans: Dict[str, Tuple[int, int]]) -> List[str]:
    """The coflows of ``spans`` (:func:`unserved_spans`) that the work-conservation
    state ``wc`` now gives a positive rate."""
    return [cid for cid, (a, b) in spans.items()
            if bool((wc.alive[a:b] & (wc.rates[a:b] > 0)).any())]
