"""The seed schedulers' vectorised allocation primitives: progressive filling
(:func:`waterfill`, Bertsekas and Gallager, Data Networks, Section 6.5.2) and
Sincronia's order-preserving greedy rates (:func:`greedy_rates`, Sincronia
Algorithm 2), each with its numpy engine and its compiled one
(:mod:`rapier_app.kernels`), bit for bit equal; plus the row reductions and
constants the families share.

Units: bytes for sizes, bit/s for rates, residuals and tolerances.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Optional, Sequence, Tuple

import numpy as np

from ... import kernels
from ...kernels import alloc as kalloc
from ...kernels import sincronia as ksincronia
from ..base import SchedulerError
from ..maxmin import dedup

if TYPE_CHECKING:  # pragma: no cover
    from .group import _Group


# Row reductions over a padded link matrix P (flows x path width), one column at a
# time: numpy's axis=1 reductions over rows this narrow (2-6 links) are 5-20x slower
# than a short loop of 1-D gathers.  Same values as ``vals[P].min(axis=1)`` etc.
def _row_all(flag: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row of ``P``: True when ``flag`` holds on every link (bool array)."""
    if P.shape[1] == 0:
        return np.ones(P.shape[0], dtype=bool)
    out = flag[P[:, 0]]
    for k in range(1, P.shape[1]):
        out &= flag[P[:, k]]
    return out


def _row_any(flag: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row of ``P``: True when ``flag`` holds on some link (bool array)."""
    if P.shape[1] == 0:
        return np.zeros(P.shape[0], dtype=bool)
    out = flag[P[:, 0]]
    for k in range(1, P.shape[1]):
        out |= flag[P[:, k]]
    return out


def _row_min(vals: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row of ``P``: the smallest ``vals`` over its links."""
    out = vals[P[:, 0]]
    for k in range(1, P.shape[1]):
        np.minimum(out, vals[P[:, k]], out=out)
    return out


def _row_max(vals: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row of ``P``: the largest ``vals`` over its links."""
    out = vals[P[:, 0]]
    for k in range(1, P.shape[1]):
        np.maximum(out, vals[P[:, k]], out=out)
    return out


BITS = 8.0


MIB = float(1 << 20)


#: Relative tolerance below which a link's residual capacity counts as zero.
REL_TOL = 1e-9


#: Relative tolerance for "a counter has reached a threshold".
CROSS_TOL = 1e-9


# ---------------------------------------------------------------------------------
# vectorised allocation primitives (padded link matrices)
# ---------------------------------------------------------------------------------
def waterfill(P: np.ndarray, residual: np.ndarray, tol: np.ndarray,
              index: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> np.ndarray:
    """Max-min fair rates for the flows whose link rows are ``P``, in place.

    Args:
        P: int matrix (flows x width); row i lists the link indices of flow i's path,
            padded with the dummy index ``len(residual) - 1`` whose residual is ``inf``.
        residual: per link (plus the dummy) the capacity still free, in bit/s.  It is
            reduced in place by the rates given.
        tol: per link, the residual (bit/s) at or below which the link is saturated.
        index: optional ``link_index(P, len(residual))`` of this very ``P``, when the
            caller caches it.

    Returns:
        Rates in bit/s (one per row).  Flows crossing an already saturated link get 0;
        every other flow ends with a saturated link on its path (progressive filling,
        Bertsekas and Gallager, Data Networks, Section 6.5.2).

    Raises:
        SchedulerError: a flow crosses no link.

    With numba (:data:`.kernels.ENABLED`, the default) the compiled
    :func:`~rapier_app.kernels.alloc.waterfill_kernel` runs (``index`` is then not needed).  Without
    it, small inputs run the plain loop; from ``WATERFILL_INCREMENTAL`` rows on, the
    link counts are kept incrementally (a link's count changes only when one of its
    flows freezes), so a wide coflow costs O(entries + iterations x links) instead of
    O(entries x iterations).  All three do the same floating-point operations in the
    same order, so their rates and residuals are bit for bit equal
    (``tests/test_kernels.py``).
    """
    n = P.shape[0]
    if kernels.ENABLED:
        rate = np.zeros(n)
        if n and kalloc.waterfill_kernel(_i64(P), residual, tol, rate) < 0:
            raise SchedulerError("waterfill: a flow crosses no link")
        return rate
    if n >= WATERFILL_INCREMENTAL:
        return _waterfill_incremental(P, residual, tol, index)
    return _waterfill_plain(P, residual, tol)


def _distinct(groups: Sequence[tuple]) -> bool:
    """True when no group object appears twice in ``groups`` ((group, mask) pairs):
    the compiled passes stack each group's rows once."""
    return len({id(g) for g, _ in groups}) == len(groups)


def _i64(P: np.ndarray) -> np.ndarray:
    """``P`` as a C-contiguous int64 matrix (the compiled kernels' one signature)."""
    if P.dtype == np.int64 and P.flags.c_contiguous:
        return P
    return np.ascontiguousarray(P, dtype=np.int64)


def link_index(P: np.ndarray, nl: int) -> Tuple[np.ndarray, np.ndarray]:
    """The entries of ``P`` (flows x width, link ids below ``nl``) grouped by link:
    ``(by_link, lptr)`` with link l's entries ``by_link[lptr[l]:lptr[l + 1]]`` (flat
    positions; the flow is position // width), in flow order."""
    flat = P.ravel()
    # a stable sort on 16-bit keys is a radix sort: several times faster
    by_link = np.argsort(flat.astype(np.int16) if nl < 32767 else flat, kind="stable")
    lptr = np.zeros(nl + 1, dtype=np.int64)
    np.cumsum(np.bincount(flat, minlength=nl), out=lptr[1:])
    return by_link, lptr


#: Row count from which :func:`waterfill` keeps its link counts incrementally.
WATERFILL_INCREMENTAL = 48


#: Safety cap on the rounds of :meth:`_SeedScheduler.weighted_pass` run "until the
#: fabric is saturated" (each round allocates a positive amount; see the method).
MAX_WEIGHTED_ROUNDS = 200


def _waterfill_plain(P: np.ndarray, residual: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """:func:`waterfill` recounting every active flow's links per iteration."""
    n = P.shape[0]
    rate = np.zeros(n)
    if n == 0:
        return rate
    act = _row_all(residual > tol, P)
    nl = residual.shape[0]
    while act.any():
        cnt = np.bincount(P[act].ravel(), minlength=nl).astype(float)
        cnt[-1] = 0.0
        used = cnt > 0
        if not used.any():  # only the dummy: a zero-hop path cannot occur here
            raise SchedulerError("waterfill: a flow crosses no link")
        inc = float((residual[used] / cnt[used]).min())
        inc = max(inc, 0.0)
        rate[act] += inc
        residual[:-1] -= inc * cnt[:-1]
        np.maximum(residual, 0.0, out=residual)
        sat = residual <= tol
        act &= ~_row_any(sat, P)
    return rate


def _waterfill_incremental(P: np.ndarray, residual: np.ndarray, tol: np.ndarray,
                           index: Optional[Tuple[np.ndarray, np.ndarray]] = None
                           ) -> np.ndarray:
    """:func:`waterfill` with incremental link counts (same operations, same order:
    an active flow's rate is the running sum of the increments, kept as ``level``)."""
    n, W = P.shape
    rate = np.zeros(n)
    if n == 0:
        return rate
    act = _row_all(residual > tol, P)
    n_act = int(np.count_nonzero(act))
    if not n_act:
        return rate
    nl = residual.shape[0]
    cnt = np.bincount(P[act].ravel(), minlength=nl).astype(float)
    cnt[-1] = 0.0
    # entries sorted by link: the flows of link l are by_link[lptr[l]:lptr[l+1]] // W
    by_link, lptr = index if index is not None else link_index(P, nl)
    slot = np.empty(n, dtype=np.int64)  # scratch for dedup
    was_sat = residual <= tol
    level = 0.0
    while n_act:
        used = cnt > 0
        if not used.any():
            raise SchedulerError("waterfill: a flow crosses no link")
        inc = float((residual[used] / cnt[used]).min())
        inc = max(inc, 0.0)
        level += inc
        residual[:-1] -= inc * cnt[:-1]
        np.maximum(residual, 0.0, out=residual)
        sat = residual <= tol
        new_sat = np.flatnonzero(sat & ~was_sat).tolist()
        was_sat = sat
        if not new_sat:
            continue
        ents = (by_link[lptr[new_sat[0]]:lptr[new_sat[0] + 1]] if len(new_sat) == 1 else
                np.concatenate([by_link[lptr[l]:lptr[l + 1]] for l in new_sat]))
        rows = ents // W
        newly = dedup(rows[act[rows]], slot)
        if not newly.size:
            continue
        rate[newly] = level
        act[newly] = False
        n_act -= newly.shape[0]
        cnt -= np.bincount(P[newly].ravel(), minlength=nl)
        cnt[-1] = 0.0
    return rate


def greedy_rates(P: np.ndarray, residual: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Order-preserving greedy allocation: row by row, each flow takes all the
    residual capacity left on its path (bit/s); ``residual`` is reduced in place.

    This is Sincronia Algorithm 2 ("allocate entire BW to the flow if its ingress
    and egress ports are free") generalised to paths and to partly used links: a flow
    whose path has free capacity (its smallest residual above the largest tolerance
    of its links) takes the minimum residual along it, so on a big switch with
    uniform ports it gets the full port rate exactly when both its ports are free.

    Args:
        P: int matrix (flows x width) of link rows padded with the dummy index
            ``len(residual) - 1``, flows in priority order.
        residual: free capacity per link plus the dummy ``inf`` (bit/s).
        tol: per link, the residual at or below which it is saturated (bit/s).

    Returns:
        Rates in bit/s, one per row.

    Residuals only decrease, so a flow found ineligible never becomes eligible
    again: an eligibility mask is computed once, and after each allocation only the
    rows crossing the allocated flow's links are re-tested (found through
    :func:`link_index` for ``WATERFILL_INCREMENTAL`` rows or more).  Each allocation
    saturates a link, so there are at most ``#links`` of them.  Same test, same
    floating-point operations and order as the row-by-row rescan it replaces, so the
    rates are bit for bit equal.  With numba (:data:`.kernels.ENABLED`) the compiled
    :func:`~rapier_app.kernels.sincronia.greedy_kernel` runs the rescan itself.
    """
    n = P.shape[0]
    rate = np.zeros(n)
    if n == 0:
        return rate
    if kernels.ENABLED:
        ksincronia.greedy_kernel(_i64(P), residual, tol, rate)
        return rate
    nl = residual.shape[0]
    dummy = nl - 1
    W = P.shape[1]
    tmax = _row_max(tol, P)
    ok = _row_min(residual, P) > tmax
    if n < WATERFILL_INCREMENTAL:
        by_link = lptr = None
    else:
        by_link, lptr = link_index(P, nl)
    i = -1
    while True:
        nxt = ok[i + 1:]
        if not nxt.size:
            break
        j = int(nxt.argmax())  # first True (argmax stops there on a bool array)
        if not nxt[j]:
            break
        i += 1 + j
        row = P[i]
        r = float(residual[row].min())
        rate[i] = r
        links = row[row < dummy]
        residual[links] -= r
        np.maximum(residual, 0.0, out=residual)
        # only the rows crossing one of these links can have become ineligible
        if by_link is None:
            rows = np.arange(i + 1, n)
        else:
            rows = np.concatenate([by_link[lptr[l]:lptr[l + 1]] for l in links.tolist()]) // W
            rows = rows[rows > i]
        if rows.size:
            rows = rows[ok[rows]]
            ok[rows] = _row_min(residual, P[rows]) > tmax[rows]
    return rate


def _greedy_rates_rescan(P: np.ndarray, residual: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """:func:`greedy_rates` as first written (a full rescan after every
    allocation); kept as the reference the tests compare it with."""
    n = P.shape[0]
    rate = np.zeros(n)
    start = 0
    while start < n:
        m = _row_min(residual, P[start:])
        t = _row_max(tol, P[start:])
        pos = np.flatnonzero(m > t)
        if pos.size == 0:
            break
        i = start + int(pos[0])
        r = float(m[pos[0]])
        rate[i] = r
        row = P[i]
        residual[row[row < residual.shape[0] - 1]] -= r
        np.maximum(residual, 0.0, out=residual)
        start = i + 1
    return rate


#: Finished flows up to which a group is compacted in place (:func:`_compact`);
#: above it, through a boolean mask (one copy, whatever the count).
_IN_PLACE_MAX = 16


def _compact(a: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """``a`` (1-D, or 2-D by rows) without the rows at ``pos`` (sorted, distinct),
    in their order: for at most :data:`_IN_PLACE_MAX` positions, the rows after each
    one are moved up in place (a memmove per position, O(rows after ``pos[0]``))
    and a leading view of ``a`` is returned, so ``a`` itself must not be read
    again; above it, a masked copy.  Same values in the same order either way."""
    n = a.shape[0]
    if len(pos) > _IN_PLACE_MAX:
        keep = np.ones(n, dtype=bool)
        keep[pos] = False
        return a[keep]
    w = None
    ps = pos.tolist()
    for j, p in enumerate(ps):
        end = ps[j + 1] if j + 1 < len(ps) else n
        if w is None:
            w = p
        k = end - p - 1
        if k:
            a[w:w + k] = a[p + 1:end]
            w += k
    return a[:n - len(ps)] if ps else a


def nonzero_positions(bits: np.ndarray) -> np.ndarray:
    """Positions (int64, increasing) of the entries of ``bits`` with any bit set: an
    int64 view of a rate vector, so -0.0 counts (the entries to clear before the
    vector is reused).  Compiled (:func:`~rapier_app.kernels.alloc.nonzero_bits_kernel`)
    when the kernels are on, else ``np.nonzero``: the same positions."""
    if kernels.ENABLED:
        return kalloc.nonzero_bits_kernel(bits)
    return (bits != 0).nonzero()[0]


def greedy_groups(groups: Sequence["_Group"], residual: np.ndarray,
                  rates: Dict[int, np.ndarray], tol: np.ndarray) -> None:
    """:func:`greedy_rates` over the groups' stacked rows, compiled, group by group on
    the shared ``residual`` (bit/s, reduced in place; ``tol`` per link) in the same
    row order, so with the same operations, without stacking them; each group's rates
    (bit/s) are added to ``rates[id(group)]``.  Groups whose flows' first links, or
    whose last links, are all saturated are skipped
    (:func:`~rapier_app.kernels.sincronia.next_open_group`: such a group gets nothing
    and changes nothing): once the fabric is full, the rest of the priority list
    costs one scan of its end links instead of a pass over every live flow
    (Sincronia with every coflow of the Facebook hour live at t=0)."""
    ends = [g.end_links() for g in groups]
    G = len(groups)
    fptr = np.zeros(G + 1, dtype=np.int64)
    lptr = np.zeros(G + 1, dtype=np.int64)
    np.cumsum([e[0].shape[0] for e in ends], out=fptr[1:])
    np.cumsum([e[1].shape[0] for e in ends], out=lptr[1:])
    fflat = np.concatenate([e[0] for e in ends])
    lflat = np.concatenate([e[1] for e in ends])
    mark = np.zeros(residual.shape[0], dtype=np.int8)
    k = ksincronia.next_open_group(fflat, fptr, lflat, lptr, 0, residual, tol)
    while k < G:
        g = groups[k]
        if g.n:
            r = rates[id(g)]
            if not (r.flags.c_contiguous and r.dtype == np.float64):
                r = np.zeros(g.n)
                ksincronia.greedy_group_kernel(_i64(g.P), residual, tol, r, ends[k][0],
                                               ends[k][1], mark)
                rates[id(g)] += r
            else:  # added in place (the rows it gives nothing keep their entry)
                ksincronia.greedy_group_kernel(_i64(g.P), residual, tol, r, ends[k][0],
                                               ends[k][1], mark)
        k = ksincronia.next_open_group(fflat, fptr, lflat, lptr, k + 1, residual, tol)
