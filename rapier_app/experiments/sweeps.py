"""RAPIER Section V-B sweeps (Figs. 4-6): run, aggregate with 95% CIs, plot.

A *point* is (experiment, fabric, x value, try).  Try i of a point uses workload
seed ``base_seed + i`` (and the same seed for every scheduler's ECMP hashing), so
any point can be rerun alone: ``rapier-experiment point --experiment width
--fabric fattree512 --x 128 --seed 3``.  Every finished (point, scheduler) run is
appended to ``<out>/runs.csv`` at once, and runs already there are skipped, so an
interrupted sweep resumes where it stopped.

Units: times in seconds, sizes in MB (decimal) in the sizes spec.
"""

from __future__ import annotations

import csv
import math
import os
import time
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ..core.workload import synthetic
from ..scheduling import make_scheduler, scheduler_names
from ..sim import simulate
from ..sim.bounds import coflow_lower_bounds
from ..sim.metrics import mean_ci95
from .fabrics import fabric

#: The paper's four schemes (Section V-B); seed schedulers are added when registered.
PAPER_SCHEMES = ["baseline", "routing-only", "scheduling-only", "rapier"]
SEED_SCHEMES = ["aalo", "philae", "sincronia", "optas"]
#: This project's improved rounding (rapier_app/scheduling/rapier/routes.py).
IMPROVED_SCHEMES = ["rapier-ls", "rapier-spread"]
#: Default flow sizes: uniform 1-10 MB (see docs/evaluation.md for why).
DEFAULT_SIZES = "uniform:1,10"


@dataclass(frozen=True)
class Experiment:
    """One sweep of Section V-B.

    Attributes:
        name: ``width`` (Fig. 4), ``number`` (Fig. 5) or ``interval`` (Fig. 6).
        param: the swept quantity (``width``, ``n_coflows``, ``interval_s``).
        values: the paper's x values.
        quick: the reduced subset run by default in this repository.
        n_coflows, width, interval_s: the fixed workload parameters.
        figure: the paper figure.
    """

    name: str
    param: str
    values: tuple
    quick: tuple
    n_coflows: int
    width: int
    interval_s: float
    figure: str

    def workload_args(self, x: float) -> dict:
        """Arguments of :func:`~rapier_app.core.workload.synthetic` at x."""
        args = {"n_coflows": self.n_coflows, "width": self.width,
                "mean_interarrival_s": self.interval_s}
        key = {"width": "width", "n_coflows": "n_coflows",
               "interval_s": "mean_interarrival_s"}[self.param]
        args[key] = int(x) if self.param != "interval_s" else float(x)
        return args


#: Mean inter-arrival of Figs. 4 and 5 (the paper does not give it): 0.1 s.
EXPERIMENTS: Dict[str, Experiment] = {
    "width": Experiment("width", "width", (16, 32, 64, 128, 256, 384, 512), (16, 64, 128),
                        20, 128, 0.1, "Fig. 4"),
    "number": Experiment("number", "n_coflows", (10, 20, 30, 40, 50), (10, 30),
                         20, 128, 0.1, "Fig. 5"),
    "interval": Experiment("interval", "interval_s", (0.0, 0.1, 0.2, 0.4, 0.6, 0.8),
                           (0.0, 0.4, 0.8), 30, 128, 0.0, "Fig. 6"),
}

RUN_FIELDS = ["experiment", "fabric", "x", "try", "seed", "sizes", "scheme", "n_coflows",
              "avg_cct_s", "lower_bound_s", "ratio_to_bound", "wall_s", "events",
              "reschedule"]
#: ``reschedule`` column: the simulator's decision points ("auto": each scheduler's
#: own, "flow": every flow completion, "coflow": coflow events only); "" in files
#: written before the column existed.


def available_schemes(include_seeds: bool = True) -> List[str]:
    """The paper's schemes plus (``include_seeds``) ``rapier-ls``, ``rapier-spread`` and the seed
    schedulers (Aalo, Philae, Sincronia, OPTAS) that are registered now."""
    names = set(scheduler_names())
    out = [s for s in PAPER_SCHEMES if s in names]
    if include_seeds:
        out += [s for s in IMPROVED_SCHEMES + SEED_SCHEMES if s in names]
    return out


def run_point(experiment: str, fabric_name: str, x: float, seed: int,
              schemes: Sequence[str], sizes: str = DEFAULT_SIZES, try_index: int = 0,
              log=None, reschedule_on: Optional[str] = None) -> List[dict]:
    """Run every scheme once on one point; return one row (RUN_FIELDS) per scheme.

    ``reschedule_on`` ("flow", "coflow" or None for each scheduler's own rule) is
    passed to the simulator (:class:`~rapier_app.sim.Simulator`).

    The lower bound (:func:`rapier_app.sim.bounds.coflow_lower_bounds`, averaged) is
    computed once per point.  Raises what the simulator or a scheduler raises.
    """
    exp = EXPERIMENTS[experiment]
    topo = fabric(fabric_name)
    coflows = synthetic(topo, sizes=sizes, seed=seed, **exp.workload_args(x))
    lb = float(np.mean(list(coflow_lower_bounds(topo, coflows).values())))
    rows = []
    for name in schemes:
        t0 = time.perf_counter()
        res = simulate(topo, coflows, make_scheduler(name, topo, seed=seed), record_flows=False,
                       reschedule_on=reschedule_on)
        avg = float(res.ccts.mean())
        rows.append({"experiment": experiment, "fabric": fabric_name, "x": x,
                     "try": try_index, "seed": seed, "sizes": sizes, "scheme": name,
                     "n_coflows": len(coflows), "avg_cct_s": avg, "lower_bound_s": lb,
                     "ratio_to_bound": avg / lb, "wall_s": time.perf_counter() - t0,
                     "events": res.events, "reschedule": reschedule_on or "auto"})
        if log:
            log(f"{experiment} {fabric_name} x={x} seed={seed} {name}: avg CCT {avg:.4f} s "
                f"(bound {lb:.4f} s, x{avg / lb:.2f}), {rows[-1]['wall_s']:.1f} s wall")
    return rows


def read_runs(path: str) -> List[dict]:
    """Rows of a runs CSV (numbers parsed); [] if the file does not exist.

    Raises:
        ValueError: a missing column, or a cell that is not a number, named with the
            file, line and column.
    """
    if not os.path.exists(path):
        return []
    out = []
    nums = (("x", float), ("avg_cct_s", float), ("lower_bound_s", float),
            ("ratio_to_bound", float), ("wall_s", float), ("try", int), ("seed", int),
            ("n_coflows", int), ("events", int))
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [k for k, _ in nums if k not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: not a runs CSV: missing column(s) {', '.join(missing)}")
        for r in reader:
            for k, conv in nums:
                try:
                    r[k] = conv(r[k])
                except (TypeError, ValueError):
                    raise ValueError(f"{path}:{reader.line_num}: {k}: expected a number, "
                                     f"got {r[k]!r}") from None
            r["reschedule"] = r.get("reschedule") or ""
            out.append(r)
    return out


def append_runs(path: str, rows: Iterable[dict]) -> None:
    """Append rows (RUN_FIELDS) to a runs CSV, writing the header if the file is new.

    A file written before a column existed is first rewritten with the current
    header, its old rows getting "" in the new columns."""
    rows = list(rows)
    if os.path.exists(path):
        with open(path, newline="") as fh:
            header = next(csv.reader(fh), [])
        if header != RUN_FIELDS:
            with open(path, newline="") as fh:
                old = list(csv.DictReader(fh))
            with open(path, "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=RUN_FIELDS)
                w.writeheader()
                for r in old:
                    w.writerow({k: r.get(k) or "" for k in RUN_FIELDS})
    new = not os.path.exists(path)
    with open(path, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=RUN_FIELDS)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in RUN_FIELDS})


def check_decision_points(path: str, reschedule_on: Optional[str]) -> List[dict]:
    """The rows of the runs CSV ``path`` ([] if absent), after checking that they were
    all made with the decision points ``reschedule_on`` (None: "auto").

    Raises:
        ValueError: some rows have another ``reschedule`` value; averaging them with
            new rows would mix two simulations, so the message asks for another
            ``--out`` (or the same ``--reschedule``).
    """
    old = read_runs(path)
    mode = reschedule_on or "auto"
    other = sorted({r["reschedule"] for r in old} - {mode})
    if other:
        raise ValueError(f"reschedule: {path} holds runs made with decision points "
                         f"{', '.join(repr(o) for o in other)} (column reschedule; '' = "
                         f"recorded before the column existed), not {mode!r}: use another "
                         f"--out or the same --reschedule")
    return old


@dataclass(frozen=True)
class Task:
    """One unit of work of a sweep: every scheme in ``schemes`` on one point.

    A point is (experiment, fabric, x, try); try ``i`` uses workload seed
    ``base_seed + i`` (also each scheduler's ECMP seed), so a task gives the same
    rows wherever it runs (a worker process, a Dask worker, or alone with
    ``rapier-experiment point``).  Picklable: it is what :mod:`.parallel` ships to
    workers.

    Attributes:
        experiment: a key of :data:`EXPERIMENTS`.
        fabric: a key of :data:`~rapier_app.experiments.fabrics.FABRICS`.
        x: the swept value (width in flows, number of coflows or interval in s).
        try_index: the try number i (>= 0).
        seed: the workload and ECMP seed.
        sizes: the flow-size spec (MB), e.g. ``uniform:1,10``.
        schemes: scheduler names, run in this order.
        reschedule: the simulator's decision points ("flow", "coflow"; None: each
            scheduler's own, recorded as "auto").
    """

    experiment: str
    fabric: str
    x: float
    try_index: int
    seed: int
    sizes: str
    schemes: Tuple[str, ...]
    reschedule: Optional[str] = None

    def label(self) -> str:
        """Short human name of the point, e.g. ``width fattree512 x=16 seed=1``."""
        return f"{self.experiment} {self.fabric} x={self.x:g} seed={self.seed}"

    def as_dict(self) -> dict:
        """The task as JSON-ready data (``schemes`` as a list)."""
        return {"experiment": self.experiment, "fabric": self.fabric, "x": self.x,
                "try": self.try_index, "seed": self.seed, "sizes": self.sizes,
                "schemes": list(self.schemes), "reschedule": self.reschedule or "auto"}

    def flows(self) -> int:
        """Flows in this point's workload (coflows x width): the cost estimate by which
        the parallel backends start the largest points first (longest processing
        time first, so the last point to finish is a small one)."""
        args = EXPERIMENTS[self.experiment].workload_args(self.x)
        return int(args["n_coflows"]) * int(args["width"]) * len(self.schemes)

    def command(self) -> str:
        """The ``rapier-experiment point`` command that runs this task alone."""
        cmd = (f"rapier-experiment point --experiment {self.experiment} --fabric "
               f"{self.fabric} --x {self.x:g} --seed {self.seed} --schemes "
               f"{','.join(self.schemes)} --sizes {self.sizes}")
        return cmd + (f" --reschedule {self.reschedule}" if self.reschedule else "")


def run_key(row: dict) -> tuple:
    """The identity of a run in runs.csv: (experiment, fabric, x, seed, sizes, scheme)."""
    return (row["experiment"], row["fabric"], float(row["x"]), int(row["seed"]), row["sizes"],
            row["scheme"])


def plan_tasks(experiment: str, fabric_name: str, values: Sequence[float], tries: int,
               schemes: Sequence[str], sizes: str = DEFAULT_SIZES, base_seed: int = 1,
               reschedule_on: Optional[str] = None) -> List[Task]:
    """The grid of a sweep as tasks, x-major then try (the serial run's order).

    Raises:
        ValueError: unknown ``experiment`` or ``fabric_name``, ``tries`` < 1, or no
            scheme or no x value (each message names the field).
    """
    from .fabrics import FABRICS
    if experiment not in EXPERIMENTS:
        raise ValueError(f"experiment: unknown {experiment!r} (known: {', '.join(EXPERIMENTS)})")
    if fabric_name not in FABRICS:
        raise ValueError(f"fabric: unknown {fabric_name!r} (known: {', '.join(FABRICS)})")
    if tries < 1:
        raise ValueError(f"tries: must be >= 1, got {tries}")
    if not schemes:
        raise ValueError("schemes: empty")
    if not values:
        raise ValueError("values: no x value")
    return [Task(experiment, fabric_name, float(x), i, base_seed + i, sizes, tuple(schemes),
                 reschedule_on) for x in values for i in range(tries)]


def pending(tasks: Iterable[Task], done: set) -> List[Task]:
    """``tasks`` less the runs whose :func:`run_key` is in ``done``; tasks with no
    scheme left are dropped (this is what makes a sweep resumable)."""
    out = []
    for t in tasks:
        left = tuple(s for s in t.schemes
                     if (t.experiment, t.fabric, t.x, t.seed, t.sizes, s) not in done)
        if left:
            out.append(Task(t.experiment, t.fabric, t.x, t.try_index, t.seed, t.sizes, left,
                            t.reschedule))
    return out


def run_task(task: Task) -> List[dict]:
    """Run one task (:func:`run_point` without logging); one row (RUN_FIELDS) per
    scheme.  Top-level so that process pools and Dask workers can pickle it."""
    return run_point(task.experiment, task.fabric, task.x, task.seed, task.schemes,
                     task.sizes, task.try_index, None, task.reschedule)


# ---------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------
def improvement(cct_scheme: float, cct_baseline: float) -> float:
    """The paper's metric (Section V, "Metrics"): (CCT_base - CCT_scheme) / CCT_base."""
    return (cct_baseline - cct_scheme) / cct_baseline


def summarize(rows: Sequence[dict]) -> List[dict]:
    """Aggregate runs per (experiment, fabric, sizes, x, scheme) over the tries.

    Returns rows with: tries, avg_cct_s (mean over tries), avg_cct_ci95 (half-width),
    lower_bound_s (mean), ratio_to_bound (mean of per-try ratios) and
    improvement (paper's metric on the mean CCTs vs ``baseline``; per-try values give
    improvement_ci95).  Only tries run by both the scheme and baseline count for the
    improvement.
    """
    groups: Dict[tuple, List[dict]] = {}
    for r in rows:
        groups.setdefault((r["experiment"], r["fabric"], r["sizes"], r["x"], r["scheme"]),
                          []).append(r)
    out = []
    for (e, f, s, x, sch), rs in sorted(groups.items(), key=lambda kv: (kv[0][:3], kv[0][3],
                                                                      kv[0][4])):
        m, ci = mean_ci95([r["avg_cct_s"] for r in rs])
        base = {r["seed"]: r["avg_cct_s"] for r in groups.get((e, f, s, x, "baseline"), [])}
        mine = {r["seed"]: r["avg_cct_s"] for r in rs}
        common = sorted(set(base) & set(mine))
        if common:
            imp = improvement(np.mean([mine[k] for k in common]), np.mean([base[k] for k in common]))
            _, imp_ci = mean_ci95([improvement(mine[k], base[k]) for k in common])
        else:
            imp, imp_ci = math.nan, math.nan
        out.append({"experiment": e, "fabric": f, "sizes": s, "x": x, "scheme": sch,
                    "tries": len(rs), "avg_cct_s": m, "avg_cct_ci95": ci,
                    "lower_bound_s": float(np.mean([r["lower_bound_s"] for r in rs])),
                    "ratio_to_bound": float(np.mean([r["ratio_to_bound"] for r in rs])),
                    "improvement": imp, "improvement_ci95": imp_ci,
                    "wall_s": float(np.mean([r["wall_s"] for r in rs]))})
    return out
