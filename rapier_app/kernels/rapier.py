"""Compiled passes of RAPIER (Zhao et al., INFOCOM 2015): Algorithm 2's
rounding (greedy placement, route loads, argmax of the LP's rows), the expansion of
LP (4)'s commodity solution to flows, and the candidate-path blocks of one coflow.

Serves :mod:`rapier_app.scheduling.rapier.rounding`, :mod:`~rapier_app.scheduling.
rapier.plan` and :mod:`~rapier_app.scheduling.rapier.lp4`.  Units: bits for volumes,
bit/s for capacities and loads.
"""

from __future__ import annotations

import numpy as np

from . import jit


@jit
def _add_path(load, mflat, base, H, L, v):  # pragma: no cover - compiled
    """Add ``v`` bits to ``load`` on the ``H`` links of ``mflat`` at ``base`` (the
    sentinel ``L`` skipped); ``-v`` takes them off (x + (-v) is x - v in IEEE 754)."""
    for h in range(H):
        lk = mflat[base + h]
        if lk < L:
            load[lk] += v


@jit
def _best_path(mflat, o, K, H, load, capx, v, avoid):  # pragma: no cover - compiled
    """Of the ``K x H`` block of ``mflat`` at ``o`` (one flow's candidate paths), the
    path of least largest ``(load_l + v) / capx_l`` along it, first on ties, a path
    crossing link ``avoid`` counting as inf (-1: none); NaN as ``np.maximum`` and
    ``np.argmin`` treat it (the first NaN path wins).  Returns (index, its value)."""
    best = 0
    bval = 0.0
    for k in range(K):
        mx = 0.0
        cross = False
        for h in range(H):
            lk = mflat[o + k * H + h]
            if lk == avoid:
                cross = True
            x = (load[lk] + v) / capx[lk]
            if h == 0:
                mx = x
            elif mx != mx:
                pass
            elif x != x or x > mx:
                mx = x
        if cross:
            mx = np.inf
        if k == 0:
            bval = mx
            if mx != mx:
                break
        elif mx != mx:
            best = k
            bval = mx
            break
        elif mx < bval:
            bval = mx
            best = k
    return best, bval


@jit
def greedy_place_kernel(order, vol, off, npaths, nhops, mflat, load, capx,
                        out):  # pragma: no cover - compiled
    """RAPIER's greedy spread placement
    (:meth:`~rapier_app.scheduling.rapier.rounding.LPRounding._greedy_paths`)
    compiled: flows in ``order`` (indices, non-increasing volume), flow j
    (``vol[j]`` bits) takes the candidate path that minimises the largest
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
            best, _ = _best_path(mflat, o, K, H, load, capx, v, -1)
        out[j] = best
        _add_path(load, mflat, o + best * H, H, L, v)


@jit
def local_search_kernel(order, vol, off, npaths, nhops, mflat, idx, load, capx, L,
                        limit):  # pragma: no cover - compiled
    """``rapier-ls``'s bottleneck local search
    (:func:`~rapier_app.scheduling.rapier.routes.local_search_routes`) compiled.

    Blocks as in :func:`greedy_place_kernel` (link ids padded with the sentinel
    ``L``, whose load stays 0 and whose ``capx`` is inf); ``idx[j]`` is flow j's
    current path (updated in place), ``load`` (float64[L + 1], bits) the current
    routes' load, ``capx`` (float64[L + 1], bit/s) the capacities with inf for zero
    ones, ``order`` the flows by non-increasing volume (ties: index).  While fewer
    than ``limit`` moves: take the first link of largest ``load / capx``; try its
    flows in ``order``: take the flow off, and move it to the path (not crossing
    that link) of least largest ``(load + v) / capx``, first on ties, if that is
    below the bottleneck ratio times (1 - 1e-12); else put it back.  Stop when no
    flow of the link moves.  Same operations per element, in the same order, as the
    numpy code (a sentinel hop's ratio is 0, which the maximum of non-negative
    ratios ignores), so the same moves and loads bit for bit.  Returns the number
    of moves.  Source: this project's ``rapier-ls`` rounding (routes module
    docstring, step 3)."""
    n = order.shape[0]
    thr = 1 - 1e-12
    moves = 0
    while moves < limit:
        lstar = 0
        rstar = load[0] / capx[0]
        if rstar == rstar:
            for l in range(1, L):
                x = load[l] / capx[l]
                if x != x:
                    lstar = l
                    rstar = x
                    break
                if x > rstar:
                    lstar = l
                    rstar = x
        if rstar <= 0:
            break
        moved = False
        for t in range(n):
            j = order[t]
            H = nhops[j]
            o = off[j]
            cur = o + idx[j] * H
            on = False
            for h in range(H):
                if mflat[cur + h] == lstar:
                    on = True
                    break
            if not on:
                continue
            K = npaths[j]
            if K < 2:
                continue
            v = vol[j]
            _add_path(load, mflat, cur, H, L, -v)
            best, bval = _best_path(mflat, o, K, H, load, capx, v, lstar)
            if not bval < rstar * thr:
                _add_path(load, mflat, cur, H, L, v)
                continue
            idx[j] = best
            _add_path(load, mflat, o + best * H, H, L, v)
            moved = True
            moves += 1
            break
        if not moved:
            break
    return moves


@jit
def route_load_kernel(vol, off, nhops, kidx, mflat, L, load):  # pragma: no cover
    """Bits per link when flow j (``vol[j]`` bits) takes path ``kidx[j]`` of its
    block (layout of :func:`greedy_place_kernel`): added to ``load`` (float64[L])
    flow by flow in flow order, hop by hop, as ``np.bincount`` over the flows'
    concatenated link arrays adds them, so the sums are bit for bit
    :func:`~rapier_app.scheduling.rapier.lp4.route_load`'s.  Source: RAPIER (2a) with x fixed."""
    for j in range(vol.shape[0]):
        H = nhops[j]
        base = off[j] + kidx[j] * H
        v = vol[j]
        for h in range(H):
            lk = mflat[base + h]
            if lk < L:
                load[lk] += v


@jit
def any_room_kernel(off, npaths, nhops, mflat, rx, out):  # pragma: no cover - compiled
    """Per flow (path blocks of :func:`greedy_place_kernel`): whether some candidate
    path has ``rx > 0`` on every link (``rx``: residual in bit/s with an inf entry
    for the sentinel link; a NaN counts as no room, as ``np.minimum`` and ``> 0``
    treat it).  Written to ``out`` (bool).  :meth:`~rapier_app.scheduling.rapier.plan._CoflowArrays.
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


@jit
def gather_routes_kernel(off, nhops, kidx, mflat, L, lens):  # pragma: no cover
    """The link indices of path ``kidx[j]`` of each flow's block (layout of
    :func:`greedy_place_kernel`), sentinel entries dropped, concatenated in flow
    order (int64 array returned); each flow's count is written to ``lens``.  The
    ``r_lidx, r_lens`` of :meth:`~rapier_app.scheduling.rapier.plan._CoflowArrays.route_arrays`."""
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
    if hasattr(ms, "flat") and hasattr(ms, "starts"):  # lp4.RowBlocks: rows in order
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


@jit
def expand_commodities_kernel(vols, mflat, mptr, K, has_m, mg_flat, mg_off, tot, alpha,
                              fo, out):  # pragma: no cover - compiled
    """The per-flow optimum of
    :func:`~rapier_app.scheduling.rapier.lp4.solve_lp4_aggregated` from its
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


@jit
def mark_blocks_kernel(off, npaths, nhops, mflat, mark):  # pragma: no cover - compiled
    """Set ``mark[l]`` for every link ``l`` of every flow's path block (layout of
    :func:`greedy_place_kernel`; the sentinel's entry is set too when a block is
    padded).  ``np.flatnonzero(mark[:L])`` is then the sorted set of the flows'
    candidate links (:attr:`~rapier_app.scheduling.rapier.plan._CoflowArrays.all_links`)."""
    for j in range(off.shape[0]):
        o = off[j]
        for t in range(npaths[j] * nhops[j]):
            mark[mflat[o + t]] = True


@jit
def min_crossings_kernel(off, npaths, nhops, mflat, vol, w):  # pragma: no cover
    """sum_j vol[j] * min_k sum_{l in path k of flow j} w[l]: the volume (bits,
    weighted by ``w``, float64[L + 1] with 0 for the sentinel link) that any routing
    of the flows over their candidate paths (blocks of :func:`greedy_place_kernel`)
    must put on the links ``w`` weighs.  The routing-independent term of LP (4)'s
    dual bound (:func:`~rapier_app.scheduling.rapier.lp4.certify_routing`).
    Source: LP duality for RAPIER's (4) (Section IV-A)."""
    tot = 0.0
    for j in range(off.shape[0]):
        o = off[j]
        H = nhops[j]
        best = np.inf
        for k in range(npaths[j]):
            s = 0.0
            for h in range(H):
                s += w[mflat[o + k * H + h]]
            if s < best:
                best = s
        if best > 0.0:
            tot += vol[j] * best
    return tot


@jit
def assign_bandwidth_kernel(sel, off, npaths, nhops, mflat, rx, rates,
                            choice):  # pragma: no cover - compiled
    """Algorithm 3's AssignBandwidth for the flows ``sel`` (in visiting order) of one
    coflow whose flows may still choose a path: each takes, among its candidate paths
    (path blocks of :func:`greedy_place_kernel`), the first with the largest
    bottleneck residual, if positive, adds it to ``rates[j]`` (bit/s) and takes it
    from ``rx`` (residual per link, bit/s, with the sentinel's inf last).  Writes the
    chosen path's index in the flow's block to ``choice[t]`` (-1: no path with
    residual on every link).  The loop of
    :func:`~rapier_app.scheduling.rapier.alg3.distribute_bandwidth` over
    :func:`~rapier_app.scheduling.conserve.best_candidate`, compiled: the same
    comparisons and IEEE operations in the same order (the sentinel's inf never
    lowers a minimum), so the same paths, rates and residuals bit for bit.
    Source: RAPIER Algorithm 3, lines 10-20."""
    L = rx.shape[0] - 1
    for t in range(sel.shape[0]):
        j = sel[t]
        o = off[j]
        H = nhops[j]
        best = -1
        best_bw = 0.0
        for k in range(npaths[j]):
            b = o + k * H
            m = rx[mflat[b]]
            for h in range(1, H):
                x = rx[mflat[b + h]]
                if x < m:
                    m = x
            if m > best_bw:
                best = k
                best_bw = m
        choice[t] = best
        if best < 0:
            continue
        rates[j] += best_bw
        b = o + best * H
        for h in range(H):
            lk = mflat[b + h]
            if lk < L:
                rx[lk] -= best_bw
