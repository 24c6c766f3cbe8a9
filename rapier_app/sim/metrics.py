"""CCT statistics and the RAPIER improvement metric.

All times in seconds.
"""

from __future__ import annotations

import math
from typing import Dict, Sequence, Tuple

import numpy as np
from scipy import stats


def summarize(ccts: Sequence[float]) -> Dict[str, float]:
    """Average, median, p90, p95, p99 and max of a list of CCTs (seconds).

    Percentiles use linear interpolation (numpy's default).

    Raises:
        ValueError: empty input.
    """
    a = np.asarray(list(ccts), dtype=float)
    if a.size == 0:
        raise ValueError("ccts: no coflow completed")
    return {
        "coflows": int(a.size),
        "avg_cct_s": float(a.mean()),
        "p50_cct_s": float(np.percentile(a, 50)),
        "p90_cct_s": float(np.percentile(a, 90)),
        "p95_cct_s": float(np.percentile(a, 95)),
        "p99_cct_s": float(np.percentile(a, 99)),
        "max_cct_s": float(a.max()),
    }


def improvement(cct_1: float, cct_2: float) -> float:
    """Performance of scheme 1 compared to scheme 2: (CCT_2 - CCT_1) / CCT_2.

    Positive when scheme 1 has the smaller average CCT.  Source: RAPIER Section V,
    "Metrics".

    Raises:
        ValueError: cct_2 <= 0.
    """
    if not cct_2 > 0:
        raise ValueError(f"cct_2: must be positive, got {cct_2}")
    return (cct_2 - cct_1) / cct_2


def mean_ci95(values: Sequence[float]) -> Tuple[float, float]:
    """Mean and half-width of the two-sided 95 % Student-t confidence interval.

    ``half_width = t_{0.975, n-1} * s / sqrt(n)`` with ``s`` the sample standard
    deviation (ddof=1) and the quantile from ``scipy.stats.t.ppf``.  This is the one
    CI function of the project (rapier-sim tries, rapier-experiment summaries,
    benchmarks/sweep_claims.py).

    Args:
        values: n >= 1 numbers (e.g. average CCTs in seconds, one per try).

    Returns:
        ``(mean, half_width)`` in the unit of ``values``.  With a single value the
        interval is undefined and the half-width is NaN (not 0: one try says
        nothing about the spread).

    Raises:
        ValueError: ``values`` is empty or holds a NaN or an infinity.
    """
    a = np.asarray(list(values), dtype=float)
    if a.size == 0:
        raise ValueError("values: need at least one value")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"values: must be finite, got {a.tolist()}")
    if a.size == 1:
        return float(a[0]), math.nan
    q = float(stats.t.ppf(0.975, a.size - 1))
    return float(a.mean()), float(q * a.std(ddof=1) / math.sqrt(a.size))
