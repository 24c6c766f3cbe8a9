"""CCT statistics and the RAPIER improvement metric.

All times in seconds.
"""

from __future__ import annotations

from typing import Dict, Sequence

import numpy as np


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


def mean_ci95(values: Sequence[float]) -> tuple:
    """Mean and half-width of a 95% confidence interval (Student t) over tries.

    Returns ``(mean, half_width)``; the half-width is 0 for a single value.
    """
    a = np.asarray(list(values), dtype=float)
    if a.size == 0:
        raise ValueError("values: empty")
    if a.size == 1:
        return float(a[0]), 0.0
    # two-sided 97.5% t quantiles for df = 1..30, then the normal value
    t = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
         2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074,
         2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
    df = a.size - 1
    q = t[df - 1] if df <= len(t) else 1.960
    return float(a.mean()), float(q * a.std(ddof=1) / np.sqrt(a.size))
