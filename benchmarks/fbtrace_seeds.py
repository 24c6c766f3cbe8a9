"""Facebook-trace comparison of the seed papers' schedulers (docs/seed-schedulers.md).

Runs ``rapier-sim`` (rapier_app.cli) once per topology with every scheduler, then
builds the published table: average and p95 CCT (s), each normalised to per-flow fair
sharing (``fair``), the published ratios of the seed papers beside ours, Philae's
per-coflow speedup percentiles over Aalo, and the wall time of each replay.

Usage (from the repository root)::

    PYTHONPATH=. .venv/bin/python benchmarks/fbtrace_seeds.py --limit 100 \\
        --out results/fbtrace

``--limit N`` replays the first N coflows of the trace (all 526 without it);
``--skip-run`` rebuilds the table from existing outputs.  Each topology's outputs
(rapier-sim's ``coflows.csv`` and ``summary.json``, one run per scheduler under
``OUT/<topology>/runs/<scheduler>/``) are merged into ``OUT/<topology>/`` with a
CDF plot ``cct_cdf.png``; the table goes to ``OUT/table.md``.  Runs of different
schedulers can be started in parallel with ``--schedulers NAME --topologies SPEC``
and merged afterwards with ``--skip-run``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from typing import Dict, List

import numpy as np

import _common  # the repository on sys.path, the trace's path
from rapier_app.workload_options import add_workload_options

TRACE = _common.DEFAULT_TRACE
SCHEDULERS = ["fair", "fifo", "aalo", "philae", "optas", "sincronia", "sincronia-immediate",
              "sincronia-maxmin", "scheduling-only", "scheduling-only@coflow",
              "scheduling-only@before12", "rapier", "rapier@before12", "rapier-bssi",
              "rapier-bssi@bssi-order",
              "rapier-isolated", "rapier-residual", "rapier-ls", "rapier-spread", "rapier-nc",
              "routing-only", "baseline"]
TOPOLOGIES = ["bigswitch:150", "fattree:10"]

#: Published ratios, as normalised CCT (scheme / reference; < 1 is faster), with source.
PUBLISHED = {
    "aalo": ("fair", 1 / 2.7, 1 / 2.18,
             "Aalo Sec. 7.2.1 (trace simulation): 2.7x avg, 2.18x p95 over per-flow fairness"),
    "philae": ("aalo", 1 / 1.51, None,
               "Philae Sec. 2.2 (FB trace): 1.51x avg over Aalo (1.50x on the 150-node testbed)"),
    "sincronia": ("scheduling-only", 1 / 1.7, None,
                  "Sincronia Sec. 5.2 (FB trace, offline: all at t=0): 1.7x avg over Varys"),
    "sincronia-immediate": ("scheduling-only", 1 / 1.7, None,
                            "as sincronia (offline Fig. 5(a))"),
    "sincronia-maxmin": ("scheduling-only", 1 / 1.7, None,
                         "as sincronia (offline Fig. 5(a))"),
    "optas": ("fair", 1 / 1.03, None,
              "OPTAS Sec. V (NS-2, FB 'Normal' mix): 1.03x overall over fair sharing"),
}


def topo_dir(out: str, topology: str) -> str:
    """Output folder of one topology: ``OUT/bigswitch_150`` etc."""
    return os.path.join(out, topology.replace(":", "_").replace(",", "_"))


def run_cli(topology: str, limit, scheduler: str, out: str, trace: str = TRACE) -> None:
    """Run rapier-sim for one scheduler on one topology into ``out``;
    ``NAME@flow`` / ``NAME@coflow`` runs NAME with ``--reschedule flow|coflow``.
    (A run folder ``NAME@before12`` holds a run of NAME made when RAPIER and
    Varys decided at coflow events only; ``rapier-bssi@bssi-order`` a run
    of rapier-bssi's BSSI-only order, ``--param rapier-bssi.order=bssi``, its
    former default; both are merged, never run.)

    Raises:
        SystemExit: rapier-sim exits non-zero or the variant is unknown.
    """
    from rapier_app import cli

    scheduler, _, variant = scheduler.partition("@")
    argv = ["--topology", topology, "--trace", trace, "--schedulers", scheduler,
            "--no-bound", "--no-plot", "--quiet", "--out", out]
    if variant:
        if variant not in ("flow", "coflow"):
            raise SystemExit(f"--schedulers: unknown variant @{variant} (flow, coflow)")
        argv += ["--reschedule", variant]
    if limit:
        argv += ["--limit", str(limit)]
    rc = cli.main(argv)
    if rc:
        raise SystemExit(f"rapier-sim failed on {topology} with {scheduler} (exit {rc})")


#: The names of :data:`SCHEDULERS` that are run (the others are kept runs, merged only).
RUNNABLE = [n for n in SCHEDULERS if n.partition("@")[2] in ("", "flow", "coflow")]

#: Schedulers that are the same code as another: a missing run is taken from the
#: other's (``fair`` is ``baseline``: ECMP + per-flow max-min, classic.PerFlowFair).
ALIASES = {"fair": "baseline"}


def merge(tdir: str, schedulers: List[str]) -> None:
    """Merge the per-scheduler runs under ``tdir/runs/`` into ``tdir/summary.json``
    and ``tdir/coflows.csv`` (schedulers in the given order, missing ones skipped;
    a missing ``fair`` run is taken from ``baseline``'s, see ALIASES) and draw
    ``tdir/cct_cdf.png``.  A run folder ``NAME@VARIANT`` (e.g.
    ``scheduling-only@flow``: rapier-sim ``--reschedule flow``) holds scheduler
    NAME's run with other options and is listed as its own row."""
    summary, rows, header = None, [], None
    for name in schedulers:
        src = name.split("@")[0]
        d = os.path.join(tdir, "runs", name)
        if not os.path.exists(os.path.join(d, "summary.json")) and name in ALIASES:
            src = ALIASES[name]
            d = os.path.join(tdir, "runs", src)
        if not os.path.exists(os.path.join(d, "summary.json")):
            continue
        with open(os.path.join(d, "summary.json")) as fh:
            s = json.load(fh)
        if summary is None:
            summary = dict(s, schedulers={})
        summary["schedulers"][name] = s["schedulers"][src]
        with open(os.path.join(d, "coflows.csv")) as fh:
            r = list(csv.reader(fh))
        header = r[0]
        rows += [[name] + row[1:] for row in r[1:] if row[0] == src]
    if summary is None:
        raise SystemExit(f"no runs under {tdir}/runs")
    summary.pop("improvement_over_baseline", None)
    with open(os.path.join(tdir, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    with open(os.path.join(tdir, "coflows.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    plot_cdf(tdir, summary)


def plot_cdf(tdir: str, summary: dict) -> None:
    """CDF of CCTs (log x) of every scheduler into ``tdir/cct_cdf.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ccts = read_ccts(os.path.join(tdir, "coflows.csv"))
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=90)
    for name in summary["schedulers"]:
        v = np.sort(np.array(list(ccts[name].values())))
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=name, lw=1.2)
    ax.set_xscale("log")
    ax.set_xlabel("coflow completion time (s)")
    ax.set_ylabel("fraction of coflows")
    ax.set_title(f"{summary['workload']}\non {summary['topology']}", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(tdir, "cct_cdf.png"))
    plt.close(fig)


def read_ccts(path: str) -> Dict[str, Dict[str, float]]:
    """coflows.csv -> {scheduler: {coflow_id: cct_s}}."""
    out: Dict[str, Dict[str, float]] = {}
    with open(path) as fh:
        for row in csv.DictReader(fh):
            out.setdefault(row["scheduler"], {})[row["coflow_id"]] = float(row["cct_s"])
    return out


def read_makespans(path: str) -> Dict[str, float]:
    """coflows.csv -> {scheduler: makespan in s (the last coflow's finish time)}."""
    out: Dict[str, float] = {}
    with open(path) as fh:
        for row in csv.DictReader(fh):
            out[row["scheduler"]] = max(out.get(row["scheduler"], 0.0), float(row["finish_s"]))
    return out


#: The text above the tables of ``table.md`` (written by every run, so the file never
#: carries hand-edited notes; the history of the runs is in CHANGELOG.md).
TABLE_HEADER = """\
Facebook coflow trace (526 coflows, 150 ports), every coflow replayed by `rapier-sim`
on each fabric, one whole-hour run per scheduler:

    python benchmarks/fbtrace_seeds.py --schedulers NAME --topologies 'fattree:10' \\
        --trace ../shared/traces/FB2010-1Hr-150-0.txt --out results/fbtrace-full
    python benchmarks/fbtrace_seeds.py --skip-run --out results/fbtrace-full

`decisions`: the scheduler's decision points; `wall (s)`: the replay's wall time on the
2-core machine the project is measured on (most runs had another replay beside them).
Rows named `NAME@VARIANT` are kept runs of NAME with other settings, never rerun by the
script: `NAME@before12` decided at coflow events only (flow completions left their
bandwidth idle until the next coflow event), `rapier-bssi@bssi-order` takes BSSI's order
alone (`--param rapier-bssi.order=bssi`).
"""


def table(out: str, topologies: List[str]) -> str:
    """Markdown table of every topology's results under ``out``."""
    lines = []
    for topo in topologies:
        d = topo_dir(out, topo)
        with open(os.path.join(d, "summary.json")) as fh:
            summ = json.load(fh)
        ccts = read_ccts(os.path.join(d, "coflows.csv"))
        mks = read_makespans(os.path.join(d, "coflows.csv"))
        sch = summ["schedulers"]
        fair = sch.get("fair")
        lines.append(f"\n#### {summ['workload']} on {summ['topology']}\n")
        lines.append("| scheduler | avg CCT (s) | p50 CCT (s) | p95 CCT (s) | makespan (s) | "
                     "avg / fair | p95 / fair | published (scheme / reference) | "
                     "ours, same ratio | decisions | wall (s) |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
        for name, s in sch.items():
            na = s["avg_cct_s"] / fair["avg_cct_s"] if fair else float("nan")
            np95 = s["p95_cct_s"] / fair["p95_cct_s"] if fair else float("nan")
            pub, ours = "", ""
            if name in PUBLISHED and PUBLISHED[name][0] in sch:
                ref, pa, pp, src = PUBLISHED[name]
                r = sch[ref]
                pub = f"avg {pa:.2f}" + (f", p95 {pp:.2f}" if pp else "") + f" vs {ref} ({src})"
                ours = f"avg {s['avg_cct_s'] / r['avg_cct_s']:.2f}"
                if pp:
                    ours += f", p95 {s['p95_cct_s'] / r['p95_cct_s']:.2f}"
            lines.append(f"| {name} | {s['avg_cct_s']:.3f} | {s['p50_cct_s']:.3f} | "
                         f"{s['p95_cct_s']:.3f} | {mks.get(name, float('nan')):.0f} | "
                         f"{na:.2f} | {np95:.2f} | {pub} | {ours} | "
                         f"{s.get('events', '')} | {s['wall_s']:.0f} |")
        if "philae" in ccts and "aalo" in ccts:
            ids = sorted(set(ccts["philae"]) & set(ccts["aalo"]))
            sp = np.array([ccts["aalo"][i] / ccts["philae"][i] for i in ids])
            lines.append(f"\nPhilae's per-coflow speedup over Aalo (Aalo CCT / Philae CCT): "
                         f"P50 {np.percentile(sp, 50):.2f}x, P90 {np.percentile(sp, 90):.2f}x "
                         f"(published, 150-node testbed: P50 1.63x, P90 8.00x).")
    return "\n".join(lines) + "\n"


CORE = ["rapier", "rapier-bssi", "rapier-bssi@bssi-order", "scheduling-only", "routing-only", "baseline",
        "rapier@before12", "scheduling-only@before12"]


def core_table(out: str, topologies: List[str]) -> str:
    """Markdown table of RAPIER and the paper's three comparison schemes (RAPIER
    Section V) per topology: average, p50/p95/p99 CCT (s), the improvement
    (CCT_baseline - CCT) / CCT_baseline of the average, decisions and wall time."""
    lines = []
    for topo in topologies:
        d = topo_dir(out, topo)
        path = os.path.join(d, "summary.json")
        if not os.path.exists(path):
            continue
        with open(path) as fh:
            sch = json.load(fh)["schedulers"]
        mks = read_makespans(os.path.join(d, "coflows.csv"))
        base = sch.get("baseline")
        lines.append(f"\n#### {topo}\n")
        lines.append("| scheme | avg CCT (s) | p50 (s) | p95 (s) | p99 (s) | makespan (s) | "
                     "improvement over baseline (avg) | decisions | wall (s) |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name in CORE:
            s = sch.get(name)
            if s is None:
                lines.append(f"| {name} | not finished | | | | | | | |")
                continue
            imp = (f"{(base['avg_cct_s'] - s['avg_cct_s']) / base['avg_cct_s'] * 100:.1f} %"
                   if base else "")
            lines.append(f"| {name} | {s['avg_cct_s']:.2f} | {s['p50_cct_s']:.3f} | "
                         f"{s['p95_cct_s']:.1f} | {s['p99_cct_s']:.0f} | "
                         f"{mks.get(name, float('nan')):.0f} | {imp} | "
                         f"{s.get('events', '')} | {s['wall_s']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_options(p, "trace", "limit", trace=dict(default=TRACE),
                         limit=dict(help="first N trace coflows"))
    p.add_argument("--out", default="results/fbtrace")
    p.add_argument("--schedulers", default=",".join(RUNNABLE),
                   help="comma-separated names, NAME@flow or NAME@coflow (default: every "
                        "scheduler of the table that is run, not the kept older runs)")
    p.add_argument("--topologies", default=";".join(TOPOLOGIES),
                   help="topology specs separated by ';'")
    p.add_argument("--skip-run", action="store_true", help="only rebuild the table")
    args = p.parse_args(argv)
    topos = [t for t in args.topologies.split(";") if t]
    names = args.schedulers.split(",")
    for t in topos:
        d = topo_dir(args.out, t)
        if not args.skip_run:
            for name in names:
                run_cli(t, args.limit, name, os.path.join(d, "runs", name), args.trace)
        merge(d, SCHEDULERS + [n for n in names if n not in SCHEDULERS])
    md = table(args.out, topos)
    with open(os.path.join(args.out, "table.md"), "w") as fh:
        fh.write(TABLE_HEADER + md)
    core = core_table(args.out, topos)
    with open(os.path.join(args.out, "core.md"), "w") as fh:
        fh.write(core)
    sys.stdout.write(md + core)
    return 0


if __name__ == "__main__":
    sys.exit(main())
