"""Compiled (numba) kernels of the schedulers' and the simulator's inner loops,
behind one switch.

The allocation passes of the seed schedulers, RAPIER's rounding and plan, work
conservation and the simulator's event step run, per decision point, loops whose
every iteration is a dozen numpy calls on arrays of one entry per link: the call
overhead, not the arithmetic, is their cost.  The modules of this package compile
the same loops with numba (``numba.njit``), doing the same IEEE-754 operations in
the same order (no ``fastmath``: no reassociation, no fused multiply-add), so rates
and residuals are bit for bit those of the numpy code; ``tests/test_kernels.py``
compares them on random inputs.

One module per domain served:

* :mod:`.alloc`: progressive filling (water-filling) on CSR link indexes, the
  strict and joint passes, max-min fair rates on flat link lists
  (:func:`~rapier_app.scheduling.maxmin.max_min_fair_flat`);
* :mod:`.weighted`: Aalo's and Philae's weighted multi-queue pass (Aalo
  Pseudocode 1);
* :mod:`.sincronia`: Sincronia's order-preserving greedy rates (Algorithm 2) and
  its per-port demand matrix;
* :mod:`.rapier`: RAPIER's rounding, route loads and candidate-path blocks;
* :mod:`.conserve`: the work-conservation pass between coflow events;
* :mod:`.sim`: the simulator's event step.

The switch: numba is a dependency (``setup.py``); when it cannot be imported, or the
environment variable ``RAPIER_KERNELS=numpy`` is set, :data:`ENABLED` is False and
every caller keeps its numpy code.  Callers read ``kernels.ENABLED`` at call time, so
a test can flip it (``monkeypatch.setattr(kernels, "ENABLED", False)``).

Units: bit/s for residual capacities, tolerances and rates.
"""

from __future__ import annotations

import os
import time

try:  # pragma: no cover - exercised by whichever branch the machine has
    import numba
except ImportError:  # pragma: no cover
    numba = None

__all__ = ["ENABLED", "jit", "prepare"]


def _enabled(value: str) -> bool:
    """Whether the compiled kernels run, from ``RAPIER_KERNELS`` (``numba``, the
    default, or ``numpy``).

    Raises:
        ValueError: any other value (the message names ``RAPIER_KERNELS``).
    """
    if value not in ("numba", "numpy"):
        raise ValueError(f"RAPIER_KERNELS: must be 'numba' or 'numpy', got {value!r}")
    return value == "numba" and numba is not None


#: True when the compiled kernels are used (numba importable and not disabled).
ENABLED = _enabled(os.environ.get("RAPIER_KERNELS", "numba"))


def jit(fn):
    """``numba.njit(cache=True, nogil=True)`` when numba is importable, else ``fn``
    unchanged (the kernels then run as plain Python, for debugging)."""
    if numba is None:  # pragma: no cover
        return fn
    return numba.njit(cache=True, nogil=True)(fn)


@jit
def _first(x):  # pragma: no cover - compiled
    """The kernel :func:`prepare` loads: x + 1."""
    return x + 1


def prepare() -> "float | None":
    """Load numba's CPU target now: the first compiled function a process loads
    (even from numba's cache) builds numba's typing and lowering registries, which
    import scipy.linalg among others (0.3-0.7 s here, holding the interpreter lock
    for up to 50-85 ms at a time).  The controller calls this before its REST server
    listens, so that the kernels' warm-up that follows (:mod:`rapier_app.warmup`,
    in a native thread while the server answers) only loads kernels (its longest
    hold measured 26 ms).

    Returns:
        The seconds it took, or None when the kernels are off (:data:`ENABLED`).
    """
    if not ENABLED:
        return None
    t0 = time.perf_counter()
    _first(1)
    return time.perf_counter() - t0
