"""Max-min fair rates by progressive filling, the allocation pass of ``baseline``,
``fair`` and ``routing-only`` (Bertsekas and Gallager, Data Networks, Section 6.5.2).

Units: bit/s for capacities and rates.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .. import kernels
from ..kernels import alloc as kalloc


def max_min_fair(flow_links: Sequence[np.ndarray], capacity: np.ndarray,
                 demand: Optional[np.ndarray] = None,
                 weights: Optional[np.ndarray] = None, rel_eps: float = 1e-9) -> np.ndarray:
    """Weighted max-min fair rates by progressive filling (water-filling).

    Args:
        flow_links: per flow, an int array of link indices its path crosses.
        capacity: per link, the capacity available to these flows in bit/s.
        demand: optional per-flow upper bound in bit/s (``inf`` for none).
        weights: optional per-flow positive weights (default all 1).

    Returns:
        Per-flow rates in bit/s (float array, same order as ``flow_links``).  No link
        exceeds its capacity; every flow is limited by a saturated link on its path or
        by its demand.

    Source: Bertsekas and Gallager, Data Networks, Section 6.5.2 (max-min fairness).
    """
    n = len(flow_links)
    if n == 0:
        return np.zeros(0)
    lens = np.fromiter(map(len, flow_links), dtype=np.int64, count=n)
    lidx = np.concatenate(flow_links).astype(np.int64, copy=False)
    return max_min_fair_flat(lens, lidx, capacity, demand, weights, rel_eps)


def max_min_fair_flat(lens: np.ndarray, lidx: np.ndarray, capacity: np.ndarray,
                      demand: Optional[np.ndarray] = None,
                      weights: Optional[np.ndarray] = None,
                      rel_eps: float = 1e-9) -> np.ndarray:
    """:func:`max_min_fair` with the flows' links given flat (CSR-like).

    Args:
        lens: per flow, the number of links of its path (int array).
        lidx: the link indices of every flow, concatenated in flow order (int array,
            ``lens.sum()`` long).
        capacity, demand, weights, rel_eps: as in :func:`max_min_fair`.

    Returns:
        Per-flow rates in bit/s, identical to :func:`max_min_fair` on the same flows.

    Incremental progressive filling: all active flows sit at rate level * weight,
    and a link's active weight changes only when one of its flows freezes, so an
    iteration costs O(links) plus the entries it freezes (about 10x faster than
    recomputing every link's load per iteration on 144k trace flows).

    Raises:
        ValueError: unbounded rates (a flow crosses no link and has no demand).
    """
    lens = np.asarray(lens, dtype=np.int64)
    n = lens.shape[0]
    rate = np.zeros(n)
    if n == 0:
        return rate
    cap = np.asarray(capacity, dtype=float)
    L = cap.shape[0]
    lidx = np.asarray(lidx, dtype=np.int64)
    if weights is None and demand is None and kernels.ENABLED:
        # the compiled twin: same operations, same rates bit for bit
        if lidx.size and (lidx.min() < 0 or lidx.max() >= L):
            raise IndexError("max_min_fair_flat: a link index outside the capacity vector")
        if kalloc.maxmin_flat_kernel(lens, lidx, np.maximum(cap, 0.0),
                                      rel_eps * np.maximum(cap, 1.0), rate) < 0:
            raise ValueError("max_min_fair: unbounded rates (a flow crosses no link)")
        return rate
    weighted = weights is not None
    w = np.asarray(weights, dtype=float) if weighted else np.ones(n)
    dem = np.full(n, np.inf) if demand is None else np.asarray(demand, dtype=float)
    # Progressive filling with incremental bookkeeping: every active flow's rate is
    # level * w; a link's active weight wl and active count cnt only change when a
    # flow freezes, so each iteration costs O(links) plus the entries of the flows
    # and links it freezes (O(entries) over the whole run).  Links are kept as a
    # padded (flows x longest path) matrix P whose padding is the sentinel link L,
    # so a set of flows' links is one row gather.
    active = (lens > 0) & (dem > 0)
    W = int(lens.max())
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    flat = np.full(n * W, L, dtype=np.int64)
    if W:  # entry k of flow i goes to i * W + k
        pos = np.repeat(np.arange(0, n * W, W, dtype=np.int64) - starts, lens)
        pos += np.arange(lidx.shape[0], dtype=np.int64)
        flat[pos] = lidx
    P = flat.reshape(n, W)
    everyone = bool(active.all())
    act_ents = flat if everyone else P[active].ravel()
    cnt = np.bincount(act_ents, minlength=L + 1)[:L]
    if weighted:
        wl = np.bincount(act_ents, weights=np.repeat(w if everyone else w[active], W),
                         minlength=L + 1)[:L]
    else:
        wl = cnt.astype(float)  # unit weights: the active weight is the count
    # entries of P.ravel() stably sorted by link (radix sort on 16-bit keys when the
    # link ids fit: 3x faster); entry e belongs to flow e // W
    by_link = np.argsort(flat.astype(np.int16) if L < 32767 else flat, kind="stable")
    lptr = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=L + 1))])
    head = dem / w  # level at which a flow reaches its demand
    dem_order = np.argsort(np.where(active, head, np.inf), kind="stable")
    dem_order = dem_order[np.isfinite(head[dem_order]) & active[dem_order]]
    di = 0
    residual = np.maximum(cap.copy(), 0.0)
    tol = rel_eps * np.maximum(cap, 1.0)
    # A link without active flows gets residual inf (and wl 0): its share
    # residual / wl is inf and it never counts as saturated, so the loop needs no
    # "used" mask.  A link never regains active flows.
    residual[cnt == 0] = np.inf
    simple = not weighted and demand is None  # rate = level for every flow
    level = 0.0
    n_active = int(active.sum())
    slot = np.empty(n, dtype=np.int64)  # scratch for dedup
    err = np.seterr(divide="ignore", invalid="ignore")
    try:
        while n_active:
            share = residual / wl
            inc = float(share.min())
            # flows frozen by a saturated link no longer bound the level by their demand
            while di < len(dem_order) and not active[dem_order[di]]:
                di += 1
            if di < len(dem_order):
                inc = min(inc, float(head[dem_order[di]]) - level)
            inc = max(inc, 0.0)
            if not np.isfinite(inc):
                raise ValueError("max_min_fair: unbounded rates (a flow crosses no link)")
            level += inc
            residual -= inc * wl
            sat = np.flatnonzero(residual <= tol)
            ents = (np.concatenate([by_link[lptr[l]:lptr[l + 1]] for l in sat.tolist()])
                    if sat.size else np.zeros(0, np.int64))
            cand = ents // W if W else ents
            if di < len(dem_order):
                dstop = di
                lim = level * (1 + rel_eps)
                while dstop < len(dem_order) and head[dem_order[dstop]] <= lim:
                    dstop += 1
                cand = np.concatenate([cand, dem_order[di:dstop]])
                di = dstop
            newly = dedup(cand[active[cand]], slot)
            if not newly.size:  # numerical guard: freeze the most constrained link's flows
                j = int(np.argmin(share))
                e = by_link[lptr[j]:lptr[j + 1]] // W
                newly = dedup(e[active[e]], slot)
            if simple:
                rate[newly] = level
            else:
                rate[newly] = np.minimum(level * w[newly], dem[newly])
            active[newly] = False
            n_active -= newly.size
            le = P[newly].ravel()
            dec = np.bincount(le, minlength=L + 1)[:L]
            cnt -= dec
            if weighted:
                wl -= np.bincount(le, weights=np.repeat(w[newly], W), minlength=L + 1)[:L]
            else:
                wl -= dec
            gone = np.flatnonzero((cnt == 0) & (dec > 0))
            wl[gone] = 0.0
            residual[gone] = np.inf
    finally:
        np.seterr(**err)
    return rate


def dedup(ids: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """``ids`` without repeats (first occurrences, in order), in O(len(ids)) using the
    scratch array ``slot`` (length > max id); no sort, unlike ``np.unique``."""
    pos = np.arange(ids.shape[0])
    slot[ids[::-1]] = pos[::-1]
    return ids[slot[ids] == pos]
