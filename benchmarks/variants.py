"""Average CCT of scheduler variants on one Section V-B point, over several seeds.

Usage (from the repository root)::

    PYTHONPATH=. .venv/bin/python benchmarks/variants.py EXPERIMENT FABRIC X SEEDS VARIANTS

``EXPERIMENT`` is width, number or interval; ``FABRIC`` a name of
``rapier_app.experiments.fabrics`` (fattree512, vl2-512, ...); ``X`` the point;
``SEEDS`` a comma list; ``VARIANTS`` a ';' list of ``NAME[@flow|@coflow][:KEY=VALUE,...]``
(scheduler, optional decision points, scheduler parameters), e.g.
``"rapier;rapier:tie_break=none;rapier-isolated@coflow;scheduling-only"``.
The workload is the one ``rapier-experiment point`` builds for the same point and
seed.  Prints per variant the mean average CCT (s) and the per-seed values.
"""

import sys

import numpy as np

from rapier_app.core.workload import synthetic
from rapier_app.experiments.fabrics import fabric
from rapier_app.experiments.sweeps import DEFAULT_SIZES, EXPERIMENTS
from rapier_app.scheduling import make_scheduler
from rapier_app.sim import simulate


def parse_variant(v: str):
    """``NAME[@MODE][:K=V,...]`` -> (name, mode or None, params)."""
    name, _, kv = v.partition(":")
    name, _, mode = name.partition("@")
    kw = {}
    for item in filter(None, kv.split(",")):
        k, val = item.split("=", 1)
        try:
            val = float(val)
        except ValueError:
            pass
        kw[k] = val
    return name, mode or None, kw


def main(argv) -> int:
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    exp, fab, x = argv[0], argv[1], float(argv[2])
    seeds = [int(s) for s in argv[3].split(",")]
    variants = argv[4].split(";")
    topo = fabric(fab)
    res = {v: [] for v in variants}
    for seed in seeds:
        cfs = synthetic(topo, sizes=DEFAULT_SIZES, seed=seed,
                        **EXPERIMENTS[exp].workload_args(x))
        for v in variants:
            name, mode, kw = parse_variant(v)
            r = simulate(topo, cfs, make_scheduler(name, topo, seed=seed, **kw),
                         record_flows=False, reschedule_on=mode)
            res[v].append(float(r.ccts.mean()))
    for v in variants:
        print(f"{v:45s} {np.mean(res[v]):.4f}  {' '.join(f'{a:.3f}' for a in res[v])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
