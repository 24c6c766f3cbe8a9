"""Per-event cost with many live flows: a few wide coflows on a big switch (issue 16).

The Facebook hour spends most of its wall time in its "giants" stretch (900-2500 s:
several coflows of 17,000-21,000 flows live at once), where every flow completion is
a decision point and each costs work proportional to the live flows.  This workload
reproduces that shape in seconds: ``--coflows`` coflows of ``--width`` random
host-to-host flows each (sizes uniform in 1..100 MB, seeded), arriving 1 s apart on
``bigswitch:N``.  Per scheduler it prints CPU seconds, decision points, CPU
microseconds per decision point and the decision fingerprint of
``benchmarks/event_core.py`` (equal fingerprints: bit-identical decisions), so a
change of the event core can be checked and timed on the expensive shape.

Usage::

    python benchmarks/giants.py [--hosts 150] [--coflows 4] [--width 5000]
        [--seed 1] [--schedulers rapier,scheduling-only] [--topology fattree:10]

Raises:
    SystemExit: a bad option value (named).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def workload(hosts: int, coflows: int, width: int, seed: int, topology: str = None):
    """(topology, coflow specs): the module docstring's workload; ``topology`` (a
    spec such as ``fattree:10``) replaces ``bigswitch:hosts``, flows then between
    its first ``hosts`` hosts."""
    from rapier_app.core.model import make_coflow
    from topologies import big_switch, build_topology

    from topologies import TopologyError

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


def main(argv=None) -> int:
    """Run the benchmark (module docstring); returns the exit code."""
    from event_core import fingerprint
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=150)
    ap.add_argument("--coflows", type=int, default=4)
    ap.add_argument("--width", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--schedulers", default="rapier,scheduling-only")
    ap.add_argument("--topology", default=None,
                    help="a topology spec instead of bigswitch:HOSTS (e.g. fattree:10; "
                         "flows between its first HOSTS hosts)")
    a = ap.parse_args(argv)
    for name in ("hosts", "coflows", "width"):
        if getattr(a, name) < (2 if name == "hosts" else 1):
            raise SystemExit(f"--{name}: too small, got {getattr(a, name)}")
    topo, cfs = workload(a.hosts, a.coflows, a.width, a.seed, a.topology)
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
