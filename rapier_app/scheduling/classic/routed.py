"""The shared base of the RAPIER paper's comparison schemes (:class:`_Routed`): a
route per flow, the active flows' cached views, and per-flow max-min fair sharing
(:func:`fair_share`).  Units: bit/s for rates and capacities, bytes for sizes.
"""

from __future__ import annotations

import operator
from itertools import chain, compress, repeat
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ...core.model import CoflowState, FlowState, InformationError
from ..base import Scheduler
from ..maxmin import max_min_fair


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

    def coflows_changed(self, coflow_ids: Sequence[str]) -> None:
        """Hook (:meth:`Scheduler.coflows_changed`): flows were added to these
        coflows or their sizes changed: their cached views (routes, sizes) are
        dropped and rebuilt at the next decision (routes already chosen stay)."""
        super().coflows_changed(coflow_ids)
        for cid in coflow_ids:
            self._coflow_cache.pop(cid, None)
            self._finished.pop(cid, None)

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Hook (:meth:`Scheduler.flows_finished`): remember the finished flows per
        coflow, so that :meth:`_active_routes` drops them from a coflow's cached
        view by position (bisection on ``FlowState._ord``) instead of reading every
        active flow's ``finish_s`` (the giants finish one flow at a time)."""
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
        try:
            sizes = np.array([f.spec.size_bytes for f in flows], dtype=float)
        except InformationError:  # sizes hidden: a scheme that reads none (baseline)
            sizes = np.full(len(flows), np.nan)
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
