"""Hidden flow sizes (``rapier-sim --hide-sizes``) and non-clairvoyant RAPIER
(``rapier-nc``).

Every scheduler of the registry either runs with sizes hidden or refuses with
UnknownSizeError, as its ``unknown_sizes`` says (docs/schedulers.md); no scheduler
reads a hidden size (the hidden specs raise); ``rapier-nc`` decides as ``rapier``
when sizes are known, and on its estimate (worked out by hand below) when not.
Units: bytes, bit/s, seconds.
"""

import math

import numpy as np
import pytest

from topologies import build_topology
from rapier_app.cli import main as sim_main
from rapier_app.core.estimate import flow_estimates
from rapier_app.core.model import (CoflowState, HiddenFlowSpec, InfoPolicy,
                                   InformationError, hide_sizes, make_coflow)
from rapier_app.core.workload import synthetic
from rapier_app.scheduling import (REGISTRY, SchedulerError, UnknownSizeError,
                                   make_scheduler, scheduler_names)
from rapier_app.scheduling.base import UNKNOWN_SIZES
from rapier_app.scheduling.classic.baseline import Baseline
from rapier_app.sim import Simulator


def ccts(res):
    return {r.coflow_id: r.cct_s for r in res.coflows}


def run(topo, coflows, sched, hide):
    return Simulator(topo, coflows, sched, hide_sizes=hide).run()


@pytest.fixture(scope="module")
def small():
    """4 coflows of width 4 on a k=4 fat-tree (several paths per pair)."""
    topo = build_topology("fattree:4")
    return topo, synthetic(topo, 4, 4, 0.05, "uniform:1,4", seed=3)


# ---------------------------------------------------------------------------------
# the hidden specs
# ---------------------------------------------------------------------------------
def test_hidden_spec_raises_on_size():
    c = make_coflow("c", 0.0, [("h1", "h2", 5e6), ("h1", "h3", 7e6)])
    h = hide_sizes(c)
    assert [f.flow_id for f in h.flows] == ["c/0", "c/1"] and h.width == 2
    assert isinstance(h.flows[0], HiddenFlowSpec) and not h.flows[0].size_known
    with pytest.raises(InformationError, match="c/0"):
        h.flows[0].size_bytes
    with pytest.raises(InformationError, match="coflow c"):
        h.total_bytes
    # even a clairvoyant policy cannot read a hidden size through the state
    st = CoflowState(h, InfoPolicy(True))
    f = st.flows[1]
    assert not f.size_known
    with pytest.raises(InformationError):
        f.size_bytes
    with pytest.raises(InformationError):
        f.remaining_bytes
    # a finished flow's size is its bytes delivered
    f.bytes_sent, f.finish_s = 7e6, 1.0
    assert f.size_known and f.size_bytes == 7e6


# ---------------------------------------------------------------------------------
# every scheduler of the registry
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", scheduler_names())
def test_every_scheduler_declares_and_keeps_its_word(name, small):
    """Hidden sizes: "refuse" raises UnknownSizeError before any decision;
    "unused" gives the very schedule it gives with sizes known (it never read
    them); "estimate" completes every coflow."""
    topo, coflows = small
    policy = REGISTRY[name].unknown_sizes
    assert policy in UNKNOWN_SIZES
    if policy == "refuse":
        with pytest.raises(UnknownSizeError, match=name):
            Simulator(topo, coflows, make_scheduler(name, topo), hide_sizes=True)
        return
    hidden = run(topo, coflows, make_scheduler(name, topo), True)
    assert len(hidden.coflows) == len(coflows)
    assert hidden.bytes_delivered == pytest.approx(sum(c.total_bytes for c in coflows))
    if policy == "unused":
        # optas: its send-buffer model reads true sizes, off when they are hidden
        kw = {"buffer_model": False} if name == "optas" else {}
        known = run(topo, coflows, make_scheduler(name, topo, **kw), False)
        assert ccts(hidden) == ccts(known)


def test_non_clairvoyant_seeds_are_unused():
    for name in ("aalo", "philae", "fifo", "optas", "baseline", "fair"):
        assert REGISTRY[name].unknown_sizes == "unused"
    assert REGISTRY["rapier-nc"].unknown_sizes == "estimate"
    for name in ("rapier", "rapier-bssi", "scheduling-only", "sincronia", "routing-only"):
        assert REGISTRY[name].unknown_sizes == "refuse"


class _SizePeeker(Baseline):
    """Claims it reads no size but reads the spec's (caught).  Not registered: the
    registry is shared by every test module of the session."""

    name = "test-size-peeker"

    def schedule(self, now, coflows):
        for c in coflows:
            for f in c.active_flows():
                f.spec.size_bytes
        return super().schedule(now, coflows)


def test_a_scheduler_that_reads_a_hidden_size_fails():
    topo = build_topology("bigswitch:3")
    cf = [make_coflow("a", 0.0, [("h1", "h2", 1e6)])]
    # sizes known: it may read them
    assert run(topo, cf, _SizePeeker(topo), False).coflows[0].cct_s == pytest.approx(8e-3)
    with pytest.raises(InformationError, match="a/0"):
        run(topo, cf, _SizePeeker(topo), True)
    assert "test-size-peeker" not in REGISTRY


def test_cli_hide_sizes(tmp_path, capsys):
    args = ["--scenario", "fig1", "--no-plot", "--no-bound", "-q", "--hide-sizes",
            "--out", str(tmp_path)]
    assert sim_main(args + ["--schedulers", "rapier"]) == 2
    assert "rapier needs flow sizes" in capsys.readouterr().err
    assert sim_main(args + ["--schedulers", "rapier-nc,aalo"]) == 0
    assert sim_main(["--list-schedulers"]) == 0
    out = capsys.readouterr().out
    assert "rapier-nc" in out and "estimate" in out and "refuse" in out


# ---------------------------------------------------------------------------------
# the estimator (rapier_app/core/estimate.py)
# ---------------------------------------------------------------------------------
def test_flow_estimates_by_hand():
    nan = math.nan
    sizes = np.array([5e6, nan, nan])
    sent = np.array([1e6, 0.0, 3e6])
    # rule "sent", coflow scope: max(floor 1e6, 2 x 3e6) = 6e6 for both unknown flows
    assert flow_estimates(sizes, sent, 0.0, 1e6, 2.0, rule="sent").tolist() == \
        [5e6, 6e6, 6e6]
    # flow scope: each its own: max(1e6, 0) = 1e6, max(1e6, 6e6) = 6e6
    assert flow_estimates(sizes, sent, 0.0, 1e6, 2.0, "flow", "sent").tolist() == \
        [5e6, 1e6, 6e6]
    # rule "threshold": the first 1e6 x 2^k above 3e6 is 4e6; per flow 1e6 (0 sent)
    assert flow_estimates(sizes, sent, 0.0, 1e6, 2.0).tolist() == [5e6, 4e6, 4e6]
    assert flow_estimates(sizes, sent, 0.0, 1e6, 2.0, "flow").tolist() == [5e6, 1e6, 4e6]
    # a counter a hair short of a threshold has reached it (float rate x time)
    assert flow_estimates(np.array([nan]), np.array([4e6 * (1 - 1e-12)]), 0.0,
                          1e6, 2.0).tolist() == [8e6]
    # a sample of finished flows (mean 8e6) above the doubling, both rules
    assert flow_estimates(sizes, sent, 8e6, 1e6, 2.0, rule="sent").tolist() == \
        [5e6, 8e6, 8e6]
    assert flow_estimates(sizes, sent, 8e6, 1e6, 2.0).tolist() == [5e6, 8e6, 8e6]
    # all known: unchanged
    assert flow_estimates(np.array([2.0]), np.array([1.0])).tolist() == [2.0]
    for kw, field in (({"factor": 1.0}, "factor"), ({"floor_bytes": 0.0}, "floor_bytes"),
                      ({"scope": "link"}, "scope"), ({"rule": "oracle"}, "rule")):
        with pytest.raises(ValueError, match=f"^{field}:"):
            flow_estimates(np.array([nan]), np.zeros(1), **kw)
    with pytest.raises(SchedulerError, match="factor"):
        make_scheduler("rapier-nc", build_topology("bigswitch:2"), factor=0.5)


# ---------------------------------------------------------------------------------
# rapier-nc
# ---------------------------------------------------------------------------------
def test_rapier_nc_is_rapier_when_sizes_are_known(small):
    topo, coflows = small
    a = run(topo, coflows, make_scheduler("rapier", topo), False)
    b = run(topo, coflows, make_scheduler("rapier-nc", topo), False)
    assert ccts(a) == ccts(b) and a.events == b.events


def test_rapier_nc_hand_case():
    """Two one-flow coflows on the same 1 Gbit/s port at t=0: A of 4 MB, B of 1 MB
    (floor 1 MB, factor 2, either rule).

    Exact (rapier): B first (8 ms), then A (8 + 32 = 40 ms): average 24 ms.
    Hidden (rapier-nc): both estimated at the floor, 1 MB, tie: A (the smaller id)
    goes first and reaches its estimate at 8 ms (a wake-up).  Now A has sent 1 MB
    (estimate 2 MB, 1 MB left) and B none (estimate 1 MB, 1 MB left): tie again,
    and B, which has waited longer, goes first and finishes at 16 ms.  A runs on,
    reaches 2 MB at 24 ms (a wake-up: estimate 4 MB) and finishes at 40 ms.
    CCTs 16 and 40 ms: average 28 ms."""
    topo = build_topology("bigswitch:3")
    cf = [make_coflow("A", 0.0, [("h1", "h2", 4e6)]),
          make_coflow("B", 0.0, [("h1", "h2", 1e6)])]
    exact = run(topo, cf, make_scheduler("rapier", topo), False)
    assert ccts(exact) == pytest.approx({"A": 0.040, "B": 0.008}, rel=1e-9)
    for rule in ("threshold", "sent"):
        nc = make_scheduler("rapier-nc", topo, floor_bytes=1e6, factor=2.0, rule=rule)
        est = run(topo, cf, nc, True)
        assert ccts(est) == pytest.approx({"A": 0.040, "B": 0.016}, rel=1e-9)
        # decision points: 0, 8 ms (wake-up), 16 ms (B done), 24 ms (wake-up)
        assert est.events == 4
        assert np.mean(list(ccts(est).values())) == pytest.approx(0.028, rel=1e-9)


def test_rapier_nc_width_and_sample():
    """Coflow C: two flows h1->h2 and h1->h3, 2 MB each; coflow D: one flow
    h1->h2 of 1 MB; all at t=0; floor 1 MB.

    Hidden: C's estimated load on h1's uplink is 2 x 1 MB (its width counts), D's
    1 MB: D goes first (T = 8 ms) at the full uplink and C waits.  At 8 ms D is
    done; C has sent nothing, so it is planned on 1 MB per flow, both at
    0.5 Gbit/s, and reaches its estimate at 8 + 16 = 24 ms (a wake-up: sent 1 MB
    each, estimate 2 MB each, the truth), then finishes at 24 + 16 = 40 ms.
    CCTs: D 8 ms, C 40 ms (the same as the exact mode here: the doubling reached
    the true size on its first step)."""
    topo = build_topology("bigswitch:3")
    cf = [make_coflow("C", 0.0, [("h1", "h2", 2e6), ("h1", "h3", 2e6)]),
          make_coflow("D", 0.0, [("h1", "h2", 1e6)])]
    nc = make_scheduler("rapier-nc", topo, floor_bytes=1e6, factor=2.0)
    est = run(topo, cf, nc, True)
    assert ccts(est) == pytest.approx({"C": 0.040, "D": 0.008}, rel=1e-9)
    exact = run(topo, cf, make_scheduler("rapier", topo), False)
    assert ccts(exact) == pytest.approx({"C": 0.040, "D": 0.008}, rel=1e-9)
