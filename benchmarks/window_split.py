"""CPU per decision point in a window of a Facebook-trace replay, split between the
scheduler and the simulator (issue 16, sixth round).

Replays trace coflows ``--coflows A:B`` (arrivals shifted so that A arrives at 0;
with ``--at0`` every coflow of the slice arrives at 0, Sincronia Section 5.2's
offline setting) under ``--scheduler`` on ``--topology`` for ``--events`` decision
points, and measures process CPU time from decision point ``--start`` on.  Prints
one line: the window's CPU seconds, its decision points, CPU milliseconds per
decision point, and how many of those the scheduler's ``schedule`` call took (the
rest is the simulator's own work), plus the simulated time reached.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/window_split.py --scheduler aalo \\
        --coflows 187:240 --start 1000 --events 4000
    PYTHONPATH=. python benchmarks/window_split.py --scheduler sincronia --at0 \\
        --coflows 0:526 --start 3000 --events 4000

The defaults are the giants' stretch of the hour (trace coflows 187-240, several
coflows of 17,000-21,000 flows live at once) on ``bigswitch:150``.

Raises:
    SystemExit: a bad option value (named), or a missing trace file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _common import parse_slice  # noqa: E402  (this folder is on sys.path)

TRACE = os.path.join(os.path.dirname(ROOT), "shared", "traces", "FB2010-1Hr-150-0.txt")


def run(scheduler: str, topology: str, first: int, stop: int, start: int, events: int,
        at0: bool, trace: str) -> dict:
    """The measurement of the module docstring, as a dict (seconds, milliseconds)."""
    from _common import trace_slice
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate
    from rapier_app.sim.simulator import SimulationError
    from topologies import build_topology

    topo = build_topology(topology)
    cfs = trace_slice(topo, trace, first, stop, at0)
    s = make_scheduler(scheduler, topo)
    orig = s.schedule
    n = [0]
    in_sched = [0.0]
    t_start = [None]
    now_seen = [0.0]

    def timed(now, coflows):
        n[0] += 1
        if n[0] == start:
            t_start[0] = time.process_time()
        t = time.process_time()
        out = orig(now, coflows)
        if n[0] >= start:
            in_sched[0] += time.process_time() - t
        now_seen[0] = now
        return out

    s.schedule = timed
    try:
        simulate(topo, cfs, s, max_events=events)
    except SimulationError:
        pass  # stopped at --events decision points, as intended
    if t_start[0] is None:
        raise SystemExit(f"--start: the replay ended after {n[0]} decision points")
    cpu = time.process_time() - t_start[0]
    k = n[0] - start + 1
    return {"scheduler": scheduler, "topology": topology, "coflows": f"{first}:{stop}",
            "at0": at0, "window": [start, n[0]], "cpu_s": round(cpu, 3),
            "ms_per_decision": round(1000 * cpu / k, 3),
            "schedule_ms": round(1000 * in_sched[0] / k, 3),
            "simulator_ms": round(1000 * (cpu - in_sched[0]) / k, 3),
            "sim_t_s": now_seen[0]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scheduler", default="aalo")
    p.add_argument("--topology", default="bigswitch:150")
    p.add_argument("--coflows", default="187:240", help="trace slice A:B")
    p.add_argument("--start", type=int, default=1000, help="first decision point timed")
    p.add_argument("--events", type=int, default=4000, help="last decision point")
    p.add_argument("--at0", action="store_true", help="every coflow of the slice at t=0")
    p.add_argument("--trace", default=TRACE)
    a = p.parse_args(argv)
    first, stop = parse_slice(a.coflows)
    if not 1 <= a.start <= a.events:
        raise SystemExit(f"--start: must be in 1..--events, got {a.start}")
    if not os.path.exists(a.trace):
        raise SystemExit(f"--trace: {a.trace} not found")
    print(json.dumps(run(a.scheduler, a.topology, first, stop, a.start, a.events, a.at0,
                         a.trace)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
