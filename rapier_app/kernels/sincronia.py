"""Compiled passes of Sincronia (Agarwal et al., SIGCOMM 2018): the
order-preserving greedy rates (Algorithm 2) and the per-port demand matrix BSSI
(Algorithm 1) orders on.

Serves :func:`~rapier_app.scheduling.seeds.passes.greedy_rates`, the seed
schedulers' group-by-group greedy pass and
:class:`~rapier_app.scheduling.seeds.sincronia.Sincronia`.  Units: bit/s for rates
and residuals, bits for demands.
"""

from __future__ import annotations

from . import jit


@jit
def greedy_kernel(P, residual, tol, rate):  # pragma: no cover - compiled
    """Sincronia Algorithm 2 generalised to paths
    (:func:`~rapier_app.scheduling.seeds.passes.greedy_rates`):
    row by row in priority order, a flow whose smallest residual exceeds the largest
    tolerance of its links takes that smallest residual (bit/s).

    Args:
        P: int64 matrix (flows x width) of link rows padded with the dummy
            ``len(residual) - 1``, flows in priority order.
        residual: float64 free capacity per link plus the dummy (bit/s), reduced in
            place.
        tol: float64 per link saturation tolerance (bit/s).
        rate: float64 output, one entry per row, zeroed by the caller (bit/s).

    Returns:
        0.

    Same floating-point operations as
    :func:`~rapier_app.scheduling.seeds.passes._greedy_rates_rescan`: the
    minimum residual along the path, subtracted from each of its real links, then
    every residual clamped at 0.
    """
    n, W = P.shape
    nl = residual.shape[0]
    dummy = nl - 1
    for i in range(n):
        m = residual[P[i, 0]]
        t = tol[P[i, 0]]
        for k in range(1, W):
            lk = P[i, k]
            if residual[lk] < m:
                m = residual[lk]
            if tol[lk] > t:
                t = tol[lk]
        if not m > t:
            continue
        rate[i] = m
        for k in range(W):
            lk = P[i, k]
            if lk < dummy:
                # a link listed twice is charged once, as numpy's fancy-index update
                seen = False
                for k2 in range(k):
                    if P[i, k2] == lk:
                        seen = True
                if not seen:
                    residual[lk] -= m
        for lk in range(nl):
            if residual[lk] < 0.0:
                residual[lk] = 0.0
    return 0


@jit
def greedy_group_kernel(P, residual, tol, rate, first, last, mark):  # pragma: no cover
    """:func:`greedy_kernel` on one group's rows, adding each row's rate to ``rate``
    (so a zeroed slice ends as :func:`greedy_kernel`'s output), and stopping once
    every one of the group's first links, or every one of its last links, is
    saturated (``residual <= tol``): then each remaining row's smallest residual is
    at most that link's residual, at most its tolerance, at most the row's largest
    tolerance, so :func:`greedy_kernel` would give it nothing and change nothing
    (:func:`next_open_group`'s argument, inside the group).  Residuals only fall,
    so open end links are counted once and then only on the links a row was
    charged on.

    Args:
        P, residual, tol: as :func:`greedy_kernel`; rate: float64 per row (bit/s),
            added to in place.
        first, last: int64 distinct first links and distinct last links of the
            group's rows (supersets are fine:
            :meth:`~rapier_app.scheduling.seeds.group._Group.end_links`).
        mark: int8 scratch per entry of ``residual``, all 0; left all 0.

    Returns:
        The number of rows visited (the rest were skipped exactly).
    """
    n, W = P.shape
    nl = residual.shape[0]
    dummy = nl - 1
    open_f = 0
    open_l = 0
    for e in range(first.shape[0]):
        lk = first[e]
        mark[lk] |= 1
        if residual[lk] > tol[lk]:
            open_f += 1
    for e in range(last.shape[0]):
        lk = last[e]
        mark[lk] |= 2
        if residual[lk] > tol[lk]:
            open_l += 1
    i = 0
    while i < n and open_f > 0 and open_l > 0:
        m = residual[P[i, 0]]
        t = tol[P[i, 0]]
        for k in range(1, W):
            lk = P[i, k]
            if residual[lk] < m:
                m = residual[lk]
            if tol[lk] > t:
                t = tol[lk]
        if m > t:
            rate[i] += m
            for k in range(W):
                lk = P[i, k]
                if lk < dummy:
                    # a link listed twice is charged once, as numpy's fancy-index update
                    seen = False
                    for k2 in range(k):
                        if P[i, k2] == lk:
                            seen = True
                    if not seen:
                        # open before (m > t: every link of the row was), so a
                        # marked link saturated now closes one end
                        residual[lk] -= m
                        if mark[lk] != 0 and not residual[lk] > tol[lk]:
                            if mark[lk] & 1:
                                open_f -= 1
                            if mark[lk] & 2:
                                open_l -= 1
            for lk in range(nl):
                if residual[lk] < 0.0:
                    residual[lk] = 0.0
        i += 1
    for e in range(first.shape[0]):
        mark[first[e]] = 0
    for e in range(last.shape[0]):
        mark[last[e]] = 0
    return i


@jit
def next_open_group(fflat, fptr, lflat, lptr, s, residual, tol):  # pragma: no cover - compiled
    """The first group g >= ``s`` that may still get bandwidth in
    :func:`greedy_kernel`'s row order: one of its flows' first links (group g's are
    ``fflat[fptr[g]:fptr[g+1]]``, a superset is fine) and one of their last links
    (``lflat[lptr[g]:lptr[g+1]]``, likewise) have ``residual > tol``.  A group all
    of whose first (or all of whose last) links are saturated is skipped exactly:
    each of its rows has min residual <= that link's residual <= its tolerance <=
    the row's largest tolerance, so the greedy kernel gives it nothing and changes
    nothing.  Returns ``len(fptr) - 1`` when no group from ``s`` on is open."""
    G = fptr.shape[0] - 1
    for g in range(s, G):
        free = False
        for e in range(fptr[g], fptr[g + 1]):
            lk = fflat[e]
            if residual[lk] > tol[lk]:
                free = True
                break
        if not free:
            continue
        # some first link is free: the group is open unless its last links are
        # all saturated (the same argument with the last link of each row)
        for e in range(lptr[g], lptr[g + 1]):
            lk = lflat[e]
            if residual[lk] > tol[lk]:
                return g
    return G


@jit
def demand_kernel(P, gptr, rem_bits, nlinks, out):  # pragma: no cover - compiled
    """Per group and link, the bits its flows still have to send across the link
    (Sincronia's demand matrix before division by capacity).

    Args:
        P: int64 (flows x width) padded link rows of every group, stacked; entries
            ``>= nlinks`` (the dummy) are skipped.
        gptr: int64, group g's rows are ``gptr[g]..gptr[g+1]-1``.
        rem_bits: float64 per row, remaining bits.
        nlinks: number of real links.
        out: float64 (groups x nlinks), zeroed by the caller; filled in place.

    Same sums in the same order as ``np.bincount(P.ravel(), weights=...)`` row by
    row, so the matrix is bit for bit the numpy one.
    """
    W = P.shape[1]
    for g in range(gptr.shape[0] - 1):
        for i in range(gptr[g], gptr[g + 1]):
            r = rem_bits[i]
            for k in range(W):
                lk = P[i, k]
                if lk < nlinks:
                    out[g, lk] += r
    return 0


@jit
def demand_row_kernel(P, idx, sizes, sent, bits, nlinks, out):  # pragma: no cover
    """One group's row of :func:`demand_kernel`, reading bytes sent straight from
    the simulator's array: ``out[l] += max(sizes[i] - sent[idx[i]], 0) * bits`` for
    every link ``l < nlinks`` of row ``i`` of ``P``, rows in order.  The same
    operations as ``np.maximum(sizes - sent[idx], 0.0) * bits`` followed by
    :func:`demand_kernel`, so the row is bit for bit the same, without the
    gathered and stacked temporaries.

    Args:
        P: int64 (flows x width) padded link rows; idx: int64 per row, the flow's
            index in ``sent``; sizes: float64 bytes per row; sent: float64 bytes
            per simulator index; bits: 8.0; out: float64 (nlinks,), filled in place.
    """
    W = P.shape[1]
    for i in range(P.shape[0]):
        r = sizes[i] - sent[idx[i]]
        if r <= 0.0:  # np.maximum(r, 0.0): -0.0 gives 0.0, NaN stays NaN
            r = 0.0
        r = r * bits
        for k in range(W):
            lk = P[i, k]
            if lk < nlinks:
                out[lk] += r
    return 0
