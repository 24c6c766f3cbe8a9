"""rapier-sim end to end: JSON on stdout, output files, bad options."""

import json
import os

import pytest

from trace_file import fb_trace  # noqa: E402

from rapier_app.cli import main


def test_fig1_json(tmp_path, capsys):
    rc = main(["--scenario", "fig1", "--schedulers", "rapier,baseline,scheduling-only,routing-only",
               "--json", "--out", str(tmp_path), "--quiet"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"rapier", "baseline", "scheduling-only", "routing-only"}
    for v in out.values():
        assert {"coflows", "avg_cct_s", "p50_cct_s", "p95_cct_s", "p99_cct_s", "wall_s"} <= set(v)
        assert v["coflows"] == 2
    assert out["rapier"]["avg_cct_s"] == pytest.approx(1.3)
    assert out["baseline"]["avg_cct_s"] == pytest.approx(1.5)
    for f in ("coflows.csv", "summary.json", "cct_cdf.png"):
        assert os.path.getsize(tmp_path / f) > 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["improvement_over_baseline"]["rapier"] == pytest.approx((1.5 - 1.3) / 1.5)
    rows = (tmp_path / "coflows.csv").read_text().splitlines()
    assert len(rows) == 1 + 4 * 2


def test_trace_prefix_on_big_switch(tmp_path, capsys):
    # the first 11 coflows (6,213 flows; the 12th alone has 20,286)
    rc = main(["--topology", "bigswitch:150", "--trace", fb_trace(), "--limit", "11",
               "--schedulers", "baseline,scheduling-only", "--json", "--out", str(tmp_path),
               "--quiet", "--no-plot"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["baseline"]["coflows"] == 11
    # SEBF with MADD is never worse than fair sharing on average on this prefix
    assert out["scheduling-only"]["avg_cct_s"] <= out["baseline"]["avg_cct_s"]


@pytest.mark.parametrize("argv,msg", [
    (["--scenario", "fig1", "--schedulers", "nope"], "unknown scheduler 'nope'"),
    (["--topology", "fattree:3", "--synthetic", "2,4,0"], "k: fat-tree arity"),
    (["--synthetic", "2,4"], "--synthetic: expected"),
    (["--scenario", "fig1", "--trace", "x"], "exactly one"),
    (["--scenario", "fig1", "--param", "rapier.delta_s"], "--param"),
    (["--scenario", "fig1", "--schedulers", "rapier", "--param", "rapier.bogus=1"], "bad parameter"),
])
def test_bad_options_exit_2_with_a_message(tmp_path, capsys, argv, msg):
    assert main(argv + ["--out", str(tmp_path), "--quiet"]) == 2
    assert msg in capsys.readouterr().err


def test_trace_limit_below_one_is_an_error_naming_it(tmp_path, capsys):
    # slicing with a negative limit would silently replay almost the whole trace
    argv = ["--topology", "bigswitch:150", "--trace", fb_trace(), "--schedulers", "baseline",
            "--out", str(tmp_path), "--quiet", "--no-plot"]
    assert main(argv + ["--limit", "-3"]) == 2
    assert "limit: must be at least 1 coflow, got -3" in capsys.readouterr().err


def test_reschedule_option_changes_decision_points(tmp_path, capsys):
    # first 11 trace coflows: scheduling-only decides at every flow completion by
    # default (a full pass at coflow events, work conservation alone at the others)
    # and only at coflow arrivals and completions with --reschedule coflow (at most
    # 2 x 11)
    events = {}
    for mode in ("flow", "auto", "coflow"):
        rc = main(["--topology", "bigswitch:150", "--trace", fb_trace(), "--limit", "11",
                   "--schedulers", "scheduling-only", "--reschedule", mode, "--json",
                   "--no-plot", "--no-bound", "--quiet", "--out", str(tmp_path / mode)])
        assert rc == 0
        events[mode] = json.loads(capsys.readouterr().out)["scheduling-only"]["events"]
    assert events["flow"] == events["auto"] > 22
    assert events["coflow"] <= 22
