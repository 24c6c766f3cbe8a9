"""benchmarks/lp_floor.py (issue 16): bad options are named, and a small
Algorithm 1 pass is captured whole (one kept model per LP (4) solve of the pass)
and re-solved to the same values bit for bit, one after the other and on two
threads."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))

import lp_floor  # noqa: E402


@pytest.mark.parametrize("args,name", [(["--k", "5"], "--k"), (["--n", "0"], "--n"),
                                       (["--width", "0"], "--width"),
                                       (["--threads", "0"], "--threads"),
                                       (["--reps", "0"], "--reps"),
                                       (["--solver", "FOO"], "--solver")])
def test_bad_options_are_named(args, name):
    with pytest.raises(SystemExit) as e:
        lp_floor.main(args)
    assert name in str(e.value)


def test_small_pass_is_captured_and_resolved_bit_for_bit(capsys):
    assert lp_floor.main(["--k", "4", "--n", "4", "--width", "16", "--reps", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pass"] == "k4_n4_w16" and out["threads"] == 2
    # every LP (4) solve of the pass was kept, and none twice
    assert out["lps"] == out["pass_lp_solves"] >= 4
    assert out["lp_vars"] > 0 and out["lp_rows"] > 0
    assert out["same"] is True
    assert 0 < out["solve_seq_s"] and 0 < out["solve_par_s"] == out["floor_s"]
    assert out["rest_s"] == pytest.approx(out["pass_s"] - out["pass_solve_s"], abs=2e-4)


def test_a_changed_value_is_not_called_the_same(monkeypatch):
    cap = lp_floor.capture_pass(4, 3, 16, "GLOP")
    h, v = cap["models"][0]
    cap["models"][0] = (h, v + 1.0)
    assert lp_floor.resolve(cap["models"], "GLOP", 1, 1)[1] is False
    assert lp_floor.resolve(cap["models"], "GLOP", 2, 1)[1] is False
