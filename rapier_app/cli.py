"""``rapier-sim``: compare coflow schedulers in the flow-level simulator.

Examples::

    rapier-sim --scenario fig1 --schedulers rapier,baseline,scheduling-only,routing-only --json
    rapier-sim --scenario testbed --schedulers rapier,routing-only,baseline
    rapier-sim --topology bigswitch:150 --trace ../shared/traces/FB2010-1Hr-150-0.txt \\
        --schedulers rapier,baseline,scheduling-only,routing-only --json
    rapier-sim --topology fattree:8,16 --synthetic 20,128,0.1 --tries 3

Writes ``coflows.csv`` (one row per scheduler, try and coflow), ``summary.json`` and
``cct_cdf.png`` into ``--out``.  With ``--json`` stdout carries exactly one JSON
object, keyed by scheduler name; the table and progress go to stderr.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from typing import Dict, List, Optional

import numpy as np

from topologies import TopologyError, build_topology

from .core.model import WorkloadError
from .core.workload import (SCENARIOS, port_mapping, read_trace, scenario, synthetic,
                            trace_to_coflows)
from .scheduling import SchedulerError, make_scheduler, scheduler_names
from .sim.metrics import improvement, mean_ci95, summarize
from .sim.simulator import SimulationError, simulate

DEFAULT_SCHEDULERS = "rapier,scheduling-only,routing-only,baseline"


class UsageError(ValueError):
    """Bad command-line input (the message names the option)."""


def _parse_value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() in ("none", "inf"):
        return None if text.lower() == "none" else float("inf")
    return text


def parse_params(items: List[str]) -> Dict[str, dict]:
    """``--param rapier.delta_s=5`` -> ``{"rapier": {"delta_s": 5}}``.

    Raises:
        UsageError: an item without ``SCHEDULER.KEY=VALUE`` shape.
    """
    out: Dict[str, dict] = {}
    for item in items:
        key, sep, val = item.partition("=")
        sched, dot, name = key.partition(".")
        if not sep or not dot or not sched or not name:
            raise UsageError(f"--param: expected SCHEDULER.KEY=VALUE, got {item!r}")
        out.setdefault(sched, {})[name] = _parse_value(val)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rapier-sim``."""
    p = argparse.ArgumentParser(
        prog="rapier-sim",
        description="Flow-level simulation of coflow schedulers (RAPIER and baselines).")
    w = p.add_argument_group("workload (choose one)")
    w.add_argument("--scenario", choices=sorted(SCENARIOS),
                   help="named scenario: fig1 (RAPIER Fig. 1) or testbed (Table II on the "
                        "3x3 leaf-spine); brings its own topology")
    w.add_argument("--trace", metavar="PATH", help="coflow-benchmark trace file")
    w.add_argument("--synthetic", metavar="N,WIDTH,INTERARRIVAL_S",
                   help="RAPIER V-B workload: N coflows of WIDTH flows, Poisson arrivals "
                        "with the given mean inter-arrival (s)")
    p.add_argument("--topology", metavar="SPEC",
                   help="fattree:K[,HOSTS_PER_EDGE] | vl2:DA,DI[,SERVERS_PER_TOR] | "
                        "leafspine:LEAVES,SPINES,HOSTS_PER_LEAF | bigswitch:N | fig1 "
                        "(default for traces: bigswitch:<ports>)")
    p.add_argument("--link-gbps", type=float, default=None,
                   help="override the topology's link speed in Gbit/s")
    p.add_argument("--sizes", default="uniform:10,100",
                   help="flow sizes of --synthetic in MB: uniform:LO,HI | const:MB | exp:MEAN | "
                        "pareto:SCALE,SHAPE (default uniform:10,100)")
    p.add_argument("--placement", default="auto", choices=["auto", "identity", "random"],
                   help="trace ports onto hosts: identity on a big switch, seeded random "
                        "hosts elsewhere (auto)")
    p.add_argument("--limit", type=int, default=None, help="replay only the first N trace coflows")
    p.add_argument("--scale", type=float, default=1.0, help="size factor for --scenario testbed")
    p.add_argument("--schedulers", default=DEFAULT_SCHEDULERS,
                   help=f"comma-separated scheduler names (default {DEFAULT_SCHEDULERS})")
    p.add_argument("--param", action="append", default=[], metavar="SCHED.KEY=VALUE",
                   help="scheduler parameter, e.g. rapier.delta_s=5 (repeatable)")
    p.add_argument("--reschedule", choices=["auto", "flow", "coflow"], default="auto",
                   help="when schedulers decide besides coflow arrivals: at every flow "
                        "completion (flow) or coflow completion (coflow: bandwidth a "
                        "finished flow frees idles until then); auto: each scheduler's "
                        "own (flow for all built-in ones; rapier, rapier-bssi and "
                        "scheduling-only run their full pass at coflow events and "
                        "work conservation alone at the other flow completions)")
    p.add_argument("--max-paths", type=int, default=None,
                   help="cap K on candidate paths per host pair (default: the ECMP set)")
    p.add_argument("--seed", type=int, default=1, help="base seed; try i uses seed+i")
    p.add_argument("--tries", type=int, default=1, help="independent tries (seeds)")
    p.add_argument("--out", default="rapier-out", help="output folder (default rapier-out)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on stdout (table goes to stderr)")
    p.add_argument("--no-plot", action="store_true", help="skip the CDF PNG")
    p.add_argument("--no-bound", action="store_true",
                   help="skip the LP lower bound on the average CCT")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--list-schedulers", action="store_true", help="list schedulers and exit")
    return p


def make_workload(args, seed: int):
    """Return ``(topology, coflows, description)`` for one try.

    Raises:
        UsageError, WorkloadError, TopologyError: bad options or input files.
    """
    chosen = [x for x in (args.scenario, args.trace, args.synthetic) if x]
    if len(chosen) != 1:
        raise UsageError("workload: give exactly one of --scenario, --trace, --synthetic")
    link_bps = None if args.link_gbps is None else args.link_gbps * 1e9
    if args.scenario:
        if args.topology:
            raise UsageError("--topology: a --scenario brings its own topology")
        topo, coflows = scenario(args.scenario, args.scale)
        if link_bps is not None:
            topo = build_topology(topo.name, link_bps)
        return topo, coflows, f"scenario {args.scenario}"
    if args.trace:
        trace = read_trace(args.trace)
        topo = build_topology(args.topology or f"bigswitch:{trace.ports}", link_bps)
        mapping = port_mapping(trace.ports, topo, seed, args.placement)
        return topo, trace_to_coflows(trace, mapping, args.limit), f"trace {args.trace}"
    parts = args.synthetic.split(",")
    try:
        n, width, ia = int(parts[0]), int(parts[1]), float(parts[2])
        if len(parts) != 3:
            raise ValueError
    except (ValueError, IndexError):
        raise UsageError(f"--synthetic: expected N,WIDTH,INTERARRIVAL_S, got {args.synthetic!r}") from None
    if not args.topology:
        raise UsageError("--topology: required with --synthetic")
    topo = build_topology(args.topology, link_bps)
    return topo, synthetic(topo, n, width, ia, args.sizes, seed), \
        f"synthetic n={n} width={width} interarrival={ia}s sizes={args.sizes}"


class Progress:
    """Rate-limited progress lines on stderr."""

    def __init__(self, enabled: bool, label: str):
        self.enabled = enabled
        self.label = label
        self.last = 0.0

    def __call__(self, done: int, total: int, now_s: float) -> None:
        t = time.monotonic()
        if self.enabled and (t - self.last > 2.0 or done == total):
            self.last = t
            print(f"  {self.label}: {done}/{total} coflows done, simulated t={now_s:.2f} s",
                  file=sys.stderr, flush=True)


def run(args) -> dict:
    """Run every scheduler for every try; write outputs; return the summary dict."""
    names = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    known = scheduler_names()
    for n in names:
        if n not in known:
            raise UsageError(f"--schedulers: unknown scheduler {n!r}; known: {', '.join(known)}")
    if args.tries < 1:
        raise UsageError("--tries: must be >= 1")
    params = parse_params(args.param)
    for s in params:
        if s not in names:
            raise UsageError(f"--param: scheduler {s!r} is not in --schedulers")
    os.makedirs(args.out, exist_ok=True)
    rows = []
    per: Dict[str, dict] = {n: {"avgs": [], "ccts": [], "wall": 0.0, "events": 0,
                                "lb_ratio": [], "makespans": []} for n in names}
    lower_bounds = []
    desc = ""
    for i in range(args.tries):
        seed = args.seed + i
        topo, coflows, desc = make_workload(args, seed)
        lb = None
        if not args.no_bound:
            lb = _lower_bound(topo, coflows)
            if lb is not None:
                lower_bounds.append(lb)
        for n in names:
            sched = make_scheduler(n, topo, seed=seed, max_paths=args.max_paths,
                                   **params.get(n, {}))
            prog = Progress(not args.quiet, f"{n} try {i + 1}/{args.tries}")
            res = simulate(topo, coflows, sched, progress=prog, record_flows=False,
                           reschedule_on=None if args.reschedule == "auto" else args.reschedule)
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
            for r in sorted(res.coflows, key=lambda r: (r.arrival_s, r.coflow_id)):
                rows.append([n, i + 1, seed, r.coflow_id, f"{r.arrival_s:.9g}",
                             f"{r.finish_s:.9g}", f"{r.cct_s:.9g}", r.width,
                             f"{r.total_bytes:.0f}"])
    with open(os.path.join(args.out, "coflows.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["scheduler", "try", "seed", "coflow_id", "arrival_s", "finish_s", "cct_s",
                    "width", "total_bytes"])
        w.writerows(rows)
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
    with open(os.path.join(args.out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    if not args.no_plot:
        _plot_cdf({n: per[n]["ccts"] for n in names}, os.path.join(args.out, "cct_cdf.png"),
                  desc, topo.name)
    return summary


def _lower_bound(topo, coflows) -> Optional[float]:
    try:
        from .sim.bounds import avg_cct_lower_bound
    except ImportError:
        return None
    return float(avg_cct_lower_bound(topo, coflows))


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
    """Entry point of ``rapier-sim``; returns the process exit code (2 on bad input)."""
    args = build_parser().parse_args(argv)
    if args.list_schedulers:
        print("\n".join(scheduler_names()))
        return 0
    try:
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
