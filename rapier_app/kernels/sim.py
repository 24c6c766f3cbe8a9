"""Compiled event step of the flow-level simulator
(:mod:`rapier_app.sim.simulator`): link-load changes, the next completion, the
selection of the flows with a rate, advancing bytes sent and dropping finished flows.

Units: bytes for sizes and counters, bit/s for rates, seconds for times.
"""

from __future__ import annotations

import numpy as np

from . import jit


@jit
def load_change_kernel(glob_P, glob_len, act_idx, w, prev, load):  # pragma: no cover
    """The simulator's link-load update for the flows whose rate changed: ``load +=
    np.bincount(links of the changed flows, weights=(w - prev) repeated per link,
    minlength=len(load))`` over the positions j with ``w[j] != prev[j]`` in order,
    each flow's links in hop order (:func:`rapier_app.sim.state.link_load`).

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


@jit
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


@jit
def sim_select_kernel(pos, rate_pos, act_idx, size, sent, glob_P, glob_len, prev,
                      load):  # pragma: no cover - compiled
    """One pass of the simulator's per-event vector work over the m active
    positions, once the sending mask ``pos`` is final (paths validated).

    Computes, bit for bit as :func:`rapier_app.sim.steps._select_numpy` does:
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


@jit
def rank_select_kernel(alive, bcnt, sel):  # pragma: no cover - compiled
    """The global indices of the simulator's active positions ``sel``: position j
    is the j-th live flow in global-index order (flows are numbered in arrival
    order, then flow order, and never reordered), so ``out[k]`` is the index of
    the ``sel[k]``-th nonzero entry of ``alive``, i.e. ``np.flatnonzero(alive)[sel]``.
    Whole blocks of 64 indices are skipped with their live counts ``bcnt``, so a
    call costs O(blocks + 64 per block visited) instead of a per-position array
    kept compacted at every flow completion.

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


@jit
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


@jit
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


@jit
def sim_advance_kernel(gsel, rate, sent_g, ttf, size, sent, dt,
                       thresh):  # pragma: no cover - compiled
    """The simulator's byte counters advanced by ``dt`` seconds: per sending flow k,
    finished when ``ttf[k] <= thresh`` (then its counter is its size), else
    ``sent_g[k] + rate[k] * dt / 8``; written to ``sent[gsel]`` in place.  The same
    operations as the numpy code of :func:`rapier_app.sim.steps.advance`.

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


@jit
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


@jit
def coflow_sent_kernel(cof_of, gsel, new_sent, sent_g, cof_sent):  # pragma: no cover
    """``cof_sent += np.bincount(cof_of[gsel], weights=new_sent - sent_g,
    minlength=len(cof_sent))`` (bytes per coflow serial), summed in the same order,
    so bit for bit the numpy expression's result."""
    tmp = np.zeros(cof_sent.shape[0])
    for k in range(gsel.shape[0]):
        tmp[cof_of[gsel[k]]] += new_sent[k] - sent_g[k]
    for c in range(cof_sent.shape[0]):
        cof_sent[c] += tmp[c]
