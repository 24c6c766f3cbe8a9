"""RAPIER Fig. 1 (Section II): the worked example of joint routing and scheduling.

Two paths S-Mu-D and S-Md-D at 100 Mbit/s; coflow a = (40 Mb, 100 Mb), coflow b =
(60 Mb, 100 Mb), all at t=0.  The optimal average CCT is 1.3 s.
"""

import pytest

from rapier_app.core.workload import scenario
from rapier_app.scheduling import make_scheduler
from rapier_app.sim import simulate

UP = ("S", "Mu", "D")
DOWN = ("S", "Md", "D")
# Fig. 1(a): ECMP put both 100 Mb flows on S-Md-D.
ROUTING_A = {"a/0": UP, "a/1": DOWN, "b/0": UP, "b/1": DOWN}
# Fig. 1(b): load-balanced per coflow: a on Mu, b on Md.
ROUTING_B = {"a/0": UP, "a/1": UP, "b/0": DOWN, "b/1": DOWN}


def ccts(name, **kw):
    topo, coflows = scenario("fig1")
    res = simulate(topo, coflows, make_scheduler(name, topo, **kw))
    return {r.coflow_id: r.cct_s for r in res.coflows}


def test_rapier_reaches_the_optimum():
    c = ccts("rapier")
    assert c["a"] == pytest.approx(1.0, abs=1e-9)
    assert c["b"] == pytest.approx(1.6, abs=1e-9)
    assert (c["a"] + c["b"]) / 2 == pytest.approx(1.3, abs=1e-9)


def test_literal_residual_reading_is_close_but_not_optimal():
    # The literal reading packs b into the 60 Mbit/s left on one path at t=0
    # (b/0 22.5 Mb, b/1 37.5 Mb sent by t=1), then finishes at 1 + 62.5/100.
    c = ccts("rapier-residual")
    assert c["a"] == pytest.approx(1.0, abs=1e-9)
    assert c["b"] == pytest.approx(1.625, abs=1e-9)


def test_fair_sharing_with_ecmp_routing_of_fig1a():
    c = ccts("baseline", routes=ROUTING_A)
    assert c["a"] == pytest.approx(2.0) and c["b"] == pytest.approx(2.0)


def test_scheduling_only_with_routing_of_fig1a():
    c = ccts("scheduling-only", routes=ROUTING_A)
    assert sorted(c.values()) == pytest.approx([1.0, 2.0])
    assert sum(c.values()) / 2 == pytest.approx(1.5)


def test_load_balanced_routing_with_fair_sharing_fig1b():
    c = ccts("baseline", routes=ROUTING_B)
    assert c["a"] == pytest.approx(1.4) and c["b"] == pytest.approx(1.6)
    # routing-only finds a load-balanced routing of the same quality on its own
    r = ccts("routing-only")
    assert sum(r.values()) / 2 == pytest.approx(1.5)


def test_pinning_a_path_that_does_not_exist_is_an_error():
    from topologies import TopologyError

    topo, _ = scenario("fig1")
    with pytest.raises(TopologyError, match="does not exist"):
        make_scheduler("baseline", topo, routes={"a/0": ("S", "D")})


@pytest.mark.parametrize("name", ["rapier-bssi", "rapier-isolated"])
def test_other_rapier_readings_reach_the_optimum(name):
    c = ccts(name)
    assert (c["a"] + c["b"]) / 2 == pytest.approx(1.3, abs=1e-9)


def test_solver_trouble_falls_back_but_a_defect_propagates(monkeypatch):
    # LP trouble (LPError) puts the coflow on default forwarding and says why; any
    # other exception of Algorithm 2 is a defect and must not be swallowed into a
    # silent fallback (it would skew every later CCT of a replay)
    from rapier_app.scheduling.rapier.lp4 import LPError
    from rapier_app.scheduling.rapier.scheduler import Rapier

    topo, coflows = scenario("fig1")
    s = make_scheduler("rapier", topo)

    def lp_trouble(self, c, residual, reserved=None):
        raise LPError("LP (4) not solved to optimality (status TIME_LIMIT)")

    monkeypatch.setattr(Rapier, "minimum_cct", lp_trouble)
    seen = []
    orig = s.schedule

    def spy(now, states):
        out = orig(now, states)
        seen.append(dict(out.fallback))
        return out

    s.schedule = spy
    res = simulate(topo, coflows, s)
    assert len(res.coflows) == 2  # served by default forwarding, every byte delivered
    assert res.bytes_delivered == pytest.approx(res.bytes_offered)
    assert set(seen[0]) == {"a", "b"} and "TIME_LIMIT" in seen[0]["a"]

    def defect(self, c, residual, reserved=None):
        raise AttributeError("'NoneType' object has no attribute 'shape'")

    monkeypatch.setattr(Rapier, "minimum_cct", defect)
    with pytest.raises(AttributeError, match="shape"):
        simulate(topo, coflows, make_scheduler("rapier", topo))
