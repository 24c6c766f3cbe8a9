"""Tables, plots (matplotlib, Agg backend) and markdown summaries of the sweeps."""

from __future__ import annotations

import csv
import math
import os
from typing import Dict, List, Sequence

from .fabrics import FABRICS
from .sweeps import EXPERIMENTS, read_runs, summarize

SUMMARY_FIELDS = ["experiment", "fabric", "sizes", "x", "scheme", "tries", "avg_cct_s",
                  "avg_cct_ci95", "lower_bound_s", "ratio_to_bound", "improvement",
                  "improvement_ci95", "wall_s"]

XLABEL = {"width": "coflow width (flows)", "number": "number of coflows",
          "interval": "mean inter-coflow arrival interval (s)"}


def write_summary_csv(path: str, summary: Sequence[dict]) -> None:
    """Write the aggregated rows (SUMMARY_FIELDS) to ``path``."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=SUMMARY_FIELDS)
        w.writeheader()
        for r in summary:
            w.writerow({k: (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k])
                        for k in SUMMARY_FIELDS})


def plot_group(path: str, experiment: str, fabric_name: str, sizes: str,
               rows: Sequence[dict]) -> None:
    """Two panels like the paper's figures: (a) average CCT with 95% CI and the lower
    bound, (b) improvement over baseline (paper's metric), one line per scheme."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    schemes = sorted({r["scheme"] for r in rows},
                     key=lambda s: (["rapier", "rapier-ls", "rapier-spread", "scheduling-only",
                                     "routing-only", "baseline"] + [s]).index(s))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    colors = {s: f"C{i % 10}" for i, s in enumerate(schemes)}
    for s in schemes:
        rs = sorted((r for r in rows if r["scheme"] == s), key=lambda r: r["x"])
        xs = [r["x"] for r in rs]
        ys = [r["avg_cct_s"] for r in rs]
        err = [0 if math.isnan(r["avg_cct_ci95"]) else r["avg_cct_ci95"] for r in rs]
        style = "-" if s in ("rapier", "rapier-ls", "rapier-spread", "scheduling-only",
                             "routing-only", "baseline") else ":"
        a1.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=s, color=colors[s],
                    ls=style)
        if s != "baseline":
            a2.plot(xs, [100 * r["improvement"] for r in rs], marker="o", label=s,
                    color=colors[s], ls=style)
    lb = {}
    for r in rows:
        lb[r["x"]] = r["lower_bound_s"]
    xs = sorted(lb)
    a1.plot(xs, [lb[x] for x in xs], "k--", label="lower bound (LP 4)")
    if experiment == "width":
        for ax in (a1, a2):
            ax.set_xscale("log", base=2)
    a1.set_xlabel(XLABEL[experiment])
    a1.set_ylabel("average CCT (s)")
    a1.set_title(f"{EXPERIMENTS[experiment].figure} (a): {fabric_name}")
    a1.legend(fontsize=7)
    a2.set_xlabel(XLABEL[experiment])
    a2.set_ylabel("improvement over baseline (%)")
    a2.set_title(f"(b) sizes {sizes}")
    a2.axhline(0, color="gray", lw=0.5)
    if a2.get_legend_handles_labels()[0]:  # empty with baseline alone
        a2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


SCHEME_ORDER = ["baseline", "routing-only", "scheduling-only", "rapier", "rapier-ls",
                "rapier-spread", "rapier-residual"]


def wide_table(rows: Sequence[dict]) -> List[str]:
    """Markdown lines of one (experiment, fabric, sizes) group as a comparison grid:
    one row per x, one column per scheme (paper's schemes first), each cell the
    average CCT in seconds with the improvement over ``baseline`` in brackets and
    the 95% CI half-width after +- when there are several tries.

    Args:
        rows: summary rows (:func:`~rapier_app.experiments.sweeps.summarize`) of one
            group.
    """
    schemes = sorted({r["scheme"] for r in rows},
                     key=lambda s: (SCHEME_ORDER.index(s) if s in SCHEME_ORDER
                                    else len(SCHEME_ORDER), s))
    cell = {(r["x"], r["scheme"]): r for r in rows}
    xs = sorted({r["x"] for r in rows})
    bound = {r["x"]: r["lower_bound_s"] for r in rows}
    out = ["| x | bound (s) | " + " | ".join(schemes) + " |",
           "|---|---|" + "---|" * len(schemes)]
    for x in xs:
        cells = []
        for sch in schemes:
            r = cell.get((x, sch))
            if r is None:
                cells.append("-")
                continue
            txt = f"{r['avg_cct_s']:.3f}"
            if not math.isnan(r["avg_cct_ci95"]):
                txt += f" +- {r['avg_cct_ci95']:.3f}"
            if sch != "baseline" and not math.isnan(r["improvement"]):
                txt += f" ({100 * r['improvement']:+.0f}%)"
            cells.append(txt)
        out.append(f"| {x:g} | {bound[x]:.3f} | " + " | ".join(cells) + " |")
    return out


def markdown(summary: Sequence[dict], runs: Sequence[dict]) -> str:
    """Markdown tables, one per (experiment, fabric, sizes), of the summary rows."""
    out = ["# Evaluation results (generated by `rapier-experiment report`)", "",
           "Average CCT in seconds: mean over the tries +- 95% CI half-width "
           "(Student t; `nan` with one try).  `bound` is the mean over tries of the "
           "average per-coflow lower bound (1/alpha of LP (4) alone on the full "
           "fabric); `xLB` is the scheme's average CCT over the bound; `impr.` is the "
           "paper's metric (CCT_baseline - CCT_scheme) / CCT_baseline.", ""]
    groups: Dict[tuple, List[dict]] = {}
    for r in summary:
        groups.setdefault((r["experiment"], r["fabric"], r["sizes"]), []).append(r)
    for (e, f, s), rs in groups.items():
        out += [f"## {EXPERIMENTS[e].figure} ({e}) on `{f}`, sizes `{s}`", "",
                f"Fabric: {FABRICS[f][1] if f in FABRICS else f}.", "",
                "Average CCT (s), improvement over `baseline` in brackets:", ""]
        out += wide_table(rs)
        out += ["", "Per scheme:", "",
                "| x | scheme | tries | avg CCT (s) | bound (s) | xLB | impr. | sim wall (s) |",
                "|---|---|---|---|---|---|---|---|"]
        for r in sorted(rs, key=lambda r: (r["x"], r["scheme"])):
            ci = "" if math.isnan(r["avg_cct_ci95"]) else f" +- {r['avg_cct_ci95']:.3f}"
            imp = "" if r["scheme"] == "baseline" or math.isnan(r["improvement"]) else \
                f"{100 * r['improvement']:.1f}%"
            out.append(f"| {r['x']:g} | {r['scheme']} | {r['tries']} | {r['avg_cct_s']:.3f}{ci} | "
                       f"{r['lower_bound_s']:.3f} | {r['ratio_to_bound']:.2f} | {imp} | "
                       f"{r['wall_s']:.1f} |")
        seeds = sorted({r["seed"] for r in runs if (r["experiment"], r["fabric"], r["sizes"])
                        == (e, f, s)})
        out += ["", f"Seeds: {', '.join(map(str, seeds))}.", ""]
    return "\n".join(out) + "\n"


def build_report(out_dir: str) -> List[str]:
    """Read ``out_dir/runs.csv``; write summary.csv, one PNG per (experiment, fabric,
    sizes) and summary.md.  Returns the written paths."""
    runs = read_runs(os.path.join(out_dir, "runs.csv"))
    summary = summarize(runs)
    written = []
    p = os.path.join(out_dir, "summary.csv")
    write_summary_csv(p, summary)
    written.append(p)
    groups: Dict[tuple, List[dict]] = {}
    for r in summary:
        groups.setdefault((r["experiment"], r["fabric"], r["sizes"]), []).append(r)
    for (e, f, s), rs in groups.items():
        tag = s.replace(":", "-").replace(",", "-")
        p = os.path.join(out_dir, f"{e}_{f}_{tag}.png")
        plot_group(p, e, f, s, rs)
        written.append(p)
    p = os.path.join(out_dir, "summary.md")
    with open(p, "w") as fh:
        fh.write(markdown(summary, runs))
    written.append(p)
    return written
