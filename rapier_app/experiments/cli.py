"""``rapier-experiment``: RAPIER's Section V-B evaluation from the command line.

Subcommands:

* ``run``: a sweep (``--experiment width|number|interval``) on one or more fabrics;
  ``--full`` uses the paper's x values and 20 tries, the default the reduced subset
  and 1 try.  Appends to ``<out>/runs.csv`` (resumable) and rebuilds the report.
* ``point``: one point, one seed (prints the rows; nothing written unless --out).
* ``report``: rebuild summary.csv, the PNGs and summary.md from runs.csv.
* ``big``: one try on a large fabric (default the 8192-server fat-tree) with the
  width-128 workload, logging progress and wall time to ``<out>/big_<fabric>.md``.

Exit status 0 on success, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Optional

from .fabrics import FABRICS, fabric
from .sweeps import (DEFAULT_SIZES, EXPERIMENTS, available_schemes, run_point, run_sweep)


def _floats(text: str) -> list:
    return [float(v) for v in text.split(",") if v]


def _schemes(text: str) -> list:
    if text == "paper":
        return available_schemes(include_seeds=False)
    if text == "all":
        return available_schemes(include_seeds=True)
    return [s for s in text.split(",") if s]


def _mode(a) -> Optional[str]:
    """The simulator's reschedule_on from ``--reschedule`` (None: each scheduler's)."""
    return None if a.reschedule == "auto" else a.reschedule


def cmd_run(a) -> int:
    """``run``: sweeps (resumable, appended to <out>/runs.csv), then the report."""
    exps = list(EXPERIMENTS) if a.experiment == "all" else [a.experiment]
    for e in exps:
        exp = EXPERIMENTS[e]
        values = _floats(a.values) if a.values else list(exp.values if a.full else exp.quick)
        tries = a.tries if a.tries else (20 if a.full else 1)
        for f in a.fabric.split(","):
            t0 = time.perf_counter()
            run_sweep(e, f, values, tries, _schemes(a.schemes), a.out, a.sizes, a.base_seed,
                      log=lambda m: print(m, flush=True), reschedule_on=_mode(a))
            print(f"# {e} on {f}: {time.perf_counter() - t0:.1f} s wall", flush=True)
    from .report import build_report
    for p in build_report(a.out):
        print("wrote", p)
    return 0


def cmd_point(a) -> int:
    """``point``: every scheme once on one (experiment, fabric, x, seed); prints the
    rows as JSON and appends them to <out>/runs.csv when --out is given."""
    from .sweeps import append_runs, check_decision_points
    if a.out:  # refuse before running, not after
        check_decision_points(os.path.join(a.out, "runs.csv"), _mode(a))
    rows = run_point(a.experiment, a.fabric, a.x, a.seed, _schemes(a.schemes), a.sizes,
                     log=lambda m: print(m, flush=True), reschedule_on=_mode(a))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        append_runs(os.path.join(a.out, "runs.csv"), rows)
    print(json.dumps(rows, indent=1))
    return 0


def cmd_report(a) -> int:
    """``report``: rebuild summary.csv, the PNGs and summary.md from runs.csv."""
    from .report import build_report
    for p in build_report(a.out):
        print("wrote", p)
    return 0


def cmd_big(a) -> int:
    """``big``: one try on a large fabric; progress, lower bound, average CCT and
    wall times are logged to stdout and to <out>/big_<fabric>.md as they happen."""
    from ..core.workload import synthetic
    from ..scheduling import make_scheduler
    from ..sim import Simulator
    from ..sim.bounds import coflow_lower_bounds
    import numpy as np

    os.makedirs(a.out, exist_ok=True)
    log_path = os.path.join(a.out, f"big_{a.fabric}.md")
    lines = []

    def log(msg: str) -> None:
        print(msg, flush=True)
        lines.append(msg)
        with open(log_path, "w") as fh:
            fh.write("\n".join(lines) + "\n")

    t0 = time.perf_counter()
    topo = fabric(a.fabric)
    log(f"# One try on `{a.fabric}`: {FABRICS[a.fabric][1]}")
    log("")
    log(f"Command: `rapier-experiment big --fabric {a.fabric} --coflows {a.coflows} "
        f"--width {a.width} --interval {a.interval} --sizes {a.sizes} --seed {a.seed} "
        f"--schemes {a.schemes}`")
    log("")
    log(f"- topology built: {time.perf_counter() - t0:.1f} s ({len(topo.hosts)} servers)")
    coflows = synthetic(topo, a.coflows, a.width, a.interval, sizes=a.sizes, seed=a.seed)
    t1 = time.perf_counter()
    lb = coflow_lower_bounds(topo, coflows)
    log(f"- lower bound: {np.mean(list(lb.values())):.4f} s average "
        f"({time.perf_counter() - t1:.1f} s wall, includes candidate paths)")
    for name in _schemes(a.schemes):
        ts = time.perf_counter()

        def progress(done, total, now, name=name, ts=ts):
            if done % max(1, total // 10) == 0 or done == total:
                log(f"  - {name}: {done}/{total} coflows done, sim time {now:.3f} s, "
                    f"wall {time.perf_counter() - ts:.0f} s")

        sched = make_scheduler(name, topo, seed=a.seed)
        inner = sched.schedule
        n_flows = sum(len(c.flows) for c in coflows)
        count = [0]

        def logged(now, states, inner=inner, ts=ts, name=name):
            out = inner(now, states)
            count[0] += 1
            if count[0] % a.log_every == 0:
                left = sum(len(c.active_flows()) for c in states)
                el = time.perf_counter() - ts
                log(f"  - {name}: event {count[0]} (an event per arrival or completion; "
                    f"about {n_flows + len(coflows)} in all), sim time {now:.4f} s, "
                    f"{left} active flows, wall {el:.0f} s, {el / count[0]:.2f} s/event")
            return out

        sched.schedule = logged
        res = Simulator(topo, coflows, sched, progress=progress, record_flows=False,
                        reschedule_on=_mode(a)).run()
        avg = float(res.ccts.mean())
        log(f"- **{name}**: average CCT {avg:.4f} s (x{avg / np.mean(list(lb.values())):.2f} "
            f"the bound), {res.events} events, wall {res.wall_s:.1f} s")
    log(f"- total wall time: {time.perf_counter() - t0:.1f} s")
    return 0


def main(argv=None) -> int:
    """Entry point of ``rapier-experiment``; returns the exit status."""
    p = argparse.ArgumentParser(prog="rapier-experiment", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a sweep (resumable) and rebuild the report")
    r.add_argument("--experiment", choices=list(EXPERIMENTS) + ["all"], required=True)
    r.add_argument("--fabric", default="fattree512,vl2-512",
                   help=f"comma list of: {', '.join(FABRICS)}")
    r.add_argument("--values", help="comma list of x values (default: reduced subset)")
    r.add_argument("--tries", type=int, help="tries per point (default 1; 20 with --full)")
    r.add_argument("--full", action="store_true", help="paper's x values and 20 tries")
    r.add_argument("--schemes", default="paper",
                   help="'paper' (4 schemes), 'all' (+ rapier-ls, rapier-spread and the registered seed schedulers) or a comma list")
    r.add_argument("--sizes", default=DEFAULT_SIZES, help="flow sizes spec (MB)")
    r.add_argument("--base-seed", type=int, default=1, help="seed of try 0 (try i: +i)")
    r.add_argument("--out", default="results/sweeps")
    r.add_argument("--reschedule", choices=["auto", "flow", "coflow"], default="auto",
                   help="decision points besides arrivals: every flow completion (flow), "
                        "coflow completions (coflow) or each scheduler's own (auto)")
    r.set_defaults(fn=cmd_run)
    q = sub.add_parser("point", help="run one point with one seed")
    q.add_argument("--experiment", choices=list(EXPERIMENTS), required=True)
    q.add_argument("--fabric", required=True)
    q.add_argument("--x", type=float, required=True)
    q.add_argument("--seed", type=int, required=True)
    q.add_argument("--schemes", default="paper")
    q.add_argument("--sizes", default=DEFAULT_SIZES)
    q.add_argument("--out")
    q.add_argument("--reschedule", choices=["auto", "flow", "coflow"], default="auto",
                   help="decision points besides arrivals: every flow completion (flow), "
                        "coflow completions (coflow) or each scheduler's own (auto)")
    q.set_defaults(fn=cmd_point)
    s = sub.add_parser("report", help="rebuild the CSV/PNG/markdown from runs.csv")
    s.add_argument("--out", default="results/sweeps")
    s.set_defaults(fn=cmd_report)
    b = sub.add_parser("big", help="one try on a large fabric, with wall time")
    b.add_argument("--fabric", default="fattree8192")
    b.add_argument("--coflows", type=int, default=20)
    b.add_argument("--width", type=int, default=128)
    b.add_argument("--interval", type=float, default=0.1)
    b.add_argument("--sizes", default=DEFAULT_SIZES)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--schemes", default="rapier,baseline,routing-only,scheduling-only")
    b.add_argument("--out", default="results/eval")
    b.add_argument("--reschedule", choices=["auto", "flow", "coflow"], default="auto",
                   help="decision points besides arrivals: every flow completion (flow), "
                        "coflow completions (coflow) or each scheduler's own (auto)")
    b.add_argument("--log-every", type=int, default=20, help="log every N scheduler calls")
    b.set_defaults(fn=cmd_big)
    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except (KeyError, ValueError) as exc:
        print(f"rapier-experiment: {exc.args[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
