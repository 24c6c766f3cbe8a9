"""The compiled passes' stacked inputs for the seed schedulers: several coflows'
groups (:class:`~.group._Group`) as one padded link matrix, group boundaries, link
indexes and weighted-pass records, and the in-place update of a cached stack when
only some groups lost flows (:func:`restack`).

Used by :class:`~.base._SeedScheduler` (``_stacked``, the strict, joint and weighted
passes).  Units: bit/s for rates.
"""

from __future__ import annotations

from operator import is_
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .group import _Group
from .passes import _i64


def stack_rows(groups: Sequence[_Group], rates: Optional[Dict[int, np.ndarray]],
               with_rates: bool, width: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The compiled passes' inputs for ``groups``: their link rows stacked
    (int64, rows x width), the group boundaries ``gptr`` (group g's rows are
    ``gptr[g]..gptr[g+1]-1``) and their current rates (bit/s) stacked (zeros
    when ``rates`` is None; None without ``with_rates``); ``width`` is the path width
    (columns of an empty ``P``), which the kernels add to in place and
    :func:`unstack` writes back."""
    gptr = np.zeros(len(groups) + 1, dtype=np.int64)
    if groups:
        np.cumsum([g.n for g in groups], out=gptr[1:])
        P = np.ascontiguousarray(np.concatenate([g.P for g in groups]), dtype=np.int64)
        acc = (None if not with_rates else np.zeros(int(gptr[-1])) if rates is None
               else np.concatenate([rates[id(g)] for g in groups]))
    else:
        P = np.zeros((0, width), dtype=np.int64)
        acc = np.zeros(0)
    return P, gptr, acc


def stack_csr(groups: Sequence[_Group], nl: int) -> Tuple[np.ndarray, np.ndarray]:
    """The groups' link indexes (:meth:`_Group.csr`) stacked for the compiled
    passes: ``lptrs`` (int64, groups x (nl + 1)) and ``rows_all`` (int64, the
    groups' ``rows`` concatenated in group order, so group g's start at
    ``gptr[g] * width``)."""
    if not groups:
        return np.zeros((0, nl + 1), np.int64), np.zeros(0, np.int64)
    cs = [g.csr(nl) for g in groups]
    return np.stack([c[0] for c in cs]), np.concatenate([c[1] for c in cs])


def stack_memo(groups: Sequence[_Group], gptr: np.ndarray, nl: int) -> tuple:
    """The groups' weighted-pass records
    (:func:`~rapier_app.kernels.weighted.weighted_kernel`, memo)
    stacked for the kernel: (flags int64[groups], free0, mark0 bool[groups x nl],
    in1, out1 float64[groups x nl], free1 bool[groups x nl], lvl float64[rows]);
    a group without a record gets flag 0 (nothing to reuse)."""
    G = len(groups)
    flag = np.zeros(G, np.int64)
    free0 = np.zeros((G, nl), bool)
    mark0 = np.zeros((G, nl), bool)
    in1 = np.zeros((G, nl))
    out1 = np.zeros((G, nl))
    free1 = np.zeros((G, nl), bool)
    lvls = []
    for k, g in enumerate(groups):
        m = g._memo
        if m is None or m[1].shape[0] != nl:
            lvls.append(np.zeros(g.n))
            continue
        flag[k] = m[0]
        free0[k], mark0[k], in1[k], out1[k], free1[k] = m[1:6]
        lvls.append(m[6])
    lvl = np.concatenate(lvls) if lvls else np.zeros(0)
    return flag, free0, mark0, in1, out1, free1, lvl


def keep_memo(groups: Sequence[_Group], gptr: np.ndarray, memo: tuple) -> None:
    """Store each group's new weighted-pass record (views of the stacked arrays
    :func:`stack_memo` made and the kernel overwrote)."""
    flag, free0, mark0, in1, out1, free1, lvl = memo
    fl = flag.tolist()
    for k, g in enumerate(groups):
        g._memo = (fl[k], free0[k], mark0[k], in1[k], out1[k], free1[k],
                   lvl[gptr[k]:gptr[k + 1]])


def unstack(groups: Sequence[_Group], acc: np.ndarray,
             rates: Dict[int, np.ndarray]) -> None:
    """Write the stacked rates ``acc`` (bit/s) back into ``rates[id(group)]``."""
    o = 0
    for g in groups:
        rates[id(g)][:] = acc[o:o + g.n]
        o += g.n


def restack(c: list, gs: List[_Group], nl: int,
            drops: Dict[int, Tuple[_Group, np.ndarray]]) -> Optional[tuple]:
    """The in-place update of the cached stacked inputs ``c`` ([groups, P, gptr,
    lptrs, rows_all, memo, nl], updated in place) for the groups ``gs``, which must be
    ``c``'s groups or their filtered successors recorded in ``drops`` (id(group) ->
    (the group it was filtered from, positions dropped)); see
    :meth:`~.base._SeedScheduler._stacked`.  Returns (P, gptr, lptrs, rows_all, memo),
    or None when not applicable (then the caller rebuilds)."""
    old_gs, P, gptr, lptrs, rows_all, memo, _ = c
    changed = [k for k, same in enumerate(map(is_, old_gs, gs)) if not same]
    for k in changed:
        d = drops.get(id(gs[k]))
        if d is None or d[0] is not old_gs[k]:
            return None
    if changed:
        W = P.shape[1]
        if memo is not None:
            flag, free0, mark0, in1, out1, free1, lvl = memo
        newptr = gptr.copy()
        np.cumsum([g.n for g in gs], out=newptr[1:])
        Pf = P.reshape(-1)
        op, np_ = gptr.tolist(), newptr.tolist()
        G = len(gs)
        for i, k in enumerate(changed):
            g = gs[k]
            t, n = np_[k], g.n
            lp, rw = g.csr(nl)
            Pf[t * W:(t + n) * W] = _i64(g.P).reshape(-1)
            rows_all[t * W:(t + n) * W] = rw
            lptrs[k] = lp
            if memo is not None:
                flag[k] = 0
                lvl[t:t + n] = 0.0
            # the unchanged groups up to the next changed one move up as a block:
            # one (overlap-safe) slice copy per array
            a = k + 1
            b = changed[i + 1] if i + 1 < len(changed) else G
            o, t, n = op[a], np_[a], op[b] - op[a]
            if n and t != o:
                Pf[t * W:(t + n) * W] = Pf[o * W:(o + n) * W]
                rows_all[t * W:(t + n) * W] = rows_all[o * W:(o + n) * W]
                if memo is not None:
                    lvl[t:t + n] = lvl[o:o + n]
        R = np_[-1]
        P, rows_all, gptr = P[:R], rows_all[:R * W], newptr
        if memo is not None:
            memo = (flag, free0, mark0, in1, out1, free1, lvl[:R])
    c[:] = [gs, P, gptr, lptrs, rows_all, memo, nl]
    return P, gptr, lptrs, rows_all, memo
