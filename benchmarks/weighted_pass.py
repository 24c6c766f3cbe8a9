"""Cost of one compiled weighted pass (Aalo, Philae) in the Facebook hour's giants'
stretch (issue 16).

Replays trace coflows ``--coflows A:B`` (arrivals shifted so that A arrives at 0;
the default 187:240 is the stretch where several coflows of 17,000-21,000 flows
are live) under ``--scheduler`` (aalo or philae) on ``--topology`` (default
``bigswitch:150``) for
``--events`` decision points, and keeps a copy of the inputs of every
``--every``-th call of :func:`rapier_app.kernels.weighted.weighted_kernel`
among the last ``--last`` ones.  Then it times the kernel on fresh copies of those
inputs (best of ``--reps``) and prints:

* ``calls``, and per call the mean ``rows`` (live flows), ``groups`` (coflows)
  and ``queues``;
* ``us_per_call``: the kernel's CPU time per call in microseconds (process CPU
  time, best of ``--reps``);
* ``fingerprint``: the first 16 hex digits of the sha256 of every call's output
  rates, residuals and round counts.  Each call is timed with the memo records
  (:func:`~rapier_app.kernels.weighted.weighted_kernel`) it had in the replay.  Equal fingerprints on two code versions
  mean the kernel's results are bit for bit the same.

Usage::

    PYTHONPATH=. python benchmarks/weighted_pass.py [--scheduler aalo]
        [--topology bigswitch:150] [--coflows 187:240] [--events 3000] [--every 10]
        [--last 400]

The heaviest stretch of the whole hour (issue 16, tenth round: 120,000 live
flows, 9 coflows, 13-20 rounds per pass under Philae)::

    PYTHONPATH=. python benchmarks/weighted_pass.py --scheduler philae \
        --coflows 0:526 --events 62000 --last 2000 --every 20

Raises:
    SystemExit: a bad option value (named), or a missing trace file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np

TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                     "traces", "FB2010-1Hr-150-0.txt")


def capture(scheduler: str, first: int, stop: int, events: int, every: int,
            last: int, trace: str, topology: str = "bigswitch:150") -> list:
    """The weighted kernel's inputs (copies) of the sampled calls, see module doc."""
    from _common import trace_slice
    from rapier_app.kernels import weighted as kweighted
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate
    from rapier_app.sim.simulator import SimulationError
    from topologies import build_topology

    orig = kweighted.weighted_kernel
    calls: list = []
    n = [0]

    def spy(*args):
        n[0] += 1
        if n[0] > events - last and n[0] % every == 0:
            calls.append(tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a
                               for a in args))
        return orig(*args)

    topo = build_topology(topology)
    cfs = trace_slice(topo, trace, first, stop)
    kweighted.weighted_kernel = spy
    try:
        simulate(topo, cfs, make_scheduler(scheduler, topo), max_events=events)
    except SimulationError:
        pass  # stopped at --events decision points, as intended
    finally:
        kweighted.weighted_kernel = orig
    return calls


def time_calls(calls: list, reps: int) -> tuple:
    """(best total CPU seconds over ``reps``, fingerprint) of the kernel on the calls
    (process CPU time: steadier than wall time on a shared machine)."""
    from rapier_app.kernels import weighted as kweighted

    best, digest = float("inf"), None
    for _ in range(reps):
        h = hashlib.sha256()
        tot = 0.0
        for c in calls:
            a = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in c]
            t = time.process_time()
            kweighted.weighted_kernel(*a)
            tot += time.process_time() - t
            # residual, rate, and out's rounds run and cap flag (its memo counters
            # do not exist before the memo)
            for x in (a[4], a[6], a[8][:2]):
                h.update(x.tobytes())
        best = min(best, tot)
        digest = h.hexdigest()[:16]
    return best, digest


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scheduler", default="aalo", choices=["aalo", "philae"])
    p.add_argument("--topology", default="bigswitch:150",
                   help="fabric spec, e.g. bigswitch:150 or fattree:10")
    p.add_argument("--coflows", default="187:240", help="A:B, trace coflows A..B-1")
    p.add_argument("--events", type=int, default=3000)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--last", type=int, default=400)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--trace", default=TRACE)
    a = p.parse_args(argv)
    from _common import parse_slice

    first, stop = parse_slice(a.coflows)
    for name in ("events", "every", "last", "reps"):
        if getattr(a, name) < 1:
            raise SystemExit(f"--{name}: must be >= 1")
    if not os.path.exists(a.trace):
        raise SystemExit(f"--trace: no file {a.trace}")
    try:
        from topologies import build_topology
        build_topology(a.topology)
    except Exception as e:  # noqa: BLE001 - any refusal of the spec is the option's
        raise SystemExit(f"--topology: {e}")
    calls = capture(a.scheduler, first, stop, a.events, a.every, a.last, a.trace,
                    a.topology)
    if not calls:
        raise SystemExit("no weighted pass was captured: raise --events or --last")
    time_calls(calls[:2], 1)  # compile / load the cached kernel first
    tot, fp = time_calls(calls, a.reps)
    print(json.dumps({
        "scheduler": a.scheduler, "topology": a.topology, "coflows": a.coflows,
        "calls": len(calls),
        "rows": round(float(np.mean([c[0].shape[0] for c in calls])), 1),
        "groups": round(float(np.mean([len(c[1]) - 1 for c in calls])), 2),
        "queues": round(float(np.mean([len(c[3]) for c in calls])), 2),
        "us_per_call": round(1e6 * tot / len(calls), 1), "fingerprint": fp}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
