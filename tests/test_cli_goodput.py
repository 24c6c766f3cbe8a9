"""``rapier-sim --goodput``: link capacities scaled by the payload share (issue 13)."""

import json

import pytest

from rapier_app.cli import main
from rapier_app.workload_options import UsageError, apply_goodput
from topologies import build_topology


def test_goodput_half_doubles_fig1_ccts(tmp_path, capsys):
    # Fig. 1 at full capacity: rapier 1.3 s, baseline 1.5 s (tests/test_cli.py);
    # every link at half its capacity carries half the bytes per second.
    rc = main(["--scenario", "fig1", "--schedulers", "rapier,baseline", "--goodput", "0.5",
               "--json", "--out", str(tmp_path), "--quiet", "--no-plot", "--no-bound"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rapier"]["avg_cct_s"] == pytest.approx(2.6)
    assert out["baseline"]["avg_cct_s"] == pytest.approx(3.0)


@pytest.mark.parametrize("bad", ["0", "-0.5", "1.2"])
def test_goodput_out_of_range_exits_2_naming_it(tmp_path, capsys, bad):
    rc = main(["--scenario", "fig1", "--goodput", bad, "--out", str(tmp_path), "--quiet"])
    assert rc == 2
    assert "--goodput" in capsys.readouterr().err


def test_apply_goodput_scales_graph_and_array():
    t = build_topology("leafspine:2,2,1", 10e6)
    apply_goodput(t, 0.75)
    assert set(t.capacity.tolist()) == {7.5e6}
    assert {d["capacity_bps"] for _, _, d in t.graph.edges(data=True)} == {7.5e6}
    with pytest.raises(UsageError, match="--goodput"):
        apply_goodput(t, 0.0)
