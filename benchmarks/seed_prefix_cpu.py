"""CPU time of one seed scheduler on a prefix of the Facebook trace (issue 16).

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/seed_prefix_cpu.py --limit 16 \\
        --scheduler sincronia --at0

``--at0`` replays the trace with every arrival set to 0 (the all-at-0 variant of
Sincronia Section 5.2's offline runs).  Prints one line: average CCT (s), decision
count, CPU seconds of the replay, and for Aalo/Philae the largest number of weighted
rounds one pass needed (``rounds_max``) and how often the safety cap was hit.
"""

import argparse
import json
import os
import tempfile
import time

from rapier_app.core.workload import port_mapping, read_trace, trace_to_coflows
from rapier_app.scheduling import make_scheduler
from rapier_app.sim import simulate
from topologies import build_topology

TRACE = "/work/shared/traces/FB2010-1Hr-150-0.txt"


def at0_copy(path: str) -> str:
    """A temporary copy of the trace at ``path`` with its arrival column (ms) all 0."""
    fd, out = tempfile.mkstemp(suffix=".txt")
    with open(path) as src, os.fdopen(fd, "w") as dst:
        for n, line in enumerate(src):
            parts = line.split()
            if n > 0 and len(parts) > 1:
                parts[1] = "0"
            dst.write(" ".join(parts) + "\n")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=int, default=16, help="first N coflows")
    p.add_argument("--scheduler", default="sincronia")
    p.add_argument("--topology", default="bigswitch:150")
    p.add_argument("--trace", default=TRACE)
    p.add_argument("--at0", action="store_true", help="every arrival at t=0")
    args = p.parse_args(argv)
    trace = at0_copy(args.trace) if args.at0 else args.trace
    topo = build_topology(args.topology)
    cfs = trace_to_coflows(read_trace(trace), port_mapping(150, topo), args.limit)
    sch = make_scheduler(args.scheduler, topo)
    t = time.process_time()
    res = simulate(topo, cfs, sch)
    cpu = time.process_time() - t
    if args.at0:
        os.unlink(trace)
    c = [r.cct_s for r in res.coflows]
    print(json.dumps({"scheduler": args.scheduler, "limit": args.limit, "at0": args.at0,
                      "avg_cct_s": sum(c) / len(c), "decisions": res.events,
                      "cpu_s": round(cpu, 1), "rounds_max": getattr(sch, "rounds_max", None),
                      "rounds_capped": getattr(sch, "rounds_capped", None)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
