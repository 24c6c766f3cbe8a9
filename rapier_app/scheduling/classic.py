"""The RAPIER paper's comparison schemes (Section V): baseline, routing-only, Varys.

* ``baseline``: ECMP routes, per-flow max-min fair sharing.
* ``routing-only``: each new flow placed on the candidate path that balances load,
  then per-flow max-min fair sharing.
* ``scheduling-only`` (Varys, Chowdhury et al. SIGCOMM 2014): ECMP routes, SEBF
  coflow order, MADD rates, work conservation, preemptive.

``FixedRouting`` lets a test pin flows to given paths (RAPIER Fig. 1(a)/(b)).
"""

from __future__ import annotations

import operator
from itertools import chain, compress, repeat
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ..core.model import Allocation, CoflowState, FlowState, Schedule
from .base import Scheduler, SchedulerError, max_min_fair, max_min_fair_flat, register
from .conserve import WorkConservation
from .pathcache import pair_paths

BITS = 8.0


_FINISH = operator.attrgetter("finish_s")
_SENT = operator.attrgetter("bytes_sent")


class _Routed(Scheduler):
    """A scheduler whose flows keep one path for life (ECMP, load-balanced or pinned).

    ``routes`` pins flows: flow_id -> path (tuple of node names); pinned flows skip
    the scheme's own routing.  Used to reproduce the routings of RAPIER Fig. 1.
    """

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 routes: Optional[Mapping[str, Sequence[str]]] = None):
        super().__init__(topology, seed, max_paths)
        self._routes: Dict[str, tuple] = {k: tuple(v) for k, v in (routes or {}).items()}
        self._route_links: Dict[str, Tuple[tuple, np.ndarray]] = {}
        self._coflow_cache: Dict[str, tuple] = {}
        #: coflow_id -> flows reported finished (:meth:`flows_finished`) since its
        #: cached active view was last filtered
        self._finished: Dict[str, List[FlowState]] = {}
        for fid, p in self._routes.items():
            topology.path_links(p)  # raises TopologyError on a path that does not exist

    def route(self, flow: FlowState) -> tuple:
        """The flow's path: pinned, or chosen once by :meth:`pick_path`."""
        p = self._routes.get(flow.flow_id)
        if p is None:
            p = self.pick_path(flow)
            self._routes[flow.flow_id] = p
        return p

    def routes_and_links(self, flows: Sequence[FlowState]) -> Tuple[List[tuple], List[np.ndarray]]:
        """Paths (:meth:`route`) and their link-index arrays for ``flows``.

        The (path, links) pair is cached per flow id and refreshed when ``_routes``
        holds a different path for the flow, so the per-event cost is one dict
        lookup per flow.

        Raises:
            TopologyError: a path that is not in the topology.
        """
        cache = self._route_links
        routes = self._routes
        get = cache.get
        ents = [get(f.flow_id) for f in flows]
        for i, e in enumerate(ents):
            f = flows[i]
            if e is None or routes.get(f.flow_id) is not e[0]:
                p = self.route(f)
                e = (p, self.topology.path_links(p))
                cache[f.flow_id] = e
                ents[i] = e
        return [e[0] for e in ents], [e[1] for e in ents]

    def pick_path(self, flow: FlowState) -> tuple:
        return self.ecmp_path(flow)

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Hook (:meth:`Scheduler.flows_finished`): remember the finished flows per
        coflow, so that :meth:`_active_routes` drops them from a coflow's cached
        view by position (bisection on ``FlowState._ord``) instead of reading every
        active flow's ``finish_s`` (issue 16: the giants finish one flow at a time)."""
        self.group_finished(self._finished, flows)

    def _finished_mask(self, cid: str, fl: list, idx: Optional[np.ndarray],
                       n_act: int) -> Optional[np.ndarray]:
        """Keep-mask over ``fl`` (a cached view whose flows' positions in their coflow
        are ``idx``) from the flows reported finished for coflow ``cid``, or None
        when the reports do not account for exactly the ``len(fl) - n_act`` flows
        gone (the caller then scans)."""
        fin = self._finished.pop(cid, None)
        if not fin or idx is None or len(fin) != len(fl) - n_act:
            return None
        pos = self.finished_positions(idx, fl, fin)
        if pos is None:
            return None
        mask = np.ones(len(fl), dtype=bool)
        mask[pos] = False
        return mask


    def active_routes(self, coflows: Sequence[CoflowState]):
        """The active flows of ``coflows`` (coflow order, then flow order) with their
        routes, as ``(flows, paths, links, lens, lidx)``: ``paths[i]`` is the tuple
        path of ``flows[i]``, ``links[i]`` its link indices, ``lens`` the per-flow link
        counts and ``lidx`` all link indices concatenated (int numpy arrays).

        Cached per coflow while its :meth:`CoflowState.active_flows` list is the same
        object (the simulator and the controller build a new list whenever a flow of
        the coflow finishes); a flow's route never changes once chosen.

        Raises:
            TopologyError: a path that is not in the topology.
        """
        return self._active_routes(coflows, (0, 1, 2, 3, 4))[:5]

    def _entry(self, flows: Sequence[FlowState]) -> tuple:
        p, l = self.routes_and_links(flows)
        ln = np.fromiter(map(len, l), np.int64, len(l))
        li = np.concatenate(l) if l else np.zeros(0, np.int64)
        sizes = np.array([f.spec.size_bytes for f in flows], dtype=float)
        lpy = [tuple(a.tolist()) for a in l]
        return (flows, p, l, ln, li, sizes, lpy)

    def _active_routes(self, coflows: Sequence[CoflowState],
                       need: Sequence[int] = (0, 1, 2, 3, 4, 5, 6)) -> tuple:
        # As active_routes, plus the true flow sizes (bytes; for clairvoyant schemes
        # only) and each flow's links as a tuple of ints.  Only the columns in
        # ``need`` are built (the others are None): concatenating a column costs
        # O(active flows) per event.
        cache = self._coflow_cache
        need = tuple(need)
        cols: List[list] = [[] for _ in range(7)]
        for c in coflows:
            act = c.active_flows()
            e = cache.get(c.coflow_id)
            if e is None or e[0][0] is not c.flows:
                # routes of every flow of the coflow, fixed for its life
                full = self._entry(c.flows)
                e = [full + (np.arange(len(c.flows)),), None]
                cache[c.coflow_id] = e
            sub = e[1]
            if sub is None or sub[0] is not act:
                full = e[0]
                if len(act) == len(full[0]):
                    sub = [full[k] if k in need or k in (0, 3, 7) else None
                           for k in range(8)]
                else:
                    # filter the previous active view when there is one (flows only
                    # finish): O(active flows) per completion, not O(all flows);
                    # only the columns some caller used are carried along
                    base = full if sub is None else sub
                    fl = base[0]
                    mask = self._finished_mask(c.coflow_id, fl, base[7], len(act))
                    exact = mask is not None
                    if mask is None:
                        mask = np.fromiter(map(operator.is_, map(_FINISH, fl), repeat(None)),
                                           bool, len(fl))
                    ml = mask.tolist()
                    if not exact and (int(mask.sum()) != len(act) or not all(
                            map(operator.is_, act, compress(fl, ml)))):
                        # the active list is not the unfinished flows: route it directly
                        sub = list(self._entry(act)) + [None]
                    else:
                        sub = [act, None, None, None, None, None, None,
                               None if base[7] is None else base[7][mask]]
                        for k in (1, 2, 6):
                            if base[k] is not None:
                                sub[k] = list(compress(base[k], ml))
                        for k in (3, 5):
                            if base[k] is not None:
                                sub[k] = base[k][mask]
                        if base[4] is not None:
                            sub[4] = base[4][np.repeat(mask, base[3])]
                e[1] = sub
            for k in need:
                col = sub[k]
                if col is None:  # first use of this column: take it from the full entry
                    full, ix = e[0], sub[7]
                    if k == 4:
                        keep = np.zeros(len(full[0]), dtype=bool)
                        keep[ix] = True
                        col = full[4][np.repeat(keep, full[3])]
                        if sub[3] is None:  # filtering column 4 later needs the lens
                            sub[3] = full[3][ix]
                    elif k in (3, 5):
                        col = full[k][ix]
                    else:
                        col = list(map(full[k].__getitem__, ix.tolist()))
                    sub[k] = col
                cols[k].append(col)
        if len(cache) > 2 * len(coflows) + 64 or len(self._finished) > 2 * len(coflows) + 64:
            live = {c.coflow_id for c in coflows}
            for k in [k for k in cache if k not in live]:
                del cache[k]
            for k in [k for k in self._finished if k not in live]:
                del self._finished[k]
        out: List[object] = [None] * 7
        for k in need:
            if k in (3, 4, 5):
                out[k] = (np.concatenate(cols[k]) if cols[k] else
                          np.zeros(0, np.int64 if k < 5 else float))
            else:
                out[k] = list(chain.from_iterable(cols[k]))
        return tuple(out)


def fair_share(topology: Topology, flows: List[FlowState], paths: List[tuple],
               capacity: Optional[np.ndarray] = None,
               links: Optional[List[np.ndarray]] = None) -> np.ndarray:
    """Per-flow max-min fair rates (bit/s) for ``flows`` on ``paths``.

    ``links`` optionally gives each path's link-index array (as
    :meth:`Topology.path_links` would), saving the per-flow lookups.

    Raises:
        TopologyError: a path that is not in the topology.
    """
    if links is None:
        links = [topology.path_links(p) for p in paths]
    return max_min_fair(links, topology.capacity if capacity is None else capacity)


@register("baseline")
class Baseline(_Routed):
    """RAPIER's baseline (Section V): ECMP routing and per-flow max-min fair sharing.

    Models TCP sharing at flow level.  Source: RAPIER Section V, "Baseline".
    """

    reads_progress = False  # ECMP routes are cached; max-min needs no byte counts
    #: max-min fair (progressive filling): every flow ends on a saturated link
    work_conserving = "path"
    #: its rates model TCP sharing by itself (the emulation runs baseline's agents
    #: unenforced), so no controller hand-off applies
    rates_pushed = False

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        flows, paths, _, lens, lidx, _, _ = self._active_routes(coflows, (0, 1, 3, 4))
        rates = max_min_fair_flat(lens, lidx, self.topology.capacity)
        return Schedule.from_vectors(flows, paths, rates, order=[c.coflow_id for c in coflows],
                                     tuple_paths=True)


@register("fair")
class PerFlowFair(Baseline):
    """Per-flow max-min fair sharing on ECMP routes (TCP-like), the normaliser used
    by the Aalo and Sincronia evaluations.  Identical to ``baseline``."""


@register("routing-only")
class RoutingOnly(_Routed):
    """RAPIER's routing-only scheme (Section V): load-balanced routing, fair sharing.

    When a flow first appears it is placed on the candidate path that minimises the
    largest ratio (bytes routed on the link + the flow's bytes) / capacity over the
    path's links, where "bytes routed" counts the remaining bytes of active flows
    already placed.  New flows are placed coflow by coflow in arrival order, larger
    flows first.  Flows keep their path; rates are per-flow max-min fair.
    Ties go to the lexicographically first path.
    """

    #: remaining bytes are read only when new flows are placed, i.e. at arrivals
    reads_progress = "arrivals"
    #: max-min fair on the chosen paths: every flow ends on a saturated link
    work_conserving = "path"

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        topo = self.topology
        # Only a coflow not seen before can bring unplaced flows (a coflow arrives
        # with all its flows), so the per-flow scan is limited to those.
        seen = self.__dict__.setdefault("_seen_coflows", set())
        fresh = [c for c in coflows if c.coflow_id not in seen]
        new = [f for c in fresh for f in c.active_flows() if f.flow_id not in self._routes]
        seen.update(c.coflow_id for c in fresh)
        if len(seen) > 2 * len(coflows) + 64:
            seen.intersection_update(c.coflow_id for c in coflows)
        if new:
            flows = [f for c in coflows for f in c.active_flows()]
            L = len(topo.capacity)
            load = np.zeros(L)
            placed = [f for f in flows if f.flow_id in self._routes]
            if placed:
                _, pl = self.routes_and_links(placed)
                vol = np.array([f.remaining_bytes * BITS for f in placed])
                lens = np.fromiter(map(len, pl), np.int64, len(pl))
                # bincount adds each link's volumes in flow order, exactly as the
                # per-flow loop did
                load = np.bincount(np.concatenate(pl), weights=np.repeat(vol, lens),
                                   minlength=L)
            pos = {c.coflow_id: i for i, c in enumerate(coflows)}
            order = sorted(range(len(new)),
                           key=lambda i: (pos.get(new[i].coflow_id, len(coflows)),
                                          -new[i].remaining_bytes, new[i].flow_id))
            # per (src, dst): the candidates' links as the shared padded matrix
            # (pathcache: sentinel link L, zero load, infinite capacity) so a flow's
            # costs are one array op
            load = np.append(load, 0.0)
            capx = np.append(topo.capacity, np.inf)
            for i in order:
                f = new[i]
                v = f.remaining_bytes * BITS
                pp = pair_paths(topo, f.src, f.dst, self.max_paths)
                cands = pp.paths
                M = pp.padded
                costs = ((load[M] + v) / capx[M]).max(axis=1).tolist()
                # first candidate strictly (1e-12) better than every earlier one
                b, best_cost = 0, costs[0]
                for r in range(1, len(costs)):
                    if costs[r] < best_cost - 1e-12:
                        b, best_cost = r, costs[r]
                best = cands[b]
                self._routes[f.flow_id] = best
                load[topo.path_links(best)] += v
        flows, paths, _, lens, lidx, _, _ = self._active_routes(coflows, (0, 1, 3, 4))
        rates = max_min_fair_flat(lens, lidx, topo.capacity)
        return Schedule.from_vectors(flows, paths, rates, order=[c.coflow_id for c in coflows],
                                     tuple_paths=True)


def coflows_index(coflows: Sequence[CoflowState], cid: str) -> int:
    for i, c in enumerate(coflows):
        if c.coflow_id == cid:
            return i
    return len(coflows)


def work_conserve(topology: Topology, residual: np.ndarray,
                  items: Sequence[Tuple[FlowState, tuple]], rates: Dict[str, float]) -> None:
    """Greedy work conservation: in the given order, each flow takes the residual
    bandwidth left on its path (bit/s), which is then removed from ``residual``.

    ``rates`` (flow_id -> bit/s) is updated in place.
    """
    for f, p in items:
        ls = topology.path_links(p)
        extra = float(residual[ls].min())
        if extra > 0:
            rates[f.flow_id] = rates.get(f.flow_id, 0.0) + extra
            residual[ls] -= extra


@register("scheduling-only")
class Varys(_Routed):
    """Scheduling-only (Varys: Chowdhury, Zhong, Stoica, SIGCOMM 2014).

    Routes by ECMP.  Coflows are ordered by SEBF (smallest effective bottleneck
    first): Gamma_C = max over links l of (remaining bits of C on l) / capacity(l),
    with full capacities; ties by arrival then id.  In that order MADD gives every
    flow of C the rate remaining_bits / Gamma'_C, where Gamma'_C uses the residual
    capacities left by earlier coflows, so that all of C's flows finish together; a
    coflow with a flow on a saturated link (Gamma' infinite) gets no MADD rate.
    Work conservation then hands residual bandwidth to flows greedily in SEBF order.
    SEBF and MADD are recomputed at every coflow arrival and completion (Varys's
    coordinator reallocates on those events, Varys Section 5), hence preemptive.  At
    every other flow completion the survivors keep their paths and rates and the
    same greedy work conservation hands out the bandwidth the finished flows freed
    (:class:`~rapier_app.scheduling.conserve.WorkConservation`), so no link with a
    waiting flow on it idles between coflow events.  On a big switch the links are
    exactly Varys's ingress/egress ports.

    Args:
        topology, seed, max_paths, routes: as :class:`_Routed`.
        incremental: True (default): flow completions run only the work-conservation
            pass; False: every call is a full SEBF + MADD pass.
    """

    reschedule_on = "flow"
    #: bytes sent are read only at full passes (coflow arrivals and completions)
    reads_progress = "coflow-events"
    #: greedy work conservation (full passes and flow events) on fixed ECMP paths:
    #: every flow ends with a link at zero residual on its path
    work_conserving = "path"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 routes: Optional[Mapping[str, Sequence[str]]] = None,
                 incremental: bool = True):
        super().__init__(topology, seed, max_paths, routes)
        self.incremental = bool(incremental)
        if not self.incremental:
            self.reads_progress = True  # every call is a full pass: fresh counters
        self._wc = None
        self.stats = {"full_passes": 0, "wc_passes": 0}

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Forward finished flows to the work-conservation state and the cached
        active views (see the base class)."""
        super().flows_finished(flows)
        if self._wc is not None:
            self._wc.flows_finished(flows)

    def sebf_order(self, coflows: Sequence[CoflowState], paths: Dict[str, tuple]) -> List[CoflowState]:
        topo = self.topology
        keyed = []
        for c in coflows:
            load = {}
            for f in c.active_flows():
                for l in topo.path_links(paths[f.flow_id]):
                    load[l] = load.get(l, 0.0) + f.remaining_bytes * BITS
            gamma = max((v / topo.capacity[l] for l, v in load.items()), default=0.0)
            keyed.append((gamma, c.arrival_s, c.coflow_id, c))
        keyed.sort(key=lambda x: x[:3])
        return [k[3] for k in keyed]

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        # Vectorised per coflow; every sum and subtraction happens in the same order
        # as in the per-flow formulation above (bincount and ufunc.at accumulate in
        # input order), so the rates are bit-identical to it.
        topo = self.topology
        cap = topo.capacity
        L = len(cap)
        active = [c for c in coflows if c.active_flows()]
        if self.incremental and self._wc is not None and self._wc.matches(active):
            self.stats["wc_passes"] += 1
            return self._wc.flow_event()
        self.stats["full_passes"] += 1
        flows, paths, links, lens, all_links, sizes, lpy = self._active_routes(active)
        # remaining bytes exactly as FlowState.remaining_bytes (Varys is clairvoyant)
        sent = np.fromiter(map(_SENT, flows), float, len(flows))
        rem_bits = np.maximum(sizes - sent, 0.0) * BITS
        # per coflow: slice of flows, slice of link entries, bits per link entry
        bounds = np.cumsum([0] + [len(c.active_flows()) for c in active])
        ebounds = np.concatenate([[0], np.cumsum(lens)])
        ent_bits = np.repeat(rem_bits, lens)
        keyed = []
        loads = []
        for k, c in enumerate(active):
            a, b = int(ebounds[bounds[k]]), int(ebounds[bounds[k + 1]])
            ls = all_links[a:b]
            load = np.bincount(ls, weights=ent_bits[a:b], minlength=L)
            used = np.unique(ls)
            loads.append((load, used))
            gamma = float((load[used] / cap[used]).max()) if used.size else 0.0
            keyed.append((gamma, c.arrival_s, c.coflow_id, k))
        keyed.sort(key=lambda x: x[:3])
        order_k = [x[3] for x in keyed]
        residual = cap.astype(float).copy()
        rates = np.zeros(len(flows))
        for k in order_k:
            load, used = loads[k]
            ru = residual[used]
            if (ru <= 0).any():
                continue
            gamma = (load[used] / ru).max()
            f0, f1 = int(bounds[k]), int(bounds[k + 1])
            r = rem_bits[f0:f1] / gamma
            rates[f0:f1] = r
            a, b = int(ebounds[f0]), int(ebounds[f1])
            np.subtract.at(residual, all_links[a:b], np.repeat(r, lens[f0:f1]))
            np.maximum(residual, 0.0, out=residual)
        # greedy work conservation in SEBF order, on Python floats (same IEEE
        # arithmetic as the numpy version in work_conserve)
        # A flow with a link at zero residual now can get nothing later (residuals
        # only fall and stay >= 0), so only the others are visited.
        res = residual.tolist()
        rl = rates.tolist()
        if len(flows):
            room = np.minimum.reduceat(residual[all_links], ebounds[:-1]) > 0
        else:
            room = np.zeros(0, dtype=bool)
        for k in order_k:
            f0, f1 = int(bounds[k]), int(bounds[k + 1])
            for i in (np.flatnonzero(room[f0:f1]) + f0).tolist():
                ls = lpy[i]
                if len(ls) == 2:
                    l0, l1 = ls
                    x0, x1 = res[l0], res[l1]
                    extra = x0 if x0 <= x1 else x1
                    if extra > 0:
                        rl[i] += extra
                        res[l0] = x0 - extra
                        res[l1] = x1 - extra
                else:
                    extra = min([res[l] for l in ls])
                    if extra > 0:
                        rl[i] += extra
                        for l in ls:
                            res[l] -= extra
        order = [active[k].coflow_id for k in order_k]
        final = np.array(rl, dtype=float)
        if self.incremental:
            visit = (np.concatenate([np.arange(int(bounds[k]), int(bounds[k + 1]))
                                     for k in order_k]) if order_k else np.zeros(0, np.int64))
            self._wc = WorkConservation(cap, active, flows, paths, lpy, final, visit,
                                        order=order, volatile=self.volatile_schedules)
        return Schedule.from_vectors(flows, paths, final, order=order, tuple_paths=True)
