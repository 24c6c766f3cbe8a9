"""Where the compiled weighted pass (Aalo, Philae) spends its CPU over a whole trace
replay, and its sampled calls replayed on another code version (issue 16, seventh
round).

Replays the first ``--limit`` coflows of the Facebook trace (default: all 526, the
hour) under ``--scheduler`` (``aalo`` or ``philae``) on ``--topology`` (default
``bigswitch:150``) and wraps :func:`rapier_app.kernels.weighted.weighted_kernel`:
every call's thread CPU time, rows (live flows) and rounds are recorded, and every
``--every``-th call's inputs and outputs are kept.  Prints one JSON object:

* ``calls``, ``kernel_cpu_s`` (the calls' CPU time in seconds), ``by_rounds``
  (per bucket of rounds run: calls and CPU seconds), ``stalled`` (passes whose
  rounds reached a fixed point and ended early, ``out[1] == 2``) and ``capped``
  (passes that ran the round cap);
* ``sampled`` and ``sampled_cpu_s``: the kept calls and their CPU time re-run on
  copies of their inputs (best of ``--reps``); ``same``: whether every re-run gave
  the recorded rates, residuals and memo records bit for bit (the round counts
  are diagnostics and are not compared).

``--save DIR`` writes the kept calls to DIR (one pickle each); ``--replay DIR``
does no replay of the trace: it re-runs the calls saved in DIR with the kernel of
the code on ``PYTHONPATH`` and compares them with the recorded outputs, so two code
versions can be timed on the same calls.

Usage::

    PYTHONPATH=. python benchmarks/weighted_hour.py --scheduler aalo --every 300 --save /tmp/wh
    PYTHONPATH=/path/to/other/checkout python benchmarks/weighted_hour.py --replay /tmp/wh

Raises:
    SystemExit: a bad option value (named), a missing trace file or an empty
        ``--replay`` folder.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pickle
import sys
import time

import numpy as np

TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                     "traces", "FB2010-1Hr-150-0.txt")
#: the upper ends of the ``by_rounds`` buckets
BUCKETS = (1, 4, 19, 49, 199)
#: the arguments that are outputs (rates, residual, memo records; ``out`` holds
#: diagnostics) and are compared bit for bit
COMPARED = (4, 6, 11, 12, 13, 14, 15, 16, 17)


def _copy(args) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _same(got, want) -> bool:
    for k in COMPARED:
        a, b = got[k], want[k]
        if a.dtype == np.float64:
            a, b = a.view(np.int64), b.view(np.int64)
        if not np.array_equal(a, b):
            return False
    return True


def rerun(calls, reps: int) -> tuple:
    """(CPU seconds, all the same) of the kept ``calls`` (inputs, outputs, return)
    re-run with the current kernel, best of ``reps`` per call."""
    from rapier_app.kernels import weighted as kweighted

    total, same = 0.0, True
    for before, after, ret in calls:
        best = float("inf")
        for _ in range(reps):
            a = _copy(before)
            t0 = time.thread_time()
            r = kweighted.weighted_kernel(*a)
            best = min(best, time.thread_time() - t0)
        total += best
        same = same and r == ret and _same(a, after)
    return total, same


def record(scheduler: str, topology: str, limit: int, every: int, trace: str) -> tuple:
    """Replay and wrap the kernel (see module doc): (per-call rows, kept calls)."""
    from rapier_app.core.workload import port_mapping, read_trace, trace_to_coflows
    from rapier_app.kernels import weighted as kweighted
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate
    from topologies import build_topology

    orig = kweighted.weighted_kernel
    rows, kept = [], []

    def spy(*args):
        keep = (len(rows) + 1) % every == 0
        before = _copy(args) if keep else None
        t0 = time.thread_time()
        r = orig(*args)
        dt = time.thread_time() - t0
        out = args[8]
        rows.append((dt, args[0].shape[0], int(out[0]), int(out[1])))
        if keep:
            kept.append((before, _copy(args), r))
        return r

    tr = read_trace(trace)
    topo = build_topology(topology)
    cfs = trace_to_coflows(tr, port_mapping(tr.ports, topo), limit)
    kweighted.weighted_kernel = spy
    try:
        simulate(topo, cfs, make_scheduler(scheduler, topo), record_flows=False)
    finally:
        kweighted.weighted_kernel = orig
    return rows, kept


def summary(rows) -> dict:
    """The per-call figures of the module doc from :func:`record`'s rows."""
    a = np.array(rows, dtype=float).reshape(-1, 4)
    dt, rounds, flag = a[:, 0], a[:, 2], a[:, 3]
    by, lo = {}, 0
    for hi in BUCKETS + (10 ** 9,):
        m = (rounds >= lo) & (rounds <= hi)
        by[f"{lo}-{hi}" if hi < 10 ** 9 else f"{lo}+"] = {
            "calls": int(m.sum()), "cpu_s": round(float(dt[m].sum()), 3)}
        lo = hi + 1
    return {"calls": len(rows), "kernel_cpu_s": round(float(dt.sum()), 3),
            "mean_rows": round(float(a[:, 1].mean()), 1) if len(rows) else 0.0,
            "by_rounds": by, "stalled": int((flag == 2).sum()),
            "capped": int((flag == 1).sum())}


def main(argv=None) -> int:
    """Entry point; prints the JSON object of the module doc."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scheduler", default="aalo")
    p.add_argument("--topology", default="bigswitch:150")
    p.add_argument("--limit", type=int, default=None, help="first N coflows (default all)")
    p.add_argument("--every", type=int, default=300, help="keep every N-th call")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--trace", default=TRACE)
    p.add_argument("--save", default=None, help="write the kept calls to this folder")
    p.add_argument("--replay", default=None, help="re-run the calls saved in this folder")
    a = p.parse_args(argv)
    if a.every < 1:
        p.error(f"--every: must be at least 1, got {a.every}")
    if a.reps < 1:
        p.error(f"--reps: must be at least 1, got {a.reps}")
    if a.limit is not None and a.limit < 1:
        p.error(f"--limit: must be at least 1, got {a.limit}")
    if a.scheduler not in ("aalo", "philae"):
        p.error(f"--scheduler: the weighted pass serves aalo and philae, not {a.scheduler!r}")
    if a.replay:
        files = sorted(glob.glob(os.path.join(a.replay, "call*.pkl")))
        if not files:
            p.error(f"--replay: no saved calls (call*.pkl) in {a.replay}")
        calls = []
        for f in files:
            with open(f, "rb") as fh:
                calls.append(pickle.load(fh))
        cpu, same = rerun(calls, a.reps)
        print(json.dumps({"sampled": len(calls), "sampled_cpu_s": round(cpu, 3),
                          "same": same}))
        return 0
    if not os.path.exists(a.trace):
        p.error(f"--trace: trace file not found: {a.trace}")
    from topologies import TopologyError, build_topology
    try:
        build_topology(a.topology)
    except TopologyError as exc:
        p.error(f"--topology: {exc}")
    rows, kept = record(a.scheduler, a.topology, a.limit, a.every, a.trace)
    res = summary(rows)
    cpu, same = rerun(kept, a.reps)
    res.update({"sampled": len(kept), "sampled_cpu_s": round(cpu, 3), "same": same})
    if a.save:
        os.makedirs(a.save, exist_ok=True)
        for i, c in enumerate(kept):
            with open(os.path.join(a.save, f"call{i:06d}.pkl"), "wb") as fh:
                pickle.dump(c, fh, protocol=5)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
