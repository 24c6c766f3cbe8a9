"""Measure ``rapier-experiment run`` serial vs ``--jobs N`` vs ``--dask local:N``.

Two measurements (the numbers are in docs/experiments.md):

1. **Speed-up and identical rows.**  The same small grid is run three times from a
   fresh folder each, as a user would (``rapier-experiment run ... -q``, a new
   process, wall time measured from outside, imports and worker start-up
   included): serially, with ``--jobs N`` and with ``--dask local:N``.  The runs.csv
   rows, wall-time column aside, must be identical (CCTs compared as the exact
   strings written); the script prints the wall times, the speed-ups and the load
   average (``os.getloadavg``) before and after each run, since on a shared machine
   other jobs take cores away.
2. **Dask overhead per point.**  In this process: M tiny points (width-16 workload,
   ``baseline`` only) run serially, then on a warmed single-worker ``LocalCluster``
   (one process, one thread); overhead per point = (Dask wall - serial wall) / M.
   The cluster's start-up time is printed apart.

Usage (from the repository root; about 4 CPU-minutes with the defaults)::

    .venv/bin/python benchmarks/sweep_scaleout.py [--values 64,96] [--tries 3] \
        [--jobs 2] [--overhead-points 20] [--skip-grid] [--skip-overhead] [--nice N]

Exit status 0 when the rows are identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(os.path.dirname(sys.executable), "rapier-experiment")


def rows_without_wall(path: str) -> list:
    """runs.csv rows as sorted tuples of their exact strings, ``wall_s`` left out."""
    with open(path, newline="") as fh:
        return sorted(tuple(v for k, v in r.items() if k != "wall_s") for r in csv.DictReader(fh))


def load() -> str:
    """The 1-minute load average and the CPU count, e.g. ``load 3.1 on 2 CPUs``."""
    return f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"


def cpu_busy() -> tuple:
    """(busy, total) jiffies of the whole machine from /proc/stat (all CPUs)."""
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v[:8]) - idle, sum(v[:8])


def run_grid(args, extra: list, out: str) -> dict:
    """One ``rapier-experiment run`` into ``out``: its wall seconds, the machine's
    busy fraction meanwhile (/proc/stat, 1.0 = every CPU busy) and, from the run's
    last ``# N points in ...`` log line, the wall and CPU seconds its points took in
    their workers."""
    cmd = [CLI if os.path.exists(CLI) else "rapier-experiment", "run", "--experiment", "width",
           "--fabric", args.fabric, "--values", args.values, "--tries", str(args.tries),
           "--schemes", args.schemes, "--out", out, "-q"] + extra
    b0 = cpu_busy()
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    b1 = cpu_busy()
    with open(os.path.join(out, "experiment.log")) as fh:
        m = [re.search(r"in the workers: ([\d.]+) s wall, ([\d.]+) s CPU", ln) for ln in fh]
    m = [x for x in m if x][-1]
    return {"wall": wall, "busy": (b1[0] - b0[0]) / max(1, b1[1] - b0[1]),
            "task_wall": float(m.group(1)), "task_cpu": float(m.group(2))}


def grid(args) -> bool:
    """Measurement 1; returns whether all backends gave the same rows."""
    base = tempfile.mkdtemp(prefix="rapier-scaleout-")
    backends = [("serial", []), (f"--jobs {args.jobs}", ["--jobs", str(args.jobs)]),
                (f"--dask local:{args.jobs}", ["--dask", f"local:{args.jobs}"])]
    walls, rows = {}, {}
    print(f"grid: width on {args.fabric}, x in {args.values}, {args.tries} tries, schemes "
          f"{args.schemes}; outputs under {base}")
    for name, extra in backends:
        out = os.path.join(base, name.strip("-").replace(" ", "_").replace(":", ""))
        before = load()
        r = run_grid(args, extra, out)
        walls[name] = r["wall"]
        rows[name] = rows_without_wall(os.path.join(out, "runs.csv"))
        print(f"  {name:18s} {r['wall']:6.1f} s wall; points: {r['task_wall']:6.1f} s wall, "
              f"{r['task_cpu']:6.1f} s CPU (= {r['task_cpu'] / r['wall']:.2f} cores of this "
              f"run); machine {100 * r['busy']:.0f} % busy; {before} before, {load()} after",
              flush=True)
    ref = rows["serial"]
    same = all(r == ref for r in rows.values())
    print(f"  rows: {len(ref)} per backend; identical (CCTs bit for bit): {same}")
    for name in walls:
        if name != "serial":
            print(f"  speed-up {name}: x{walls['serial'] / walls[name]:.2f}")
    return same


def overhead(args) -> None:
    """Measurement 2."""
    from distributed import Client, LocalCluster

    sys.path.insert(0, REPO)
    from rapier_app.experiments.parallel import execute
    from rapier_app.experiments.sweeps import plan_tasks, run_task

    m = args.overhead_points
    tasks = plan_tasks("width", args.fabric, [16], m + 1, ["baseline"])
    warm, tasks = tasks[0], tasks[1:]
    tmp = tempfile.mkdtemp(prefix="rapier-overhead-")
    run_task(warm)
    t0 = time.perf_counter()
    execute(tasks, os.path.join(tmp, "serial.csv"))
    serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        start = time.perf_counter() - t0
        client.submit(run_task, warm, pure=False).result()  # imports in the worker
        st: dict = {}
        t0 = time.perf_counter()
        execute(tasks, os.path.join(tmp, "dask.csv"), dask=client, stats=st)
        dask = time.perf_counter() - t0
    print(f"overhead: {m} points of ~{serial / m:.2f} s; serial {serial:.2f} s, Dask "
          f"LocalCluster (1 worker process) {dask:.2f} s -> {1000 * (dask - serial) / m:.0f} ms "
          f"per point; (Dask wall - the points' wall in the worker) / points = "
          f"{1000 * (dask - st['task_wall_s']) / m:.0f} ms; cluster start {start:.1f} s, "
          f"{load()}")


def main(argv=None) -> int:
    """Entry point; see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fabric", default="fattree512")
    p.add_argument("--values", default="64,96")
    p.add_argument("--tries", type=int, default=3)
    p.add_argument("--schemes", default="paper")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--overhead-points", type=int, default=20)
    p.add_argument("--skip-grid", action="store_true", help="only the overhead")
    p.add_argument("--skip-overhead", action="store_true", help="only the grid")
    p.add_argument("--nice", type=int, default=0,
                   help="os.nice increment for this script and its children (negative, "
                        "as root: a larger CPU share against other jobs on the machine)")
    a = p.parse_args(argv)
    if a.nice:
        print(f"niceness now {os.nice(a.nice)}")
    ok = True if a.skip_grid else grid(a)
    if not a.skip_overhead:
        overhead(a)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
