"""benchmarks/window_split.py (issue 16): bad options are named, and a small window
reports its decision points, a split that adds up, and the simulated time reached
(the same on every run: the replay is deterministic)."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))
sys.path.insert(0, HERE)

import window_split  # noqa: E402
from trace_file import fb_trace  # noqa: E402


@pytest.mark.parametrize("args,name", [(["--coflows", "5"], "--coflows"),
                                       (["--start", "0"], "--start"),
                                       (["--start", "9", "--events", "3"], "--start"),
                                       (["--trace", "/nonexistent"], "--trace"),
                                       (["--coflows", "600:700"], "--coflows")])
def test_bad_options_are_named(args, name):
    if "--trace" not in args:
        args = args + ["--trace", fb_trace()]
    with pytest.raises(SystemExit) as e:
        window_split.main(args)
    assert name in str(e.value)


def test_window_past_the_end_of_the_replay_is_named():
    with pytest.raises(SystemExit, match="--start"):
        window_split.main(["--coflows", "0:3", "--start", "500", "--events", "900",
                           "--trace", fb_trace()])


@pytest.mark.parametrize("extra", [[], ["--at0"]])
def test_small_window_reports_a_split_that_adds_up(extra, capsys):
    argv = ["--coflows", "0:12", "--start", "5", "--events", "30",
            "--scheduler", "sincronia", "--trace", fb_trace()] + extra
    outs = []
    for _ in range(2):
        assert window_split.main(argv) == 0
        outs.append(json.loads(capsys.readouterr().out))
    a, b = outs
    assert a["window"] == [5, 30] and a["at0"] == bool(extra)
    assert a["schedule_ms"] + a["simulator_ms"] == pytest.approx(a["ms_per_decision"],
                                                                abs=2e-3)
    assert a["sim_t_s"] == b["sim_t_s"] and a["sim_t_s"] > 0
