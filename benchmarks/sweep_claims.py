"""Check the Section V-B sweep claims of the README against ``runs.csv``.

For every (experiment, fabric, x) point: each scheme's mean average CCT over the
tries (s) and the 95 % confidence interval (Student t, scipy), then:

* is ``rapier`` ahead of (mean below) ``baseline`` and ``routing-only``;
* is ``rapier`` behind (mean above) ``scheduling-only``;
* is ``rapier-bssi`` best, or tied with the best scheme (overlapping 95 % CIs).

Usage (from the repository root)::

    .venv/bin/python benchmarks/sweep_claims.py [results/sweeps/runs.csv] [--markdown]

Prints one line per point and a summary; ``--markdown`` prints the summary as a
markdown list.  Exit status 0.
"""

import argparse
import csv
import sys
from collections import defaultdict

from rapier_app.sim.metrics import mean_ci95

SCHEMES = ["baseline", "routing-only", "scheduling-only", "rapier", "rapier-bssi"]


def ci95(values):
    """(mean, half-width of the 95 % CI); half-width nan with one value.

    The project's one CI function, :func:`rapier_app.sim.metrics.mean_ci95`."""
    return mean_ci95(values)


def main(argv=None) -> int:
    """Check the claims (module docstring); returns the exit status (0).

    Raises:
        OSError: the runs CSV cannot be read.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="?", default="results/sweeps/runs.csv",
                    help="runs.csv of rapier-experiment (default %(default)s)")
    ap.add_argument("--markdown", action="store_true",
                    help="print the summary as a markdown list")
    a = ap.parse_args(argv)
    path, md = a.runs, a.markdown
    pts = defaultdict(lambda: defaultdict(list))
    with open(path) as fh:
        for r in csv.DictReader(fh):
            if r["scheme"] in SCHEMES:
                pts[(r["experiment"], r["fabric"], float(r["x"]))][r["scheme"]].append(
                    float(r["avg_cct_s"]))
    n = 0
    ahead_base = ahead_ro = behind_varys = bssi_ok = 0
    tries = set()
    bad = []
    for key in sorted(pts):
        d = pts[key]
        if not all(s in d for s in SCHEMES):
            continue
        n += 1
        m = {s: ci95(v) for s, v in d.items()}
        tries.update(len(v) for v in d.values())
        ab = m["rapier"][0] < m["baseline"][0]
        ar = m["rapier"][0] < m["routing-only"][0]
        bv = m["rapier"][0] > m["scheduling-only"][0]
        best = min(SCHEMES, key=lambda s: m[s][0])
        lo_b, hi_b = m[best][0] - m[best][1], m[best][0] + m[best][1]
        bs_lo = m["rapier-bssi"][0] - m["rapier-bssi"][1]
        tied = best == "rapier-bssi" or bs_lo <= hi_b
        ahead_base += ab
        ahead_ro += ar
        behind_varys += bv
        bssi_ok += tied
        if not (ab and ar and tied):
            bad.append(key)
        if not md:
            print(f"{key[0]:8s} {key[1]:10s} x={key[2]:<5g} " +
                  " ".join(f"{s}={m[s][0]:.3f}+-{m[s][1]:.3f}" for s in SCHEMES) +
                  f"  best={best}{'' if tied else '  BSSI NOT TIED'}")
    lines = [
        f"points: {n} (tries per point: {sorted(tries)})",
        f"rapier ahead of baseline at {ahead_base}/{n} points, of routing-only at "
        f"{ahead_ro}/{n}",
        f"rapier behind scheduling-only (higher mean) at {behind_varys}/{n} points",
        f"rapier-bssi best or tied with the best (overlapping 95 % CIs) at {bssi_ok}/{n}",
    ]
    if bad:
        lines.append("points missing a claim: " + ", ".join(f"{e} {f} x={x:g}"
                                                           for e, f, x in bad))
    for line in lines:
        print(("- " if md else "") + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
