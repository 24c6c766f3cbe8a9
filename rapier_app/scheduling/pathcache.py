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

    def __init__(self, topology: Topology, paths: List[tuple]):
        self.topology = topology
        self.paths = paths
        self._arrays = self._links = self._padded = self._common = None
        self._mat = False  # not built yet (None is a valid value: ragged)

    @property
    def arrays(self) -> List[np.ndarray]:
        if self._arrays is None:
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
        pp = PairPaths(topology, topology.candidate_paths(src, dst, max_paths))
        if len(cache) >= MAX_PAIRS:
            cache.clear()
        cache[key] = pp
    return pp


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
