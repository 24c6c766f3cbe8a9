"""Compiled weighted multi-queue pass of Aalo and Philae (Aalo, SIGCOMM 2015,
Pseudocode 1): queues share each link in proportion to their weights, round after
round, a progressive filling per queue kept incrementally across rounds.

Serves :meth:`~rapier_app.scheduling.seeds.base._SeedScheduler.weighted_pass`.
Units: bit/s for residual capacities, tolerances and rates.
"""

from __future__ import annotations

import numpy as np

from . import jit
from .alloc import DEAD, _keep_counted, _one_group, _waterfill_fill


@jit
def _active_rows(P, lo, hi, alive, na, residual, tol):  # pragma: no cover - compiled
    """The rows of a group (rows ``lo..hi-1``) among its ``na`` alive ones
    (``alive[lo:lo + na]``, global row ids) whose every link has residual above
    the tolerance: ``(act, n)``, ``act`` int32 per group row, 0 for an active row
    (stamp 0, epoch 1) and :data:`DEAD` otherwise, ``n`` the number active."""
    W = P.shape[1]
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
    return act, n_act


@jit
def _count_active(P, lo, alive, na, act, cnt):  # pragma: no cover - compiled
    """Add to ``cnt`` (float64 per link) the links of the alive rows that
    :func:`_active_rows` found active, one per row and link, in row order."""
    W = P.shape[1]
    for t in range(na):
        i = alive[lo + t]
        if act[i - lo] == 0:
            for k in range(W):
                cnt[P[i, k]] += 1.0


@jit
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
    act, n_act = _active_rows(P, lo, hi, alive, na, residual, tol)
    if n_act == 0:
        return 0
    cnt = np.zeros(nl)
    _count_active(P, lo, alive, na, act, cnt)
    if _waterfill_fill(P, lo, hi, residual, tol, rate, lptrs[g:g + 1],
                       rows_all[lo * W:hi * W], _one_group(hi - lo), act, 1, n_act,
                       cnt) < 0:
        return -1
    return 1


@jit
def _last_link(P, i, dummy):  # pragma: no cover - compiled
    """The last link of row ``i`` of ``P`` that is not the padding ``dummy`` (the
    row's first link when every later entry is padding)."""
    last = P[i, 0]
    for k in range(1, P.shape[1]):
        if P[i, k] != dummy:
            last = P[i, k]
    return last


@jit
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


@jit
def _kill_rows(P, gptr, g, newly, nnew, lptrs, rows_all, alive, na, stamp, gcnt, gend,
               gok, kbuf):  # pragma: no cover - compiled
    """The rows of group ``g`` on the links ``newly[:nnew]`` (just saturated) leave
    its ``na`` alive rows: their ``stamp`` becomes :data:`DEAD` and they leave the
    per-link counts ``gcnt[g]`` and, when kept (``gok[g]``), the end counts
    ``gend[g]`` (:func:`_count_ends`).  The list of alive rows is not touched (it
    may then hold dead rows until :func:`_compact_alive`).  ``kbuf`` (int64, at
    least ``na`` entries) is scratch for the rows killed; when every alive row dies
    the counts are left as they are (the pass reads no count of a group without
    alive rows).  Returns the number of rows left alive."""
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
                kbuf[killed] = j
                killed += 1
    if killed == na:
        # no row left: the group's counts are never read again in this pass (its
        # scans, fillings and final pass look only at groups with alive rows), so
        # their decrements, a read of every killed row, are skipped
        return 0
    for t in range(killed):
        j = kbuf[t]
        for k in range(W):
            gcnt[g, P[j, k]] -= 1
        if gok[g]:
            gend[g, 0, P[j, 0]] -= 1
            gend[g, 1, _last_link(P, j, L)] -= 1
    return na - killed


@jit
def _compact_alive(alive, lo, listed, stamp):  # pragma: no cover - compiled
    """Drop the rows whose ``stamp`` is :data:`DEAD` from the ``listed`` entries of
    ``alive[lo:]`` (increasing global row ids), in place, order kept; returns how
    many are left.  :func:`weighted_kernel` compacts a group's list only before a
    pass over it (:func:`_count_ends`, :func:`_waterfill_alive`), not at every kill:
    on the Facebook hour's giants under Philae the compactions at every scan cost
    about a tenth of the pass."""
    m = 0
    for t in range(listed):
        i = alive[lo + t]
        if stamp[i] != DEAD:
            alive[lo + m] = i
            m += 1
    return m


@jit
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


@jit
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
    such cases.

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


@jit
def _group_links(P, gptr, lptrs, L, mark):  # pragma: no cover - compiled
    """Per group of the stack, the links its rows cross (the dummy ``L`` left out),
    increasing: group g's are ``glk[glp[g]:glp[g + 1]]``, the links with a row in
    its link index ``lptrs[g]``.  Collected from the rows when a group has fewer
    entries than there are links (``mark``: bool scratch per link, all False, left
    so), else from the link index.  Lets :func:`weighted_kernel` visit a group's
    links instead of every link of the fabric in its per-group steps (on
    ``fattree:10``, 1,500 links against a few dozen per coflow)."""
    W = P.shape[1]
    G = gptr.shape[0] - 1
    glp = np.empty(G + 1, np.int64)
    tot = 0
    for g in range(G):
        tot += min((gptr[g + 1] - gptr[g]) * W, L)
    glk = np.empty(tot, np.int64)
    m = 0
    glp[0] = 0
    for g in range(G):
        lo = gptr[g]
        n = gptr[g + 1] - lo
        if n * W < L:
            s = m
            for i in range(lo, lo + n):
                for k in range(W):
                    lk = P[i, k]
                    if lk < L and not mark[lk]:
                        mark[lk] = True
                        glk[m] = lk
                        m += 1
            glk[s:m].sort()
            for t in range(s, m):
                mark[glk[t]] = False
        else:
            lp = lptrs[g]
            for lk in range(L):
                if lp[lk + 1] > lp[lk]:
                    glk[m] = lk
                    m += 1
        glp[g + 1] = m
    return glp, glk


@jit
def _fill_links(P, lo, hi, residual, tol, rate, lp, rows_g, act, ep, n_act, cnt, glk,
                g0, g1, neg, was_sat, ul, sat):  # pragma: no cover - compiled
    """:func:`~.alloc._waterfill_fill` of one group (rows ``lo..hi-1``, link index
    ``lp`` and ``rows_g``) whose links are ``glk[g0:g1]`` (:func:`_group_links`),
    visiting those links instead of every link: ``cnt`` is zero off them (the
    dummy aside), so the links with active rows, hence every step, are the same.
    The first step's clamp of negative residuals runs over every link only when
    ``neg`` (some entry of ``residual`` may be below 0): without it the clamp is a
    no-op off the links whose residual the step lowered.  ``was_sat``, ``ul`` and
    ``sat`` are scratch per link.  The same operations on the same links in the
    same order, so bit for bit the same rates and residuals."""
    W = P.shape[1]
    nl = residual.shape[0]
    cnt[nl - 1] = 0.0
    nu = 0
    for t in range(g0, g1):
        lk = glk[t]
        was_sat[lk] = residual[lk] <= tol[lk]
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
        nsat = 0
        if first:
            for u in range(nu):
                lk = ul[u]
                residual[lk] -= inc * cnt[lk]
            if neg:
                for lk in range(nl):
                    if residual[lk] < 0.0:
                        residual[lk] = 0.0
            else:
                for u in range(nu):
                    lk = ul[u]
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
            for e in range(lp[lk], lp[lk + 1]):
                j = rows_g[e]
                if act[j] < ep:
                    act[j] = ep
                    n_act -= 1
                    rate[lo + j] += level
                    froze = True
                    for k in range(W):
                        cnt[P[lo + j, k]] -= 1.0
        cnt[nl - 1] = 0.0
        if froze:
            nu = _keep_counted(ul, nu, cnt)
    return 0


@jit
def _clear_counts(cnt, glk, g0, g1):  # pragma: no cover - compiled
    """Zero ``cnt`` on the links ``glk[g0:g1]`` and on the dummy (the last entry):
    the scratch counts of :func:`_fill_links` back to all zeros."""
    for t in range(g0, g1):
        cnt[glk[t]] = 0.0
    cnt[cnt.shape[0] - 1] = 0.0


@jit
def _alive_links(P, gptr, g, alive, na, residual, tol, rate, lptrs, rows_all, glk, g0,
                 g1, neg, cnt, was_sat, ul, sat):  # pragma: no cover - compiled
    """:func:`_waterfill_alive` on the group's links ``glk[g0:g1]`` only
    (:func:`_fill_links`; ``cnt`` all zeros on entry and on return): the same
    active rows, counts and filling, bit for bit."""
    W = P.shape[1]
    lo = gptr[g]
    hi = gptr[g + 1]
    act, n_act = _active_rows(P, lo, hi, alive, na, residual, tol)
    if n_act == 0:
        return 0
    _count_active(P, lo, alive, na, act, cnt)
    st = _fill_links(P, lo, hi, residual, tol, rate, lptrs[g], rows_all[lo * W:hi * W],
                     act, 1, n_act, cnt, glk, g0, g1, neg, was_sat, ul, sat)
    _clear_counts(cnt, glk, g0, g1)
    if st < 0:
        return -1
    return 1


@jit
def _ends_blocked_links(gend, g, residual, tol, glk, g0, g1):  # pragma: no cover
    """:func:`_ends_blocked` looking at the group's links ``glk[g0:g1]`` only (the
    end counts are zero off them): the same answer in O(its links)."""
    for side in range(2):
        blocked = True
        for t in range(g0, g1):
            lk = glk[t]
            if gend[g, side, lk] > 0 and residual[lk] > tol[lk]:
                blocked = False
                break
        if blocked:
            return True
    return False


@jit
def _kept_links(P, gptr, g, alive, na, stamp, ep, gcnt, residual, tol, rate, lptrs,
                rows_all, gend, gok, lcnt, glk, g0, g1, neg, cnt, was_sat, ul,
                sat):  # pragma: no cover - compiled
    """:func:`_waterfill_kept` visiting the group's links ``glk[g0:g1]``
    (:func:`_group_links`) instead of every link: its kept counts ``gcnt[g]`` and
    end counts are zero off them, so the blocked-ends test, the links whose rows
    are visited, the counts and the filling (:func:`_fill_links`) are the same, bit
    for bit.  ``neg``: ``residual`` may hold an entry below 0; ``cnt`` (all zeros
    on entry and on return), ``was_sat``, ``ul``, ``sat``: scratch per link."""
    W = P.shape[1]
    lo = gptr[g]
    hi = gptr[g + 1]
    lp = lptrs[g]
    if gok[g] and _ends_blocked_links(gend, g, residual, tol, glk, g0, g1):
        return 0
    visits = 0
    for t in range(g0, g1):
        lk = glk[t]
        if gcnt[g, lk] > 0 and not residual[lk] > tol[lk]:
            visits += lp[lk + 1] - lp[lk]
    if visits > na:
        if lcnt[g] != na:
            lcnt[g] = _compact_alive(alive, lo, lcnt[g], stamp)
        if not gok[g]:
            _count_ends(P, gptr, g, alive, na, gend)
            gok[g] = True
            if _ends_blocked_links(gend, g, residual, tol, glk, g0, g1):
                return 0
        return _alive_links(P, gptr, g, alive, na, residual, tol, rate, lptrs, rows_all,
                            glk, g0, g1, neg, cnt, was_sat, ul, sat)
    act = stamp[lo:hi]
    n_act = na
    for t in range(g0, g1):
        lk = glk[t]
        cnt[lk] = float(gcnt[g, lk])
    if visits:
        bw = lo * W
        for t in range(g0, g1):
            lk = glk[t]
            if gcnt[g, lk] > 0 and not residual[lk] > tol[lk]:
                for e in range(lp[lk], lp[lk + 1]):
                    j = rows_all[bw + e]
                    if act[j] < ep:
                        act[j] = ep
                        n_act -= 1
                        for k in range(W):
                            cnt[P[lo + j, k]] -= 1.0
    if n_act == 0:
        _clear_counts(cnt, glk, g0, g1)
        return 0
    st = _fill_links(P, lo, hi, residual, tol, rate, lp, rows_all[lo * W:hi * W], act, ep,
                     n_act, cnt, glk, g0, g1, neg, was_sat, ul, sat)
    _clear_counts(cnt, glk, g0, g1)
    if st < 0:
        return -1
    return 1


@jit
def _same_on(a, b, lp):  # pragma: no cover - compiled
    """Whether float64 vectors ``a`` and ``b`` are equal bit for bit on the links
    that have a row in the link index ``lp`` (:func:`_csr`)."""
    ai = a.view(np.int64)
    bi = b.view(np.int64)
    for k in range(ai.shape[0]):
        if lp[k + 1] > lp[k] and ai[k] != bi[k]:
            return False
    return True


@jit
def _same_flags(a, b):  # pragma: no cover - compiled
    """Whether boolean vectors ``a`` and ``b`` are equal."""
    for k in range(a.shape[0]):
        if a[k] != b[k]:
            return False
    return True


@jit
def _same_flags_on(a, b, glk, g0, g1):  # pragma: no cover - compiled
    """Whether vectors ``a`` and ``b`` are equal on the links ``glk[g0:g1]``."""
    for t in range(g0, g1):
        if a[glk[t]] != b[glk[t]]:
            return False
    return True


@jit
def _same_on_links(a, b, glk, g0, g1):  # pragma: no cover - compiled
    """Whether float64 vectors ``a`` and ``b`` are equal bit for bit on the links
    ``glk[g0:g1]`` (:func:`_same_on` on a group's links)."""
    ai = a.view(np.int64)
    bi = b.view(np.int64)
    for t in range(g0, g1):
        if ai[glk[t]] != bi[glk[t]]:
            return False
    return True


@jit
def _copy_on(dst, src, glk, g0, g1):  # pragma: no cover - compiled
    """``dst[l] = src[l]`` for the links ``l`` of ``glk[g0:g1]``."""
    for t in range(g0, g1):
        dst[glk[t]] = src[glk[t]]


#: :func:`weighted_kernel` memo flags, per group: its scan before round 1 found every
#: row free (``M_SCAN0``), its round-1 filling is recorded (``M_FILL1``), its scan
#: after round 1 found no row free (``M_SCAN1``); ``M_FREE0``: the free-link vector
#: of the scan before round 1 is recorded (every record depends on it); ``M_RAN1``:
#: the round-1 filling had an active row (so it clamped negative residuals to 0).
M_FREE0, M_SCAN0, M_FILL1, M_SCAN1, M_RAN1 = 1, 2, 4, 8, 16


@jit
def weighted_kernel(P, gptr, qptr, wts, residual, tol, rate, cap, out, lptrs,
                    rows_all, mflag, mfree0, mmark0, min1, mout1, mfree1,
                    lvl):  # pragma: no cover
    """Aalo Pseudocode 1's weighted sharing across queues on a network of links:
    :meth:`~rapier_app.scheduling.seeds.base._SeedScheduler.weighted_pass` with every
    flow eligible, compiled.

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

    Memo.  Between two decision points most coflows keep their flows,
    and a group's part of round 1 is a pure function of its rows and of inputs
    the record keeps: the scan before round 1 of the free-link vector ``mfree0``
    (its result: every row free; the links it then marks are the group's links,
    so ``mmark0`` is no longer written or read); the filling
    of round 1 of the alive rows (fixed by ``mfree0``) and of the share vector it
    is given (``min1``, compared bit for bit), whose results are the share vector
    after it (``mout1``) and each row's frozen level (``lvl``, added to ``rate``
    as the filling itself adds it: 0.0 + level is level); the scan after round 1
    of the free-link vector ``mfree1`` (its result kept only when no row is free).
    When the inputs are the same, the kept results are used instead of
    recomputing them, so every rate and residual is bit for bit what the full
    computation gives (``tests/test_kernels.py`` checks every pass of whole runs).
    The records are read and written on the group's links only (:func:`_group_links`):
    its scans and fillings read the free links and shares there alone.

    Per-group steps visit the group's links, not every link of the fabric
    (:func:`_kept_links`, :func:`_alive_links`, :func:`_fill_links`): the same
    operations on the links that change, bit for bit.
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
    # Per group, the links its rows cross: the per-group steps below visit these
    # only (a coflow crosses a few dozen of fattree:10's 1,500 links), with scratch
    # per-link arrays kept across the fillings (cntb all zeros between them)
    lmark = np.zeros(nl, np.bool_)
    glp, glk = _group_links(P, gptr, lptrs, L, lmark)
    cntb = np.zeros(nl)
    wsat = np.empty(nl, np.bool_)
    ulb = np.empty(nl, np.int64)
    satb = np.empty(nl, np.int64)
    kbuf = np.empty(P.shape[0], np.int64)
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
                g0 = glp[g]
                g1 = glp[g + 1]
                if scan == 0:
                    h = (mflag[g] & M_FREE0) != 0 and \
                        _same_flags_on(mfree0[g], free, glk, g0, g1)
                    hit0[g] = h
                    nflag[g] = M_FREE0
                    if not h:
                        _copy_on(mfree0[g], free, glk, g0, g1)
                    if h and (mflag[g] & M_SCAN0) != 0:
                        nflag[g] |= M_SCAN0
                        if n > 0:
                            found = True
                            # the links marked are the group's links
                            for t in range(g0, g1):
                                mark[glk[t]] = True
                            # every row alive: the kept counts are the link index's
                            lp = lptrs[g]
                            for i in range(lo, lo + n):
                                stamp[i] = 0
                            for t in range(g0, g1):
                                lk = glk[t]
                                gcnt[g, lk] = lp[lk + 1] - lp[lk]
                            gcnt[g, L] = lp[L + 1] - lp[L]
                        continue
                elif scan == 1 and hit0[g] and (mflag[g] & M_SCAN1) != 0 and \
                        _same_flags_on(mfree1[g], free, glk, g0, g1):
                    nflag[g] |= M_SCAN1
                    acnt[g] = 0
                    continue
                else:
                    # incremental: only the rows on the links saturated since the
                    # last scan can have left (free links only become saturated)
                    if acnt[g] == 0:
                        if scan == 1:  # the record: no row free after round 1
                            nflag[g] |= M_SCAN1
                            _copy_on(mfree1[g], free, glk, g0, g1)
                        continue
                    acnt[g] = _kill_rows(P, gptr, g, newly, nnew, lptrs, rows_all, alive,
                                         acnt[g], stamp, gcnt, gend, gok, kbuf)
                    if acnt[g] > 0:
                        found = True
                        for t in range(g0, g1):
                            lk = glk[t]
                            if gcnt[g, lk] > 0:
                                mark[lk] = True
                    elif scan == 1:
                        nflag[g] |= M_SCAN1
                        _copy_on(mfree1[g], free, glk, g0, g1)
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
                    # with a row in its link index, glk[g0:g1])
                    nflag[g] |= M_SCAN0
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
            # neg: some share below 0 (a negative input residual), which a
            # filling's first clamp then lifts on every link (:func:`_fill_links`)
            neg = False
            for lk in range(L):
                share[lk] = base[lk] * (w / Wl[lk]) if Wl[lk] > 0 else 0.0
                if share[lk] < 0.0:
                    neg = True
            share[L] = np.inf
            for lk in range(nl):
                start[lk] = share[lk]
            for g in range(qptr[q], qptr[q + 1]):
                if acnt[g] > 0:
                    g0 = glp[g]
                    g1 = glp[g + 1]
                    if done == 1:
                        lo = gptr[g]
                        hi = gptr[g + 1]
                        # (the records hold the group's links only: a group's
                        # round 1 reads and writes the share there, and the dummy's
                        # share is inf in every pass)
                        if hit0[g] and (mflag[g] & M_FILL1) != 0 and \
                                _same_on_links(min1[g], share, glk, g0, g1):
                            ran = (mflag[g] & M_RAN1) != 0
                            _copy_on(share, mout1[g], glk, g0, g1)
                            if ran and neg:  # the filling's clamp off its links
                                for lk in range(nl):
                                    if share[lk] < 0.0:
                                        share[lk] = 0.0
                            if ran:
                                nflag[g] |= M_RAN1
                            out[2] += acnt[g]
                        else:
                            out[3] += acnt[g]
                            _copy_on(min1[g], share, glk, g0, g1)
                            for i in range(lo, hi):
                                lvl[i] = 0.0
                            ep += 1
                            st = _kept_links(P, gptr, g, alive, acnt[g], stamp, ep, gcnt,
                                             share, tol, lvl, lptrs, rows_all, gend, gok,
                                             lcnt, glk, g0, g1, neg, cntb, wsat, ulb,
                                             satb)
                            if st < 0:
                                return -1
                            if st > 0:
                                nflag[g] |= M_RAN1
                            _copy_on(mout1[g], share, glk, g0, g1)
                        nflag[g] |= M_FILL1
                        for i in range(lo, hi):
                            rate[i] += lvl[i]
                    else:
                        ep += 1
                        st = _kept_links(P, gptr, g, alive, acnt[g], stamp, ep, gcnt,
                                         share, tol, rate, lptrs, rows_all, gend, gok,
                                         lcnt, glk, g0, g1, neg, cntb, wsat, ulb, satb)
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
    negr = False
    for lk in range(nl):
        if residual[lk] < 0.0:
            negr = True
    for g in range(G):
        if acnt[g] > 0:
            if lcnt[g] != acnt[g]:
                lcnt[g] = _compact_alive(alive, gptr[g], lcnt[g], stamp)
            if _alive_links(P, gptr, g, alive, acnt[g], residual, tol, rate, lptrs,
                            rows_all, glk, glp[g], glp[g + 1], negr, cntb, wsat, ulb,
                            satb) < 0:
                return -1
    return 0
