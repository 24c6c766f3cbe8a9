"""benchmarks/weighted_hour.py (issue 16): bad options are named; a short replay
accounts for every call, its kept calls re-run bit for bit, and a saved call whose
recorded output was altered is reported as not the same."""

import json
import os
import pickle
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))
sys.path.insert(0, HERE)

import weighted_hour  # noqa: E402
from trace_file import fb_trace  # noqa: E402


@pytest.mark.parametrize("args,name", [(["--every", "0"], "--every"),
                                       (["--reps", "0"], "--reps"),
                                       (["--limit", "0"], "--limit"),
                                       (["--scheduler", "fifo"], "--scheduler"),
                                       (["--topology", "foo:1"], "--topology"),
                                       (["--trace", "/nonexistent"], "--trace")])
def test_bad_options_are_named(args, name, capsys):
    if "--trace" not in args:
        args = args + ["--trace", fb_trace()]
    with pytest.raises(SystemExit):
        weighted_hour.main(args)
    assert name in capsys.readouterr().err


def test_replay_of_an_empty_folder_is_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        weighted_hour.main(["--replay", str(tmp_path)])
    assert "--replay" in capsys.readouterr().err


def test_short_replay_accounts_for_every_call_and_reruns_bit_for_bit(tmp_path, capsys):
    save = tmp_path / "calls"
    weighted_hour.main(["--limit", "30", "--every", "10", "--reps", "1", "--save",
                        str(save), "--trace", fb_trace()])
    res = json.loads(capsys.readouterr().out)
    assert res["calls"] > 100 and res["same"] is True
    assert sum(b["calls"] for b in res["by_rounds"].values()) == res["calls"]
    assert res["sampled"] == res["calls"] // 10 == len(os.listdir(save))
    weighted_hour.main(["--replay", str(save), "--reps", "1"])
    again = json.loads(capsys.readouterr().out)
    assert again["sampled"] == res["sampled"] and again["same"] is True
    # one recorded rate changed by one ulp: the re-run no longer matches it
    f = sorted(save.iterdir())[-1]
    before, after, ret = pickle.loads(f.read_bytes())
    after[6][0] = after[6][0] + max(abs(after[6][0]) * 1e-15, 1e-300)
    f.write_bytes(pickle.dumps((before, after, ret)))
    weighted_hour.main(["--replay", str(save), "--reps", "1"])
    assert json.loads(capsys.readouterr().out)["same"] is False
