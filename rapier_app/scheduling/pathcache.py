"""One cache of candidate paths and their link matrices, shared by every scheduler.

Per topology object (weakly referenced: topologies are frozen once built) and per
``(src, dst, max_paths)`` host pair, :func:`pair_paths` returns a :class:`PairPaths`
holding the pair's candidate paths (the ECMP set of
:meth:`topologies.base.Topology.candidate_paths`, capped at ``max_paths``) and, built
on first use, their link indices in the forms the schedulers consume.  Every
scheduler instance on the same topology shares the entries, so a pair's paths and
matrices are built once per process, not once per scheduler.

Padding contracts (``L = len(topology.capacity)``, the number of links):

* :attr:`PairPaths.mat`: ``(K paths x H hops)`` int64 link indices, **unpadded**;
  ``None`` when the paths differ in length (a ragged set).  Used where a row must
  hold real links only (RAPIER's LP (4) build, its mandatory-load intersection and
  its rounding).
* :attr:`PairPaths.padded`: ``(K x max hops)`` int64, shorter rows padded with the
  **sentinel link L** (one past the last link).  Callers extend their per-link
  arrays by one entry for it (load 0, capacity ``inf``), so a path's cost
  ``max((load[M] + v) / cap[M], axis=1)`` is one array operation and the sentinel
  never binds.  Built by :func:`pad_rows`, the one implementation of that contract.
* :func:`pad_rows` with an explicit ``width``: rows of *different* pairs stacked in
  one matrix (the seed schedulers' per-coflow ``_Group.P``, width = the topology's
  diameter), padded with the same sentinel.

:func:`path_link_tuple` caches one path's link indices as a tuple of Python ints
(the form the per-flow loops of Algorithm 3 and the greedy placements index with).

Values are exactly :meth:`Topology.path_links`' (the cache changes no decision).
"""

from __future__ import annotations

import math
import weakref
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

#: topology -> {(src, dst, max_paths, path_slack): PairPaths}
_PAIRS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
#: topology -> {path tuple: link-index tuple}
_LINKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
#: the last topology looked up and its cache, (weak reference, dict), so the usual
#: single-topology run skips the WeakKeyDictionary lookup (about 1.7 us a call)
_LAST_PAIRS: list = [None]
_LAST_LINKS: list = [None]
#: entries kept per topology before a cache is cleared (bounds memory on huge fabrics)
MAX_PAIRS = 200_000
MAX_PATHS = 500_000


def pad_rows(rows: Sequence[Sequence[int]], sentinel: int,
             width: Optional[int] = None) -> np.ndarray:
    """Stack link-index rows into one int64 matrix, padding short rows with
    ``sentinel`` (the padding contract of the module docstring).

    Args:
        rows: per path, its link indices (ints or an int array).
        sentinel: the padding index (``len(capacity)``: one past the last link).
        width: the matrix width; default the longest row.

    Returns:
        ``(len(rows) x width)`` int64 array.

    Raises:
        ValueError: ``rows`` is empty and no ``width`` is given, or a row is longer
            than ``width``.
    """
    if width is None:
        if not len(rows):
            raise ValueError("rows: empty and no width given")
        width = max(map(len, rows))
    M = np.full((len(rows), width), sentinel, dtype=np.int64)
    for r, ls in enumerate(rows):
        if len(ls) > width:
            raise ValueError(f"rows: row {r} has {len(ls)} links, more than width {width}")
        M[r, :len(ls)] = ls
    return M


class PairPaths:
    """The candidate paths of one host pair and their link indices (module docstring).

    Attributes:
        paths: the candidate paths (list of node-name tuples, the topology's order).
        arrays: per path, its link indices (int64 array, :meth:`Topology.path_links`).
        links: per path, its link indices as a tuple of ints.
        mat: ``(paths x hops)`` int64, unpadded; None when the paths differ in length.
        padded: ``(paths x max hops)`` int64 padded with the sentinel ``L``.
        common: sorted link indices every path crosses (list of ints).
    """

    __slots__ = ("topology", "paths", "_arrays", "_links", "_mat", "_padded", "_common")

    def __init__(self, topology: Topology, paths: List[tuple],
                 mat: Optional[np.ndarray] = None):
        self.topology = topology
        self.paths = paths
        self._arrays = self._links = self._padded = self._common = None
        self._mat = False  # not built yet (None is a valid value: ragged)
        if mat is not None:  # the paths' link indices, equal lengths (_Fabric)
            self._mat = self._padded = mat

    @property
    def arrays(self) -> List[np.ndarray]:
        if self._arrays is None:
            if self._mat is not False and self._mat is not None:
                self._arrays = list(self._mat)
            else:
                self._arrays = [self.topology.path_links(p) for p in self.paths]
        return self._arrays

    @property
    def links(self) -> Tuple[tuple, ...]:
        if self._links is None:
            self._links = tuple(tuple(a.tolist()) for a in self.arrays)
        return self._links

    @property
    def mat(self) -> Optional[np.ndarray]:
        if self._mat is False:
            arrs = self.arrays
            self._mat = (np.array(arrs, dtype=np.int64)
                         if len({len(a) for a in arrs}) == 1 else None)
        return self._mat

    @property
    def padded(self) -> np.ndarray:
        if self._padded is None:
            self._padded = pad_rows(self.arrays, len(self.topology.capacity))
        return self._padded

    @property
    def common(self) -> List[int]:
        if self._common is None:
            m = self.mat
            if m is None:
                sets = [set(a.tolist()) for a in self.arrays]
                self._common = sorted(set.intersection(*sets)) if sets else []
            else:
                self._common = [int(x) for x in np.unique(m[0]) if (m == x).any(axis=1).all()]
        return self._common


def _topology_cache(store: "weakref.WeakKeyDictionary", last: list,
                    topology: Topology) -> dict:
    """``topology``'s dict in ``store`` (created on first use); ``last`` holds the
    (weak reference, dict) of the previous call, so repeated calls for one topology
    skip the weak-dictionary lookup."""
    hit = last[0]
    if hit is not None and hit[0]() is topology:
        return hit[1]
    cache = store.get(topology)
    if cache is None:
        cache = store[topology] = {}
    last[0] = (weakref.ref(topology), cache)
    return cache


class _Fabric:
    """The equal-cost shortest paths of one frozen topology, generated from its
    switch graph's hop distances instead of a path search per pair.

    Hop distances between switches (over switches only, as
    :meth:`Topology.candidate_paths` routes) come from one breadth-first search per
    destination switch.  The shortest paths from switch u to switch
    d are u followed by the shortest paths to d of each successor n of u (in name
    order) one hop nearer to d; they are memoised per (u, d) with their link
    indices, so the paths of the pairs behind one edge switch share the work and
    each pair costs a few array operations.  Enumerating successors in name order
    yields the paths sorted by name, as ``sorted(nx.all_shortest_paths(...))``.

    :meth:`pair` returns the same paths, in the same order, as
    ``candidate_paths(src, dst, k)`` and their :meth:`Topology.path_links` rows, for
    hosts with one attachment switch each and no path slack (None otherwise: the
    caller asks the topology).
    """

    def __init__(self, topology: Topology):
        self.link_ids = topology.link_ids  # the links it was built on (not the
        # topology itself: a value of a weak-keyed cache must not hold its key)
        sw = [n for n, r in topology.graph.nodes(data="role") if r != "host"]
        succ: Dict[str, list] = {n: [] for n in sw}
        pred: Dict[str, list] = {n: [] for n in sw}
        for (u, v), lid in topology.link_ids.items():
            if u in succ and v in succ:
                succ[u].append((v, lid))
                pred[v].append(u)
        self.succ = {u: sorted(vs) for u, vs in succ.items()}
        self.pred = pred
        self.memo: Dict[Tuple[str, str], tuple] = {}
        #: (first switch, last switch) -> (per first-hop branch, its switch paths
        #: from the next switch on; the link matrix from the first switch on)
        self.top: Dict[Tuple[str, str], tuple] = {}
        self.dist_to: Dict[str, Dict[str, float]] = {}
        #: host -> (its switch, uplink id, downlink id), or None when multi-homed
        self.attach: Dict[str, Optional[tuple]] = {}

    def _switch_paths(self, u: str, d: str) -> tuple:
        """(shortest switch paths u -> d as name tuples, sorted; their link ids as a
        (paths x hops) int64 matrix)."""
        key = (u, d)
        got = self.memo.get(key)
        if got is not None:
            return got
        if u == d:
            got = ([(u,)], np.zeros((1, 0), np.int64))
        else:
            dd = self._dist_to(d)
            want = dd[u] - 1
            paths: List[tuple] = []
            mats, lids, counts = [], [], []
            if want < np.inf:
                for n, lid in self.succ[u]:
                    if dd[n] == want:
                        ps, m = self._switch_paths(n, d)
                        paths.extend([(u, *q) for q in ps])
                        mats.append(m)
                        lids.append(lid)
                        counts.append(len(ps))
            if mats:
                m = mats[0] if len(mats) == 1 else np.concatenate(mats)
                mat = np.empty((m.shape[0], m.shape[1] + 1), np.int64)
                mat[:, 1:] = m
                mat[:, 0] = np.repeat(lids, counts)
            else:
                mat = np.zeros((0, 1), np.int64)
            got = (paths, mat)
        if len(self.memo) >= MAX_PAIRS:
            self.memo.clear()
        self.memo[key] = got
        return got

    def _dist_to(self, d: str) -> Dict[str, float]:
        """switch name -> its hop distance to switch ``d`` over switches (inf: no
        path): a breadth-first search backwards from ``d``, memoised per ``d``."""
        dd = self.dist_to.get(d)
        if dd is None:
            dd = dict.fromkeys(self.succ, math.inf)
            dd[d] = 0
            frontier, h = [d], 0
            pred = self.pred
            while frontier:
                h += 1
                nxt = []
                for v in frontier:
                    for u in pred[v]:
                        if dd[u] == math.inf:
                            dd[u] = h
                            nxt.append(u)
                frontier = nxt
            self.dist_to[d] = dd
        return dd

    def _attachment(self, topo: Topology, h: str) -> Optional[tuple]:
        a = self.attach.get(h, False)
        if a is False:
            topo.check_host(h)
            ups = [s for s in topo.graph.successors(h) if not topo.is_host(s)]
            downs = [s for s in topo.graph.predecessors(h) if not topo.is_host(s)]
            a = None
            if len(ups) == 1 and downs == ups:
                s = ups[0]
                a = (s, topo.link_ids[(h, s)], topo.link_ids[(s, h)])
            self.attach[h] = a
        return a

    def pair(self, topo: Topology, src: str, dst: str, k: Optional[int]) -> Optional[tuple]:
        """(paths, link matrix) of ``src -> dst`` capped at ``k``, or None when a
        host is multi-homed or has a host neighbour (then ``candidate_paths``).

        Raises:
            TopologyError: unknown host, or no path (as ``candidate_paths``).
        """
        a, b = self._attachment(topo, src), self._attachment(topo, dst)
        if a is None or b is None:
            return None
        s, d = a[0], b[0]
        if s == d:
            sps, m = self._switch_paths(s, d)
            paths = [(src, s, dst)]
        else:
            # the first hop's branches: the tuples are built once, at the host level
            top = self.top.get((s, d))
            if top is None:
                dd = self._dist_to(d)
                want = dd[s] - 1
                kids = [(self._switch_paths(n, d), lid) for n, lid in self.succ[s]
                        if dd[n] == want] if want < np.inf else []
                if kids:
                    mm = np.concatenate([km for (_, km), _ in kids])
                    m = np.empty((mm.shape[0], mm.shape[1] + 1), np.int64)
                    m[:, 1:] = mm
                    m[:, 0] = np.repeat([lid for _, lid in kids],
                                        [len(kp) for (kp, _), _ in kids])
                else:
                    m = np.zeros((0, 1), np.int64)
                top = ([kp for (kp, _), _ in kids], m)
                if len(self.top) >= MAX_PAIRS:
                    self.top.clear()
                self.top[(s, d)] = top
            lists, m = top
            paths = [(src, s, *q, dst) for kp in lists for q in kp]
        if not paths:
            from topologies.base import TopologyError
            raise TopologyError(f"path: no path from {src} to {dst}")
        if k is not None:
            paths, m = paths[:k], m[:k]
        mat = np.empty((m.shape[0], m.shape[1] + 2), np.int64)
        mat[:, 0] = a[1]
        mat[:, 1:-1] = m
        mat[:, -1] = b[2]
        return paths, mat


#: topology -> its _Fabric
_FABRICS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _fabric(topology: Topology) -> _Fabric:
    """The shared :class:`_Fabric` of a frozen ``topology`` (built on first use)."""
    f = _FABRICS.get(topology)
    if f is None or f.link_ids is not topology.link_ids:
        f = _FABRICS[topology] = _Fabric(topology)
    return f


def pair_paths(topology: Topology, src: str, dst: str,
               max_paths: Optional[int] = None) -> PairPaths:
    """The shared :class:`PairPaths` of ``src -> dst`` on ``topology`` (candidate
    paths capped at ``max_paths``; None: the whole ECMP set, or with the topology's
    path slack every path within it, :meth:`Topology.set_path_slack`).

    Raises:
        TopologyError: unknown host or no path (from ``candidate_paths``).
    """
    cache = _topology_cache(_PAIRS, _LAST_PAIRS, topology)
    key = (src, dst, max_paths, topology.path_slack)
    pp = cache.get(key)
    if pp is None:
        got = None
        if not topology.path_slack and src != dst and getattr(topology, "_frozen", False):
            got = _fabric(topology).pair(topology, src, dst, max_paths)
        pp = (PairPaths(topology, *got) if got is not None
              else PairPaths(topology, topology.candidate_paths(src, dst, max_paths)))
        if len(cache) >= MAX_PAIRS:
            cache.clear()
        cache[key] = pp
    return pp


def path_link_tuples(topology: Topology, paths: Sequence[tuple]) -> List[tuple]:
    """:func:`path_link_tuple` of every path of ``paths`` (the same tuples), the
    shared cache looked up once for the list.

    Raises:
        TopologyError: a hop of a path is not a link.
    """
    cache = _topology_cache(_LINKS, _LAST_LINKS, topology)
    out = list(map(cache.get, paths))
    if None in out:
        for j, ls in enumerate(out):
            if ls is None:
                out[j] = path_link_tuple(topology, paths[j])
    return out


def path_link_tuple(topology: Topology, path: tuple) -> tuple:
    """Link indices of ``path`` on ``topology`` as a tuple of ints (shared cache).

    Raises:
        TopologyError: a hop of the path is not a link.
    """
    cache = _topology_cache(_LINKS, _LAST_LINKS, topology)
    ls = cache.get(path)
    if ls is None:
        ls = tuple(topology.path_links(path).tolist())
        if len(cache) >= MAX_PATHS:
            cache.clear()
        cache[path] = ls
    return ls
