"""LP (4) is an upper bound on alpha over integral routings; argmax rounding is
within K of the optimum (RAPIER Section IV-B, Theorem 1).  Checked by brute force."""

import itertools
import math
import random

import numpy as np
import pytest

from rapier_app.core.model import CoflowState, InfoPolicy, make_coflow
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling.rapier.lp4 import fixed_route_alpha, solve_lp4
from topologies import leaf_spine


@pytest.mark.parametrize("seed", range(12))
def test_lp_bounds_brute_force_and_rounding_within_k(seed):
    rng = random.Random(seed)
    topo = leaf_spine(3, 3, 2)  # K = 3 paths between hosts on different leaves
    hosts = topo.hosts
    flows = []
    while len(flows) < 5:
        a, b = rng.sample(hosts, 2)
        if topo.attachment(a)[0] != topo.attachment(b)[0]:
            flows.append((a, b, rng.uniform(1e6, 50e6)))
    cf = CoflowState(make_coflow("c", 0.0, flows), InfoPolicy(True))
    fl = cf.active_flows()
    vols = [f.remaining_bytes * 8 for f in fl]
    paths = [topo.candidate_paths(f.src, f.dst) for f in fl]
    residual = topo.capacity.copy()
    # take some capacity away so that the instance is not symmetric
    for l in rng.sample(range(len(residual)), 6):
        residual[l] *= rng.uniform(0.2, 0.9)
    lp_alpha, ms, _, _ = solve_lp4(topo, vols, paths, residual)
    best = 0.0
    for choice in itertools.product(*[range(len(p)) for p in paths]):
        routes = {f.flow_id: p[k] for f, p, k in zip(fl, paths, choice)}
        best = max(best, fixed_route_alpha(topo, fl, routes, residual, vols))
    assert lp_alpha >= best * (1 - 1e-7)
    plan = make_scheduler("rapier-residual", topo).minimum_cct(cf, residual)
    K = max(len(p) for p in paths)
    assert plan.alpha >= best / K * (1 - 1e-7)
    assert plan.alpha <= best * (1 + 1e-7)
    assert plan.t_s == pytest.approx(1 / plan.alpha)
