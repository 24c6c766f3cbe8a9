"""Compile the numba kernels before the first decision needs them.

The allocation passes in :mod:`rapier_app.kernels` are compiled by numba on first
call and cached on disk (``njit(cache=True)``: ``__pycache__`` beside each kernel
module, or ``NUMBA_CACHE_DIR``).  On an empty cache the first decision of a
scheduler pays the compilation: about 13 s for ``aalo`` and 1.2 s for ``rapier`` on
this project's 2-core machines, far above the controller's ``decision_budget_s``.
:func:`warm_up` runs every scheduler of the registry once on a tiny workload so that
the compilation happens at install time (``scripts/install.sh`` calls
``python -m rapier_app.warmup``), not in front of the first coflow.  With a warm
cache a second run loads the compiled code and takes a few seconds in all.

Command::

    python -m rapier_app.warmup                 # every registered scheduler
    python -m rapier_app.warmup rapier aalo     # only these
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Dict, Iterable, Optional

__all__ = ["warm_up", "ensure_warm", "main"]

#: Schedulers this process has warmed up already (:func:`ensure_warm`).
_WARM: set = set()

#: The tiny workload: ``fattree:4`` (16 hosts), 4 coflows of width 4, Poisson
#: arrivals 10 ms apart on average, 10-100 KB flows.
WARM_TOPOLOGY = "fattree:4"
WARM_COFLOWS, WARM_WIDTH, WARM_GAP_S = 4, 4, 0.01
WARM_SIZES = "uniform:0.01,0.1"


def warm_up(names: Optional[Iterable[str]] = None, progress: bool = True) -> Dict[str, float]:
    """Run each scheduler of ``names`` (default: the whole registry) through one
    simulation of the tiny workload above, compiling (or loading from numba's cache)
    every kernel its decisions and the simulator's steps call.

    Args:
        names: registry names (:func:`rapier_app.scheduling.scheduler_names`).
        progress: show a tqdm bar on stderr.

    Returns:
        ``{name: seconds}``: wall time of each scheduler's run (compilation included).

    Raises:
        SchedulerError: an unknown scheduler name.
    """
    from tqdm import tqdm

    from topologies import build_topology

    from .core.workload import synthetic
    from .scheduling import load_all, make_scheduler, scheduler_names
    from .sim import simulate

    load_all()
    names = list(names) if names is not None else list(scheduler_names())
    unknown = sorted(set(names) - set(scheduler_names()))
    if unknown:
        from .scheduling import SchedulerError
        raise SchedulerError(f"scheduler: unknown {', '.join(map(repr, unknown))}; known: "
                             f"{', '.join(scheduler_names())}")
    from . import kernels
    kernels.prepare()
    topo = build_topology(WARM_TOPOLOGY)
    coflows = synthetic(topo, WARM_COFLOWS, WARM_WIDTH, WARM_GAP_S, sizes=WARM_SIZES, seed=1)
    times: Dict[str, float] = {}
    for name in tqdm(names, desc="compiling kernels", unit="scheduler", disable=not progress,
                     file=sys.stderr):
        t0 = time.perf_counter()
        simulate(topo, coflows, make_scheduler(name, topo))
        times[name] = time.perf_counter() - t0
        _WARM.add(name)
    return times


def ensure_warm(name: str) -> Optional[float]:
    """Warm up one registry scheduler once per process (the controller calls it
    before it accepts coflows).

    Returns:
        The seconds it took, or None when ``name`` was warm already or is not a
        registry name (a ``module:Class`` plugin: nothing to compile ahead).
    """
    from .scheduling import load_all, scheduler_names

    load_all()
    if name in _WARM or name not in scheduler_names():
        return None
    return warm_up([name], progress=False)[name]


def main(argv=None) -> int:
    """``python -m rapier_app.warmup [NAME ...]``: exit 0, or 2 on an unknown name."""
    from .errors import RapierError

    ap = argparse.ArgumentParser(prog="python -m rapier_app.warmup",
                                 description="Compile the numba kernels every scheduler "
                                             "uses (numba caches them on disk).")
    ap.add_argument("names", nargs="*", help="schedulers (default: all registered)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        times = warm_up(args.names or None, progress=not args.quiet)
    except RapierError as exc:
        print(f"rapier_app.warmup: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        slow = max(times, key=times.get)
        print(f"kernels ready for {len(times)} schedulers in {time.perf_counter() - t0:.1f} s "
              f"(slowest {slow}: {times[slow]:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
