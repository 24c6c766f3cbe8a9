"""Bits each core switch carried, per scheduler, on a trace prefix on a fat-tree.

Diagnoses route concentration: ECMP spreads flows over the core switches evenly,
while a scheduler that routes (RAPIER's LP (4) and argmax rounding, Algorithm 2)
may pick the same paths for many coflows.  Prints, per scheduler, the average CCT
(s), the number of core switches used, and the busiest core's bits over the mean
core's (1.0 = perfectly even).

Usage::

    python benchmarks/core_load.py [--topology fattree:10] [--limit 40]
                                   [--schedulers rapier,scheduling-only]

Bits are integrated between decision points: each flow's rate (bit/s) times the
time (s) until the next scheduler call, attributed to the core switch its path
crosses (paths of 7 nodes: host, edge, aggregation, core, aggregation, edge, host).

Raises:
    SystemExit: the trace file does not exist, ``--limit`` is below 1, or the
        topology, trace or a scheduler name is bad (the message names it).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from rapier_app.core.model import WorkloadError  # noqa: E402
from rapier_app.core.workload import port_mapping, read_trace, trace_to_coflows  # noqa: E402
from rapier_app.scheduling import SchedulerError, make_scheduler  # noqa: E402
from rapier_app.sim import simulate  # noqa: E402
from topologies import TopologyError, build_topology  # noqa: E402

DEFAULT_TRACE = os.path.join(os.path.dirname(ROOT), "shared", "traces", "FB2010-1Hr-150-0.txt")


class _CoreMeter:
    """Wraps a scheduler; integrates each core switch's carried bits."""

    def __init__(self, inner):
        self.inner = inner
        self.bits = collections.Counter()
        self._last = None  # (time s, {core: bit/s})

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def schedule(self, now, coflows):
        if self._last is not None:
            t0, load = self._last
            for core, bps in load.items():
                self.bits[core] += bps * (now - t0)
        sched = self.inner.schedule(now, coflows)
        load = collections.Counter()
        for a in sched.allocations.values():
            p = a.path
            if p is not None and len(p) == 7:
                load[p[3]] += a.rate_bps
        self._last = (now, load)
        return sched


def main(argv=None) -> int:
    """Run the diagnostic; returns the process exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--topology", default="fattree:10")
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--schedulers", default="rapier,scheduling-only")
    a = ap.parse_args(argv)
    if not os.path.exists(a.trace):
        raise SystemExit(f"trace: {a.trace} does not exist")
    if a.limit < 1:
        raise SystemExit(f"limit: must be at least 1 coflow, got {a.limit}")
    try:
        topo = build_topology(a.topology)
        tr = read_trace(a.trace)
        cfs = trace_to_coflows(tr, port_mapping(tr.ports, topo), a.limit)
        scheds = [make_scheduler(name, topo) for name in a.schedulers.split(",")]
    except (TopologyError, WorkloadError, SchedulerError) as exc:
        raise SystemExit(str(exc)) from None
    print(f"{'scheduler':18s} {'avg CCT s':>10s} {'cores used':>10s} {'busiest/mean':>12s}")
    for name, sched in zip(a.schedulers.split(","), scheds):
        m = _CoreMeter(sched)
        r = simulate(topo, cfs, m, record_flows=False)
        vals = list(m.bits.values())
        skew = max(vals) / (sum(vals) / len(vals)) if vals else float("nan")
        print(f"{name:18s} {r.ccts.mean():10.4f} {len(vals):10d} {skew:12.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
