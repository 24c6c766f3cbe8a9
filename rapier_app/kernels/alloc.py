"""Compiled progressive filling (water-filling) and max-min fair passes.

Serves the seed schedulers' allocation primitives (:func:`~rapier_app.scheduling.
seeds.passes.waterfill`, the strict and joint passes of
:class:`~rapier_app.scheduling.seeds.base._SeedScheduler`) and
:func:`~rapier_app.scheduling.maxmin.max_min_fair_flat`.  Source: progressive
filling, Bertsekas and Gallager, Data Networks, Section 6.5.2.

Units: bit/s for residual capacities, tolerances and rates.
"""

from __future__ import annotations

import numpy as np

from . import jit


@jit
def _keep_counted(ids, n, cnt):  # pragma: no cover - compiled
    """Keep, in order, the first ``n`` entries of ``ids`` (link ids) whose ``cnt`` is
    still positive, compacted to the front; returns how many were kept."""
    m = 0
    for u in range(n):
        if cnt[ids[u]] > 0:
            ids[m] = ids[u]
            m += 1
    return m


@jit
def _csr(P, lo, hi, nl):  # pragma: no cover - compiled
    """Rows ``lo..hi-1`` of ``P`` grouped by link (counting sort): the rows (offsets
    from ``lo``) of link l are ``rows[lptr[l]:lptr[l+1]]``, in increasing order."""
    W = P.shape[1]
    n = hi - lo
    lptr = np.zeros(nl + 1, np.int64)
    for j in range(n):
        for k in range(W):
            lptr[P[lo + j, k] + 1] += 1
    for lk in range(nl):
        lptr[lk + 1] += lptr[lk]
    fill = lptr[:-1].copy()
    rows = np.empty(n * W, np.int64)
    for j in range(n):
        for k in range(W):
            lk = P[lo + j, k]
            rows[fill[lk]] = j
            fill[lk] += 1
    return lptr, rows


#: a row's stamp in the progressive fillings (:func:`_waterfill_fill`) when it is not
#: alive: above every filling's epoch, so never active
DEAD = np.int32(2 ** 31 - 1)


@jit
def _waterfill_rows(P, lo, hi, residual, tol, rate):  # pragma: no cover - compiled
    """Progressive filling of rows ``lo..hi-1`` of ``P``; each row's rate (bit/s) is
    *added* to ``rate[row]``.  Returns 0, or -1 when an active flow crosses no link.
    The body of :func:`waterfill_kernel` (see there)."""
    lptr, rows = _csr(P, lo, hi, residual.shape[0])
    return _waterfill_csr(P, lo, hi, residual, tol, rate, lptr.reshape((1, lptr.shape[0])),
                          rows, _one_group(hi - lo))


@jit
def _one_group(n):  # pragma: no cover - compiled
    """The group boundaries ``[0, n]`` of a single group of n rows."""
    gp = np.empty(2, np.int64)
    gp[0] = 0
    gp[1] = n
    return gp


@jit
def _waterfill_csr(P, lo, hi, residual, tol, rate, lptrs, rows_all,
                   gptr):  # pragma: no cover - compiled
    """:func:`_waterfill_rows` with the rows' link index given per group: rows
    ``lo..hi-1`` form groups ``gptr`` (offsets from ``lo``, ``gptr[0] = 0``); group
    g's link index (:func:`_csr`, row numbers within the group) is ``lptrs[g]`` and
    ``rows_all[gptr[g] * W:gptr[g+1] * W]``.  One group is the plain case; several
    are one allocation over all their rows without building their joint index
    (a saturated link's rows are visited group by group, each increasing: in
    increasing order, as in the joint index)."""
    W = P.shape[1]
    nl = residual.shape[0]
    n = hi - lo
    act = np.empty(n, np.int32)
    n_act = 0
    for j in range(n):
        ok = True
        for k in range(W):
            lk = P[lo + j, k]
            if not residual[lk] > tol[lk]:
                ok = False
                break
        act[j] = 0 if ok else DEAD
        if ok:
            n_act += 1
    if n_act == 0:
        return 0
    cnt = np.zeros(nl)
    for j in range(n):
        if act[j] == 0:  # active (stamp 0, epoch 1)
            for k in range(W):
                cnt[P[lo + j, k]] += 1.0
    return _waterfill_fill(P, lo, hi, residual, tol, rate, lptrs, rows_all, gptr, act, 1,
                           n_act, cnt)


@jit
def _waterfill_fill(P, lo, hi, residual, tol, rate, lptrs, rows_all, gptr, act, ep,
                    n_act, cnt):  # pragma: no cover - compiled
    """The progressive filling of :func:`_waterfill_csr` once its active rows
    (``n_act`` >= 1 of them: the rows j with ``act[j] < ep``, int32; a row frozen
    gets ``act[j] = ep``) and their link counts ``cnt`` are known.  The
    order in which a saturated link's rows freeze changes nothing: each adds the
    same level to its own rate and subtracts exact integers from the counts."""
    W = P.shape[1]
    nl = residual.shape[0]
    G = gptr.shape[0] - 1
    cnt[nl - 1] = 0.0
    was_sat = np.empty(nl, np.bool_)
    for lk in range(nl):
        was_sat[lk] = residual[lk] <= tol[lk]
    # The links with active flows (count > 0), in increasing order.  Only they change:
    # for a link with count 0, "residual -= inc * 0" leaves it as it is, so after the
    # first iteration's clamp (run on every link, as the numpy code does) it never
    # changes again and cannot become saturated.  Looping over them alone does the
    # same operations on the links that change, so the results are bit for bit equal.
    ul = np.empty(nl, np.int64)
    sat = np.empty(nl, np.int64)
    nu = 0
    for lk in range(nl - 1):
        if cnt[lk] > 0:
            ul[nu] = lk
            nu += 1
    level = 0.0
    first = True
    while n_act:
        inc = 0.0
        used = False
        for u in range(nu):
            lk = ul[u]
            q = residual[lk] / cnt[lk]
            if not used or q < inc:
                inc = q
            used = True
        if not used:
            return -1
        if inc < 0.0:
            inc = 0.0
        level += inc
        # the links that saturate in this step, in ``ul`` order: found while their
        # residuals are reduced and clamped (freezing rows changes only counts)
        nsat = 0
        if first:  # numpy clamps every link once: negative inputs become 0
            for u in range(nu):
                lk = ul[u]
                residual[lk] -= inc * cnt[lk]
            for lk in range(nl):
                if residual[lk] < 0.0:
                    residual[lk] = 0.0
            first = False
            for u in range(nu):
                lk = ul[u]
                s = residual[lk] <= tol[lk]
                if s and not was_sat[lk]:
                    sat[nsat] = lk
                    nsat += 1
                was_sat[lk] = s
        else:
            for u in range(nu):
                lk = ul[u]
                r = residual[lk] - inc * cnt[lk]
                if r < 0.0:
                    r = 0.0
                residual[lk] = r
                s = r <= tol[lk]
                if s and not was_sat[lk]:
                    sat[nsat] = lk
                    nsat += 1
                was_sat[lk] = s
        froze = False
        for t in range(nsat):
            lk = sat[t]
            for g in range(G):
                off = gptr[g]
                base = off * W
                for e in range(lptrs[g, lk], lptrs[g, lk + 1]):
                    j = off + rows_all[base + e]
                    if act[j] < ep:
                        act[j] = ep
                        n_act -= 1
                        rate[lo + j] += level
                        froze = True
                        for k in range(W):
                            cnt[P[lo + j, k]] -= 1.0
        cnt[nl - 1] = 0.0
        if froze:  # drop the links left without active flows
            nu = _keep_counted(ul, nu, cnt)
    return 0


@jit
def csr_drop(lptr, rows, pos, n):  # pragma: no cover - compiled
    """The link index :func:`_csr` of a group of ``n`` rows after the rows at
    ``pos`` (int64, sorted, distinct, in ``0..n-1``) are removed and the rows after
    them renumbered: per link the kept rows in the same (increasing) order, so the
    result equals :func:`_csr` of the compacted rows, built in one sequential pass
    instead of a counting sort.

    Args:
        lptr: int64 (links + 1) offsets; link l's rows are ``rows[lptr[l]:lptr[l+1]]``.
        rows: int64 (n x width entries) row numbers ``0..n-1``.
        pos: int64 positions removed.
        n: rows before removal.

    Returns:
        (lptr, rows) of the ``n - len(pos)`` rows kept.
    """
    newid = np.empty(n, np.int64)
    d = 0
    p = 0
    npos = pos.shape[0]
    for j in range(n):
        if p < npos and pos[p] == j:
            newid[j] = -1
            p += 1
            d += 1
        else:
            newid[j] = j - d
    W = rows.shape[0] // n if n else 0
    nl1 = lptr.shape[0]
    out_l = np.empty(nl1, np.int64)
    out_r = np.empty(rows.shape[0] - W * npos, np.int64)
    out_l[0] = 0
    m = 0
    for lk in range(nl1 - 1):
        for e in range(lptr[lk], lptr[lk + 1]):
            v = newid[rows[e]]
            if v >= 0:
                out_r[m] = v
                m += 1
        out_l[lk + 1] = m
    return out_l, out_r


def group_csr(P, nl):
    """:func:`_csr` of all rows of ``P`` (int64, rows x width) over ``nl`` links
    (plus the dummy counted in ``nl``): (lptr int64[nl + 1], rows int64[rows x
    width]), link l's rows (row numbers) ``rows[lptr[l]:lptr[l+1]]`` increasing."""
    return _csr(P, 0, P.shape[0], nl)


@jit
def waterfill_kernel(P, residual, tol, rate):  # pragma: no cover - compiled
    """Max-min fair rates (progressive filling, Bertsekas and Gallager, Data
    Networks, Section 6.5.2) for the flows whose padded link rows are ``P``.

    Args:
        P: int64 matrix (flows x width) of link ids padded with the dummy
            ``len(residual) - 1`` (residual ``inf``, tolerance 0).
        residual: float64 free capacity per link plus the dummy (bit/s), reduced in
            place.
        tol: float64 per link, the residual (bit/s) at or below which it is saturated.
        rate: float64 output, one entry per row, zeroed by the caller (bit/s).

    Returns:
        0, or -1 when an active flow crosses no link (the caller raises
        ``SchedulerError``).

    Same operations and order as
    :func:`~rapier_app.scheduling.seeds.passes._waterfill_incremental`: per
    iteration the increment is the smallest ``residual / count`` over links with an
    active flow, every link loses ``increment x count``, residuals are clamped at 0,
    and the flows of links that became saturated freeze at the running level.
    """
    return _waterfill_rows(P, 0, P.shape[0], residual, tol, rate)


@jit
def strict_kernel(P, gptr, residual, tol, rate, lptrs, rows_all):  # pragma: no cover
    """Strict priority over groups (coflows): group g's rows ``gptr[g]..gptr[g+1]-1``
    of ``P`` get max-min fair rates on what groups before it left
    (:meth:`~rapier_app.scheduling.seeds.base._SeedScheduler.strict_pass` with every
    flow eligible).  Rates (bit/s) are added to ``rate``; ``residual`` (bit/s) is reduced in place.
    ``lptrs[g]`` and ``rows_all[gptr[g] * W:gptr[g+1] * W]`` are group g's link
    index (:func:`_csr`, kept by the caller across calls).
    Returns 0, or -1 when a flow crosses no link."""
    W = P.shape[1]
    for g in range(gptr.shape[0] - 1):
        lo = gptr[g]
        hi = gptr[g + 1]
        if hi > lo:
            if _waterfill_csr(P, lo, hi, residual, tol, rate, lptrs[g:g + 1],
                              rows_all[lo * W:hi * W], _one_group(hi - lo)) < 0:
                return -1
    return 0


@jit
def joint_kernel(P, gptr, residual, tol, rate, lptrs, rows_all):  # pragma: no cover
    """Max-min fair rates over all rows of the stacked groups at once
    (:meth:`~rapier_app.scheduling.seeds.base._SeedScheduler.joint_pass` with
    :func:`~rapier_app.scheduling.seeds.passes.waterfill`):
    :func:`waterfill_kernel` of ``P`` with the groups' kept link indexes (as for
    :func:`strict_kernel`) instead of one built over every row, so the same rates
    (bit/s, added to ``rate``) and residuals, bit for bit.  Returns 0, or -1 when
    an active flow crosses no link."""
    return _waterfill_csr(P, 0, P.shape[0], residual, tol, rate, lptrs, rows_all, gptr)


@jit
def _take_link(lk, lptr, rows, active, stamp, it, newly, m):  # pragma: no cover
    """Append to ``newly[m:]`` the active flows of link ``lk`` (CSR ``lptr``/``rows``)
    not yet taken in iteration ``it`` (``stamp``); returns the new count."""
    for p in range(lptr[lk], lptr[lk + 1]):
        i = rows[p]
        if active[i] and stamp[i] != it:
            stamp[i] = it
            newly[m] = i
            m += 1
    return m


@jit
def maxmin_flat_kernel(lens, lidx, residual, tol, rate):  # pragma: no cover - compiled
    """Unweighted max-min fair rates without demands, the compiled twin of
    :func:`~rapier_app.scheduling.maxmin.max_min_fair_flat` (progressive filling with incremental
    bookkeeping; Bertsekas and Gallager, Data Networks, Section 6.5.2) used by
    ``baseline``, ``fair`` and ``routing-only`` at every decision point.

    Args:
        lens: int64 per flow, the number of links of its path (0: the flow gets 0).
        lidx: int64, the flows' link indices concatenated in flow order.
        residual: float64 per link, ``max(capacity, 0)`` (bit/s); overwritten.
        tol: float64 per link, the residual (bit/s) at or below which it is saturated.
        rate: float64 output per flow, zeroed by the caller (bit/s).

    Returns:
        0, or -1 when the level would be unbounded (the caller raises ValueError).

    Same IEEE operations in the same order as the numpy code: per iteration the
    increment is ``min(residual / active count)`` over every link (NaN propagates as
    in ``ndarray.min``), every link loses ``increment x count``, and the flows of the
    links at or below their tolerance, taken link by link and flow by flow, freeze
    at the running level; when none does, those of the first link of least share.
    A link whose flows have all frozen gets residual ``inf``.
    """
    n = lens.shape[0]
    L = residual.shape[0]
    starts = np.zeros(n + 1, np.int64)
    for i in range(n):
        starts[i + 1] = starts[i] + lens[i]
    cnt = np.zeros(L, np.int64)
    for e in range(starts[n]):
        cnt[lidx[e]] += 1
    # flows of each link in increasing flow order (a stable counting sort)
    lptr = np.zeros(L + 1, np.int64)
    for lk in range(L):
        lptr[lk + 1] = lptr[lk] + cnt[lk]
    fill = lptr[:-1].copy()
    rows = np.empty(starts[n], np.int64)
    for i in range(n):
        for e in range(starts[i], starts[i + 1]):
            lk = lidx[e]
            rows[fill[lk]] = i
            fill[lk] += 1
    wl = np.empty(L)
    for lk in range(L):
        wl[lk] = float(cnt[lk])
        if cnt[lk] == 0:
            residual[lk] = np.inf
    active = np.empty(n, np.bool_)
    n_active = 0
    for i in range(n):
        active[i] = lens[i] > 0
        if active[i]:
            n_active += 1
    stamp = np.zeros(n, np.int64)
    newly = np.empty(n, np.int64)
    # the links with active flows, in increasing order: the others have residual
    # inf and count 0 (share inf, never saturated), so leaving them out of the
    # minimum, the update and the saturation scan changes no result
    live = np.empty(L, np.int64)
    nlive = 0
    for lk in range(L):
        if cnt[lk] > 0:
            live[nlive] = lk
            nlive += 1
    level = 0.0
    it = 0
    while n_active > 0:
        it += 1
        inc = np.inf
        jmin = -1
        for q in range(nlive):
            lk = live[q]
            r = residual[lk]
            d = wl[lk]
            if d != 0.0:
                s = r / d
            elif r > 0.0:
                s = np.inf
            elif r < 0.0:
                s = -np.inf
            else:
                s = np.nan
            if jmin < 0:
                inc = s
                jmin = lk
            elif not (inc != inc):  # a NaN already found stays the minimum
                if s != s or s < inc:
                    inc = s
                    jmin = lk
        if jmin < 0:
            return -1
        if inc < 0.0:  # max(inc, 0.0) of the numpy code (a NaN stays NaN)
            inc = 0.0
        if not np.isfinite(inc):
            return -1
        level += inc
        m = 0
        for q in range(nlive):
            lk = live[q]
            residual[lk] -= inc * wl[lk]
            if residual[lk] <= tol[lk]:
                m = _take_link(lk, lptr, rows, active, stamp, it, newly, m)
        if m == 0:  # numerical guard: the flows of the first link of least share
            m = _take_link(jmin, lptr, rows, active, stamp, it, newly, m)
        for q in range(m):
            i = newly[q]
            rate[i] = level
            active[i] = False
        n_active -= m
        gone = 0
        for q in range(m):
            i = newly[q]
            for e in range(starts[i], starts[i + 1]):
                lk = lidx[e]
                cnt[lk] -= 1
                wl[lk] -= 1.0
                if cnt[lk] == 0:
                    wl[lk] = 0.0
                    residual[lk] = np.inf
                    gone += 1
        if gone:
            nlive = _keep_counted(live, nlive, cnt)
    return 0


@jit
def nonzero_bits_kernel(bits):  # pragma: no cover - compiled
    """Positions (int64, increasing) of the nonzero entries of ``bits``, an int64
    view of a float64 vector: every entry that is not +0.0 (-0.0 and NaN too).
    One pass; ``(bits != 0).nonzero()[0]`` without its temporary mask."""
    m = bits.shape[0]
    buf = np.empty(m, np.int64)
    n = 0
    for j in range(m):
        if bits[j] != 0:
            buf[n] = j
            n += 1
    return buf[:n].copy()
