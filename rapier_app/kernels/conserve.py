"""Compiled update of the work-conservation pass between coflow events
(:class:`~rapier_app.scheduling.conserve.WorkConservation`, shared by RAPIER's
Algorithm 3 and Varys).  Units: bit/s for rates, capacities and residuals.
"""

from __future__ import annotations

from . import jit


@jit
def _crosses(P, f, lk):  # pragma: no cover - compiled
    """Whether row ``f`` of the padded path matrix ``P`` holds link ``lk``."""
    for k in range(P.shape[1]):
        if P[f, k] == lk:
            return True
    return False


@jit
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
    Source: RAPIER Algorithm 3 at flow completions."""
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
