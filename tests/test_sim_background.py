"""Background traffic in the simulator (rapier_app.sim.background): schedules on
the broker's residual, computed by hand, and the spec parser."""

import json

import numpy as np
import pytest

from rapier_app.cli import main
from rapier_app.core.broker import BrokerSettings
from rapier_app.core.model import make_coflow
from rapier_app.scheduling import load_all, make_scheduler
from rapier_app.sim import simulate
from rapier_app.sim.background import (BackgroundError, BackgroundLoad, BackgroundNetwork,
                                       parse_background)
from topologies import build_topology

MBIT = 1e6 / 8  # bytes


@pytest.fixture(scope="module")
def topo():
    load_all()
    return build_topology("bigswitch:2", 10e6)  # h1 - s1 - h2, 10 Mbit/s links


def _ccts(res):
    return {r.coflow_id: r.cct_s for r in res.coflows}


def _two(t0):
    # a: 7 Mbit, b: 14 Mbit, both h1 -> h2 (the same two links)
    return [make_coflow("a", t0, [("h1", "h2", 7 * MBIT)]),
            make_coflow("b", t0, [("h1", "h2", 14 * MBIT)])]


@pytest.mark.parametrize("name,want", [
    # smallest first on the residual 10 - 3 = 7 Mbit/s: a 7/7 = 1 s, then b 14/7 = 2 s
    ("rapier", {"a": 1.0, "b": 3.0}),
    ("scheduling-only", {"a": 1.0, "b": 3.0}),
    # fair sharing of 7: 3.5 each; a done at 2 s, b's last 7 Mbit at 7 -> 3 s
    ("baseline", {"a": 2.0, "b": 3.0}),
])
def test_exact_estimator_gives_the_residual_schedule(topo, name, want):
    # constant 3 Mbit/s on every link; the coflows arrive at 2 s, after the broker's
    # first readings (period 1 s): its first sample is exact, so the EWMA is too
    net = BackgroundNetwork(make_scheduler(name, topo), topo,
                            BackgroundLoad.constant(topo, 3e6), BrokerSettings(period_s=1.0))
    res = simulate(topo, _two(2.0), net)
    got = _ccts(res)
    assert got == pytest.approx(want, rel=1e-9)
    assert net.broker.prediction_bps == pytest.approx([3e6] * 4, rel=1e-9)
    assert net.squeezed == 0
    # without background: 0.7 s and 2.1 s (rapier), 1.4 s and 2.1 s (baseline)
    alone = _ccts(simulate(topo, _two(2.0), make_scheduler(name, topo)))
    assert alone["b"] == pytest.approx(2.1, rel=1e-9)


def test_before_the_first_reading_the_network_squeezes(topo):
    # arrival at 0: the broker has seen nothing, RAPIER plans on 10 Mbit/s, the link
    # carries 7 beside the background: a sends at 7 until the first tick (1 s, sample
    # exact), then RAPIER plans on 7 as well.  a: 7 Mbit at 7 = 1 s; b: 3 s
    net = BackgroundNetwork(make_scheduler("rapier", topo), topo,
                            BackgroundLoad.constant(topo, 3e6), BrokerSettings(period_s=1.0))
    got = _ccts(simulate(topo, _two(0.0), net))
    assert got == pytest.approx({"a": 1.0, "b": 3.0}, rel=1e-9)
    assert net.squeezed >= 1


def test_background_that_stops_returns_the_capacity(topo, tmp_path):
    # 5 Mbit/s on h1->s1 and s1->h2 until 2 s, then nothing; weight 1 (the last
    # sample), period 1 s, steady windows only (0.1).  One 20 Mbit flow from 0:
    #   [0, 1): planned on 10, squeezed to 5 -> 5 Mbit;   tick 1: sample 5, plan on 5
    #   [1, 2): 5 -> 10 Mbit;   [2, 3): background gone, still planned on 5 -> 15 Mbit
    #   tick 3: the port rate fell 10 -> 5: unsteady, no sample; [3, 4): 5 -> 20 Mbit:
    #   done at 4 s (tick 4 would have seen the steady 0 and planned on 10)
    tr = tmp_path / "bg.csv"
    tr.write_text("# time_s,u,v,bps\n0,h1,s1,5e6\n0,s1,h2,5e6\n2,h1,s1,0\n2,s1,h2,0\n")
    load = parse_background(f"trace:{tr}", topo)
    assert load.times.tolist() == [0.0, 2.0]
    net = BackgroundNetwork(make_scheduler("rapier", topo), topo, load,
                            BrokerSettings(period_s=1.0, weight=1.0))
    res = simulate(topo, [make_coflow("x", 0.0, [("h1", "h2", 20 * MBIT)])], net)
    assert _ccts(res)["x"] == pytest.approx(4.0, rel=1e-9)
    # the estimator alone (every window taken): tick 3 sees 0 -> last 5 Mbit at 10
    net = BackgroundNetwork(make_scheduler("rapier", topo), topo, load,
                            BrokerSettings(period_s=1.0, weight=1.0, steady_fraction=0.0))
    res = simulate(topo, [make_coflow("x", 0.0, [("h1", "h2", 20 * MBIT)])], net)
    assert _ccts(res)["x"] == pytest.approx(3.5, rel=1e-9)


def test_link_counters_count_the_scheduled_bytes(topo):
    net = BackgroundNetwork(make_scheduler("rapier", topo), topo,
                            BackgroundLoad.constant(topo, 0.0), BrokerSettings())
    simulate(topo, _two(0.0), net)
    i, j = topo.link_ids[("h1", "s1")], topo.link_ids[("s1", "h2")]
    assert net.link_bytes[i] == pytest.approx(21 * MBIT) == net.link_bytes[j]
    assert net.link_bytes.sum() == pytest.approx(42 * MBIT)


def test_load_integrals_and_poisson(topo):
    load = BackgroundLoad.from_changes(topo, [(0.0, 0, 8e6), (2.0, 0, 0.0), (3.0, 0, 4e6)])
    assert load.bytes_until(4.0)[0] == pytest.approx((8e6 * 2 + 4e6 * 1) / 8)
    assert load.next_change(2.0) == 3.0 and load.load_at(2.5)[0] == 0.0
    p1 = parse_background("poisson:2,125000,1e6,50", topo, seed=3)
    p2 = parse_background("poisson:2,125000,1e6,50", topo, seed=3)
    assert np.array_equal(p1.loads, p2.loads)
    # each small flow sends 1 Mbit/s for 1 s on 2 links; ~100 flows in 50 s:
    # bytes on all links = flows * 2 * 125000
    tot = p1.bytes_until(60.0).sum()
    assert tot > 0 and tot % 250000 == pytest.approx(0, abs=1e-3)


@pytest.mark.parametrize("spec,msg", [
    ("bogus:1", "unknown kind"), ("const:x", "bps: not a number"),
    ("const:150%", "percent"), ("poisson:1,2", "RATE,BYTES,BPS"),
    ("poisson:0,1,1", "RATE: must be > 0"), ("trace:/nonexistent.csv", "cannot read")])
def test_bad_specs_name_the_field(topo, spec, msg):
    with pytest.raises(BackgroundError, match=msg):
        parse_background(spec, topo)


def test_bad_trace_line_names_file_line_and_field(topo, tmp_path):
    tr = tmp_path / "t.csv"
    tr.write_text("0,h1,s1,1e6\n1,h1,h9,2e6\n")
    with pytest.raises(BackgroundError, match=r"t.csv:2: link: h1->h9"):
        parse_background(f"trace:{tr}", topo)


def test_cli_background(tmp_path, capsys):
    common = ["--synthetic", "6,2,0.5", "--topology", "fattree:4", "--link-gbps", "0.01",
              "--schedulers", "rapier", "--no-plot", "--no-bound", "--json", "-q",
              "--out", str(tmp_path)]
    assert main(common) == 0
    base = json.loads(capsys.readouterr().out)["rapier"]["avg_cct_s"]
    assert main(common + ["--background", "const:30%"]) == 0
    bg = json.loads(capsys.readouterr().out)["rapier"]["avg_cct_s"]
    assert bg > base * 1.2   # 70 % of every link left: slower, about 1/0.7
    assert main(common + ["--background", "const:30%", "--broker-weight", "0"]) == 2
    assert "--broker-weight" in capsys.readouterr().err
    assert main(common + ["--background", "nope:1"]) == 2
