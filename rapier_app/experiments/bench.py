"""``rapier-bench``: how fast RAPIER decides and how long the evaluation takes.

Prints (text, or one JSON object with ``--json``):

* ``alg1_pass_s`` (and ``alg1_pass_cpu_s``, the process CPU time of the same pass,
  which is what the wall time would be on an otherwise idle machine; the 1-minute
  load average is printed as ``load_avg_1min``): wall time of one Algorithm 1 pass (plus Algorithm 3) of
  ``rapier`` over n fresh coflows of width 128 arriving at once on a k-ary fat-tree,
  keyed ``k{K}_n{N}_w128``, with LP (4) solved by the default ``lp="fast"``
  (``lp_certified``: the solves the greedy placement answered with a duality
  certificate); ``alg1_pass_exact_s`` and ``alg1_pass_exact_cpu_s``: the same pass
  with ``lp="exact"`` (GLOP at every solve).  The shared candidate-path cache
  (:func:`~rapier_app.scheduling.pathcache.pair_paths`) is filled first for the
  coflows' host pairs (as in a running controller) and the time to fill it is
  reported as ``path_cache_s``.
  The literal Algorithm 1 (``fast=False``) is timed on the k=8, n=20 case as
  ``alg1_pass_plain_s``.
* ``lp_ms``: LP (4) build and solve times per coflow (width 128), for the
  array-built model (``model_builder``) with GLOP and PDLP and for the
  per-variable ``pywraplp`` build (the original code), and the rounding quality:
  fixed-route alpha / LP alpha (1.0 = the rounding lost nothing) for argmax
  rounding of each solver's solution and for ``rapier-ls``'s local search.
* ``sim_s`` (not with ``--quick``): simulator wall time per scheme for the Facebook
  trace (first ``--trace-limit`` coflows on ``bigswitch:150``) and, from
  ``results/sweeps/runs.csv``, the mean wall time per experiment, fabric and scheme.

* ``fb_hour_s``: wall seconds per registered scheduler to replay a fixed prefix of
  the Facebook hour (the first ``--fb-prefix`` coflows, default 10: 6,212 flows, on
  ``bigswitch:150``; ``fb_hour_prefix`` records N), with ``fb_hour_events`` (decision
  points).  A fixed prefix so that runs of different commits compare; longer
  prefixes and the decisions' fingerprints: ``benchmarks/event_core.py``.

``--quick`` measures k=8 with n = 20, 50, 100, the k=16 n=100 pass
(``alg1_pass_s.k16_n100_w128``), 5 LPs per solver and ``fb_hour_s``; about
two minutes on an idle 2-core machine (each pass runs with both LP solvers).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Dict, List

import numpy as np

from ..cli_common import add_common_arguments, setup_logging


def _states(coflows):
    from ..core.model import CoflowState, InfoPolicy
    pol = InfoPolicy(True)
    return [CoflowState(c, pol) for c in coflows]


def _warm_paths(topo, coflows) -> float:
    """Wall seconds to fill the shared candidate-path cache the schedulers read
    (:func:`~rapier_app.scheduling.pathcache.pair_paths` and its link matrix) for
    every flow of ``coflows`` (pairs already cached cost a lookup)."""
    from ..scheduling.pathcache import pair_paths

    t0 = time.perf_counter()
    for c in coflows:
        for f in c.flows:
            pair_paths(topo, f.src, f.dst).mat
    return time.perf_counter() - t0


def alg1_pass(k: int, n: int, width: int = 128, seed: int = 1, fast: bool = True,
              reps: int = 1, lp: str = "fast") -> tuple:
    """(best pass wall time s over ``reps``, path-cache warm-up s, scheduler stats)
    of one Algorithm 1 pass of ``rapier`` (LP (4) solved by ``lp``: ``"fast"`` or
    ``"exact"``) on fat_tree(k) with n coflows of ``width``."""
    from ..core.workload import synthetic
    from ..scheduling import make_scheduler

    topo = _topo(("ft", k))
    coflows = synthetic(topo, n, width, 0.0, seed=seed)
    warm = _warm_paths(topo, coflows)
    # one untimed pass: loads the solver libraries and fills per-topology caches,
    # as in a controller that has been running for a while
    make_scheduler("rapier", topo, seed=seed, fast=fast, lp=lp).schedule(
        0.0, _states(coflows[:2]))
    best, stats = float("inf"), None
    for _ in range(reps):
        s = make_scheduler("rapier", topo, seed=seed, fast=fast, lp=lp)
        st = _states(coflows)
        c0 = time.process_time()
        t0 = time.perf_counter()
        s.schedule(0.0, st)
        dt = time.perf_counter() - t0
        if dt < best:
            best, stats = dt, dict(s.stats)
            stats["cpu_s"] = time.process_time() - c0
    return best, warm, stats


_TOPOS: Dict[tuple, object] = {}


def _topo(key):
    from topologies import fat_tree
    if key not in _TOPOS:
        _TOPOS[key] = fat_tree(key[1])
    return _TOPOS[key]


def lp_times(k: int, n_lps: int, width: int = 128, seed: int = 2) -> dict:
    """Per-LP build/solve times (ms, means) and rounding quality, see module doc."""
    from ..core.workload import synthetic
    from ..scheduling.rapier.lp4 import (fixed_route_alpha, solve_lp4, solve_lp4_reference)
    from ..core.model import CoflowState, InfoPolicy

    topo = _topo(("ft", k))
    coflows = synthetic(topo, n_lps, width, 0.0, seed=seed)
    _warm_paths(topo, coflows)
    cap = topo.capacity.astype(float)
    out: Dict[str, Dict[str, float]] = {}
    ratios: Dict[str, List[float]] = {}
    try:
        from ..scheduling.rapier import routes as fastmod
        ls_round = getattr(fastmod, "improved_routes", None)
    except ImportError:
        ls_round = None
    for label, fn, solver in (("model_builder_GLOP", solve_lp4, "GLOP"),
                              ("model_builder_PDLP", solve_lp4, "PDLP"),
                              ("pywraplp_GLOP", solve_lp4_reference, "GLOP")):
        b, s = [], []
        for c in coflows:
            flows = CoflowState(c, InfoPolicy(True)).active_flows()
            vols = [f.size_bytes * 8 for f in c.flows]
            paths = [topo.candidate_paths(f.src, f.dst) for f in c.flows]
            alpha, ms, bs, ss = fn(topo, vols, paths, cap, solver)
            b.append(bs)
            s.append(ss)
            routes = {f.flow_id: ps[int(np.argmax(m))] for f, ps, m in zip(flows, paths, ms)}
            ratios.setdefault(f"argmax_{label}", []).append(
                fixed_route_alpha(topo, flows, routes, cap, vols) / alpha)
            if ls_round is not None and label == "model_builder_GLOP":
                r2 = ls_round(topo, flows, vols, paths, routes, cap)
                ratios.setdefault("local_search_GLOP", []).append(
                    fixed_route_alpha(topo, flows, r2, cap, vols) / alpha)
        out[label] = {"build_ms": 1e3 * statistics.mean(b), "solve_ms": 1e3 * statistics.mean(s)}
    return {"k": k, "width": width, "lps": n_lps, "times": out,
            "fixed_over_lp_alpha": {k2: {"mean": statistics.mean(v), "min": min(v)}
                                    for k2, v in ratios.items()}}


def sim_times(trace_limit: int) -> dict:
    """Simulator wall times (s): FB trace (first ``trace_limit`` coflows, bigswitch:150)
    per paper scheme, and the sweeps' mean wall times from results/sweeps/runs.csv."""
    from topologies import build_topology
    from ..core.workload import port_mapping, read_trace, trace_to_coflows
    from ..scheduling import make_scheduler
    from ..sim import simulate
    from .sweeps import PAPER_SCHEMES, read_runs

    out: Dict[str, dict] = {}
    # the trace beside the repository (../shared/traces), as in CI
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(os.path.dirname(repo), "shared", "traces", "FB2010-1Hr-150-0.txt")
    for cand in (os.environ.get("RAPIER_FB_TRACE"), path):
        if cand and os.path.exists(cand):
            trace = read_trace(cand)
            topo = build_topology(f"bigswitch:{trace.ports}")
            cfs = trace_to_coflows(trace, port_mapping(trace.ports, topo), trace_limit)
            fb = {}
            for name in PAPER_SCHEMES:
                t0 = time.perf_counter()
                simulate(topo, cfs, make_scheduler(name, topo), record_flows=False)
                fb[name] = time.perf_counter() - t0
            out[f"fb_trace_first{trace_limit}"] = fb
            break
    runs = read_runs(os.path.join("results", "sweeps", "runs.csv"))
    groups: Dict[str, List[float]] = {}
    for r in runs:
        groups.setdefault(f"{r['experiment']}/{r['fabric']}/x={r['x']:g}/{r['scheme']}",
                          []).append(r["wall_s"])
    out["sweeps_from_runs_csv"] = {k: statistics.mean(v) for k, v in sorted(groups.items())}
    return out


def fb_prefix_times(n_coflows: int, names=None) -> dict:
    """``{"prefix": N, "wall_s": {scheduler: s}, "events": {scheduler: decisions}}``:
    each scheduler of the registry (or ``names``) replaying the first ``n_coflows``
    coflows of the Facebook hour on ``bigswitch:150``; {} when the trace is not
    beside the repository (``../shared/traces``) nor in ``$RAPIER_FB_TRACE``."""
    from topologies import build_topology
    from ..core.workload import port_mapping, read_trace, trace_to_coflows
    from ..scheduling import make_scheduler, scheduler_names
    from ..sim import simulate

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(os.path.dirname(repo), "shared", "traces", "FB2010-1Hr-150-0.txt")
    cand = [c for c in (os.environ.get("RAPIER_FB_TRACE"), path) if c and os.path.exists(c)]
    if not cand:
        return {}
    trace = read_trace(cand[0])
    topo = build_topology(f"bigswitch:{trace.ports}")
    cfs = trace_to_coflows(trace, port_mapping(trace.ports, topo), n_coflows)
    wall, events = {}, {}
    for name in names or scheduler_names():
        t0 = time.perf_counter()
        res = simulate(topo, cfs, make_scheduler(name, topo), record_flows=False)
        # microseconds: a two-coflow prefix can replay in under half a millisecond
        wall[name] = round(time.perf_counter() - t0, 6)
        events[name] = res.events
    return {"prefix": n_coflows, "wall_s": wall, "events": events}


def main(argv=None) -> int:
    """Entry point of ``rapier-bench``; returns the exit status."""
    p = argparse.ArgumentParser(prog="rapier-bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="k=8 only, few LPs, no simulations")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--reps", type=int, default=2, help="repetitions per pass (best kept)")
    p.add_argument("--trace-limit", type=int, default=10,
                   help="FB trace: simulate the first N coflows (default 10, 6212 flows)")
    p.add_argument("--no-sim", action="store_true", help="skip the simulator wall times")
    p.add_argument("--max-k", type=int, default=16,
                   help="skip the fat-tree passes above this k")
    p.add_argument("--fb-prefix", type=int, default=10,
                   help="fb_hour_s: replay the first N Facebook coflows (default 10)")
    add_common_arguments(p, quiet_help="log errors only (the measurements are the output)",
                         verbose_help="INFO log lines (-vv: DEBUG)")
    a = p.parse_args(argv)
    setup_logging(a)
    res: dict = {"alg1_pass_s": {}, "alg1_pass_cpu_s": {}, "path_cache_s": {}, "lp_solves": {},
                 "load_avg_1min": os.getloadavg()[0], "cpus": os.cpu_count()}
    if a.fb_prefix < 1:
        p.error(f"--fb-prefix: must be at least 1, got {a.fb_prefix}")
    cases = [(8, 20), (8, 50), (8, 100)] + ([(16, 100)] if a.quick else
                                            [(16, 20), (16, 50), (16, 100)])
    cases = [(k, n) for k, n in cases if k <= a.max_k]
    for k in ("alg1_pass_exact_s", "alg1_pass_exact_cpu_s", "lp_certified"):
        res[k] = {}
    for k, n in cases:
        key = f"k{k}_n{n}_w128"
        for lp in ("fast", "exact"):
            dt, warm, stats = alg1_pass(k, n, reps=a.reps, lp=lp)
            if lp == "fast":
                res["alg1_pass_s"][key] = round(dt, 4)
                res["alg1_pass_cpu_s"][key] = round(stats["cpu_s"], 4)
                res["path_cache_s"][key] = round(warm, 3)
                res["lp_solves"][key] = stats["lp_solves"]
                res["lp_certified"][key] = stats["lp_certified"]
            else:
                res["alg1_pass_exact_s"][key] = round(dt, 4)
                res["alg1_pass_exact_cpu_s"][key] = round(stats["cpu_s"], 4)
                res["lp_solves"][f"exact_{key}"] = stats["lp_solves"]
            if not a.json:
                print(f"Algorithm 1 pass {key}, lp={lp}: {dt:.3f} s wall, "
                      f"{stats['cpu_s']:.3f} s CPU ({stats['lp_solves']} LPs, "
                      f"{stats['lp_certified']} certified by the greedy placement; "
                      f"simplex build {stats['lp_build_s']:.3f} s, solve "
                      f"{stats['lp_solve_s']:.3f} s; path cache warm-up {warm:.2f} s)",
                      flush=True)
    dt, _, stats = alg1_pass(8, 20, fast=False)
    res["alg1_pass_plain_s"] = {"k8_n20_w128": round(dt, 4)}
    res["alg1_pass_plain_cpu_s"] = {"k8_n20_w128": round(stats["cpu_s"], 4)}
    res["lp_solves"]["plain_k8_n20_w128"] = stats["lp_solves"]
    if not a.json:
        print(f"Algorithm 1 pass k8_n20_w128, plain (fast=False): {dt:.3f} s wall, "
              f"{stats['cpu_s']:.3f} s CPU "
              f"({stats['lp_solves']} LPs)", flush=True)
    res["lp_ms"] = {"k8": lp_times(8, 5 if a.quick else 20)}
    if not a.quick:
        res["lp_ms"]["k16"] = lp_times(16, 10)
    if not a.json:
        for kk, v in res["lp_ms"].items():
            for label, t in v["times"].items():
                print(f"LP (4) {kk} w128 {label}: build {t['build_ms']:.2f} ms, "
                      f"solve {t['solve_ms']:.2f} ms (mean of {v['lps']})")
            for label, q in v["fixed_over_lp_alpha"].items():
                print(f"rounding {kk} {label}: fixed-route alpha / LP alpha mean "
                      f"{q['mean']:.3f}, min {q['min']:.3f}")
    if not a.no_sim:
        fb = fb_prefix_times(a.fb_prefix)
        if fb:
            res["fb_hour_prefix"] = fb["prefix"]
            res["fb_hour_s"] = fb["wall_s"]
            res["fb_hour_events"] = fb["events"]
            if not a.json:
                for name, s in fb["wall_s"].items():
                    print(f"FB hour, first {fb['prefix']} coflows, {name}: {s:.2f} s "
                          f"({fb['events'][name]} decisions)", flush=True)
    if not a.quick and not a.no_sim:
        res["sim_s"] = sim_times(a.trace_limit)
        if not a.json:
            for kk, v in res["sim_s"].items():
                for name, s in v.items():
                    print(f"simulation {kk} {name}: {s:.1f} s")
    if a.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
