"""Simulator speed on the Facebook coflow trace (bigswitch:150).

Prints, per classic scheduler and trace prefix, the wall time (s), the number of
events, the number of flow-events (active flows summed over events) and the
microseconds per flow-event.

Usage::

    python benchmarks/sim_speed.py [--trace PATH] [--coflows 30,100,all]
                                   [--schedulers baseline,scheduling-only,routing-only]
                                   [--skip N]

``--skip N`` drops the first N coflows of each prefix and starts the clock at the
next one's arrival (``--coflows 260 --skip 200``: the trace's busy middle).

Raises:
    SystemExit: the trace file does not exist.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

from _common import DEFAULT_TRACE

from rapier_app.core.workload import port_mapping, read_trace, trace_to_coflows  # noqa: E402
from rapier_app.scheduling import make_scheduler  # noqa: E402
from rapier_app.sim import simulate  # noqa: E402
from rapier_app.workload_options import add_workload_options  # noqa: E402
from topologies import build_topology  # noqa: E402


def count_flow_events(sched) -> list:
    """Make ``sched`` count the active flows of every decision point (flow-events):
    its ``schedule`` is wrapped on the instance, so the simulator still sees the
    scheduler's own class (its hooks and fast paths).  Returns a one-element list
    holding the running count."""
    inner = sched.schedule
    count = [0]

    def schedule(now, coflows):
        count[0] += sum(len(c.active_flows()) for c in coflows)
        return inner(now, coflows)

    sched.schedule = schedule
    return count


def main(argv=None) -> int:
    """Run the benchmark; returns the process exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_options(ap, "trace", trace=dict(default=DEFAULT_TRACE))
    ap.add_argument("--coflows", default="30,100")
    ap.add_argument("--schedulers", default="baseline,scheduling-only,routing-only")
    add_workload_options(ap, "topology", topology=dict(default="bigswitch:150"))
    ap.add_argument("--skip", type=int, default=0,
                    help="drop the first N coflows; time starts at the next arrival")
    a = ap.parse_args(argv)
    if a.skip < 0:
        raise SystemExit(f"--skip: must be >= 0, got {a.skip}")
    if not os.path.exists(a.trace):
        raise SystemExit(f"--trace: {a.trace} does not exist")
    tr = read_trace(a.trace)
    topo = build_topology(a.topology)
    mapping = port_mapping(150, topo)
    print(f"{'scheduler':16s} {'coflows':>7s} {'flows':>8s} {'events':>7s} "
          f"{'flow-events':>12s} {'wall s':>9s} {'us/flow-ev':>10s} {'mean CCT s':>12s}")
    for lim in a.coflows.split(","):
        n = None if lim == "all" else int(lim)
        cfs = trace_to_coflows(tr, mapping, n)
        if a.skip:
            if a.skip >= len(cfs):
                raise SystemExit(f"--skip: {a.skip} drops all {len(cfs)} coflows of the "
                                 f"prefix {lim}")
            cfs = sorted(cfs, key=lambda c: (c.arrival_s, c.coflow_id))[a.skip:]
            t0 = cfs[0].arrival_s if cfs else 0.0
            cfs = [dataclasses.replace(c, arrival_s=c.arrival_s - t0) for c in cfs]
        for name in a.schedulers.split(","):
            s = make_scheduler(name, topo)
            flow_events = count_flow_events(s)
            t = time.perf_counter()
            r = simulate(topo, cfs, s, record_flows=False)
            wall = time.perf_counter() - t
            print(f"{name:16s} {len(cfs):7d} {sum(c.width for c in cfs):8d} {r.events:7d} "
                  f"{flow_events[0]:12d} {wall:9.2f} {1e6 * wall / max(flow_events[0], 1):10.2f} "
                  f"{r.ccts.mean():12.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
