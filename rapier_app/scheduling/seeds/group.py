"""One coflow's active flows as the seed schedulers' passes see them
(:class:`_Group`: sticky paths, padded link rows, link indexes) and a list view over
several groups' paths (:class:`_ConcatPaths`).

Units: bytes for sizes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence as _Seq
from itertools import accumulate, chain
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ...core.model import FlowState
from ...kernels import alloc as kalloc
from .passes import WATERFILL_INCREMENTAL, _i64, link_index


def _aligned(gs: Sequence["_Group"], act: list) -> bool:
    """True when the list ``act`` (the simulator's active flows,
    :meth:`Scheduler.bind_active`) is the concatenation of the groups' flow lists:
    the same length, and each group's first and last flow at its offset (O(groups):
    the groups are each coflow's active flows in order, so a coflow missing, added
    or out of place moves a boundary)."""
    off = 0
    for g in gs:
        n = g.n
        if n:
            fl = g.flows
            if off + n > len(act) or act[off] is not fl[0] or act[off + n - 1] is not fl[-1]:
                return False
            off += n
    return off == len(act)


class _ConcatPaths(_Seq):
    """The groups' path lists read as one sequence (read only): ``len``, iteration
    and integer indexing (a bisection over the group ends), for a schedule whose
    flows are the simulator's active list (:func:`_aligned`)."""

    __slots__ = ("_lists", "_ends")

    def __init__(self, gs: Sequence["_Group"]):
        self._lists = [g.paths for g in gs if g.n]
        self._ends = list(accumulate(len(p) for p in self._lists))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, j):
        if isinstance(j, slice):
            return list(self)[j]
        n = len(self)
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError("path index out of range")
        k = bisect_right(self._ends, j)
        return self._lists[k][j - (self._ends[k - 1] if k else 0)]

    def __iter__(self):
        return chain.from_iterable(self._lists)


class _Group:
    """The active flows of one coflow (in flow order) with their sticky paths and
    padded link rows ``P`` (flows x path width, padded with the dummy link ``L``);
    ``idx`` holds the flows' simulator indices (``FlowState._sim_idx``) and
    ``done_max`` the largest byte count of the coflow's finished flows."""

    __slots__ = ("n", "flows", "paths", "P", "L", "idx", "done_max", "_ports", "sizes",
                 "_index", "ords", "_csr", "_memo", "_first")

    def __init__(self, flows: List[FlowState], paths: List[tuple], P: np.ndarray, L: int,
                 idx: np.ndarray, done_max: float):
        self.n = len(flows)
        self.flows = flows
        self.paths = paths
        self.P = P
        self.L = L
        self.idx = idx
        self.done_max = done_max
        #: flow sizes in bytes, filled by clairvoyant schedulers only (Sincronia)
        self.sizes: Optional[np.ndarray] = None
        self._index: Optional[Tuple[np.ndarray, np.ndarray]] = None
        self._ports: Optional[Tuple[np.ndarray, np.ndarray]] = None
        #: the flows' positions in their coflow (``FlowState._ord``), increasing;
        #: filled on first use by :meth:`_SeedScheduler._positions`
        self.ords: Optional[np.ndarray] = None
        #: the compiled passes' link index of ``P``
        #: (:func:`~rapier_app.kernels.alloc.group_csr`), kept
        #: while the group lives and carried over when flows finish
        self._csr: Optional[Tuple[np.ndarray, np.ndarray]] = None
        #: the last weighted pass's record for these rows (:meth:`_SeedScheduler.
        #: _stack_memo`); a new group (flows finished) starts without one
        self._memo: Optional[tuple] = None
        #: the flows' distinct first and last links (:meth:`end_links`), carried over
        self._first: Optional[Tuple[np.ndarray, np.ndarray]] = None

    def csr(self, nl: int) -> Tuple[np.ndarray, np.ndarray]:
        """The compiled passes' link index of ``P`` over ``nl`` links (the dummy
        included): (lptr int64[nl + 1], rows int64[n x width]), link l's rows
        ``rows[lptr[l]:lptr[l+1]]`` in increasing order
        (:func:`~rapier_app.kernels.alloc.group_csr`).
        Built on first use and kept: a group's rows never change (finished flows make
        a new group, which inherits it through :func:`~rapier_app.kernels.alloc.csr_drop`)."""
        c = self._csr
        if c is None:
            c = self._csr = kalloc.group_csr(_i64(self.P), nl)
        return c

    @property
    def ports(self) -> Tuple[np.ndarray, np.ndarray]:
        """Per flow, (first link, last link) of its path: the access "ports"."""
        if self._ports is None:
            P, n = self.P, self.n
            if n:
                last = (P < self.L).sum(axis=1) - 1
                self._ports = (P[:, 0].copy(), P[np.arange(n), last])
            else:
                self._ports = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        return self._ports

    def end_links(self) -> Tuple[np.ndarray, np.ndarray]:
        """The distinct first links and the distinct last links of the group's
        flows (two sorted int64 arrays), computed once and kept: when flows finish
        the kept sets are supersets of the current ones, which is all
        :func:`~rapier_app.kernels.sincronia.next_open_group` needs."""
        f = self._first
        if f is None:
            a, b = self.ports
            f = self._first = (np.unique(a).astype(np.int64), np.unique(b).astype(np.int64))
        return f

    def link_index(self, nl: int) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """Cached :func:`link_index` of ``P`` for wide groups (None for narrow ones,
        which :func:`waterfill` serves with its plain loop)."""
        if self.n < WATERFILL_INCREMENTAL:
            return None
        if self._index is None:
            self._index = link_index(self.P, nl)
        return self._index
