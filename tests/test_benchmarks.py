"""The maintained benchmark scripts of benchmarks/ run, take the shared workload
options and report what the simulator computes (sim_speed.py, event_core.py and its
giants workload); sweep_claims.py is tested in test_rapier_experiments.py and the
controller_* scripts in tests/emulation/test_operations.py."""

import os
import sys

import pytest

from trace_file import fb_trace

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "benchmarks")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import _common  # noqa: E402
import event_core  # noqa: E402
import sim_speed  # noqa: E402


def test_trace_options_are_the_shared_ones_and_bad_values_are_named(tmp_path):
    import argparse

    p = _common.add_trace_options(argparse.ArgumentParser(), limit=200)
    a = p.parse_args([])
    assert (a.trace, a.limit) == (_common.DEFAULT_TRACE, 200)
    with pytest.raises(SystemExit, match="--limit: must be positive, got 0"):
        _common.check_trace_options(p.parse_args(["--limit", "0"]))
    with pytest.raises(SystemExit, match="--trace: .*nothing.txt does not exist"):
        _common.check_trace_options(p.parse_args(["--trace", str(tmp_path / "nothing.txt")]))
    with pytest.raises(SystemExit, match="--limit: must be positive"):
        event_core.main(["--limit", "-1", "--trace", fb_trace()])


def test_sim_speed_counts_flow_events_and_reports_the_simulated_mean(capsys):
    from rapier_app.core.workload import port_mapping, read_trace, trace_to_coflows
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate
    from topologies import build_topology

    assert sim_speed.main(["--trace", fb_trace(), "--coflows", "5",
                           "--schedulers", "baseline"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1].split()
    topo = build_topology("bigswitch:150")
    cfs = trace_to_coflows(read_trace(fb_trace()), port_mapping(150, topo), 5)
    sched = make_scheduler("baseline", topo)
    count = sim_speed.count_flow_events(sched)
    res = simulate(topo, cfs, sched, record_flows=False)
    assert row[0] == "baseline" and int(row[1]) == 5
    assert int(row[3]) == res.events and int(row[4]) == count[0] > 0
    assert float(row[-1]) == pytest.approx(float(res.ccts.mean()), rel=1e-6)


def test_event_core_fingerprint_is_the_simulators(capsys):
    row = event_core.run_one(fb_trace(), "bigswitch:150", "scheduling-only", 8, 0)
    topo, cfs = event_core.workload(fb_trace(), "bigswitch:150", 8, 0)
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate

    res = simulate(topo, cfs, make_scheduler("scheduling-only", topo))
    assert row["fingerprint"] == event_core.fingerprint(res)[:16]
    assert (row["coflows"], row["events"]) == (8, res.events)


def test_giants_workload_and_run(capsys):
    topo, cfs = event_core.giants_workload(10, 2, 30, seed=3)
    again = event_core.giants_workload(10, 2, 30, seed=3)[1]
    assert [f.size_bytes for c in cfs for f in c.flows] == \
        [f.size_bytes for c in again for f in c.flows]
    assert [c.arrival_s for c in cfs] == [0.0, 1.0]
    assert all(f.src != f.dst and 1e6 <= f.size_bytes <= 100e6 for c in cfs for f in c.flows)
    assert event_core.main(["giants", "--hosts", "10", "--coflows", "2", "--width", "30",
                            "--seed", "3", "--schedulers", "baseline"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].split()[0] == "baseline" and len(out[-1].split()[-1]) == 16
    with pytest.raises(SystemExit, match="--width: too small"):
        event_core.main(["giants", "--width", "0"])
    with pytest.raises(SystemExit, match="--topology"):
        event_core.main(["giants", "--topology", "nonsense:1"])


def test_metrics_scrape_counts_what_the_controller_holds(capsys):
    """benchmarks/metrics_scrape.py: each step's scrape reports the coflows submitted
    so far (one flow each), rules confirmed by the fake switches' barrier replies
    (none left pending), and a timing."""
    import json

    import metrics_scrape

    assert metrics_scrape.main(["--coflows", "12", "--steps", "2", "--scrapes", "3",
                                "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["topology"] == "fattree:4" and out["scheduler"] == "baseline"
    steps = out["steps"]
    assert [s["coflows"] for s in steps] == [6, 12]
    assert [s["flows"] for s in steps] == [6, 12]
    for s in steps:
        # every flow has a rule on each switch of its path (>= 1 switch), all confirmed
        assert s["rules_installed"] >= s["flows"] and s["rules_pending"] == 0, s
        assert s["samples"] > 96 * 3 and 0 < s["p50_ms"] <= s["p99_ms"] <= s["max_ms"], s
    assert steps[1]["rules_installed"] > steps[0]["rules_installed"]
