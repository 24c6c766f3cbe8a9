"""Coflow orders on a demand matrix and the cost Sincronia's analysis bounds.

Pure numpy, no scheduler state.  A *demand matrix* ``D`` is (coflows x ports or
links): ``D[c, p]`` is the time (s) coflow c alone would need on port/link p
(bits / capacity), as :func:`~rapier_app.scheduling.sincronia.bssi_order` takes it.

* :func:`open_shop_cost` -- sum over coflows of w_c * C_c, where C_c =
  max over the ports c uses of the load (s) of c and every coflow ahead of it: the
  completion time of c when the order is served one coflow after the other on every
  port (concurrent open shop, the objective BSSI 2-approximates; Sincronia Section 3,
  Theorem 1's proof bounds an order-preserving schedule's CCTs by these C_c).
* :func:`greedy_completion_order` -- repeatedly the coflow with the smallest C_c / w_c
  behind the ones already placed: RAPIER Algorithm 1's minimum-CCT-first rule with
  ``route_on="reserved"`` (t = max over its links of (B_l + load_l) / C_l), on fixed
  demands.
* :func:`sebf_order` -- Varys's Smallest-Effective-Bottleneck-First: by
  max_p D[c, p] (Varys Section 5.2), on the same demands.

Used by ``rapier-bssi`` (``order="best"``) to pick, at each full pass, the
lowest-cost order among BSSI's, the greedy one and SEBF's.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

__all__ = ["open_shop_cost", "greedy_completion_order", "sebf_order"]


def _check(demand, weights) -> tuple:
    D = np.asarray(demand, dtype=float)
    if D.ndim != 2:
        raise ValueError("demand: must be a 2-D (coflows x ports) matrix")
    n = D.shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"weights: need {n} weights, got shape {w.shape}")
    if (D < 0).any() or (w < 0).any():
        raise ValueError("demand/weights: must be non-negative")
    return D, w


def open_shop_cost(demand: np.ndarray, order: Sequence[int],
                   weights: Optional[Sequence[float]] = None) -> float:
    """Weighted sum of the one-after-the-other completion times of ``order``.

    Args:
        demand: (n x P) matrix, D[c, p] >= 0 in seconds.
        order: a permutation of range(n), first served first.
        weights: n weights w_c >= 0 (default 1).

    Returns:
        sum_k w_{o_k} * C_{o_k}, C_{o_k} = max over p with D[o_k, p] > 0 of
        sum_{j <= k} D[o_j, p] (s; 0 for a coflow with no demand).

    Raises:
        ValueError: shapes disagree, a negative entry, or ``order`` is not a
            permutation of range(n).

    Source: Sincronia (SIGCOMM 2018) Section 3: the concurrent-open-shop objective
    whose LP relaxation BSSI's primal-dual analysis bounds.
    """
    D, w = _check(demand, weights)
    o = np.asarray(order, dtype=int)
    if o.shape != (D.shape[0],) or not np.array_equal(np.sort(o), np.arange(D.shape[0])):
        raise ValueError("order: must be a permutation of the coflow indices")
    if o.size == 0:
        return 0.0
    Do = D[o]
    cum = np.cumsum(Do, axis=0)
    done = np.where(Do > 0, cum, 0.0).max(axis=1)
    return float(np.dot(w[o], done))


def greedy_completion_order(demand: np.ndarray, weights: Optional[Sequence[float]] = None,
                            tiebreak: Optional[Sequence[float]] = None) -> List[int]:
    """Minimum-completion-first order on fixed demands.

    Args:
        demand: (n x P) matrix, D[c, p] >= 0 in seconds.
        weights: n weights (default 1); a coflow of weight 0 goes after every
            coflow of positive weight.
        tiebreak: per coflow a key; among equal C_c / w_c the smallest key goes
            first (default: the index).

    Returns:
        Coflow indices, first served first: at each step the unplaced coflow with
        the smallest C_c / w_c, C_c = max over p with D[c, p] > 0 of
        (load placed so far on p + D[c, p]) (s).

    Raises:
        ValueError: as :func:`open_shop_cost`.

    Source: RAPIER (INFOCOM 2015) Algorithm 1's minimum-CCT-first pick, with each
    coflow's CCT behind the ones ahead of it (this project's ``route_on="reserved"``
    key), applied to fixed per-port demands.
    """
    D, w = _check(demand, weights)
    n = D.shape[0]
    key = np.arange(n, dtype=float) if tiebreak is None else np.asarray(tiebreak, float)
    alive = np.ones(n, dtype=bool)
    cum = np.zeros(D.shape[1])
    used = D > 0
    out: List[int] = []
    for _ in range(n):
        idx = np.flatnonzero(alive)
        sub = D[idx]
        c = np.where(used[idx], cum + sub, 0.0).max(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(w[idx] > 0, c / np.where(w[idx] > 0, w[idx], 1.0), np.inf)
        j = min(range(idx.size), key=lambda i: (score[i], key[idx[i]]))
        s = int(idx[j])
        out.append(s)
        alive[s] = False
        cum += D[s]
    return out


def sebf_order(demand: np.ndarray, tiebreak: Optional[Sequence[float]] = None) -> List[int]:
    """Smallest-Effective-Bottleneck-First on fixed demands.

    Args:
        demand: (n x P) matrix, D[c, p] >= 0 in seconds.
        tiebreak: per coflow a key for equal bottlenecks, smallest first (default:
            the index).

    Returns:
        Coflow indices sorted by max_p D[c, p] (s), first served first.

    Raises:
        ValueError: as :func:`open_shop_cost`.

    Source: Varys (SIGCOMM 2014) Section 5.2 (SEBF).
    """
    D, _ = _check(demand, None)
    n = D.shape[0]
    key = np.arange(n, dtype=float) if tiebreak is None else np.asarray(tiebreak, float)
    gamma = D.max(axis=1) if D.shape[1] else np.zeros(n)
    return sorted(range(n), key=lambda i: (gamma[i], key[i]))
