"""Algorithm 3 (DistributeBandwidth) of RAPIER (Zhao et al., INFOCOM 2015, Section
IV-C) and the glue to flow-event work conservation.

:class:`Alg3Mixin` holds the methods of
:class:`~rapier_app.scheduling.rapier.scheduler.Rapier` that hand out the capacity Algorithm 1 leaves: :meth:`~Alg3Mixin._distribute_bandwidth`
(Algorithm 3 with AssignBandwidth, read as the module docstring of
:mod:`~rapier_app.scheduling.rapier.scheduler` documents), :meth:`~Alg3Mixin._conservation`
(the :class:`~rapier_app.scheduling.conserve.WorkConservation` state kept for the flow
completions between full passes) and :meth:`~Alg3Mixin.flows_finished`.

The mixin reads the scheduler's ``topology``, ``wc_ties``, ``wc_order``,
``wait_reset``, ``_served_prev`` and ``_wc`` attributes and
its ``wc_priority``, ``_coflow_arrays`` and ``_path_links`` methods.  Units: rates
and residuals in bit/s, sizes in bytes.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...core.model import CoflowState, FlowState
from ..conserve import WorkConservation, best_candidate
from .plan import _SENT, CoflowPlan, _CoflowArrays


class Alg3Mixin:
    """Algorithm 3 and work-conservation glue (see the module docstring)."""

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Forward finished flows to the work-conservation state (see the base class)."""
        if self._wc is not None:
            self._wc.flows_finished(flows)

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
            if flex and e.n_cand > e.n:
                # a flow with one candidate path has nothing to choose: it is visited
                # as a fixed-path flow (the same bandwidth; fixed paths let the pass
                # stop once every link they can use is full)
                flexible[base:base + e.n] = [len(c) > 1 for c in e.cand]
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
                                fallback=fallback, info=info, access=self._access_links,
                                volatile=self.volatile_schedules)

    def _track_unserved(self, out_cof: Sequence[CoflowState]) -> None:
        """After a full pass, with ``wait_reset="any"``: remember where the flows of
        each coflow left without bandwidth (``_served_prev``) sit in the
        work-conservation state (``_unserved_spans``: coflow id -> (start, end))."""
        self._unserved_spans = {}
        if self.wait_reset != "any":
            return
        o = 0
        for c in out_cof:
            n = len(self._coflow_arrays(c).flows)
            if c.coflow_id not in self._served_prev:
                self._unserved_spans[c.coflow_id] = (o, o + n)
            o += n

    def _note_wc_service(self) -> None:
        """After a flow-completion pass: a coflow without bandwidth at the last full
        pass that this pass gave a rate counts as served from now on (its waitTime,
        Alg. 1 line 7, restarts at the next decision; ``wait_reset="any"``)."""
        wc = self._wc
        served = [cid for cid, (a, b) in self._unserved_spans.items()
                  if bool((wc.alive[a:b] & (wc.rates[a:b] > 0)).any())]
        for cid in served:
            del self._unserved_spans[cid]
            self._served_prev.add(cid)

    def _access_links(self, host: str) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
        """Link indices of ``host``'s uplinks and downlinks (its edges in the
        topology graph), cached per host; for :class:`WorkConservation`."""
        memo = self.__dict__.setdefault("_access_memo", {})
        got = memo.get(host)
        if got is None:
            g = self.topology.graph
            pl = self.topology.path_links
            got = memo[host] = (tuple(pl((host, v))[0] for v in g.successors(host)),
                                tuple(pl((u, host))[0] for u in g.predecessors(host)))
        return got

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
        elif self.wc_order == "pick":
            pos = {cid: i for i, cid in enumerate(pick_order or [])}
            order = sorted(active, key=lambda c: (pos.get(c.coflow_id, len(pos)),
                                                  c.arrival_s, c.coflow_id))
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
