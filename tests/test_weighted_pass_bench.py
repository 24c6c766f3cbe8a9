"""benchmarks/weighted_pass.py (issue 16): bad options are named, and a small
capture times the compiled weighted pass with a fingerprint that does not depend
on the run."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))
sys.path.insert(0, HERE)

import weighted_pass  # noqa: E402
from trace_file import fb_trace  # noqa: E402


@pytest.mark.parametrize("args,name", [(["--coflows", "5"], "--coflows"),
                                       (["--events", "0"], "--events"),
                                       (["--every", "0"], "--every"),
                                       (["--trace", "/nonexistent"], "--trace")])
def test_bad_options_are_named(args, name):
    with pytest.raises(SystemExit) as e:
        weighted_pass.main(args)
    assert name in str(e.value)


def test_small_capture_prints_calls_and_a_stable_fingerprint(capsys):
    argv = ["--coflows", "0:12", "--events", "60", "--every", "3", "--last", "60",
            "--reps", "2", "--trace", fb_trace()]
    outs = []
    for _ in range(2):
        assert weighted_pass.main(argv) == 0
        outs.append(json.loads(capsys.readouterr().out))
    a, b = outs
    assert a["calls"] == 20 and a["rows"] > 0 and a["queues"] >= 1
    assert a["us_per_call"] > 0
    assert a["fingerprint"] == b["fingerprint"] and len(a["fingerprint"]) == 16
