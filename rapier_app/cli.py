"""``rapier-sim``: compare coflow schedulers in the flow-level simulator.

Examples::

    rapier-sim --scenario fig1 --schedulers rapier,baseline,scheduling-only,routing-only --json
    rapier-sim --scenario testbed --schedulers rapier,routing-only,baseline
    rapier-sim --topology bigswitch:150 --trace ../shared/traces/FB2010-1Hr-150-0.txt \\
        --schedulers rapier,baseline,scheduling-only,routing-only --json
    rapier-sim --topology fattree:8,16 --synthetic 20,128,0.1 --tries 3
    rapier-sim --topology fattree:4 --synthetic 5,4,0 --write-trace five.txt
    rapier-sim --scenario fig1 --schedulers baseline,mypkg.mymod:MyScheduler

Writes ``coflows.csv`` (one row per scheduler, try and coflow, appended as each
coflow finishes, so a killed run keeps what finished; sorted by arrival at the end),
``summary.json`` (results, every option, the version and the git commit) and
``cct_cdf.png`` into ``--out``.  With ``--json`` stdout carries exactly one JSON
object, keyed by scheduler name; the table and progress go to stderr, and solvers'
own output (HiGHS's banner) is kept off stdout at the file-descriptor level.
Progress (tqdm) is on stderr: none with ``-q``, none with ``--json`` when stderr is
not a terminal.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from typing import Dict, List, Optional

import numpy as np

from topologies import TopologyError

from . import progress as pg
from .cli_common import (add_common_arguments, git_commit, run_info, setup_logging,
                         stdout_fd_to)
from .core.model import WorkloadError
from .core.workload import coflows_to_trace, write_trace
from .params import ParamError, load_plugin, split_params, typed_params
from .scheduling import REGISTRY, SchedulerError, make_scheduler, scheduler_names
from .sim import SimulationError, Simulator
from .workload_options import (UsageError, add_workload_options, apply_goodput,
                               check_workload_options, fill_workload_defaults,
                               workload_from_args)

DEFAULT_SCHEDULERS = "rapier,scheduling-only,routing-only,baseline"
CSV_HEADER = ["scheduler", "try", "seed", "coflow_id", "arrival_s", "finish_s", "cct_s",
              "width", "total_bytes"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rapier-sim``."""
    p = argparse.ArgumentParser(
        prog="rapier-sim",
        description="Flow-level simulation of coflow schedulers (RAPIER and baselines).")
    add_workload_options(p.add_argument_group("workload (choose one)"),
                         "scenario", "trace", "synthetic")
    add_workload_options(p, "topology", "link_gbps", "goodput", "sizes", "placement", "limit",
                         "scale")
    p.add_argument("--write-trace", metavar="PATH", default=None,
                   help="also write the workload as a coflow-benchmark trace (port p = "
                        "the topology's p-th host; replay it with --trace PATH --placement "
                        "identity on the same topology, or in CoflowSim/Varys)")
    p.add_argument("--schedulers", default=DEFAULT_SCHEDULERS,
                   help=f"comma-separated scheduler names or package.module:Class plugins "
                        f"(default {DEFAULT_SCHEDULERS})")
    p.add_argument("--param", action="append", default=[], metavar="SCHED.KEY=VALUE",
                   help="scheduler parameter, checked against the scheduler's constructor, "
                        "e.g. rapier.delta_s=5 (repeatable)")
    p.add_argument("--reschedule", choices=["auto", "flow", "coflow"], default="auto",
                   help="when schedulers decide besides coflow arrivals: at every flow "
                        "completion (flow) or coflow completion (coflow: bandwidth a "
                        "finished flow frees idles until then); auto: each scheduler's "
                        "own (flow for all built-in ones; rapier, rapier-bssi and "
                        "scheduling-only run their full pass at coflow events and "
                        "work conservation alone at the other flow completions)")
    p.add_argument("--handoff-delay", type=float, default=0.0, metavar="S",
                   help="model a controller's hand-off: every rate raise (and new flow) "
                        "takes effect S seconds after the decision, decreases at once "
                        "(rapier_app.sim.handoff; 0 = the ideal controller, default; "
                        "about 0.15 s measured in this project's emulation); not for "
                        "baseline/fair, whose rates model TCP and are never pushed")
    p.add_argument("--handoff-jitter", type=float, default=0.0, metavar="S",
                   help="with --handoff-delay: each raise waits a further uniform random "
                        "0..S seconds (seeded by the try's seed)")
    p.add_argument("--background", metavar="SPEC", default=None,
                   help="background traffic that is not a coflow, seen by the schedulers "
                        "only through the site broker's estimate (rapier_app.sim."
                        "background): const:BPS, const:F%%, trace:PATH (time_s,u,v,bps "
                        "lines) or poisson:RATE,BYTES,BPS[,HORIZON_S]; default none")
    p.add_argument("--broker-period", type=float, default=1.0, metavar="S",
                   help="with --background: seconds between the broker's counter "
                        "readings (default 1)")
    p.add_argument("--broker-weight", type=float, default=0.5, metavar="W",
                   help="with --background: EWMA weight of the newest sample, in (0, 1] "
                        "(default 0.5)")
    p.add_argument("--max-paths", type=int, default=None,
                   help="cap K on candidate paths per host pair (default: the ECMP set)")
    p.add_argument("--path-slack", type=int, default=None, metavar="HOPS",
                   help="candidate paths up to HOPS hops longer than the shortest, so a "
                        "longer path over faster links can be chosen (default: a topology "
                        "file's path_slack, else 0: the ECMP set)")
    add_workload_options(p, "seed", seed=dict(help="base seed; try i uses seed+i"))
    p.add_argument("--tries", type=int, default=1, help="independent tries (seeds)")
    p.add_argument("--out", default="rapier-out", help="output folder (default rapier-out)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on stdout (table goes to stderr)")
    p.add_argument("--no-plot", action="store_true", help="skip the CDF PNG")
    p.add_argument("--no-bound", action="store_true",
                   help="skip the LP lower bound on the average CCT")
    add_common_arguments(p, quiet_help="no progress on stderr",
                         verbose_help="solvers' own output on stderr (it never goes to "
                                      "stdout)")
    p.add_argument("--trace-events", metavar="PATH", default=None,
                   help="write every run's event log (each decision's paths, rates and "
                        "bytes left) to PATH as JSON lines, for rapier-check")
    p.add_argument("--hide-sizes", action="store_true",
                   help="schedulers are not told flow sizes (only bytes sent, widths, "
                        "arrivals, completions): schedulers that need sizes refuse, "
                        "rapier-nc estimates them (docs/schedulers.md)")
    p.add_argument("--list-schedulers", action="store_true",
                   help="list schedulers (and what each does with hidden sizes) and exit")
    return p


def check_options(args) -> None:
    """Refuse conflicting or misplaced options and fill in the defaults that depend on
    the workload (``--sizes``, ``--placement``, ``--scale``).

    Raises:
        UsageError: naming the option, e.g. ``--limit`` without ``--trace``.
    """
    check_workload_options(args)
    if args.tries < 1:
        raise UsageError("--tries: must be >= 1")
    if args.write_trace and args.tries != 1:
        raise UsageError("--write-trace: writes one workload; use --tries 1 (and --seed "
                         "to pick it)")
    if args.max_paths is not None and args.max_paths < 1:
        raise UsageError(f"--max-paths: must be >= 1, got {args.max_paths}")
    if getattr(args, "path_slack", None) is not None and args.path_slack < 0:
        raise UsageError(f"--path-slack: must be >= 0 hops, got {args.path_slack}")
    if not 0 < getattr(args, "goodput", 1.0) <= 1:
        raise UsageError(f"--goodput: must be in (0, 1], got {args.goodput}")
    for opt in ("handoff_delay", "handoff_jitter"):
        v = getattr(args, opt, 0.0)
        if not (v >= 0 and math.isfinite(v)):
            raise UsageError(f"--{opt.replace('_', '-')}: must be a number of seconds >= 0, "
                             f"got {v}")
    if getattr(args, "background", None):
        from .core.broker import BrokerError, BrokerSettings

        try:
            BrokerSettings(period_s=args.broker_period, weight=args.broker_weight).validate()
        except BrokerError as exc:
            opt = "--broker-period" if str(exc).startswith("period_s") else "--broker-weight"
            raise UsageError(f"{opt}: {exc}") from None
    fill_workload_defaults(args)


def resolve_schedulers(spec: str) -> List[str]:
    """Scheduler names from ``--schedulers``: registered names, and
    ``package.module:Class`` plugins loaded and registered (:func:`params.load_plugin`).

    Raises:
        UsageError: an unknown name or a plugin that does not load.
    """
    names = []
    known = scheduler_names()
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        if ":" in item:
            try:
                item = load_plugin(item)[0]
            except ParamError as exc:
                raise UsageError(str(exc)) from None
        elif item not in known:
            raise UsageError(f"--schedulers: unknown scheduler {item!r}; known: "
                             f"{', '.join(known)}; or give package.module:Class")
        names.append(item)
    if not names:
        raise UsageError("--schedulers: empty")
    return names


def scheduler_params(names: List[str], items: List[str]) -> Dict[str, dict]:
    """``--param`` values, typed against each scheduler's constructor.

    Raises:
        UsageError: bad shape, a scheduler not in ``names``, an unknown key or a value
            of the wrong type (naming ``SCHED.KEY``).
    """
    try:
        raw = split_params(items)
        for s in raw:
            if s not in names:
                raise UsageError(f"--param: scheduler {s!r} is not in --schedulers")
        return {s: typed_params(s, REGISTRY[s], kv) for s, kv in raw.items()}
    except ParamError as exc:
        raise UsageError(str(exc)) from None


class CsvRows:
    """``coflows.csv``, appended one row per finished coflow (flushed, so a killed run
    keeps what finished); :meth:`finish` rewrites it sorted by scheduler, try, arrival
    and coflow id (the order of a complete run)."""

    def __init__(self, path: str):
        self.path = path
        self.rows: List[list] = []
        self.fh = open(path, "w", newline="")
        self.w = csv.writer(self.fh)
        self.w.writerow(CSV_HEADER)
        self.fh.flush()

    def add(self, name: str, try_no: int, seed: int, r) -> None:
        """Append the row of one finished coflow record ``r`` (a ``CoflowRecord``)."""
        row = [name, try_no, seed, r.coflow_id, f"{r.arrival_s:.9g}", f"{r.finish_s:.9g}",
               f"{r.cct_s:.9g}", r.width, f"{r.total_bytes:.0f}"]
        self.rows.append((r.arrival_s, row))
        self.w.writerow(row)
        self.fh.flush()

    def finish(self, order: List[str]) -> None:
        """Close the file and rewrite it in the complete run's order."""
        self.fh.close()
        rank = {n: i for i, n in enumerate(order)}
        self.rows.sort(key=lambda ar: (rank[ar[1][0]], ar[1][1], ar[0], ar[1][3]))
        tmp = self.path + ".tmp"
        with open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(CSV_HEADER)
            w.writerows(row for _, row in self.rows)
        os.replace(tmp, self.path)


def _simulate(name: str, i: int, args, topo, coflows, sched, csv_rows: CsvRows,
              show: bool, log):
    """One scheduler, one try, with a progress bar and per-coflow CSV rows."""
    seed = args.seed + i
    sim = Simulator(topo, coflows, sched, record_flows=False, event_log=log,
                    reschedule_on=None if args.reschedule == "auto" else args.reschedule,
                    hide_sizes=getattr(args, "hide_sizes", False))
    bar = pg.SimProgress(f"{name} try {i + 1}/{args.tries}", show, total=len(coflows),
                         on_done=lambda d, t: csv_rows.add(name, i + 1, seed,
                                                           sim.result.coflows[-1]))
    sim.progress = bar
    try:
        return sim.run()
    finally:
        bar.close()


def _with_background(args, topo, sched, seed: int):
    """``--background``: ``sched`` wrapped in
    :class:`~rapier_app.sim.background.BackgroundNetwork` (the site broker with
    ``--broker-period`` and ``--broker-weight``).

    Raises:
        UsageError: a background spec that does not parse (names the field).
    """
    from .core.broker import BrokerSettings
    from .sim.background import BackgroundError, BackgroundNetwork, parse_background

    try:
        load = parse_background(args.background, topo, seed)
    except BackgroundError as exc:
        raise UsageError(str(exc)) from None
    return BackgroundNetwork(sched, topo, load, BrokerSettings(
        period_s=args.broker_period, weight=args.broker_weight))


def _make_scheduler(name: str, topo, seed: int, max_paths, kwargs: dict):
    """``make_scheduler`` with the ``--param`` values of ``name``; an error about one of
    them is named as the user wrote it (``--param rapier.delta_s: must be >= 0``).

    Raises:
        SchedulerError: unknown scheduler or a bad parameter value.
    """
    try:
        return make_scheduler(name, topo, seed=seed, max_paths=max_paths, **kwargs)
    except SchedulerError as exc:
        msg = str(exc)
        key = msg.split(":", 1)[0]
        if key in kwargs:
            raise SchedulerError(f"--param {name}.{msg}") from None
        raise


def run(args) -> dict:
    """Run every scheduler for every try; write outputs; return the summary dict."""
    check_options(args)
    names = resolve_schedulers(args.schedulers)
    params = scheduler_params(names, args.param)
    show = pg.progress_enabled(args.quiet > 0, args.json)
    os.makedirs(args.out, exist_ok=True)
    csv_rows = CsvRows(os.path.join(args.out, "coflows.csv"))
    per: Dict[str, dict] = {n: {"avgs": [], "ccts": [], "wall": 0.0, "events": 0,
                                "lb_ratio": [], "makespans": []} for n in names}
    lower_bounds = []
    desc = ""
    events_fh = None
    if args.trace_events:
        try:
            events_fh = open(args.trace_events, "w")
        except OSError as exc:
            raise UsageError(f"--trace-events: cannot write {args.trace_events}: "
                             f"{exc.strerror}") from None
    for i in range(args.tries):
        seed = args.seed + i
        with pg.phase(f"workload try {i + 1}/{args.tries}", show):
            topo, coflows, desc = workload_from_args(args, seed)
            apply_goodput(topo, getattr(args, "goodput", 1.0))
            if getattr(args, "path_slack", None) is not None:
                topo.set_path_slack(args.path_slack)
        if args.write_trace:
            _write_trace(args.write_trace, topo, coflows, args.quiet == 0)
        # every scheduler built (its --param values checked) before any long work
        scheds = {n: _make_scheduler(n, topo, seed, args.max_paths, params.get(n, {}))
                  for n in names}
        lb = None
        if not args.no_bound:
            lb = _lower_bound(topo, coflows, args.max_paths, show,
                              f"lower bound try {i + 1}/{args.tries}")
            lower_bounds.append(lb)
        for n in names:
            sched = scheds.pop(n)
            handoff = getattr(args, "handoff_delay", 0.0) > 0 or \
                getattr(args, "handoff_jitter", 0.0) > 0
            if handoff and getattr(sched, "rates_pushed", True):
                from .sim.handoff import HandoffDelay

                sched = HandoffDelay(sched, args.handoff_delay, args.handoff_jitter, seed)
            if getattr(args, "background", None):
                sched = _with_background(args, topo, sched, seed)
            log = [] if events_fh else None
            res = _simulate(n, i, args, topo, coflows, sched, csv_rows, show, log)
            if events_fh:
                _write_events(events_fh, args, n, i, seed, topo, sched, log, res)
            st = per[n]
            st["avgs"].append(float(res.ccts.mean()))
            # makespan: when the last coflow finished (s); idle capacity shows here
            st["makespans"].append(max(r.finish_s for r in res.coflows))
            st["ccts"].extend(res.ccts.tolist())
            st["wall"] += res.wall_s
            st["events"] += res.events
            st["coflows"] = len(res.coflows)
            st["max_util"] = max(st.get("max_util", 0.0), res.max_link_utilisation)
            if lb:
                st["lb_ratio"].append(float(res.ccts.mean()) / lb)
    if events_fh:
        events_fh.close()
    csv_rows.finish(names)
    # imported here, not at the top: scipy.stats takes ~1 s to import, which would
    # delay the first progress line
    from .sim.metrics import improvement, mean_ci95, summarize

    out: Dict[str, dict] = {}
    for n in names:
        st = per[n]
        s = summarize(st["ccts"])
        s["coflows"] = st["coflows"]
        s["avg_cct_s"], ci = mean_ci95(st["avgs"])
        s["avg_cct_ci95_s"] = ci if ci == ci else None  # NaN (one try) -> JSON null
        s["wall_s"] = st["wall"]
        s["makespan_s"] = float(np.mean(st["makespans"]))
        s["events"] = st["events"]
        s["tries"] = args.tries
        s["max_link_utilisation"] = st["max_util"]
        if st["lb_ratio"]:
            s["ratio_to_lower_bound"] = float(np.mean(st["lb_ratio"]))
        out[n] = s
    summary = {"workload": desc, "topology": topo.name, "seed": args.seed, "tries": args.tries,
               "schedulers": out}
    if lower_bounds:
        summary["lower_bound_avg_cct_s"] = float(np.mean(lower_bounds))
    if "baseline" in out:
        summary["improvement_over_baseline"] = {
            n: improvement(out[n]["avg_cct_s"], out["baseline"]["avg_cct_s"]) for n in names}
    summary["options"] = {k: v for k, v in sorted(vars(args).items()) if k != "argv"}
    summary["params"] = params
    summary.update(run_info(getattr(args, "argv", sys.argv[1:])))
    with open(os.path.join(args.out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    if not args.no_plot:
        with pg.phase("plotting the CCT CDF", show):
            _plot_cdf({n: per[n]["ccts"] for n in names}, os.path.join(args.out, "cct_cdf.png"),
                      desc, topo.name)
    return summary


def _write_trace(path: str, topo, coflows, tell: bool) -> None:
    """``--write-trace``: the workload as a coflow-benchmark trace (port p = the p-th
    host of ``topo``); reports coflows the format cannot hold exactly."""
    trace, reshaped = coflows_to_trace(coflows, topo.hosts, reshape=True)
    write_trace(path, trace)
    moved = sum(1 for c in coflows if c.arrival_s * 1000.0 != round(c.arrival_s * 1000.0))
    msg = f"trace written: {path} ({len(coflows)} coflows, {trace.ports} ports)"
    if reshaped:
        msg += (f"; {len(reshaped)} coflows are not sender x receiver shuffles with equal "
                f"flows per receiver and are written as per-receiver totals")
    if moved:
        msg += f"; {moved} arrivals rounded to whole ms"
    if tell:
        print(f"rapier-sim: {msg}", file=sys.stderr)


def _write_events(fh, args, name, i, seed, topo, sched, log, res) -> None:
    """Append one run's event log to ``--trace-events`` (JSON lines; see
    :func:`rapier_app.sim.checker.write_run`): the header names the scheduler, its
    work-conservation level and the workload options, so rapier-check can rebuild the
    workload."""
    from .sim.checker import declared_interval, declared_level, write_run
    from .sim.handoff import HandoffDelay

    workload = {k: getattr(args, k) for k in ("scenario", "trace", "synthetic", "topology",
                                              "link_gbps", "sizes", "placement", "limit",
                                              "scale")}
    header = {"scheduler": name, "try": i + 1, "seed": seed, "topology": topo.name,
              "work_conserving": declared_level(sched), "max_paths": args.max_paths,
              "path_slack": topo.path_slack,
              "reschedule": args.reschedule, "workload": workload,
              "decision_interval_s": declared_interval(sched, args.reschedule),
              "handoff_delay_s": sched.delay_s if isinstance(sched, HandoffDelay) else 0.0,
              "handoff_jitter_s": sched.jitter_s if isinstance(sched, HandoffDelay) else 0.0}
    write_run(fh, header, log, {r.coflow_id: r.cct_s for r in res.coflows})


def _lower_bound(topo, coflows, max_paths: Optional[int] = None, show: bool = False,
                 desc: str = "lower bound") -> float:
    """The LP lower bound on the average CCT (:func:`~rapier_app.sim.bounds.
    avg_cct_lower_bound`, seconds), with a progress bar over coflows."""
    from .sim.bounds import avg_cct_lower_bound

    with pg.bar(len(coflows), desc, "coflow", show) as b:
        return float(avg_cct_lower_bound(topo, coflows, max_paths,
                                         progress=lambda d, n: b.update(d - b.n)))


def _plot_cdf(ccts: Dict[str, list], path: str, desc: str, topo_name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for n, v in ccts.items():
        x = np.sort(np.asarray(v))
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=n)
    ax.set_xscale("log")
    ax.set_xlabel("coflow completion time (s)")
    ax.set_ylabel("fraction of coflows")
    ax.set_title(f"CCT CDF: {desc} on {topo_name}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def format_table(summary: dict) -> str:
    """Human-readable table of a summary (average, percentiles, improvement, wall)."""
    out = summary["schedulers"]
    imp = summary.get("improvement_over_baseline", {})
    lines = [f"{summary['workload']} on {summary['topology']}, {summary['tries']} tr"
             f"{'y' if summary['tries'] == 1 else 'ies'}"]
    hdr = (f"{'scheduler':<18}{'coflows':>8}{'avg CCT s':>12}{'p50':>10}{'p95':>10}"
           f"{'p99':>10}{'max':>10}{'makespan':>10}{'vs base':>9}{'/LB':>7}{'wall s':>9}")
    lines += [hdr, "-" * len(hdr)]
    for n, s in out.items():
        vs = f"{100 * imp[n]:.1f}%" if n in imp else "-"
        lb = f"{s['ratio_to_lower_bound']:.2f}" if "ratio_to_lower_bound" in s else "-"
        lines.append(f"{n:<18}{s['coflows']:>8}{s['avg_cct_s']:>12.4g}{s['p50_cct_s']:>10.4g}"
                     f"{s['p95_cct_s']:>10.4g}{s['p99_cct_s']:>10.4g}{s['max_cct_s']:>10.4g}"
                     f"{s.get('makespan_s', float('nan')):>10.4g}{vs:>9}{lb:>7}{s['wall_s']:>9.2f}")
    if "lower_bound_avg_cct_s" in summary:
        lines.append(f"LP lower bound on the average CCT: {summary['lower_bound_avg_cct_s']:.4g} s")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``rapier-sim``; returns the process exit code (2 on bad input,
    3 when a simulation invariant is violated)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    if args.verbose:
        setup_logging(args)
    if args.list_schedulers:
        print("\n".join(f"{n:<22}hidden sizes: {getattr(REGISTRY[n], 'unknown_sizes', '?')}"
                        for n in scheduler_names()))
        return 0
    git_commit()  # the code the run starts on (cached), not the tree at its end
    try:
        # native solvers (HiGHS) print on fd 1: keep it for the result alone
        with stdout_fd_to(2 if args.verbose else None):
            summary = run(args)
    except (UsageError, WorkloadError, TopologyError, SchedulerError) as exc:
        print(f"rapier-sim: error: {exc}", file=sys.stderr)
        return 2
    except SimulationError as exc:
        print(f"rapier-sim: simulation invariant violated: {exc}", file=sys.stderr)
        return 3
    table = format_table(summary)
    if args.json:
        keys = ("coflows", "avg_cct_s", "p50_cct_s", "p95_cct_s", "p99_cct_s", "wall_s")
        obj = {n: {**{k: s[k] for k in keys},
                   **{k: v for k, v in s.items() if k not in keys}}
               for n, s in summary["schedulers"].items()}
        print(table, file=sys.stderr)
        print(json.dumps(obj))
    else:
        print(table)
        print(f"outputs: {args.out}/coflows.csv, summary.json"
              f"{'' if args.no_plot else ', cct_cdf.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
