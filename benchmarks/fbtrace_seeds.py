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
(``coflows.csv``, ``summary.json``, ``cct_cdf.png`` written by rapier-sim) go to
``OUT/<topology>/``; the table goes to ``OUT/table.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from typing import Dict, List

import numpy as np

TRACE = "/work/shared/traces/FB2010-1Hr-150-0.txt"
SCHEDULERS = ["fair", "fifo", "aalo", "philae", "optas", "sincronia", "sincronia-immediate",
              "scheduling-only", "rapier"]
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
    "optas": ("fair", 1 / 1.03, None,
              "OPTAS Sec. V (NS-2, FB 'Normal' mix): 1.03x overall over fair sharing"),
}


def run_cli(topology: str, limit, schedulers: List[str], out: str) -> None:
    """Run rapier-sim for one topology into ``out`` (raises SystemExit on failure)."""
    from rapier_app import cli

    argv = ["--topology", topology, "--trace", TRACE, "--schedulers", ",".join(schedulers),
            "--no-bound", "--out", out]
    if limit:
        argv += ["--limit", str(limit)]
    rc = cli.main(argv)
    if rc:
        raise SystemExit(f"rapier-sim failed on {topology} (exit {rc})")


def read_ccts(path: str) -> Dict[str, Dict[str, float]]:
    """coflows.csv -> {scheduler: {coflow_id: cct_s}}."""
    out: Dict[str, Dict[str, float]] = {}
    with open(path) as fh:
        for row in csv.DictReader(fh):
            out.setdefault(row["scheduler"], {})[row["coflow_id"]] = float(row["cct_s"])
    return out


def table(out: str, topologies: List[str]) -> str:
    """Markdown table of every topology's results under ``out``."""
    lines = []
    for topo in topologies:
        d = os.path.join(out, topo.replace(":", "_").replace(",", "_"))
        with open(os.path.join(d, "summary.json")) as fh:
            summ = json.load(fh)
        ccts = read_ccts(os.path.join(d, "coflows.csv"))
        sch = summ["schedulers"]
        fair = sch.get("fair")
        lines.append(f"\n#### {summ['workload']} on {summ['topology']}\n")
        lines.append("| scheduler | avg CCT (s) | p95 CCT (s) | avg / fair | p95 / fair | "
                     "published (scheme / reference) | ours, same ratio | wall (s) |")
        lines.append("|---|---:|---:|---:|---:|---|---:|---:|")
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
            lines.append(f"| {name} | {s['avg_cct_s']:.3f} | {s['p95_cct_s']:.3f} | {na:.2f} | "
                         f"{np95:.2f} | {pub} | {ours} | {s['wall_s']:.0f} |")
        if "philae" in ccts and "aalo" in ccts:
            ids = sorted(set(ccts["philae"]) & set(ccts["aalo"]))
            sp = np.array([ccts["aalo"][i] / ccts["philae"][i] for i in ids])
            lines.append(f"\nPhilae's per-coflow speedup over Aalo (Aalo CCT / Philae CCT): "
                         f"P50 {np.percentile(sp, 50):.2f}x, P90 {np.percentile(sp, 90):.2f}x "
                         f"(published, 150-node testbed: P50 1.63x, P90 8.00x).")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=int, default=None, help="first N trace coflows")
    p.add_argument("--out", default="results/fbtrace")
    p.add_argument("--schedulers", default=",".join(SCHEDULERS))
    p.add_argument("--topologies", default=";".join(TOPOLOGIES),
                   help="topology specs separated by ';'")
    p.add_argument("--skip-run", action="store_true", help="only rebuild the table")
    args = p.parse_args(argv)
    topos = [t for t in args.topologies.split(";") if t]
    for t in topos:
        d = os.path.join(args.out, t.replace(":", "_").replace(",", "_"))
        if not args.skip_run:
            run_cli(t, args.limit, args.schedulers.split(","), d)
    md = table(args.out, topos)
    with open(os.path.join(args.out, "table.md"), "w") as fh:
        fh.write(md)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
