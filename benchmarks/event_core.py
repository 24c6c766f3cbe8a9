"""Event-core speed on a prefix of the Facebook coflow trace (issue 16).

Per (topology, scheduler) it prints the wall time (s), the CPU time (s), the number
of decision points (events), events per wall second, the peak resident memory of
the run (MiB, ``ru_maxrss`` of a fresh child process per run) and a fingerprint of
the decisions: the first 16 hex digits of the sha256 of every coflow's CCT and
every flow's finish time as exact ``float.hex()`` strings (the formula of
``tests/test_decisions_pinned.py``), so two code versions can be checked for
bit-identical decisions on a larger prefix than the test pins.

Workload: the trace's coflows in arrival order, those with at most ``--max-flows``
flows (default: all), the first ``--limit`` of them (default 200), ports mapped onto
hosts as the CLI maps them (``port_mapping(150, topo, seed=0)``).

Usage::

    python benchmarks/event_core.py [--trace PATH] [--limit 200] [--max-flows N]
        [--topologies bigswitch:150,fattree:10]
        [--schedulers rapier,rapier-bssi,scheduling-only,baseline,routing-only]
        [--json OUT.json]

Each run is its own child process (``--one TOPOLOGY SCHEDULER``), so the memory
figure is that run's alone and one run's caches do not speed up the next.

Raises:
    SystemExit: the trace file does not exist, or a bad option value (named).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

from _common import write_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

DEFAULT_TRACE = os.path.join(os.path.dirname(ROOT), "shared", "traces", "FB2010-1Hr-150-0.txt")
DEFAULT_SCHEDULERS = "rapier,rapier-bssi,scheduling-only,baseline,routing-only"


def fingerprint(res) -> str:
    """sha256 (hex) of a :class:`SimResult`'s sorted (coflow id, CCT) and (flow id,
    finish time) pairs, times as ``float.hex()`` (tests/test_decisions_pinned.py)."""
    cct = sorted((r.coflow_id, float(r.cct_s).hex()) for r in res.coflows)
    fin = sorted((r.flow_id, float(r.finish_s).hex()) for r in res.flows)
    return hashlib.sha256(repr((cct, fin)).encode()).hexdigest()


def workload(trace: str, topology: str, limit: int, max_flows: int):
    """(topology object, coflows) of the module docstring."""
    from rapier_app.core.workload import port_mapping, read_trace, trace_to_coflows
    from topologies import build_topology

    tr = read_trace(trace)
    topo = build_topology(topology)
    cfs = trace_to_coflows(tr, port_mapping(tr.ports, topo, 0))
    cfs.sort(key=lambda c: (c.arrival_s, c.coflow_id))
    if max_flows:
        cfs = [c for c in cfs if len(c.flows) <= max_flows]
    return topo, cfs[:limit]


def run_one(trace: str, topology: str, scheduler: str, limit: int, max_flows: int) -> dict:
    """Simulate one scheduler in this process; returns the row as a dict (wall_s,
    cpu_s, events, events_per_s, peak_mib, fingerprint, coflows, flows, mean_cct_s)."""
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate

    topo, cfs = workload(trace, topology, limit, max_flows)
    sched = make_scheduler(scheduler, topo)
    c0, t0 = time.process_time(), time.perf_counter()
    res = simulate(topo, cfs, sched)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"topology": topology, "scheduler": scheduler, "coflows": len(cfs),
            "flows": sum(len(c.flows) for c in cfs), "wall_s": wall, "cpu_s": cpu,
            "events": res.events, "events_per_s": res.events / wall if wall else 0.0,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "fingerprint": fingerprint(res)[:16], "mean_cct_s": float(res.ccts.mean())}


def main(argv=None) -> int:
    """Run the benchmark (module docstring); returns the process exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=DEFAULT_TRACE)
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--max-flows", type=int, default=0,
                    help="keep only coflows with at most this many flows (0: all)")
    ap.add_argument("--topologies", default="bigswitch:150,fattree:10")
    ap.add_argument("--schedulers", default=DEFAULT_SCHEDULERS)
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument("--one", nargs=2, metavar=("TOPOLOGY", "SCHEDULER"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.limit <= 0:
        raise SystemExit(f"--limit: must be positive, got {a.limit}")
    if a.max_flows < 0:
        raise SystemExit(f"--max-flows: must be >= 0, got {a.max_flows}")
    if not os.path.exists(a.trace):
        raise SystemExit(f"--trace: {a.trace} does not exist")
    if a.one:
        print(json.dumps(run_one(a.trace, a.one[0], a.one[1], a.limit, a.max_flows)))
        return 0
    rows = []
    print(f"{'topology':14s} {'scheduler':16s} {'coflows':>7s} {'flows':>7s} {'wall s':>8s} "
          f"{'cpu s':>8s} {'events':>7s} {'ev/s':>8s} {'MiB':>6s} {'fingerprint':16s}",
          flush=True)
    for topo in a.topologies.split(","):
        for name in a.schedulers.split(","):
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--trace", a.trace, "--limit",
                 str(a.limit), "--max-flows", str(a.max_flows), "--one", topo, name],
                capture_output=True, text=True)
            if out.returncode:
                sys.stderr.write(out.stderr)
                raise SystemExit(f"run {topo} {name}: exit {out.returncode}")
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(r)
            print(f"{topo:14s} {name:16s} {r['coflows']:7d} {r['flows']:7d} "
                  f"{r['wall_s']:8.2f} {r['cpu_s']:8.2f} {r['events']:7d} "
                  f"{r['events_per_s']:8.0f} {r['peak_mib']:6.0f} {r['fingerprint']}",
                  flush=True)
    write_json(a.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
