"""Per-coflow data of RAPIER's Algorithms 1-3: the plan Algorithm 2 returns
(:class:`CoflowPlan`) and one coflow's active flows as arrays (:class:`_CoflowArrays`).

Units: bytes for sizes, bits for volumes, bit/s for capacities, seconds for
times.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from itertools import compress
from typing import Dict, List, Optional, Tuple

import numpy as np

from topologies import Topology

from ... import kernels
from ...core.model import FlowState, InformationError
from ...kernels import rapier as krapier

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
    ``n``, ``sizes`` (bytes; NaN where the size is hidden), ``cand`` and ``mats`` (per flow: candidate paths and
    their (paths x hops) link matrix, None if ragged), ``pairs`` (per flow, the shared
    :class:`~rapier_app.scheduling.pathcache.PairPaths` they come from),
    ``uniform_mats``, ``all_links``
    (every candidate link, sorted), ``fid_rank`` (rank of each flow id in sorted
    order, for Algorithm 3's tie-break), ``n_cand`` (candidate paths in all),
    ``struct`` (the :class:`LP4Structure`, once built), ``ecmp_k`` (per flow, the
    index of its ECMP path in ``cand``, set by the scheduler on first use).
    """

    __slots__ = ("act", "fids", "flows", "n", "sizes", "cand", "mats", "uniform_mats",
                 "all_links", "fid_rank", "n_cand", "struct", "topo", "_room", "comm",
                 "_mand", "pairs", "_gst", "ecmp_k")

    def __init__(self, act: List[FlowState], fids: tuple, cinfo: Optional[list],
                 topo: Topology, _from: Optional[tuple] = None):
        self.act = act
        self.flows = list(act)
        self.fids = fids
        self.n = n = len(act)
        self.topo = topo
        if _from is None:
            try:
                self.sizes = np.array([f.spec.size_bytes for f in act], dtype=float)
            except InformationError:  # sizes hidden: NaN where unknown (rapier-nc)
                self.sizes = np.array([f.spec.size_bytes if f.size_known else np.nan
                                       for f in act], dtype=float)
            self.cand = [ci[0] for ci in cinfo]
            self.mats = [ci[1] for ci in cinfo]
            self.pairs = [ci[2] for ci in cinfo]
            rank = np.empty(n, dtype=np.int64)
            rank[sorted(range(n), key=fids.__getitem__)] = np.arange(n)
        else:
            self.sizes, self.cand, self.mats, self.pairs, old_rank, gst, ek = _from
            rank = np.empty(n, dtype=np.int64)
            rank[np.argsort(old_rank, kind="stable")] = np.arange(n)
        self.fid_rank = rank
        self.uniform_mats = all(m is not None for m in self.mats)
        self._gst = None if _from is None else gst
        self.ecmp_k = None if _from is None else ek
        self.all_links = self._all_links(topo, n)
        self.n_cand = sum(map(len, self.cand))
        self.struct = None
        self.comm = None  # Commodities of LP (4), False: none share one
        self._room = None
        self._mand = None

    def subset(self, act: List[FlowState], fids: tuple, keep: List[bool]) -> "_CoflowArrays":
        """The arrays of the flows ``keep`` selects (``act``, in the same order)."""
        m = np.array(keep, dtype=bool)
        gst = self._gst
        if gst is not None:  # the survivors' blocks of the same flat matrix
            gst = (gst[0][m], gst[1][m], gst[2][m], gst[3])
        out = _CoflowArrays(act, fids, None, self.topo,
                            (self.sizes[m], list(compress(self.cand, keep)),
                             list(compress(self.mats, keep)), list(compress(self.pairs, keep)),
                             self.fid_rank[m], gst,
                             None if self.ecmp_k is None else self.ecmp_k[m]))
        if self.comm is False:  # no two flows shared a commodity: nor do survivors
            out.comm = False
        elif self.comm is not None:
            from .lp4 import commodities_subset
            out.comm = commodities_subset(self.comm, m) or False
        return out

    def _all_links(self, topo: Topology, n: int) -> np.ndarray:
        """The sorted unique link indices (int64) some candidate path of the ``n``
        flows crosses: compiled from the flows' path blocks
        (:func:`~rapier_app.kernels.rapier.mark_blocks_kernel`, sentinel dropped)
        when the kernels are on, else ``np.unique`` of their concatenation; the same
        array."""
        if not n:
            return np.zeros(0, np.int64)
        if kernels.ENABLED:
            L = len(topo.capacity)
            off, npaths, nhops, mflat = self.path_blocks()
            mark = np.zeros(L + 1, np.bool_)
            krapier.mark_blocks_kernel(off, npaths, nhops, mflat, mark)
            return np.flatnonzero(mark[:L])
        return np.unique(np.concatenate(
            [m.ravel() if m is not None else np.concatenate([topo.path_links(p) for p in ps])
             for ps, m in zip(self.cand, self.mats)]))

    def path_blocks(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The flows' candidate paths as padded link blocks for the compiled
        placement (:func:`~rapier_app.kernels.rapier.greedy_place_kernel`):
        ``(off, npaths, nhops, mflat)``, flow j's paths the ``npaths[j] x nhops[j]``
        row-major block of ``mflat`` at ``off[j]`` (each pair's
        :attr:`~rapier_app.scheduling.pathcache.PairPaths.padded`, stored once per
        pair; sentinel ``L``).  Built on first use, carried over by :meth:`subset`."""
        if self._gst is None:
            seen: Dict[int, tuple] = {}
            blocks = []
            pos = 0
            off = np.empty(self.n, np.int64)
            npaths = np.empty(self.n, np.int64)
            nhops = np.empty(self.n, np.int64)
            for j, pp in enumerate(self.pairs):
                t = seen.get(id(pp))
                if t is None:
                    M = pp.padded
                    t = seen[id(pp)] = (pos, M.shape[0], M.shape[1])
                    blocks.append(M.ravel())
                    pos += M.size
                off[j], npaths[j], nhops[j] = t
            mflat = (np.ascontiguousarray(np.concatenate(blocks), dtype=np.int64) if blocks
                     else np.zeros(0, np.int64))
            self._gst = (off, npaths, nhops, mflat)
        return self._gst

    def route_arrays(self, routes: Dict[str, tuple], topo: Topology,
                     kidx: Optional[np.ndarray] = None) -> tuple:
        """(paths per flow, their link indices concatenated, links per path).
        ``kidx``: optional, per flow, the index of its route in its candidate list
        (then the links are gathered from the path blocks, compiled: the same
        arrays)."""
        if kidx is not None and kernels.ENABLED:
            off, npaths, nhops, mflat = self.path_blocks()
            lens = np.empty(self.n, np.int64)
            lidx = krapier.gather_routes_kernel(off, nhops, kidx, mflat,
                                                len(topo.capacity), lens)
            return [routes[f] for f in self.fids], lidx, lens
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
            for j, pp in enumerate(self.pairs):
                common = pp.common  # cached per pair (pathcache)
                ent_flow.extend([j] * len(common))
                ent_link.extend(common)
            el = np.array(ent_link, dtype=np.int64)
            self._mand = (np.array(ent_flow, dtype=np.int64), el, np.unique(el))
        ef, el, links = self._mand
        if not el.size:
            return el, np.zeros(0)
        load = np.bincount(el, weights=vols_bits[ef])
        return links, load[links]

    def cand_links(self, j: int) -> Tuple[tuple, ...]:
        """Flow j's candidate paths' link indices, as tuples of ints (its pair's
        :attr:`~rapier_app.scheduling.pathcache.PairPaths.links`, built once per
        host pair and shared, instead of a new list per call)."""
        return self.pairs[j].links

    def any_room(self, residual: np.ndarray) -> np.ndarray:
        """Per flow: does some candidate path have residual > 0 on every link?
        ``residual`` in bit/s; returns a bool array (compiled on the flows' path
        blocks when the kernels are on: the same answers)."""
        if kernels.ENABLED:
            off, npaths, nhops, mflat = self.path_blocks()
            rx = np.empty(len(residual) + 1)
            rx[:-1] = residual
            rx[-1] = np.inf
            out = np.empty(self.n, bool)
            krapier.any_room_kernel(off, npaths, nhops, mflat, rx, out)
            return out
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
