"""Event-core speed: simulator and schedulers on a Facebook-trace prefix, and on the
"giants" shape (a few very wide coflows live at once).

**Trace prefix** (the default).  Per (topology, scheduler) it prints the wall time
(s), the CPU time (s), the number of decision points (events), events per wall
second, the peak resident memory of the run (MiB, ``ru_maxrss`` of a fresh child
process per run) and a fingerprint of the decisions: the first 16 hex digits of the
sha256 of every coflow's CCT and every flow's finish time as exact ``float.hex()``
strings (the formula of ``tests/test_decisions_pinned.py``), so two code versions
can be checked for bit-identical decisions on a larger prefix than the test pins.

Workload: the trace's coflows in arrival order, those with at most ``--max-flows``
flows (default: all), the first ``--limit`` of them (default 200), ports mapped onto
hosts as the CLI maps them (``port_mapping(150, topo, seed=0)``).  Each run is its
own child process (``--one TOPOLOGY SCHEDULER``), so the memory figure is that
run's alone and one run's caches do not speed up the next.

**Giants** (``giants`` as the first argument).  The Facebook hour spends most of its
wall time where several coflows of 17,000-21,000 flows are live at once; every flow
completion is a decision point and each costs work proportional to the live flows.
This workload reproduces that shape in seconds: ``--coflows`` coflows of
``--width`` random host-to-host flows each (sizes uniform in 1..100 MB, seeded by
``--seed``), arriving 1 s apart on ``bigswitch:HOSTS`` (or between the first
``--hosts`` hosts of ``--topology``).  Per scheduler it prints CPU seconds,
decision points, CPU microseconds per decision point and the same fingerprint.

Usage::

    python benchmarks/event_core.py [--trace PATH] [--limit 200] [--max-flows N]
        [--topologies bigswitch:150,fattree:10]
        [--schedulers rapier,rapier-bssi,scheduling-only,baseline,routing-only]
        [--json OUT.json]
    python benchmarks/event_core.py giants [--hosts 150] [--coflows 4] [--width 5000]
        [--seed 1] [--schedulers rapier,scheduling-only] [--topology fattree:10]

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

import numpy as np

from _common import add_trace_options, check_trace_options, write_json

from rapier_app.workload_options import add_workload_options

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
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["giants"]:
        return giants_main(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_options(ap, limit=200)
    ap.add_argument("--max-flows", type=int, default=0,
                    help="keep only coflows with at most this many flows (0: all)")
    ap.add_argument("--topologies", default="bigswitch:150,fattree:10")
    ap.add_argument("--schedulers", default=DEFAULT_SCHEDULERS)
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument("--one", nargs=2, metavar=("TOPOLOGY", "SCHEDULER"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    check_trace_options(a)
    if a.max_flows < 0:
        raise SystemExit(f"--max-flows: must be >= 0, got {a.max_flows}")
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


def giants_workload(hosts: int, coflows: int, width: int, seed: int, topology: str = None):
    """(topology, coflow specs): the giants workload of the module docstring;
    ``topology`` (a spec such as ``fattree:10``) replaces ``bigswitch:hosts``, flows
    then between its first ``hosts`` hosts.

    Raises:
        SystemExit: a bad topology spec, or fewer than ``hosts`` hosts in it (named).
    """
    from rapier_app.core.model import make_coflow
    from topologies import TopologyError, big_switch, build_topology

    try:
        topo = big_switch(hosts) if topology is None else build_topology(topology)
    except TopologyError as exc:
        raise SystemExit(f"--topology: {exc}") from None
    if len(topo.hosts) < hosts:
        raise SystemExit(f"--hosts: {topology} has only {len(topo.hosts)} hosts, got {hosts}")
    rng = np.random.default_rng(seed)
    h = topo.hosts
    out = []
    for c in range(coflows):
        src = rng.integers(0, hosts, width)
        dst = (src + rng.integers(1, hosts, width)) % hosts
        size = rng.uniform(1e6, 100e6, width).round()
        out.append(make_coflow(f"G{c}", float(c), [(h[s], h[d], float(v)) for s, d, v in
                                                   zip(src.tolist(), dst.tolist(),
                                                       size.tolist())]))
    return topo, out


def giants_main(argv=None) -> int:
    """Run the giants benchmark (module docstring); returns the exit code."""
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate

    ap = argparse.ArgumentParser(prog="event_core.py giants",
                                 description="Per-event cost with many live flows.")
    ap.add_argument("--hosts", type=int, default=150)
    ap.add_argument("--coflows", type=int, default=4)
    ap.add_argument("--width", type=int, default=5000)
    add_workload_options(ap, "seed")
    ap.add_argument("--schedulers", default="rapier,scheduling-only")
    add_workload_options(ap, "topology", topology=dict(
        help="a topology spec instead of bigswitch:HOSTS (e.g. fattree:10; flows between "
             "its first HOSTS hosts)"))
    a = ap.parse_args(argv)
    for name in ("hosts", "coflows", "width"):
        if getattr(a, name) < (2 if name == "hosts" else 1):
            raise SystemExit(f"--{name}: too small, got {getattr(a, name)}")
    topo, cfs = giants_workload(a.hosts, a.coflows, a.width, a.seed, a.topology)
    print(f"{'scheduler':16s} {'cpu s':>8s} {'events':>7s} {'us/event':>9s} fingerprint")
    for name in a.schedulers.split(","):
        c0 = time.process_time()
        res = simulate(topo, cfs, make_scheduler(name, topo, seed=1))
        cpu = time.process_time() - c0
        print(f"{name:16s} {cpu:8.2f} {res.events:7d} {1e6 * cpu / max(res.events, 1):9.0f} "
              f"{fingerprint(res)[:16]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
