"""Algorithm 3's coflow order: ``rapier`` with ``wc_order="paper"`` against
``wc_order="pick"`` (the default since issue 12's last change) and Varys, on points
of the Section V-B sweeps (docs/results.md, "Algorithm 3's order").

Prints one line per (experiment, fabric, x, seed): the average CCT (s) of each.

Usage::

    .venv/bin/python benchmarks/alg3_order.py width fattree512 128 1,2
    .venv/bin/python benchmarks/alg3_order.py interval vl2-512 0 1

Arguments: experiment (width, number, interval), fabric (fattree512, vl2-512), x,
comma-separated seeds (the sweeps' workload seeds).  About 10-60 s of CPU per line.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from rapier_app.core.workload import synthetic  # noqa: E402
from rapier_app.experiments.fabrics import fabric  # noqa: E402
from rapier_app.experiments.sweeps import EXPERIMENTS  # noqa: E402
from rapier_app.scheduling import make_scheduler  # noqa: E402
from rapier_app.sim import simulate  # noqa: E402

CONFIGS = [("rapier", {"wc_order": "paper"}), ("rapier", {"wc_order": "pick"}),
           ("scheduling-only", {})]


def main(argv=None) -> int:
    """Run the comparison of the module docstring; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    exp, fab, x, seeds = argv[0], argv[1], float(argv[2]), [int(s) for s in argv[3].split(",")]
    topo = fabric(fab)
    for seed in seeds:
        cfs = synthetic(topo, sizes="uniform:1,10", seed=seed,
                        **EXPERIMENTS[exp].workload_args(x))
        out = []
        for name, kw in CONFIGS:
            res = simulate(topo, cfs, make_scheduler(name, topo, seed=seed, **kw),
                           record_flows=False)
            label = name + "".join(f" {k}={v}" for k, v in kw.items())
            out.append(f"{label}: {res.ccts.mean():.4f}")
        print(f"{exp} {fab} x={x:g} seed={seed}: " + " | ".join(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
