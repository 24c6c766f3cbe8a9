"""RAPIER's ``lp="fast"`` LP (4): the greedy placement certified optimal by LP
duality (rapier_app/scheduling/rapier/lp4.py ``certify_routing``), else the simplex."""

import numpy as np
import pytest

from rapier_app.core.model import CoflowSpec, CoflowState, FlowSpec, InfoPolicy
from rapier_app.core.workload import synthetic
from rapier_app.scheduling import make_scheduler
from rapier_app.scheduling.base import SchedulerError
from topologies import build_topology, fat_tree


def _state(cf):
    return CoflowState(cf, InfoPolicy(True))


def test_two_flows_behind_one_edge_switch_by_hand():
    """h1 and h2 hang off e1 (two uplinks, to a1 and a2); each sends v = 1 Gbit to
    pod 1 while 1 Gbit is already reserved on each of e1's uplinks.  Any routing
    puts 2 Gbit of reserved volume plus both flows (one uplink each) on the two
    uplinks: t >= (2 + 2) Gbit / 2 Gbit/s = 2 s, and the greedy placement (one flow
    per uplink) reaches it, so it is optimal: alpha* = 0.5 /s, as GLOP finds."""
    topo = fat_tree(4)
    C = 1e9
    v_bytes = 1e9 / 8
    cf = CoflowSpec("c", 0.0, (FlowSpec("c/0", "c", "h1", "h5", v_bytes),
                               FlowSpec("c/1", "c", "h2", "h6", v_bytes)))
    B = np.zeros(len(topo.capacity))
    up = [topo.link_ids[("e1", "a1")], topo.link_ids[("e1", "a2")]]
    B[up] = 1e9
    plans = {}
    for lp in ("fast", "exact"):
        s = make_scheduler("rapier", topo, lp=lp)
        plans[lp] = s.minimum_cct(_state(cf), topo.capacity.astype(float), B)
        assert s.stats["lp_solves"] == 1
        assert s.stats["lp_certified"] == (1 if lp == "fast" else 0)
    assert plans["fast"].lp_alpha == pytest.approx(C / 2e9, rel=1e-12)
    assert plans["exact"].lp_alpha == pytest.approx(C / 2e9, rel=1e-9)
    # the routing: one flow on each uplink, completing behind the reservation at 2 s
    first = {p[2] for p in plans["fast"].routes.values()}
    assert first == {"a1", "a2"}
    assert plans["fast"].t_s == pytest.approx(2.0, rel=1e-12)


def test_certify_routing_bounds_by_hand():
    """certify_routing on the instance above, both routings: one flow per uplink
    meets the bound (2 s: its tight links are both uplinks, which every routing
    crosses once per flow); both flows on a1's uplink reach 3 s, and the bound
    drawn from that routing's tight link (a1's uplink alone, which the flows could
    avoid) is only the reserved 1 s there, as on the host links: no certificate."""
    from rapier_app.scheduling.rapier.lp4 import certify_routing

    topo = fat_tree(4)
    s = make_scheduler("rapier", topo)
    cf = CoflowSpec("c", 0.0, (FlowSpec("c/0", "c", "h1", "h5", 1e9 / 8),
                               FlowSpec("c/1", "c", "h2", "h6", 1e9 / 8)))
    e = s._coflow_arrays(_state(cf))
    vol = np.array([1e9, 1e9])
    B = np.zeros(len(topo.capacity))
    a1, a2 = topo.link_ids[("e1", "a1")], topo.link_ids[("e1", "a2")]
    B[[a1, a2]] = 1e9
    cap = topo.capacity.astype(float)
    for k0, k1, want, lower in ((0, 2, 2.0, 2.0), (0, 0, 3.0, 1.0)):  # 0-1 a1, 2-3 a2
        load = np.zeros(len(cap))
        for j, k in ((0, k0), (1, k1)):
            load[e.mats[j][k]] += vol[j]
        t_route, t_lower = certify_routing(load, cap, e.all_links, e.path_blocks(), vol,
                                           e.mandatory_load(vol), B)
        assert t_route == pytest.approx(want, rel=1e-12)
        assert t_lower == pytest.approx(lower, rel=1e-12)


@pytest.mark.parametrize("spec", ["fattree:4", "fattree:4,19", "vl2:4,4", "leafspine:4,3,2"])
def test_fast_meets_the_simplex_on_random_coflows(spec):
    """30 random coflows (2-11 flows, 1-50 MB) behind random reserved volume: the
    fast solver's alpha is GLOP's (relative 1e-9) whether certified or not; when not
    certified it is GLOP's solve, routes and all."""
    topo = build_topology(spec)
    rng = np.random.default_rng(0)
    cap = topo.capacity.astype(float)
    certified = fallback = 0
    for seed in range(30):
        cf = synthetic(topo, 1, int(rng.integers(2, 12)), 0.0, sizes="uniform:1,50",
                       seed=seed)[0]
        B = rng.uniform(0, 2e9, len(cap)) * (rng.random(len(cap)) < 0.3)
        fa = make_scheduler("rapier", topo, lp="fast")
        ex = make_scheduler("rapier", topo, lp="exact")
        pf = fa.minimum_cct(_state(cf), cap, B)
        pe = ex.minimum_cct(_state(cf), cap, B)
        if pe.lp_alpha is None:  # one path per flow: no LP
            continue
        assert pf.lp_alpha == pytest.approx(pe.lp_alpha, rel=1e-9)
        if fa.stats["lp_certified"]:
            certified += 1
            assert pf.t_s <= pe.t_s * (1 + 1e-9) or pf.t_s == pytest.approx(pe.t_s)
        else:
            fallback += 1
            assert pf.routes == pe.routes and pf.t_s == pe.t_s
    assert certified >= 28
    if spec == "fattree:4":
        assert fallback == 2  # seeds 15 and 24: lumpy volumes on the core links


def test_lp_parameter_is_checked():
    with pytest.raises(SchedulerError, match="lp: must be 'fast' or 'exact'"):
        make_scheduler("rapier", fat_tree(4), lp="glop")


@pytest.mark.parametrize("name", ["rapier", "rapier-bssi"])
def test_fast_decides_the_same_with_and_without_kernels(name, monkeypatch):
    """lp="fast" with the compiled greedy, loads and crossings, and with numpy's:
    the same CCTs bit for bit (25 coflows of 12 flows on a k=4 fat-tree)."""
    from rapier_app import kernels
    from rapier_app.sim import simulate

    topo = build_topology("fattree:4")
    out = []
    for enabled in (True, False):
        monkeypatch.setattr(kernels, "ENABLED", enabled)
        cfs = synthetic(topo, 25, 12, 0.02, "pareto:0.5,1.3", seed=3)
        s = make_scheduler(name, topo, lp="fast")
        res = simulate(topo, cfs, s)
        out.append([(c.coflow_id, c.cct_s.hex()) for c in res.coflows])
        assert s.stats["lp_certified"] > 0
    assert out[0] == out[1]


def test_exact_is_the_default():
    topo = fat_tree(4)
    for name in ("rapier", "rapier-bssi", "rapier-ls"):
        assert make_scheduler(name, topo).lp == "exact"
    # rapier-isolated routes on the empty fabric, where the certificate holds
    # (136 of 136 solves certified on a stretch of the Facebook hour on fattree:10)
    assert make_scheduler("rapier-isolated", topo).lp == "fast"
    assert make_scheduler("rapier-isolated", topo, lp="exact").lp == "exact"
