"""``rapier-experiment``: RAPIER's Section V-B evaluation from the command line.

Subcommands:

* ``run``: a sweep (``--experiment width|number|interval``) on one or more fabrics;
  ``--full`` uses the paper's x values and 20 tries, the default the reduced subset
  and 1 try.  Appends to ``<out>/runs.csv`` as each point finishes (resumable) and
  rebuilds the report.  ``--jobs N`` runs N points at once on this machine,
  ``--dask ADDRESS`` (or ``local[:N]``) on a Dask cluster; the rows are the same.
  Without ``--out`` it writes to a new ``./rapier-experiment-<time>`` folder.
* ``list``: the grid of a ``run`` as tasks, one line each (``--json``: JSON Lines),
  marked done/todo against ``--out``'s runs.csv.
* ``point``: one point, one seed (prints the rows; nothing written unless --out).
* ``report``: rebuild summary.csv, the PNGs and summary.md from ``--out``'s runs.csv.
* ``merge``: several runs.csv into one (``--out``), refusing conflicting runs.
* ``big``: one try on a large fabric (default the 8192-server fat-tree) with the
  width-128 workload, logging progress and wall time to ``<out>/big_<fabric>.md``.

Nothing is written under the repository's ``results/`` unless ``--out`` names it.
Exit status 0 on success, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from typing import List, Optional

from ..cli_common import add_common_arguments, log_level
from .fabrics import FABRICS, fabric
from .sweeps import (DEFAULT_SIZES, EXPERIMENTS, available_schemes, check_decision_points,
                     pending, plan_tasks, read_runs, run_key, run_point)

LOG = logging.getLogger("rapier_app.experiments")
#: The repository's committed results; written only when --out names them.
RESULTS_DIR = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "results"))



def _floats(text: str) -> list:
    try:
        return [float(v) for v in text.split(",") if v]
    except ValueError:
        raise ValueError(f"values: expected a comma list of numbers, got {text!r}") from None


def _schemes(text: str) -> list:
    if text == "paper":
        return available_schemes(include_seeds=False)
    if text == "all":
        return available_schemes(include_seeds=True)
    return [s for s in text.split(",") if s]


def _mode(a) -> Optional[str]:
    """The simulator's reschedule_on from ``--reschedule`` (None: each scheduler's)."""
    return None if a.reschedule == "auto" else a.reschedule


def _inside_results(path: str) -> bool:
    real = os.path.realpath(path)
    return real == RESULTS_DIR or real.startswith(RESULTS_DIR + os.sep)


def resolve_out(out: Optional[str], prefix: str = "rapier-experiment") -> str:
    """The output folder: ``out`` when given (anywhere, results/ included), else a new
    ``./<prefix>-<YYYYmmdd-HHMMSS>`` folder (a ``-2``, ``-3``... suffix if taken).

    Raises:
        ValueError: the default folder would fall inside the repository's
            ``results/`` (the committed results are written only by an explicit
            ``--out``).
    """
    if out:
        return out
    base = f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, n = base, 1
    while os.path.exists(path):
        n += 1
        path = f"{base}-{n}"
    if _inside_results(path):
        raise ValueError(f"out: the default {path!r} is inside {RESULTS_DIR}; the committed "
                         "results are written only with an explicit --out")
    return path


def _setup_logging(a, out_dir: Optional[str] = None, filename: str = "experiment.log",
                   fmt_file: str = "%(asctime)s %(message)s") -> List[logging.Handler]:
    """Log lines of ``rapier_app.experiments`` to stdout (INFO; WARNING with -q,
    ERROR with -qq; DEBUG with -v) and, when ``out_dir`` is given, appended to ``out_dir/filename``
    (standard :class:`logging.FileHandler`, one write per message).  Returns the
    handlers, removed again by :func:`_close_logging`."""
    level = log_level(a, logging.INFO)
    LOG.setLevel(logging.DEBUG)
    LOG.propagate = False
    out = logging.StreamHandler(sys.stdout)
    out.setLevel(level)
    out.setFormatter(logging.Formatter("%(message)s"))
    handlers: List[logging.Handler] = [out]
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        fh = logging.FileHandler(os.path.join(out_dir, filename), mode="a", encoding="utf-8")
        fh.setLevel(logging.DEBUG)
        fh.setFormatter(logging.Formatter(fmt_file))
        handlers.append(fh)
    for h in handlers:
        LOG.addHandler(h)
    return handlers


def _close_logging(handlers: List[logging.Handler]) -> None:
    for h in handlers:
        LOG.removeHandler(h)
        h.close()


def _grid(a) -> list:
    """Tasks of every (experiment, fabric) of a ``run``/``list`` command line."""
    exps = list(EXPERIMENTS) if a.experiment == "all" else [a.experiment]
    tasks = []
    for e in exps:
        exp = EXPERIMENTS[e]
        values = _floats(a.values) if a.values else list(exp.values if a.full else exp.quick)
        tries = a.tries if a.tries is not None else (20 if a.full else 1)
        if tries < 1:
            raise ValueError(f"--tries: must be at least 1, got {tries}")
        for f in a.fabric.split(","):
            tasks += plan_tasks(e, f, values, tries, _schemes(a.schemes), a.sizes,
                                a.base_seed, _mode(a))
    return tasks


def cmd_run(a) -> int:
    """``run``: sweeps (resumable, appended to <out>/runs.csv as points finish), then
    the report."""
    from tqdm.contrib.logging import logging_redirect_tqdm

    from .parallel import run_tasks
    tasks = _grid(a)  # checks the arguments before anything is created
    a.out = resolve_out(a.out)
    handlers: List[logging.Handler] = []
    stats: dict = {}
    try:
        with contextlib.ExitStack() as stack:
            def announce(todo: list, path: str) -> None:
                # after runs.csv is checked, before the first point runs
                handlers.extend(_setup_logging(a, a.out))
                runs = sum(len(t.schemes) for t in todo)
                LOG.info("# %d points (%d runs) to do of %d in the grid; out: %s; "
                         "backend: %s", len(todo), runs, len(tasks), a.out,
                         f"dask {a.dask}" if a.dask else
                         f"{a.jobs or os.cpu_count()} process(es)")
                if not todo:
                    LOG.info("# every run of the grid is already in %s: nothing to run",
                             path)
                # row lines do not break the bar
                stack.enter_context(logging_redirect_tqdm(loggers=[LOG]))

            run_tasks(tasks, a.out, _mode(a), jobs=a.jobs, dask=a.dask, quiet=a.quiet > 0,
                      stats=stats, on_plan=announce)
        if stats["points"]:
            LOG.info("# %d points in %.1f s wall (%s); in the workers: %.1f s wall, "
                     "%.1f s CPU", stats["points"], stats["wall_s"], stats["backend"],
                     stats["task_wall_s"], stats["task_cpu_s"])
        from .report import build_report
        for p in build_report(a.out):
            LOG.info("wrote %s", p)
    finally:
        _close_logging(handlers)
    return 0


def cmd_list(a) -> int:
    """``list``: the grid of the same ``run`` as tasks, one per line (JSON Lines with
    --json), each marked done or todo against ``--out``'s runs.csv when given."""
    tasks = _grid(a)
    done = set()
    if a.out:
        done = {run_key(r) for r in read_runs(os.path.join(a.out, "runs.csv"))}
    left = {(t.experiment, t.fabric, t.x, t.seed): t.schemes for t in pending(tasks, done)}
    for t in tasks:
        todo = left.get((t.experiment, t.fabric, t.x, t.seed), ())
        status = "todo" if todo == t.schemes else ("done" if not todo else "partial")
        if a.json:
            print(json.dumps({**t.as_dict(), "status": status, "todo": list(todo)}))
        else:
            print(f"{status:7s} {t.command()}")
    return 0


def cmd_point(a) -> int:
    """``point``: every scheme once on one (experiment, fabric, x, seed); prints the
    rows as JSON and appends them to <out>/runs.csv when --out is given."""
    from .sweeps import append_runs
    if a.out:  # refuse before running, not after
        check_decision_points(os.path.join(a.out, "runs.csv"), _mode(a))
    log = None if a.quiet > 0 else (lambda m: print(m, file=sys.stderr, flush=True))
    rows = run_point(a.experiment, a.fabric, a.x, a.seed, _schemes(a.schemes), a.sizes,
                     log=log, reschedule_on=_mode(a))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        append_runs(os.path.join(a.out, "runs.csv"), rows)
    print(json.dumps(rows, indent=1))
    return 0


def cmd_report(a) -> int:
    """``report``: rebuild summary.csv, the PNGs and summary.md from runs.csv."""
    from .report import build_report
    if not os.path.isfile(os.path.join(a.out, "runs.csv")):
        raise ValueError(f"out: no runs.csv in {a.out!r}")
    for p in build_report(a.out):
        print("wrote", p)
    return 0


def cmd_merge(a) -> int:
    """``merge``: the runs CSVs given into ``--out``/runs.csv (conflicts refused), then
    the report of the merged set."""
    from .merge import merge_files
    dest, n_in, n_out = merge_files(a.inputs, a.out)
    print(f"merged {n_in} rows from {len(a.inputs)} files into {n_out} rows: {dest}")
    if not a.no_report:
        from .report import build_report
        for p in build_report(a.out):
            print("wrote", p)
    return 0


def cmd_big(a) -> int:
    """``big``: one try on a large fabric; progress, lower bound, average CCT and
    wall times are logged to stdout and appended to <out>/big_<fabric>.md as they
    happen (a rerun into the same folder appends a new section)."""
    from ..core.workload import synthetic
    from ..scheduling import make_scheduler
    from ..sim import Simulator
    from ..sim.bounds import coflow_lower_bounds
    import numpy as np

    a.out = resolve_out(a.out, "rapier-big")
    handlers = _setup_logging(a, a.out, f"big_{a.fabric}.md", "%(message)s")
    try:
        _big(a, synthetic, make_scheduler, Simulator, coflow_lower_bounds, np)
    finally:
        _close_logging(handlers)
    return 0


def _big(a, synthetic, make_scheduler, Simulator, coflow_lower_bounds, np) -> None:
    log = LOG.info
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


_RESCHEDULE_HELP = ("decision points besides arrivals: every flow completion (flow), "
                    "coflow completions (coflow) or each scheduler's own (auto)")


def _grid_args(r: argparse.ArgumentParser) -> None:
    r.add_argument("--experiment", choices=list(EXPERIMENTS) + ["all"], required=True)
    r.add_argument("--fabric", default="fattree512,vl2-512",
                   help=f"comma list of: {', '.join(FABRICS)}")
    r.add_argument("--values", help="comma list of x values (default: reduced subset)")
    r.add_argument("--tries", type=int, help="tries per point (default 1; 20 with --full)")
    r.add_argument("--full", action="store_true", help="paper's x values and 20 tries")
    r.add_argument("--schemes", default="paper",
                   help="'paper' (4 schemes), 'all' (+ rapier-ls, rapier-spread and the "
                        "registered seed schedulers) or a comma list")
    r.add_argument("--sizes", default=DEFAULT_SIZES, help="flow sizes spec (MB)")
    r.add_argument("--base-seed", type=int, default=1, help="seed of try 0 (try i: +i)")
    r.add_argument("--reschedule", choices=["auto", "flow", "coflow"], default="auto",
                   help=_RESCHEDULE_HELP)


def build_parser() -> argparse.ArgumentParser:
    """The ``rapier-experiment`` argument parser."""
    quiet_help = "no progress bar nor per-run lines (-qq: errors only)"
    verbose_help = "debug lines too"
    # -v/-q after the subcommand too; SUPPRESS keeps an absent one from resetting a
    # -v/-q given before it (rapier_app.cli_common's convention, counting)
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                   help=verbose_help)
    g.add_argument("-q", "--quiet", action="count", default=argparse.SUPPRESS,
                   help=quiet_help)
    p = argparse.ArgumentParser(prog="rapier-experiment", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(p, quiet_help=quiet_help, verbose_help=verbose_help)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", parents=[common],
                       help="run a sweep (resumable, parallel) and rebuild the report")
    _grid_args(r)
    r.add_argument("--out", help="output folder (default: a new ./rapier-experiment-<time>)")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--jobs", "-j", type=int, default=1,
                   help="points run at once in worker processes on this machine "
                        "(default 1; 0: one per CPU)")
    g.add_argument("--dask", metavar="ADDRESS",
                   help="run the points on a Dask cluster: a scheduler address "
                        "(tcp://host:8786) or local[:N] for a LocalCluster of N workers")
    r.set_defaults(fn=cmd_run)
    ls = sub.add_parser("list", parents=[common], help="the grid of a run as tasks")
    _grid_args(ls)
    ls.add_argument("--out", help="mark each task done/partial/todo against this runs.csv")
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    ls.set_defaults(fn=cmd_list)
    q = sub.add_parser("point", parents=[common], help="run one point with one seed")
    q.add_argument("--experiment", choices=list(EXPERIMENTS), required=True)
    q.add_argument("--fabric", required=True)
    q.add_argument("--x", type=float, required=True)
    q.add_argument("--seed", type=int, required=True)
    q.add_argument("--schemes", default="paper")
    q.add_argument("--sizes", default=DEFAULT_SIZES)
    q.add_argument("--out")
    q.add_argument("--reschedule", choices=["auto", "flow", "coflow"], default="auto",
                   help=_RESCHEDULE_HELP)
    q.set_defaults(fn=cmd_point)
    s = sub.add_parser("report", parents=[common],
                       help="rebuild the CSV/PNG/markdown from runs.csv")
    s.add_argument("--out", required=True, help="the folder holding runs.csv")
    s.set_defaults(fn=cmd_report)
    m = sub.add_parser("merge", parents=[common], help="merge runs.csv files into one")
    m.add_argument("inputs", nargs="+", help="runs.csv files or folders holding one")
    m.add_argument("--out", required=True, help="new folder for the merged runs.csv")
    m.add_argument("--no-report", action="store_true", help="do not build the report")
    m.set_defaults(fn=cmd_merge)
    b = sub.add_parser("big", parents=[common], help="one try on a large fabric, with wall time")
    b.add_argument("--fabric", default="fattree8192")
    b.add_argument("--coflows", type=int, default=20)
    b.add_argument("--width", type=int, default=128)
    b.add_argument("--interval", type=float, default=0.1)
    b.add_argument("--sizes", default=DEFAULT_SIZES)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--schemes", default="rapier,baseline,routing-only,scheduling-only")
    b.add_argument("--out", help="output folder (default: a new ./rapier-big-<time>)")
    b.add_argument("--reschedule", choices=["auto", "flow", "coflow"], default="auto",
                   help=_RESCHEDULE_HELP)
    b.add_argument("--log-every", type=int, default=20, help="log every N scheduler calls")
    b.set_defaults(fn=cmd_big)
    return p


def main(argv=None) -> int:
    """Entry point of ``rapier-experiment``; returns the exit status (0 success, 1 a
    point failed, 2 bad arguments or conflicting runs)."""
    a = build_parser().parse_args(argv)
    try:
        return a.fn(a)
    except (KeyError, ValueError) as exc:
        print(f"rapier-experiment: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"rapier-experiment: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
