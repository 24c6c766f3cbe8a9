"""The LP solver's share of one Algorithm 1 pass, and what solving its LPs on
several threads would leave (issue 16, twelfth round).

Runs one Algorithm 1 pass of ``rapier`` (``rapier-bench``'s
``alg1_pass_s.k{K}_n{N}_w{W}``: fat_tree(K), N synthetic coflows of width W, seed
1, after one untimed warm-up pass) and keeps every LP (4) model the pass hands to
OR-Tools (``model_builder``, GLOP by default).  Then it solves the kept models
again, one after the other and on ``--threads`` threads
(:class:`concurrent.futures.ThreadPoolExecutor`: the OR-Tools solve releases the
GIL), best of ``--reps``, and prints one JSON object:

* ``pass_s``: the pass's wall time (s); ``lps``: its LP (4) solves; ``lp_vars``
  and ``lp_rows``: their mean numbers of variables and constraints;
* ``solve_seq_s``: the kept models solved one after the other (s);
  ``solve_par_s``: the same models on ``--threads`` threads (s);
* ``rest_s``: ``pass_s`` minus the pass's own solve time (``stats["lp_solve_s"]``):
  the pass's work outside the solver (building, rounding, tie-break, Algorithm 3);
* ``floor_s``: ``solve_par_s``, the least the pass can take here with these LP
  solves (the other work and the dependence of a re-plan on the commit before it
  only add to it);
* ``same``: whether every re-solve (one after the other and threaded) gave the
  pass's variable values bit for bit (GLOP is deterministic; a different LP solver
  or a warm start lands on other optimal vertices, so other routes).

Usage::

    PYTHONPATH=. python benchmarks/lp_floor.py [--k 8] [--n 20] [--width 128]
        [--threads 2] [--reps 3] [--solver GLOP]

Raises:
    SystemExit: a bad option value (named).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def capture_pass(k: int, n: int, width: int, solver: str) -> dict:
    """One Algorithm 1 pass of ``rapier`` (solver ``solver``) on fat_tree(k) with
    n coflows of ``width`` flows; returns the pass's wall time (s), its scheduler
    stats and the LP (4) models it solved with their variable values.

    Raises:
        rapier_app.scheduling.rapier.lp4.LPError: an LP failed in the pass.
    """
    from ortools.linear_solver.python import model_builder_helper as mbh

    from rapier_app.core.workload import synthetic
    from rapier_app.experiments import bench
    from rapier_app.scheduling import make_scheduler

    topo = bench._topo(("ft", k))
    coflows = synthetic(topo, n, width, 0.0, seed=1)
    bench._warm_paths(topo, coflows)
    make_scheduler("rapier", topo, seed=1, solver=solver).schedule(
        0.0, bench._states(coflows[:2]))
    kept = []
    orig = mbh.ModelSolverHelper.solve

    def spy(self, helper):
        out = orig(self, helper)
        kept.append((helper, np.asarray(self.variable_values(), dtype=float)))
        return out

    s = make_scheduler("rapier", topo, seed=1, solver=solver)
    states = bench._states(coflows)
    mbh.ModelSolverHelper.solve = spy
    try:
        t0 = time.perf_counter()
        s.schedule(0.0, states)
        dt = time.perf_counter() - t0
    finally:
        mbh.ModelSolverHelper.solve = orig
    return {"pass_s": dt, "stats": dict(s.stats), "models": kept}


def _solve(helper, solver: str) -> np.ndarray:
    from ortools.linear_solver.python import model_builder_helper as mbh
    sv = mbh.ModelSolverHelper(solver)
    sv.solve(helper)
    return np.asarray(sv.variable_values(), dtype=float)


def resolve(models: list, solver: str, threads: int, reps: int) -> tuple:
    """(best wall time s, all values bit-identical) of solving ``models`` one after
    the other (``threads`` = 1) or on a pool of ``threads`` threads."""
    best, same = float("inf"), True
    helpers = [h for h, _ in models]
    for _ in range(reps):
        t0 = time.perf_counter()
        if threads == 1:
            got = [_solve(h, solver) for h in helpers]
        else:
            with ThreadPoolExecutor(threads) as ex:
                got = list(ex.map(lambda h: _solve(h, solver), helpers))
        best = min(best, time.perf_counter() - t0)
        same = same and all(np.array_equal(g, v) for g, (_, v) in zip(got, models))
    return best, same


def main(argv=None) -> int:
    """Command line entry point (see the module docstring); returns 0."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--k", type=int, default=8, help="fat-tree arity (even, >= 2)")
    p.add_argument("--n", type=int, default=20, help="coflows (>= 1)")
    p.add_argument("--width", type=int, default=128, help="flows per coflow (>= 1)")
    p.add_argument("--threads", type=int, default=2, help="threads for the re-solve (>= 1)")
    p.add_argument("--reps", type=int, default=3, help="re-solves, best kept (>= 1)")
    p.add_argument("--solver", default="GLOP", help="OR-Tools solver (default GLOP)")
    a = p.parse_args(argv)
    for name in ("n", "width", "threads", "reps"):
        if getattr(a, name) < 1:
            raise SystemExit(f"--{name}: must be >= 1, got {getattr(a, name)}")
    if a.k < 2 or a.k % 2:
        raise SystemExit(f"--k: must be even and >= 2, got {a.k}")
    from rapier_app.scheduling.rapier.lp4 import solver_supported
    if not solver_supported(a.solver):
        raise SystemExit(f"--solver: OR-Tools LP solver {a.solver!r} is not available here")
    cap = capture_pass(a.k, a.n, a.width, a.solver)
    models = cap["models"]
    seq, same_seq = resolve(models, a.solver, 1, a.reps)
    par, same_par = resolve(models, a.solver, a.threads, a.reps)
    st = cap["stats"]
    out = {
        "pass": f"k{a.k}_n{a.n}_w{a.width}",
        "solver": a.solver,
        "pass_s": round(cap["pass_s"], 4),
        "lps": len(models),
        "lp_vars": round(float(np.mean([h.num_variables() for h, _ in models])), 1)
        if models else 0,
        "lp_rows": round(float(np.mean([h.num_constraints() for h, _ in models])), 1)
        if models else 0,
        "pass_solve_s": round(st["lp_solve_s"], 4),
        "rest_s": round(cap["pass_s"] - st["lp_solve_s"], 4),
        "solve_seq_s": round(seq, 4),
        "threads": a.threads,
        "solve_par_s": round(par, 4),
        "floor_s": round(par, 4),
        "pass_lp_solves": int(st["lp_solves"]),
        "same": bool(same_seq and same_par),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
