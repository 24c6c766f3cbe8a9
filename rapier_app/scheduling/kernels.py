"""Compiled kernels of the seed schedulers' allocation primitives (issue 16).

:func:`waterfill` and :func:`greedy_rates` of :mod:`.seedbase` run, per decision
point, a loop whose every iteration is a dozen numpy calls on arrays of one entry per
link (301 on ``bigswitch:150``): the call overhead, not the arithmetic, is their cost,
and over the Facebook hour's giants stretch they run hundreds of thousands of times.
This module compiles the same loops with numba (``numba.njit``), doing the same
IEEE-754 operations in the same order (no ``fastmath``: no reassociation, no fused
multiply-add), so rates and residuals are bit for bit those of the numpy code; the
tests in ``tests/test_kernels.py`` compare them on random inputs.

numba is a dependency (``setup.py``); when it cannot be imported, or the environment
variable ``RAPIER_KERNELS=numpy`` is set, :data:`ENABLED` is False and the callers
keep their numpy code.

Units: bit/s for residual capacities, tolerances and rates.
"""

from __future__ import annotations

import os

import numpy as np

try:  # pragma: no cover - exercised by whichever branch the machine has
    import numba
except ImportError:  # pragma: no cover
    numba = None


def _enabled(value: str) -> bool:
    """Whether the compiled kernels run, from ``RAPIER_KERNELS`` (``numba``, the
    default, or ``numpy``).

    Raises:
        ValueError: any other value (the message names ``RAPIER_KERNELS``).
    """
    if value not in ("numba", "numpy"):
        raise ValueError(f"RAPIER_KERNELS: must be 'numba' or 'numpy', got {value!r}")
    return value == "numba" and numba is not None


#: True when the compiled kernels are used (numba importable and not disabled).
ENABLED = _enabled(os.environ.get("RAPIER_KERNELS", "numba"))


def _jit(fn):
    """``numba.njit(cache=True)`` when numba is importable, else ``fn`` unchanged."""
    if numba is None:  # pragma: no cover
        return fn
    return numba.njit(cache=True, nogil=True)(fn)


@_jit
def _keep_counted(ids, n, cnt):  # pragma: no cover - compiled
    """Keep, in order, the first ``n`` entries of ``ids`` (link ids) whose ``cnt`` is
    still positive, compacted to the front; returns how many were kept."""
    m = 0
    for u in range(n):
        if cnt[ids[u]] > 0:
            ids[m] = ids[u]
            m += 1
    return m


@_jit
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


@_jit
def _waterfill_rows(P, lo, hi, residual, tol, rate):  # pragma: no cover - compiled
    """Progressive filling of rows ``lo..hi-1`` of ``P``; each row's rate (bit/s) is
    *added* to ``rate[row]``.  Returns 0, or -1 when an active flow crosses no link.
    The body of :func:`waterfill_kernel` (see there)."""
    lptr, rows = _csr(P, lo, hi, residual.shape[0])
    return _waterfill_csr(P, lo, hi, residual, tol, rate, lptr.reshape((1, lptr.shape[0])),
                          rows, _one_group(hi - lo))


@_jit
def _one_group(n):  # pragma: no cover - compiled
    """The group boundaries ``[0, n]`` of a single group of n rows."""
    gp = np.empty(2, np.int64)
    gp[0] = 0
    gp[1] = n
    return gp


@_jit
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


@_jit
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


@_jit
def _waterfill_alive(P, gptr, g, alive, na, residual, tol, rate, lptrs,
                     rows_all):  # pragma: no cover - compiled
    """:func:`_waterfill_csr` of group ``g`` (rows ``gptr[g]..gptr[g+1]-1``) looking
    only at its ``na`` rows listed first in ``alive[gptr[g]:]`` (global row ids,
    increasing): the weighted pass drops a row from that list once one of its
    links is saturated in the pass's residual, and such a row is never active
    (its share there is 0, see :func:`weighted_kernel`).  The group's link index
    (:func:`_csr`) is ``lptrs[g]`` and its slice ``rows_all[gptr[g] * W:gptr[g+1] *
    W]``.  The active rows, their link counts (exact integers) and everything after
    are those of :func:`_waterfill_csr`, so the rates and residuals are bit for bit
    the same.  Returns 0 when no row was active, 1 after a filling, -1 when an
    active row crosses no link."""
    W = P.shape[1]
    nl = residual.shape[0]
    lo = gptr[g]
    hi = gptr[g + 1]
    act = np.full(hi - lo, DEAD, np.int32)
    n_act = 0
    for t in range(na):
        i = alive[lo + t]
        ok = True
        for k in range(W):
            lk = P[i, k]
            if not residual[lk] > tol[lk]:
                ok = False
                break
        if ok:
            act[i - lo] = 0
            n_act += 1
    if n_act == 0:
        return 0
    cnt = np.zeros(nl)
    for t in range(na):
        i = alive[lo + t]
        if act[i - lo] == 0:  # active (stamp 0, epoch 1)
            for k in range(W):
                cnt[P[i, k]] += 1.0
    if _waterfill_fill(P, lo, hi, residual, tol, rate, lptrs[g:g + 1],
                       rows_all[lo * W:hi * W], _one_group(hi - lo), act, 1, n_act,
                       cnt) < 0:
        return -1
    return 1


@_jit
def _last_link(P, i, dummy):  # pragma: no cover - compiled
    """The last link of row ``i`` of ``P`` that is not the padding ``dummy`` (the
    row's first link when every later entry is padding)."""
    last = P[i, 0]
    for k in range(1, P.shape[1]):
        if P[i, k] != dummy:
            last = P[i, k]
    return last


@_jit
def _count_ends(P, gptr, g, alive, na, gend):  # pragma: no cover - compiled
    """Fill ``gend[g, 0]`` and ``gend[g, 1]`` (int64 per link) with the numbers of
    group ``g``'s ``na`` alive rows (``alive[gptr[g]:gptr[g] + na]``) whose first
    link, and whose last link (:func:`_last_link`), is that link."""
    nl = gend.shape[2]
    lo = gptr[g]
    for lk in range(nl):
        gend[g, 0, lk] = 0
        gend[g, 1, lk] = 0
    for t in range(na):
        i = alive[lo + t]
        gend[g, 0, P[i, 0]] += 1
        gend[g, 1, _last_link(P, i, nl - 1)] += 1


@_jit
def _kill_rows(P, gptr, g, newly, nnew, lptrs, rows_all, alive, na, stamp, gcnt, gend,
               gok):  # pragma: no cover - compiled
    """The rows of group ``g`` on the links ``newly[:nnew]`` (just saturated) leave
    its ``na`` alive rows: their ``stamp`` becomes :data:`DEAD` and they leave the
    per-link counts ``gcnt[g]`` and, when kept (``gok[g]``), the end counts
    ``gend[g]`` (:func:`_count_ends`).  The list of alive rows is not touched (it
    may then hold dead rows until :func:`_compact_alive`).  Returns the number of
    rows left alive."""
    W = P.shape[1]
    L = gend.shape[2] - 1
    lo = gptr[g]
    lp = lptrs[g]
    bw = lo * W
    killed = 0
    for u in range(nnew):
        lk = newly[u]
        for e in range(lp[lk], lp[lk + 1]):
            j = lo + rows_all[bw + e]
            if stamp[j] != DEAD:
                stamp[j] = DEAD
                killed += 1
                for k in range(W):
                    gcnt[g, P[j, k]] -= 1
                if gok[g]:
                    gend[g, 0, P[j, 0]] -= 1
                    gend[g, 1, _last_link(P, j, L)] -= 1
    return na - killed


@_jit
def _compact_alive(alive, lo, listed, stamp):  # pragma: no cover - compiled
    """Drop the rows whose ``stamp`` is :data:`DEAD` from the ``listed`` entries of
    ``alive[lo:]`` (increasing global row ids), in place, order kept; returns how
    many are left.  :func:`weighted_kernel` compacts a group's list only before a
    pass over it (:func:`_count_ends`, :func:`_waterfill_alive`), not at every kill:
    on the Facebook hour's giants under Philae the compactions at every scan cost
    about a tenth of the pass (issue 16)."""
    m = 0
    for t in range(listed):
        i = alive[lo + t]
        if stamp[i] != DEAD:
            alive[lo + m] = i
            m += 1
    return m


@_jit
def _ends_blocked(gend, g, residual, tol):  # pragma: no cover - compiled
    """Whether every row counted in ``gend[g, 0]`` has its first link, or every row
    counted in ``gend[g, 1]`` its last link, not above the tolerance in
    ``residual`` (bit/s): then none of them can be active in a filling on
    ``residual``.  O(links), no row visited."""
    nl = residual.shape[0]
    for side in range(2):
        blocked = True
        for lk in range(nl):
            if gend[g, side, lk] > 0 and residual[lk] > tol[lk]:
                blocked = False
                break
        if blocked:
            return True
    return False


@_jit
def _waterfill_kept(P, gptr, g, alive, na, stamp, ep, gcnt, residual, tol, rate, lptrs,
                    rows_all, gend, gok, lcnt):  # pragma: no cover - compiled
    """:func:`_waterfill_alive` of group ``g`` when its alive rows are also marked in
    ``stamp`` (global row ids: :data:`DEAD` when not alive, else below ``ep``, this
    filling's epoch, which is above every earlier filling's) and counted per link
    in ``gcnt[g]`` (alive rows
    crossing each link), as :func:`weighted_kernel` keeps them from its second scan
    on.  The active rows are the alive rows without those that cross a link whose
    share is not above the tolerance, so they and their link counts are found from
    the kept counts by visiting only the rows of those links (through the link
    index), instead of testing every alive row; when those links carry more rows
    than are alive, every alive row is tested as :func:`_waterfill_alive` does.
    Either way the active rows and their counts (exact integers) are the same, and
    so is everything after.  Returns as :func:`_waterfill_alive`.

    No row is active, and nothing changes, when every alive row's first link, or
    every alive row's last link, is within tolerance.  ``gend[g]`` counts the alive
    rows by first and by last link (:func:`_count_ends`) once ``gok[g]`` is set:
    they are counted at the group's first test of every alive row and then kept by
    :func:`weighted_kernel` as rows die, and while they are kept that case returns
    0 after O(links) work.  On the Facebook hour under Philae (class weights 10^9
    to 1), a low class's share of a link shared with a heavier class is within
    tolerance, and 99.9 % of the alive-row tests that found no active row were
    such cases (issue 16).

    ``alive[gptr[g]:gptr[g] + lcnt[g]]`` lists the group's alive rows and the rows
    killed since the list was last compacted (:func:`_kill_rows`); it is compacted
    here only when every alive row is tested."""
    W = P.shape[1]
    nl = residual.shape[0]
    lo = gptr[g]
    hi = gptr[g + 1]
    lp = lptrs[g]
    if gok[g] and _ends_blocked(gend, g, residual, tol):
        return 0
    visits = 0
    for lk in range(nl):
        if gcnt[g, lk] > 0 and not residual[lk] > tol[lk]:
            visits += lp[lk + 1] - lp[lk]
    if visits > na:
        if lcnt[g] != na:  # rows killed since the list was last compacted
            lcnt[g] = _compact_alive(alive, lo, lcnt[g], stamp)
        if not gok[g]:
            _count_ends(P, gptr, g, alive, na, gend)
            gok[g] = True
            if _ends_blocked(gend, g, residual, tol):
                return 0
        return _waterfill_alive(P, gptr, g, alive, na, residual, tol, rate, lptrs,
                                rows_all)
    act = stamp[lo:hi]  # active in this filling: alive and stamped before ep
    n_act = na
    cnt = np.empty(nl)
    for lk in range(nl):
        cnt[lk] = float(gcnt[g, lk])
    if visits:
        bw = lo * W
        for lk in range(nl):
            if gcnt[g, lk] > 0 and not residual[lk] > tol[lk]:
                for e in range(lp[lk], lp[lk + 1]):
                    j = rows_all[bw + e]
                    if act[j] < ep:
                        act[j] = ep
                        n_act -= 1
                        for k in range(W):
                            cnt[P[lo + j, k]] -= 1.0
    if n_act == 0:
        return 0
    if _waterfill_fill(P, lo, hi, residual, tol, rate, lptrs[g:g + 1],
                       rows_all[lo * W:hi * W], _one_group(hi - lo), act, ep, n_act,
                       cnt) < 0:
        return -1
    return 1


@_jit
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


@_jit
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

    Same operations and order as :func:`.seedbase._waterfill_incremental`: per
    iteration the increment is the smallest ``residual / count`` over links with an
    active flow, every link loses ``increment x count``, residuals are clamped at 0,
    and the flows of links that became saturated freeze at the running level.
    """
    return _waterfill_rows(P, 0, P.shape[0], residual, tol, rate)


@_jit
def strict_kernel(P, gptr, residual, tol, rate, lptrs, rows_all):  # pragma: no cover
    """Strict priority over groups (coflows): group g's rows ``gptr[g]..gptr[g+1]-1``
    of ``P`` get max-min fair rates on what groups before it left
    (:meth:`.seedbase._SeedScheduler.strict_pass` with every flow eligible).  Rates
    (bit/s) are added to ``rate``; ``residual`` (bit/s) is reduced in place.
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


@_jit
def joint_kernel(P, gptr, residual, tol, rate, lptrs, rows_all):  # pragma: no cover
    """Max-min fair rates over all rows of the stacked groups at once
    (:meth:`.seedbase._SeedScheduler.joint_pass` with :func:`.seedbase.waterfill`):
    :func:`waterfill_kernel` of ``P`` with the groups' kept link indexes (as for
    :func:`strict_kernel`) instead of one built over every row, so the same rates
    (bit/s, added to ``rate``) and residuals, bit for bit.  Returns 0, or -1 when
    an active flow crosses no link."""
    return _waterfill_csr(P, 0, P.shape[0], residual, tol, rate, lptrs, rows_all, gptr)


@_jit
def _same_on(a, b, lp):  # pragma: no cover - compiled
    """Whether float64 vectors ``a`` and ``b`` are equal bit for bit on the links
    that have a row in the link index ``lp`` (:func:`_csr`)."""
    ai = a.view(np.int64)
    bi = b.view(np.int64)
    for k in range(ai.shape[0]):
        if lp[k + 1] > lp[k] and ai[k] != bi[k]:
            return False
    return True


@_jit
def _same_flags(a, b):  # pragma: no cover - compiled
    """Whether boolean vectors ``a`` and ``b`` are equal."""
    for k in range(a.shape[0]):
        if a[k] != b[k]:
            return False
    return True


#: :func:`weighted_kernel` memo flags, per group: its scan before round 1 found every
#: row free (``M_SCAN0``), its round-1 filling is recorded (``M_FILL1``), its scan
#: after round 1 found no row free (``M_SCAN1``); ``M_FREE0``: the free-link vector
#: of the scan before round 1 is recorded (every record depends on it); ``M_RAN1``:
#: the round-1 filling had an active row (so it clamped negative residuals to 0).
M_FREE0, M_SCAN0, M_FILL1, M_SCAN1, M_RAN1 = 1, 2, 4, 8, 16


@_jit
def weighted_kernel(P, gptr, qptr, wts, residual, tol, rate, cap, out, lptrs,
                    rows_all, mflag, mfree0, mmark0, min1, mout1, mfree1,
                    lvl):  # pragma: no cover
    """Aalo Pseudocode 1's weighted sharing across queues on a network of links:
    :meth:`.seedbase._SeedScheduler.weighted_pass` with every flow eligible, compiled.

    Args:
        P: int64 (flows x width) padded link rows of every group, stacked in queue
            order then service order.
        gptr: int64, group g's rows are ``gptr[g]..gptr[g+1]-1``.
        qptr: int64, queue q's groups are ``qptr[q]..qptr[q+1]-1``.
        wts: float64 queue weights (> 0).
        residual: float64 free capacity per link plus the dummy (bit/s), reduced in
            place.
        tol: float64 per link saturation tolerance (bit/s).
        rate: float64 per row, rates (bit/s) added in place.
        cap: most rounds to run; then a strict pass hands out what is left.
        out: int64[4] output: rounds run; 1 if the cap was hit, 2 if a round
            changed nothing (a fixed point: the cap would be reached with the same
            state, so the final strict pass runs at once, bit for bit as at the
            cap); and (added to) rows whose round-1 filling was reused from the
            memo / computed.
        lptrs, rows_all: every group's link index, as for :func:`strict_kernel`.
        mflag, mfree0, mmark0, min1, mout1, mfree1, lvl: per group (int64 flags;
            groups x links arrays, bool or float64; ``lvl`` per row, float64) what
            the last pass over the *same rows* recorded, read and then overwritten
            with this pass's record (``mflag`` 0: nothing recorded).  See below.

    Returns:
        0, or -1 when a flow crosses no link.

    Same floating-point operations in the same order as the numpy method.

    Memo (issue 16).  Between two decision points most coflows keep their flows,
    and a group's part of round 1 is a pure function of its rows and of inputs
    the record keeps: the scan before round 1 of the free-link vector ``mfree0``
    (its result: every row free, and the links it marks, ``mmark0``); the filling
    of round 1 of the alive rows (fixed by ``mfree0``) and of the share vector it
    is given (``min1``, compared bit for bit), whose results are the share vector
    after it (``mout1``) and each row's frozen level (``lvl``, added to ``rate``
    as the filling itself adds it: 0.0 + level is level); the scan after round 1
    of the free-link vector ``mfree1`` (its result kept only when no row is free).
    When the inputs are the same, the kept results are used instead of
    recomputing them, so every rate and residual is bit for bit what the full
    computation gives (``tests/test_kernels.py`` checks every pass of whole runs).
    """
    nl = residual.shape[0]
    L = nl - 1
    W = P.shape[1]
    Q = wts.shape[0]
    Wl = np.empty(nl)
    free = np.empty(nl, np.bool_)
    mark = np.empty(nl, np.bool_)
    present = np.empty(Q, np.bool_)
    share = np.empty(nl)
    start = np.empty(nl)
    used = np.empty(nl)
    base = np.empty(nl)
    G = gptr.shape[0] - 1
    # Per group, its rows not yet blocked: group g's are alive[gptr[g]:gptr[g] +
    # acnt[g]], increasing.  A row is dropped when a scan finds one of its links
    # saturated (residual <= tol).  Residuals only decrease in a pass, so it stays
    # blocked; no queue marks a saturated link (only rows whose links are all free
    # mark theirs), so every queue's share there is 0 and the row is never active
    # again (nor in the final strict pass on the residual).  Skipping it skips no
    # operation on rates or residuals.
    alive = np.arange(P.shape[0])
    acnt = np.empty(G, np.int64)
    for g in range(G):
        acnt[g] = gptr[g + 1] - gptr[g]
    # alive[gptr[g]:gptr[g] + lcnt[g]] lists group g's alive rows and, from the
    # second scan on, rows killed since (stamped DEAD): it is compacted
    # only when a consumer walks it (:func:`_compact_alive`)
    lcnt = acnt.copy()
    hit0 = np.zeros(G, np.bool_)   # the record's mfree0 is this pass's
    nflag = np.zeros(G, np.int64)  # what this pass records
    done = 0
    scan = 0
    out[1] = 0
    # From the second scan on, a group's scan is incremental: ``stamp`` marks its
    # alive rows (DEAD when not alive; a filling stamps the rows it leaves inactive
    # or freezes with its own epoch ``ep``, so no per-filling copy of the flags is
    # made) and ``gcnt[g, l]`` counts those crossing link l (both filled by the
    # first scan, or from the link index when its memo says every row is free).  A
    # row leaves only when one of its links turns saturated, so only the rows of the
    # links saturated since the last scan (``newly``, found from ``pfree``) are
    # visited; the links a group marks are those with a count > 0: the same marks,
    # weights, queues and alive rows as scanning every alive row.  The fillings find
    # their active rows from the same counts (:func:`_waterfill_kept`).
    stamp = np.full(P.shape[0], DEAD, np.int32)
    ep = 0
    gcnt = np.zeros((G, nl), np.int64)
    # per group, its alive rows counted by first and by last link once gok[g] is set
    # (:func:`_waterfill_kept`); kept from then on as rows die
    gend = np.empty((G, 2, nl), np.int64)
    gok = np.zeros(G, np.bool_)
    pfree = np.empty(nl, np.bool_)
    newly = np.empty(nl, np.int64)
    nnew = 0
    while True:
        for lk in range(nl):
            Wl[lk] = 0.0
            free[lk] = residual[lk] > tol[lk]
        if scan >= 1:
            nnew = 0
            for lk in range(nl):
                if pfree[lk] and not free[lk]:
                    newly[nnew] = lk
                    nnew += 1
        for lk in range(nl):
            pfree[lk] = free[lk]
        anyp = False
        for q in range(Q):
            for lk in range(nl):
                mark[lk] = False
            found = False
            for g in range(qptr[q], qptr[q + 1]):
                lo = gptr[g]
                n = gptr[g + 1] - lo
                if scan == 0:
                    h = (mflag[g] & M_FREE0) != 0 and _same_flags(mfree0[g], free)
                    hit0[g] = h
                    nflag[g] = M_FREE0
                    if not h:
                        mfree0[g, :] = free
                    if h and (mflag[g] & M_SCAN0) != 0:
                        nflag[g] |= M_SCAN0
                        if n > 0:
                            found = True
                            for lk in range(nl):
                                if mmark0[g, lk]:
                                    mark[lk] = True
                            # every row alive: the kept counts are the link index's
                            lp = lptrs[g]
                            for i in range(lo, lo + n):
                                stamp[i] = 0
                            for lk in range(nl):
                                gcnt[g, lk] = lp[lk + 1] - lp[lk]
                        continue
                elif scan == 1 and hit0[g] and (mflag[g] & M_SCAN1) != 0 and \
                        _same_flags(mfree1[g], free):
                    nflag[g] |= M_SCAN1
                    acnt[g] = 0
                    continue
                else:
                    # incremental: only the rows on the links saturated since the
                    # last scan can have left (free links only become saturated)
                    if acnt[g] == 0:
                        if scan == 1:  # the record: no row free after round 1
                            nflag[g] |= M_SCAN1
                            mfree1[g, :] = free
                        continue
                    acnt[g] = _kill_rows(P, gptr, g, newly, nnew, lptrs, rows_all, alive,
                                         acnt[g], stamp, gcnt, gend, gok)
                    if acnt[g] > 0:
                        found = True
                        for lk in range(nl):
                            if gcnt[g, lk] > 0:
                                mark[lk] = True
                    elif scan == 1:
                        nflag[g] |= M_SCAN1
                        mfree1[g, :] = free
                    continue
                m = 0
                for t in range(acnt[g]):
                    i = alive[lo + t]
                    ok = True
                    for k in range(W):
                        if not free[P[i, k]]:
                            ok = False
                            break
                    if ok:
                        found = True
                        for k in range(W):
                            mark[P[i, k]] = True
                        alive[lo + m] = i
                        m += 1
                        # the counts the incremental scans and fillings keep
                        stamp[i] = 0
                        for k in range(W):
                            gcnt[g, P[i, k]] += 1
                acnt[g] = m
                lcnt[g] = m
                if scan == 0 and m == n:
                    # every row free: the links marked are the group's links (those
                    # with a row in its link index)
                    nflag[g] |= M_SCAN0
                    lp = lptrs[g]
                    for lk in range(nl):
                        mmark0[g, lk] = lp[lk + 1] > lp[lk]
            if found:
                mark[L] = False
                for lk in range(nl):
                    if mark[lk]:
                        Wl[lk] += wts[q]
            present[q] = found
            if found:
                anyp = True
        scan += 1
        if not anyp:
            break
        if done >= cap:
            out[1] = 1
            break
        done += 1
        moved = False
        for lk in range(nl):
            used[lk] = 0.0
            base[lk] = residual[lk]
        for q in range(Q):
            if not present[q]:
                continue
            w = wts[q]
            for lk in range(L):
                share[lk] = base[lk] * (w / Wl[lk]) if Wl[lk] > 0 else 0.0
            share[L] = np.inf
            for lk in range(nl):
                start[lk] = share[lk]
            for g in range(qptr[q], qptr[q + 1]):
                if acnt[g] > 0:
                    if done == 1:
                        lo = gptr[g]
                        hi = gptr[g + 1]
                        if hit0[g] and (mflag[g] & M_FILL1) != 0 and \
                                _same_on(min1[g], share, lptrs[g]):
                            lp = lptrs[g]
                            ran = (mflag[g] & M_RAN1) != 0
                            for lk in range(nl):
                                if lp[lk + 1] > lp[lk]:
                                    share[lk] = mout1[g, lk]
                                elif ran and share[lk] < 0.0:
                                    share[lk] = 0.0
                            if ran:
                                nflag[g] |= M_RAN1
                            out[2] += acnt[g]
                        else:
                            out[3] += acnt[g]
                            for lk in range(nl):
                                min1[g, lk] = share[lk]
                            for i in range(lo, hi):
                                lvl[i] = 0.0
                            ep += 1
                            st = _waterfill_kept(P, gptr, g, alive, acnt[g], stamp, ep,
                                                 gcnt, share, tol, lvl, lptrs, rows_all,
                                                 gend, gok, lcnt)
                            if st < 0:
                                return -1
                            if st > 0:
                                nflag[g] |= M_RAN1
                            for lk in range(nl):
                                mout1[g, lk] = share[lk]
                        nflag[g] |= M_FILL1
                        for i in range(lo, hi):
                            rate[i] += lvl[i]
                    else:
                        ep += 1
                        st = _waterfill_kept(P, gptr, g, alive, acnt[g], stamp, ep, gcnt,
                                             share, tol, rate, lptrs, rows_all, gend, gok,
                                             lcnt)
                        if st < 0:
                            return -1
                        if st > 0:
                            moved = True
            for lk in range(L):
                used[lk] += start[lk] - share[lk]
        for lk in range(L):
            residual[lk] -= used[lk]
        for lk in range(nl):
            if residual[lk] < 0.0:
                residual[lk] = 0.0
        if done >= 2 and not moved:
            # A fixed point: no row was active in this round (on every link of each
            # alive row some share was <= tol), so no share, rate or residual changed
            # (used is exactly 0, and the residual was clamped by the round before).
            # The next scan sees the same free links, prunes nothing and finds the
            # same queues present, and so on: every later round repeats this one
            # until the cap.  Going to the final strict pass now gives the same
            # rates and residuals bit for bit as running out the cap.
            out[1] = 2
            break
    for g in range(G):
        mflag[g] = nflag[g]
    out[0] = done
    if out[1] == 0:
        return 0
    for g in range(G):
        if acnt[g] > 0:
            if lcnt[g] != acnt[g]:
                lcnt[g] = _compact_alive(alive, gptr[g], lcnt[g], stamp)
            if _waterfill_alive(P, gptr, g, alive, acnt[g], residual, tol, rate, lptrs,
                                rows_all) < 0:
                return -1
    return 0


@_jit
def greedy_kernel(P, residual, tol, rate):  # pragma: no cover - compiled
    """Sincronia Algorithm 2 generalised to paths (:func:`.seedbase.greedy_rates`):
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

    Same floating-point operations as :func:`.seedbase._greedy_rates_rescan`: the
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


@_jit
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
            group's rows (supersets are fine: :meth:`.seedbase._Group.end_links`).
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


@_jit
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


@_jit
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


@_jit
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


@_jit
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


@_jit
def maxmin_flat_kernel(lens, lidx, residual, tol, rate):  # pragma: no cover - compiled
    """Unweighted max-min fair rates without demands, the compiled twin of
    :func:`.base.max_min_fair_flat` (progressive filling with incremental
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


@_jit
def load_change_kernel(glob_P, glob_len, act_idx, w, prev, load):  # pragma: no cover
    """The simulator's link-load update for the flows whose rate changed: ``load +=
    np.bincount(links of the changed flows, weights=(w - prev) repeated per link,
    minlength=len(load))`` over the positions j with ``w[j] != prev[j]`` in order,
    each flow's links in hop order (:func:`rapier_app.sim.simulator._link_load`).

    Args:
        glob_P: int64 (flows x width) link ids per global flow index.
        glob_len: int64 valid entries per row of ``glob_P``.
        act_idx: int64 global index per active position.
        w, prev: float64 new and previous rate (bit/s) per active position.
        load: float64 per link (bit/s), updated in place when a rate changed.

    Returns:
        How many positions changed rate (0: ``load`` untouched).

    The per-link sums run in the same order as ``np.bincount``'s (from 0.0, one
    addition per selected entry), then one addition per link, so ``load`` is bit
    for bit what the numpy expression gives.
    """
    n_links = load.shape[0]
    tmp = np.zeros(n_links)
    nch = 0
    for j in range(w.shape[0]):
        if w[j] != prev[j]:
            nch += 1
            d = w[j] - prev[j]
            g = act_idx[j]
            for h in range(glob_len[g]):
                tmp[glob_P[g, h]] += d
    if nch:
        for lk in range(n_links):
            load[lk] += tmp[lk]
    return nch


@_jit
def sim_look_kernel(rate_pos, act_idx, glob_len):  # pragma: no cover - compiled
    """The simulator's sending mask and, for sticky-path schedulers, the positions
    whose path must be validated: ``pos = ~(rate_pos <= 0)`` (a NaN rate counts as
    sending, so the rate check catches it) and ``look = np.flatnonzero(pos &
    (glob_len[act_idx] <= 0))`` (sending flows with no validated path yet), in one
    pass over the m active positions instead of five numpy passes.

    Args:
        rate_pos: float64[m] rate per active position (bit/s).
        act_idx: int64[m] global flow index per position.
        glob_len: int64 validated path length per global flow index.

    Returns:
        (pos bool[m], look int64[k], increasing).
    """
    m = rate_pos.shape[0]
    pos = np.empty(m, np.bool_)
    look = np.empty(m, np.int64)
    k = 0
    for j in range(m):
        s = not (rate_pos[j] <= 0.0)
        pos[j] = s
        if s and glob_len[act_idx[j]] <= 0:
            look[k] = j
            k += 1
    return pos, look[:k]


@_jit
def sim_select_kernel(pos, rate_pos, act_idx, size, sent, glob_P, glob_len, prev,
                      load):  # pragma: no cover - compiled
    """One pass of the simulator's per-event vector work over the m active
    positions, once the sending mask ``pos`` is final (paths validated).

    Computes, bit for bit as the numpy code of :meth:`Simulator._run` does:
    ``sel = np.flatnonzero(pos)``; ``rate = rate_pos[sel]``; ``gsel =
    act_idx[sel]``; ``sent_g = sent[gsel]``; ``ttf = np.maximum(size[gsel] -
    sent_g, 0.0) * 8 / rate`` (seconds to finish at the current rate); ``w =
    np.where(pos, rate_pos, 0.0)`` (the rate each position sends at); and the link
    loads of :func:`load_change_kernel` (``load`` += the change from ``prev`` to
    ``w``, summed in position order then hop order).

    Args:
        pos: bool[m] sending positions; rate_pos: float64[m] (bit/s);
        act_idx: int64[m] global flow index per position;
        size, sent: float64 per global flow index (bytes);
        glob_P, glob_len: validated link rows per global flow index;
        prev: float64[m] the rate each position was counted at in ``load``;
        load: float64 per link (bit/s), updated in place.

    Returns:
        (sel int64[n], rate float64[n], gsel int64[n], sent_g float64[n],
        ttf float64[n], w float64[m], bad, ttf_min): ``bad`` is the first sending
        position whose rate is not finite (-1: none; the caller raises), ``ttf_min``
        the smallest ``ttf`` (inf when n = 0).
    """
    m = rate_pos.shape[0]
    n = 0
    for j in range(m):
        if pos[j]:
            n += 1
    sel = np.empty(n, np.int64)
    rate = np.empty(n)
    gsel = np.empty(n, np.int64)
    sent_g = np.empty(n)
    ttf = np.empty(n)
    w = np.empty(m)
    bad = -1
    tmin = np.inf
    k = 0
    for j in range(m):
        if pos[j]:
            r = rate_pos[j]
            w[j] = r
            # r > 0 or NaN here (pos is "not r <= 0"): not finite iff not r < inf
            if bad < 0 and not r < np.inf:
                bad = j
            g = act_idx[j]
            sel[k] = j
            rate[k] = r
            gsel[k] = g
            s = sent[g]
            sent_g[k] = s
            rem = size[g] - s
            if rem < 0.0:
                rem = 0.0
            t = rem * 8.0 / r
            ttf[k] = t
            if t < tmin:
                tmin = t
            k += 1
        else:
            w[j] = 0.0
    # a second, tight pass: the load change in position order
    load_change_kernel(glob_P, glob_len, act_idx, w, prev, load)
    return sel, rate, gsel, sent_g, ttf, w, bad, tmin


@_jit
def rank_select_kernel(alive, bcnt, sel):  # pragma: no cover - compiled
    """The global indices of the simulator's active positions ``sel``: position j
    is the j-th live flow in global-index order (flows are numbered in arrival
    order, then flow order, and never reordered), so ``out[k]`` is the index of
    the ``sel[k]``-th nonzero entry of ``alive``, i.e. ``np.flatnonzero(alive)[sel]``.
    Whole blocks of 64 indices are skipped with their live counts ``bcnt``, so a
    call costs O(blocks + 64 per block visited) instead of a per-position array
    kept compacted at every flow completion (issue 16).

    Args:
        alive: uint8 per global index (1: live); bcnt: int64 live count per block
            of 64 indices (``alive[64*b:64*b+64].sum()``); sel: int64 positions,
            increasing, each below ``alive.sum()``.

    Returns:
        int64 global indices, one per entry of ``sel``, increasing.
    """
    n = sel.shape[0]
    out = np.empty(n, np.int64)
    b = 0
    base = 0  # live indices before block b
    g = 0
    c = 0  # live indices before g
    for k in range(n):
        t = sel[k]
        while base + bcnt[b] <= t:
            base += bcnt[b]
            b += 1
        if g < 64 * b:
            g = 64 * b
            c = base
        while True:
            if alive[g]:
                if c == t:
                    out[k] = g
                    c += 1
                    g += 1
                    break
                c += 1
            g += 1
    return out


@_jit
def sim_senders_kernel(rate_pos, hint, use_hint, alive, bcnt, glob_len):  # pragma: no cover
    """The sparse step's sending flows in one call: the positions j (among
    ``hint`` when ``use_hint``, else all) with ``not rate_pos[j] <= 0`` (NaN counts
    as sending), their rates, their global indices (:func:`rank_select_kernel`) and
    which of them have no validated path yet (``glob_len <= 0``).

    Returns:
        (sel int64[n] increasing, gsel int64[n], rate float64[n] (bit/s),
        look int64[k]: indices into ``sel``, increasing).
    """
    m = hint.shape[0] if use_hint else rate_pos.shape[0]
    buf = np.empty(m, np.int64)
    n = 0
    for t in range(m):
        j = hint[t] if use_hint else t
        if not (rate_pos[j] <= 0.0):
            buf[n] = j
            n += 1
    sel = buf[:n].copy()
    rate = np.empty(n)
    for k in range(n):
        rate[k] = rate_pos[sel[k]]
    gsel = rank_select_kernel(alive, bcnt, sel)
    nl = 0
    for k in range(n):
        if glob_len[gsel[k]] <= 0:
            buf[nl] = k
            nl += 1
    return sel, gsel, rate, buf[:nl].copy()


@_jit
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


@_jit
def sim_sparse_kernel(gsel, rate, size, sent, glob_P, glob_len, prev_g, prev_rate,
                      load):  # pragma: no cover - compiled
    """:func:`sim_select_kernel` on the sending flows only, with the previous rates
    kept sparse: ``prev_g`` (increasing global indices) are the flows that sent at
    the previous event, at ``prev_rate`` (bit/s); every other flow was counted at 0
    in ``load``.  Global indices increase with the simulator's positions (flows are
    numbered in arrival order, then flow order, and never reordered), so walking
    the union of ``prev_g`` and ``gsel`` in index order adds the rate changes in
    :func:`load_change_kernel`'s position order: the same sums bit for bit (a flow
    in neither changes nothing there either).

    Args:
        gsel: int64[n] the sending flows' global indices, increasing (paths
            validated); rate: float64[n] their rates (bit/s);
        size, sent: float64 per global flow index (bytes); glob_P, glob_len:
            validated link rows; prev_g: int64[p]; prev_rate: float64[p];
        load: float64 per link (bit/s), updated in place.

    Returns:
        (sent_g float64[n] bytes sent so far, ttf float64[n] seconds to finish,
        bad: the first k whose rate is not finite (-1: none; the caller raises),
        ttf_min: the smallest ttf, inf when n = 0).
    """
    n = gsel.shape[0]
    sent_g = np.empty(n)
    ttf = np.empty(n)
    bad = -1
    tmin = np.inf
    for k in range(n):
        r = rate[k]
        if bad < 0 and not r < np.inf:
            bad = k
        g = gsel[k]
        s = sent[g]
        sent_g[k] = s
        rem = size[g] - s
        if rem < 0.0:
            rem = 0.0
        t = rem * 8.0 / r
        ttf[k] = t
        if t < tmin:
            tmin = t
    n_links = load.shape[0]
    tmp = np.zeros(n_links)
    nch = 0
    a = 0
    b = 0
    na = prev_g.shape[0]
    while a < na or b < n:
        if b >= n or (a < na and prev_g[a] < gsel[b]):
            g = prev_g[a]
            old = prev_rate[a]
            new = 0.0
            a += 1
        elif a >= na or gsel[b] < prev_g[a]:
            g = gsel[b]
            old = 0.0
            new = rate[b]
            b += 1
        else:
            g = gsel[b]
            old = prev_rate[a]
            new = rate[b]
            a += 1
            b += 1
        if new != old:
            nch += 1
            d = new - old
            for h in range(glob_len[g]):
                tmp[glob_P[g, h]] += d
    if nch:
        for lk in range(n_links):
            load[lk] += tmp[lk]
    return sent_g, ttf, bad, tmin


@_jit
def sim_advance_kernel(gsel, rate, sent_g, ttf, size, sent, dt,
                       thresh):  # pragma: no cover - compiled
    """The simulator's byte counters advanced by ``dt`` seconds: per sending flow k,
    finished when ``ttf[k] <= thresh`` (then its counter is its size), else
    ``sent_g[k] + rate[k] * dt / 8``; written to ``sent[gsel]`` in place.  The same
    operations as the numpy code of :meth:`Simulator._run`.

    Returns:
        (new_sent float64[n] in bytes, fin int64[f]: the finished k, increasing).
    """
    n = gsel.shape[0]
    new_sent = np.empty(n)
    fin = np.empty(n, np.int64)
    nf = 0
    for k in range(n):
        if ttf[k] <= thresh:
            v = size[gsel[k]]
            fin[nf] = k
            nf += 1
        else:
            v = sent_g[k] + rate[k] * dt / 8.0
        new_sent[k] = v
        sent[gsel[k]] = v
    return new_sent, fin[:nf]


@_jit
def drop_positions_kernel(a, pos):  # pragma: no cover - compiled
    """Remove the entries at ``pos`` (sorted, distinct) from the 1-D array ``a`` in
    place, keeping the others in order at the front; returns their count n, so
    ``a[:n]`` is ``a[keep]`` (``keep`` the boolean mask without ``pos``).  Only the
    entries after ``pos[0]`` move (a forward copy per gap), instead of the three
    passes and the new array of boolean-mask indexing."""
    n = a.shape[0]
    k = pos.shape[0]
    if k == 0:
        return n
    w = pos[0]
    for t in range(k):
        end = pos[t + 1] if t + 1 < k else n
        for i in range(pos[t] + 1, end):
            a[w] = a[i]
            w += 1
    return w


@_jit
def coflow_sent_kernel(cof_of, gsel, new_sent, sent_g, cof_sent):  # pragma: no cover
    """``cof_sent += np.bincount(cof_of[gsel], weights=new_sent - sent_g,
    minlength=len(cof_sent))`` (bytes per coflow serial), summed in the same order,
    so bit for bit the numpy expression's result."""
    tmp = np.zeros(cof_sent.shape[0])
    for k in range(gsel.shape[0]):
        tmp[cof_of[gsel[k]]] += new_sent[k] - sent_g[k]
    for c in range(cof_sent.shape[0]):
        cof_sent[c] += tmp[c]


@_jit
def greedy_place_kernel(order, vol, off, npaths, nhops, mflat, load, capx,
                        out):  # pragma: no cover - compiled
    """RAPIER's greedy spread placement (:meth:`.rapier_round.RoundingMixin.
    _greedy_paths`) compiled: flows in ``order`` (indices, non-increasing volume),
    flow j (``vol[j]`` bits) takes the candidate path that minimises the largest
    ``(load_l + v) / C_l`` along it (first on ties; NaN as ``np.maximum`` and
    ``np.argmin`` treat it), and its volume is added to ``load`` on that path's links.

    Flow j's candidate paths are the ``npaths[j] x nhops[j]`` row-major block of
    ``mflat`` at ``off[j]`` (link ids padded with the sentinel ``L =
    len(capx) - 1``, whose ``capx`` is inf and whose load is never raised).
    ``load`` (float64[L + 1], bits: reserved volume, then the placed flows) and
    ``capx`` (bit/s) as in the numpy code; the chosen path index of each flow is
    written to ``out``.  Same operations per element as the numpy code (add, then
    divide; max and min are exact), so the same choices and loads bit for bit.
    Source: this project's ``tie_break="spread"`` (RAPIER Alg. 2 rounding)."""
    L = capx.shape[0] - 1
    for t in range(order.shape[0]):
        j = order[t]
        v = vol[j]
        o = off[j]
        K = npaths[j]
        H = nhops[j]
        best = 0
        if K > 1:
            bval = 0.0
            for k in range(K):
                mx = 0.0
                for h in range(H):
                    lk = mflat[o + k * H + h]
                    x = (load[lk] + v) / capx[lk]
                    if h == 0:
                        mx = x
                    elif mx != mx:
                        pass
                    elif x != x or x > mx:
                        mx = x
                if k == 0:
                    bval = mx
                    if mx != mx:
                        break
                elif mx != mx:
                    best = k
                    break
                elif mx < bval:
                    bval = mx
                    best = k
        out[j] = best
        base = o + best * H
        for h in range(H):
            lk = mflat[base + h]
            if lk < L:
                load[lk] += v


@_jit
def route_load_kernel(vol, off, nhops, kidx, mflat, L, load):  # pragma: no cover
    """Bits per link when flow j (``vol[j]`` bits) takes path ``kidx[j]`` of its
    block (layout of :func:`greedy_place_kernel`): added to ``load`` (float64[L])
    flow by flow in flow order, hop by hop, as ``np.bincount`` over the flows'
    concatenated link arrays adds them, so the sums are bit for bit
    :func:`.rapier_lp.route_load`'s.  Source: RAPIER (2a) with x fixed."""
    for j in range(vol.shape[0]):
        H = nhops[j]
        base = off[j] + kidx[j] * H
        v = vol[j]
        for h in range(H):
            lk = mflat[base + h]
            if lk < L:
                load[lk] += v


@_jit
def any_room_kernel(off, npaths, nhops, mflat, rx, out):  # pragma: no cover - compiled
    """Per flow (path blocks of :func:`greedy_place_kernel`): whether some candidate
    path has ``rx > 0`` on every link (``rx``: residual in bit/s with an inf entry
    for the sentinel link; a NaN counts as no room, as ``np.minimum`` and ``> 0``
    treat it).  Written to ``out`` (bool).  :meth:`.rapier_plan._CoflowArrays.
    any_room` compiled; RAPIER Alg. 3 (a flow with room on some candidate)."""
    for j in range(off.shape[0]):
        o = off[j]
        H = nhops[j]
        found = False
        for k in range(npaths[j]):
            ok = True
            for h in range(H):
                if not rx[mflat[o + k * H + h]] > 0.0:
                    ok = False
                    break
            if ok:
                found = True
                break
        out[j] = found


@_jit
def gather_routes_kernel(off, nhops, kidx, mflat, L, lens):  # pragma: no cover
    """The link indices of path ``kidx[j]`` of each flow's block (layout of
    :func:`greedy_place_kernel`), sentinel entries dropped, concatenated in flow
    order (int64 array returned); each flow's count is written to ``lens``.  The
    ``r_lidx, r_lens`` of :meth:`.rapier_plan._CoflowArrays.route_arrays`."""
    n = off.shape[0]
    tot = 0
    for j in range(n):
        base = off[j] + kidx[j] * nhops[j]
        c = 0
        for h in range(nhops[j]):
            if mflat[base + h] < L:
                c += 1
        lens[j] = c
        tot += c
    out = np.empty(tot, np.int64)
    t = 0
    for j in range(n):
        base = off[j] + kidx[j] * nhops[j]
        for h in range(nhops[j]):
            lk = mflat[base + h]
            if lk < L:
                out[t] = lk
                t += 1
    return out


def argmax_rows(ms) -> "np.ndarray | None":
    """``[int(np.argmax(m)) for m in ms]`` as an int64 array, vectorised over the
    concatenated rows (first maximum of each row, as ``np.argmax``); None when a
    row is empty or holds a NaN (then the caller takes the per-row argmax)."""
    n = len(ms)
    if not n:
        return np.zeros(0, np.int64)
    if hasattr(ms, "flat") and hasattr(ms, "starts"):  # rapier_lp.RowBlocks: rows in order
        flat, starts, lens = ms.flat, ms.starts, ms.lens
        if not lens.all():
            return None
    else:
        lens = np.fromiter(map(len, ms), np.int64, n)
        if not lens.all():
            return None
        flat = np.concatenate(ms)
        starts = np.zeros(n, np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
    if np.isnan(flat).any():
        return None
    mx = np.maximum.reduceat(flat, starts)
    hit = np.flatnonzero(flat == np.repeat(mx, lens))
    return hit[np.searchsorted(hit, starts)] - starts


@_jit
def expand_commodities_kernel(vols, mflat, mptr, K, has_m, mg_flat, mg_off, tot, alpha,
                              fo, out):  # pragma: no cover - compiled
    """The per-flow optimum of :func:`.rapier_lp.solve_lp4_aggregated` from its
    commodity solution, compiled: commodity g's flows ``mflat[mptr[g]:mptr[g+1]]``
    (member order) fill its ``K[g]`` paths in order of non-increasing volume
    (``vols``, bits; a stable sort, as ``np.argsort(-v, kind="stable")``) up to the
    quotas ``V_g m_gk / alpha``; ``has_m[g]`` is 0 for a commodity without a routing
    choice (then each flow gets ``alpha`` on its first path), else its LP values are
    ``mg_flat[mg_off[g]:mg_off[g] + K[g]]`` with sum ``tot[g]`` (computed by numpy,
    whose sum is pairwise).  Flow j's row (1/s) is written to ``out[fo[j]:fo[j] +
    K]``.  Each element is computed with the numpy code's operations in its order
    (sequential cumulative sums, then elementwise), so the rows are bit for bit the
    same.  Source: RAPIER model (4), the expansion of the commodity LP."""
    G = mptr.shape[0] - 1
    for g in range(G):
        a = mptr[g]
        b = mptr[g + 1]
        k_n = K[g]
        if has_m[g] == 0 or k_n == 1:
            for t in range(a, b):
                j = mflat[t]
                o = fo[j]
                out[o] = alpha
                for k in range(1, k_n):
                    out[o + k] = 0.0
            continue
        nm = b - a
        negv = np.empty(nm)
        for t in range(nm):
            negv[t] = -vols[mflat[a + t]]
        srt = np.argsort(negv, kind="mergesort")
        v = np.empty(nm)
        c_hi = np.empty(nm)
        acc = 0.0
        for t in range(nm):
            v[t] = vols[mflat[a + srt[t]]]
            acc = acc + v[t] if t else v[t]
            c_hi[t] = acc
        total = c_hi[nm - 1]
        frac = np.empty(k_n)
        mo = mg_off[g]
        tg = tot[g]
        if tg > 0:
            for k in range(k_n):
                frac[k] = mg_flat[mo + k] / tg
        else:
            for k in range(k_n):
                frac[k] = 1.0 / k_n
        q_hi = np.empty(k_n)
        s = 0.0
        for k in range(k_n):
            s = s + frac[k] if k else frac[k]
            q_hi[k] = s * total
        q_hi[k_n - 1] = total
        for t in range(nm):
            j = mflat[a + srt[t]]
            o = fo[j]
            vt = v[t]
            hi = c_hi[t]
            lo = hi - vt
            for k in range(k_n):
                qh = q_hi[k]
                ql = q_hi[k - 1] if k else 0.0
                x = (hi if hi < qh else qh) - (lo if lo > ql else ql)
                if x < 0.0:
                    x = 0.0
                if vt > 0:
                    out[o + k] = (x / vt) * alpha
                else:
                    out[o + k] = frac[k] * alpha


@_jit
def _crosses(P, f, lk):  # pragma: no cover - compiled
    """Whether row ``f`` of the padded path matrix ``P`` holds link ``lk``."""
    for k in range(P.shape[1]):
        if P[f, k] == lk:
            return True
    return False


@_jit
def wc_update_kernel(Dl, cnts, F, P, check_on, alive, rates, cap, tol, rx,
                     room):  # pragma: no cover - compiled
    """The incremental residual and room update of work conservation
    (:meth:`.conserve.WorkConservation._update`), compiled.  For each dirty link
    ``Dl[i]`` (increasing), its flows are the next ``cnts[i]`` entries of ``F``
    (increasing flow indices); with ``check_on`` a flow counts only if its current
    path (row of ``P``, padded with the sentinel link) still crosses the link.  The
    link's load is the sum of the rates (bit/s) of its counted live flows with a
    rate, added in flow order from 0.0 (as ``np.bincount`` adds), its residual
    ``cap - load`` cut to 0 at ``tol``, written to ``rx`` (residual with the
    sentinel's inf last); then every counted live flow's ``room`` is whether the
    minimum of ``rx`` over its path is positive.  Bit for bit the numpy update.
    Source: RAPIER Algorithm 3 at flow completions (issue 12)."""
    W = P.shape[1]
    o = 0
    for i in range(Dl.shape[0]):
        lk = Dl[i]
        acc = 0.0
        for t in range(o, o + cnts[i]):
            f = F[t]
            if check_on and not _crosses(P, f, lk):
                continue
            if alive[f] and rates[f] > 0:
                acc += rates[f]
        r = cap[lk] - acc
        if r <= tol[lk]:
            r = 0.0
        rx[lk] = r
        o += cnts[i]
    o = 0
    for i in range(Dl.shape[0]):
        lk = Dl[i]
        for t in range(o, o + cnts[i]):
            f = F[t]
            if not alive[f]:
                continue
            if check_on and not _crosses(P, f, lk):
                continue
            m = rx[P[f, 0]]
            for k in range(1, W):
                x = rx[P[f, k]]
                if x < m:
                    m = x
            room[f] = m > 0
        o += cnts[i]


@_jit
def mark_blocks_kernel(off, npaths, nhops, mflat, mark):  # pragma: no cover - compiled
    """Set ``mark[l]`` for every link ``l`` of every flow's path block (layout of
    :func:`greedy_place_kernel`; the sentinel's entry is set too when a block is
    padded).  ``np.flatnonzero(mark[:L])`` is then the sorted set of the flows'
    candidate links (:attr:`.rapier_plan._CoflowArrays.all_links`)."""
    for j in range(off.shape[0]):
        o = off[j]
        for t in range(npaths[j] * nhops[j]):
            mark[mflat[o + t]] = True
