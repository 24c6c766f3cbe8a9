"""The coflow-benchmark trace writer: what it writes, the reader reads back equal."""

import filecmp
import json

import pytest

from trace_file import fb_trace  # noqa: E402

from rapier_app.cli import main
from rapier_app.core.model import WorkloadError, make_coflow
from rapier_app.core.workload import (coflows_to_trace, port_mapping, read_trace, synthetic,
                                      trace_to_coflows, write_trace)
from topologies import big_switch, build_topology, fat_tree

MIB = 1024 * 1024


def test_hand_written_line(tmp_path):
    # h1, h2 -> h3, flows of 2 MiB: mappers ports 0 1, reducer port 2 gets 4 MiB;
    # arrival 1.5 s = 1500 ms.  h4 -> h1 3 MiB at 0.25 s.
    t = big_switch(4)
    cf = [make_coflow("a", 1.5, [("h1", "h3", 2 * MIB), ("h2", "h3", 2 * MIB)]),
          make_coflow("b", 0.25, [("h4", "h1", 3 * MIB)])]
    trace, reshaped = coflows_to_trace(cf, t.hosts)
    assert reshaped == []
    p = tmp_path / "t.txt"
    write_trace(str(p), trace)
    assert p.read_text() == "4 2\na 1500 2 0 1 1 2:4.0\nb 250 1 3 1 0:3.0\n"
    back = read_trace(str(p))
    assert back == trace
    assert trace_to_coflows(back, port_mapping(4, t, placement="identity")) == cf


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_synthetic_workload_round_trip_is_equal(tmp_path, seed):
    # width-1 coflows are single shuffles; arrivals all at t=0 are whole ms
    t = fat_tree(4)
    cf = synthetic(t, 12, 1, 0.0, sizes="uniform:2,50", seed=seed)
    trace, reshaped = coflows_to_trace(cf, t.hosts)
    write_trace(str(tmp_path / "s.txt"), trace)
    back = read_trace(str(tmp_path / "s.txt"))
    assert back == trace and reshaped == []
    assert trace_to_coflows(back, port_mapping(back.ports, t, placement="identity")) == cf


def test_full_shuffle_with_unequal_reducers_round_trips(tmp_path):
    # 3 mappers x 2 reducers, reducer sizes differ (odd byte counts, not MiB multiples)
    t = fat_tree(4)
    flows = [(s, d, v) for d, v in (("h7", 1234567.0), ("h9", 7654321.5))
             for s in ("h1", "h2", "h3")]
    cf = [make_coflow("z", 0.007, flows)]
    trace, _ = coflows_to_trace(cf, t.hosts)
    write_trace(str(tmp_path / "z.txt"), trace)
    back = trace_to_coflows(read_trace(str(tmp_path / "z.txt")),
                            port_mapping(16, t, placement="identity"))
    assert back == cf  # bit for bit, sizes and the 7 ms arrival included


def test_facebook_trace_written_back_is_the_same_file(tmp_path):
    trace = read_trace(fb_trace())
    t = big_switch(trace.ports)
    cf = trace_to_coflows(trace, port_mapping(trace.ports, t))
    out, reshaped = coflows_to_trace(cf, t.hosts)
    assert reshaped == []
    write_trace(str(tmp_path / "fb.txt"), out)
    assert filecmp.cmp(str(tmp_path / "fb.txt"), fb_trace(), shallow=False)


def test_non_shuffle_coflows_refused_or_reshaped():
    t = fat_tree(4)
    # h1->h5 and h2->h6 only: not every sender x receiver pair
    c = make_coflow("p", 0.0, [("h1", "h5", 4 * MIB), ("h2", "h6", 6 * MIB)])
    with pytest.raises(WorkloadError, match="coflow p: not expressible"):
        coflows_to_trace([c], t.hosts)
    trace, reshaped = coflows_to_trace([c], t.hosts, reshape=True)
    assert reshaped == ["p"]
    # senders h1 h2 (ports 0 1), receivers h5 (4 MiB in total) and h6 (6 MiB)
    assert trace.coflows[0].mappers == (0, 1)
    assert trace.coflows[0].reducers == ((4, 4.0), (5, 6.0))
    with pytest.raises(WorkloadError, match="host 'x9'"):
        coflows_to_trace([make_coflow("q", 0.0, [("h1", "x9", MIB)])], t.hosts)
    with pytest.raises(WorkloadError, match="whitespace"):
        coflows_to_trace([make_coflow("a b", 0.0, [("h1", "h2", MIB)])], t.hosts)


def test_small_flows_are_not_shuffle_shaped():
    # the reader raises every flow to at least 1 MiB, so a smaller one cannot round-trip
    t = fat_tree(4)
    with pytest.raises(WorkloadError, match="not expressible"):
        coflows_to_trace([make_coflow("s", 0.0, [("h1", "h2", 1000.0)])], t.hosts)


def test_cli_write_trace_then_replay(tmp_path, capsys):
    p = tmp_path / "w.txt"
    argv = ["--topology", "fattree:4", "--synthetic", "5,1,0", "--sizes", "uniform:5,20",
            "--seed", "4", "--schedulers", "baseline", "--no-plot", "--no-bound", "--json",
            "--write-trace", str(p)]
    assert main(argv + ["--out", str(tmp_path / "a")]) == 0
    first = json.loads(capsys.readouterr().out)
    topo = build_topology("fattree:4")
    back = read_trace(str(p))
    assert trace_to_coflows(back, port_mapping(back.ports, topo, placement="identity")) == \
        synthetic(topo, 5, 1, 0.0, "uniform:5,20", seed=4)
    # replaying the trace gives the same CCTs
    assert main(["--topology", "fattree:4", "--trace", str(p), "--placement", "identity",
                 "--schedulers", "baseline", "--no-plot", "--no-bound", "--json", "-q",
                 "--seed", "4", "--out", str(tmp_path / "b")]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["baseline"]["avg_cct_s"] == first["baseline"]["avg_cct_s"]


def test_cli_write_trace_reports_reshaping(tmp_path, capsys):
    p = tmp_path / "r.txt"
    assert main(["--topology", "fattree:4", "--synthetic", "3,4,0.01", "--schedulers",
                 "baseline", "--no-plot", "--no-bound", "--write-trace", str(p), "--out",
                 str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert f"trace written: {p} (3 coflows, 16 ports)" in err
    assert "3 coflows are not sender x receiver shuffles" in err
    assert "2 arrivals rounded to whole ms" in err
    assert len(read_trace(str(p)).coflows) == 3
