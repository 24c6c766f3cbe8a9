"""Size estimates for flows of unknown size (non-clairvoyant scheduling).

Pure functions, no state: the controller (flows registered without ``size_bytes``)
and the simulator's non-clairvoyant mode feed a clairvoyant scheduler (RAPIER's
LP (4) and Algorithm 1) an *estimate* in place of the size, and grow it as the flow
sends.

The rule is Aalo's (Chowdhury and Stoica, "Efficient Coflow Scheduling Without
Prior Knowledge", SIGCOMM 2015, Section 4, D-CLAS): a flow of unknown size is first
assumed small, and its assumed size grows exponentially (factor ``E``, Aalo uses
10; here 2 by default) each time the bytes it has sent cross the current threshold,
so that a large flow is demoted after O(log size) steps while a small one is never
mistaken for a large one.  Here the estimate starts at a floor (:data:`FLOOR_BYTES`,
10 MB) or, when sibling flows of the same coflow have known sizes, at their mean if
that is larger (a coflow's flows tend to be alike: Philae, Jajoo et al., NSDI 2019,
samples a few flows of a coflow to size the others).

Units: bytes.

Functions:

* :func:`initial_estimate` -- the first estimate of a flow;
* :func:`next_estimate` -- the estimate once ``sent_bytes`` have been counted
  (unchanged while below it, multiplied by ``factor`` until above it);
* :func:`estimate_size` -- both in one: the estimate of a flow that sent
  ``sent_bytes``;
* :func:`flow_estimates` -- one coflow's flows at once, as arrays (the simulator's
  ``rapier-nc``, :mod:`rapier_app.scheduling.rapier.nc`): known sizes kept, the
  others estimated from the coflow's bytes sent and its finished flows.

``rapier-nc`` (RAPIER on these estimates) is this project's own mode: no paper has a
non-clairvoyant RAPIER.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional

import numpy as np

#: Default first estimate of a flow of unknown size, bytes (10 MB).
FLOOR_BYTES = 10 * 1000 * 1000
#: Default growth factor of an estimate that the bytes sent reached.
FACTOR = 2.0


def initial_estimate(known_sizes: Iterable[Optional[float]] = (),
                     floor_bytes: float = FLOOR_BYTES) -> float:
    """The first size estimate of a flow of unknown size, in bytes.

    Args:
        known_sizes: sizes (bytes) of the coflow's flows whose size is known;
            ``None`` entries (unknown sizes) are ignored.
        floor_bytes: the smallest estimate (> 0), bytes.

    Returns:
        ``max(floor_bytes, mean(known sizes))``; ``floor_bytes`` when no size is
        known.

    Raises:
        ValueError: ``floor_bytes`` not a positive finite number.

    Source: Aalo (SIGCOMM 2015) Section 4 for the floor; the siblings' mean after
    Philae's sampling (NSDI 2019, Section 3).
    """
    if not (isinstance(floor_bytes, (int, float)) and 0 < floor_bytes < math.inf):
        raise ValueError(f"floor_bytes: must be a positive number of bytes, got "
                         f"{floor_bytes!r}")
    sizes = [float(s) for s in known_sizes if s is not None]
    if not sizes:
        return float(floor_bytes)
    return max(float(floor_bytes), sum(sizes) / len(sizes))


def next_estimate(sent_bytes: float, estimate: float, factor: float = FACTOR) -> float:
    """The estimate of a flow that has sent ``sent_bytes`` and was estimated at
    ``estimate`` bytes.

    While ``sent_bytes < estimate`` the estimate stands; once the bytes sent reach it,
    it is multiplied by ``factor`` as many times as needed to exceed them again
    (``estimate * factor**k``, the smallest such value above ``sent_bytes``), so the
    flow always has bytes left to send in the scheduler's eyes.

    Args:
        sent_bytes: bytes the flow has sent (>= 0).
        estimate: the current estimate (> 0), bytes.
        factor: growth factor (> 1).

    Returns:
        The new estimate (bytes), ``>= estimate`` and ``> sent_bytes``.

    Raises:
        ValueError: ``estimate`` <= 0, ``factor`` <= 1, or a non-finite argument.

    Source: Aalo (SIGCOMM 2015) Section 4, exponentially spaced queue thresholds.
    """
    if not (0 < estimate < math.inf):
        raise ValueError(f"estimate: must be a positive number of bytes, got {estimate!r}")
    if not (1 < factor < math.inf):
        raise ValueError(f"factor: must be a number > 1, got {factor!r}")
    if not (sent_bytes < math.inf):
        raise ValueError(f"sent_bytes: must be finite, got {sent_bytes!r}")
    est = float(estimate)
    while sent_bytes >= est:
        est *= factor
    return est


def estimate_size(sent_bytes: float, known_sizes: Iterable[Optional[float]] = (),
                  floor_bytes: float = FLOOR_BYTES, factor: float = FACTOR) -> float:
    """The estimate of a flow of unknown size that has sent ``sent_bytes``:
    :func:`next_estimate` from :func:`initial_estimate` (bytes).  Stateless, so a
    restarted controller or a simulator can recompute it from the counters alone.

    Raises:
        ValueError: as :func:`initial_estimate` and :func:`next_estimate`.
    """
    return next_estimate(sent_bytes, initial_estimate(known_sizes, floor_bytes), factor)


#: relative slack under which :func:`flow_estimates` counts a threshold as reached
REACHED = 1e-9
#: the values of :func:`flow_estimates`' ``scope``
SCOPES = ("coflow", "flow")
#: the values of :func:`flow_estimates`' ``rule``
RULES = ("threshold", "sent")


def flow_estimates(sizes, sent, sample_bytes: float = 0.0,
                   floor_bytes: float = FLOOR_BYTES, factor: float = FACTOR,
                   scope: str = "coflow", rule: str = "threshold") -> np.ndarray:
    """Sizes to schedule one coflow's unfinished flows on: the known sizes as they
    are, an estimate for the others.

    The estimate starts at :func:`initial_estimate` of ``sample_bytes`` (the mean
    size of the coflow's finished flows, Philae's sample; 0: none) and grows with
    the bytes sent ``S``: the largest ``sent`` among the coflow's flows of unknown
    size (``scope="coflow"``: they all get one estimate, so rates that follow
    remaining volumes let the flows behind catch up) or each flow's own
    (``scope="flow"``).  ``rule="threshold"`` (default): :func:`next_estimate`, the
    first ``floor * factor**k`` above ``S`` (the controller's rule); ``rule="sent"``:
    ``max(initial, factor * S)`` (the estimate is always ``factor`` times what was
    sent once past the floor).  Either way an estimated flow has bytes left.

    Args:
        sizes: (n,) bytes, NaN where the size is unknown.
        sent: (n,) bytes each flow has sent (finite, >= 0).
        sample_bytes: mean size of the coflow's finished flows (bytes; 0: none).
        floor_bytes, factor: as :func:`initial_estimate` and :func:`next_estimate`.
        scope: ``"coflow"`` or ``"flow"``.
        rule: ``"threshold"`` or ``"sent"``.

    Returns:
        (n,) float bytes: ``sizes`` where known; elsewhere the estimate (> ``sent``).

    Raises:
        ValueError: a bad ``floor_bytes``, ``factor``, ``scope`` or ``rule``, or
            ``sizes`` and ``sent`` of different shapes (naming the argument).
    """
    if scope not in SCOPES:
        raise ValueError(f"scope: must be one of {', '.join(SCOPES)}, got {scope!r}")
    if rule not in RULES:
        raise ValueError(f"rule: must be one of {', '.join(RULES)}, got {rule!r}")
    if not (1 < factor < math.inf):
        raise ValueError(f"factor: must be a number > 1, got {factor!r}")
    sizes = np.asarray(sizes, dtype=float)
    sent = np.asarray(sent, dtype=float)
    if sizes.shape != sent.shape:
        raise ValueError(f"sent: shape {sent.shape} differs from sizes' {sizes.shape}")
    base = initial_estimate([sample_bytes] if sample_bytes > 0 else (), floor_bytes)
    unknown = np.isnan(sizes)
    if not unknown.any():
        return sizes

    def one(s: float) -> float:
        if rule == "threshold":
            # a counter within REACHED of a threshold has reached it (the float
            # arithmetic of rate x time lands a hair short of it)
            return next_estimate(s * (1.0 + REACHED), base, factor)
        return max(base, factor * s)

    if scope == "coflow":
        return np.where(unknown, one(float(sent[unknown].max())), sizes)
    out = sizes.copy()
    idx = np.flatnonzero(unknown)
    out[idx] = [one(s) for s in sent[idx].tolist()]
    return out


__all__ = ["FACTOR", "FLOOR_BYTES", "RULES", "SCOPES", "estimate_size", "flow_estimates",
           "initial_estimate", "next_estimate"]
