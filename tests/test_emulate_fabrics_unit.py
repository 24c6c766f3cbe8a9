"""Issue 13, without root: the emulation's workloads (the simulator's, scaled), the
scheduler check, the per-flow timelines, the FIFO start signal and the receivers'
``done`` line, and ``rapier-emulate``'s refusals."""

import json
import os
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from mininet_tests import transfer
from mininet_tests.runner import _release_go
from mininet_tests.timelines import emulated_timelines, simulated_timelines
from mininet_tests.workloads import (HEADER_GOODPUT, WorkloadUsageError, assign_ports,
                                     build_workload, check_schedulers, scale_sizes, simulate,
                                     trace_slice)
from rapier_app.core.model import make_coflow
from rapier_app.core.workload import synthetic
from topologies import build_topology
from trace_file import fb_trace


def test_header_goodput_is_payload_over_frame():
    assert HEADER_GOODPUT == pytest.approx(1448 / (1448 + 14 + 20 + 20 + 12))


def test_synthetic_is_the_simulators_scaled_with_controller_ids_and_ports():
    topo = build_topology("fattree:4")
    got, desc = build_workload(topo, (3, 4, 0.5), "const:2", seed=7, scale=0.01)
    ref = synthetic(topo, 3, 4, 0.5, "const:2", 7)
    assert [c.arrival_s for c in got] == [c.arrival_s for c in ref]
    assert [(f.src, f.dst) for c in got for f in c.flows] == \
        [(f.src, f.dst) for c in ref for f in c.flows]
    assert {f.size_bytes for c in got for f in c.flows} == {20000.0}  # 2 MB x 0.01
    assert [f.flow_id for f in got[1].flows] == ["c2/0", "c2/1", "c2/2", "c2/3"]
    ports = [(f.dst, f.dst_port) for c in got for f in c.flows]
    assert len(set(ports)) == len(ports) and min(p for _, p in ports) == 5001
    assert "sizes x 0.01" in desc


def test_assign_ports_counts_per_destination_host():
    cf = [make_coflow("a", 0.0, [("h1", "h2", 5.0), ("h3", "h2", 5.0), ("h1", "h4", 5.0)]),
          make_coflow("b", 1.0, [("h4", "h2", 5.0)])]
    out = assign_ports(cf)
    assert [(f.flow_id, f.dst, f.dst_port) for c in out for f in c.flows] == [
        ("a/0", "h2", 5001), ("a/1", "h2", 5002), ("a/2", "h4", 5001), ("b/0", "h2", 5003)]


def test_scale_sizes_rounds_and_keeps_one_byte():
    cf = [make_coflow("a", 0.0, [("h1", "h2", 1000.0), ("h1", "h3", 10.0)])]
    assert [f.size_bytes for f in scale_sizes(cf, 0.0125)[0].flows] == [12.0, 1.0]
    with pytest.raises(WorkloadUsageError, match="--scale"):
        scale_sizes(cf, 0)


def test_trace_slice_places_used_ports_on_distinct_hosts():
    topo = build_topology("fattree:4")
    cf, desc = trace_slice(fb_trace(), topo, 3, seed=1)
    # FB trace: coflow 1 = 1 mapper x 1 reducer of 1 MB, coflow 2 = 2 mappers x
    # 1 reducer of 48 MB (24 MiB each), coflow 3 = 2 x 1 of 4 MB
    assert [len(c.flows) for c in cf] == [1, 2, 2]
    assert [c.arrival_s for c in cf] == [0.0, 10.833, 13.122]
    assert cf[1].flows[0].size_bytes == pytest.approx(24 * 2 ** 20)
    assert "8 trace ports on distinct random hosts" in desc
    with pytest.raises(WorkloadUsageError, match="--limit"):
        trace_slice(fb_trace(), topo, 0)


def test_too_many_flows_is_refused_naming_the_option():
    with pytest.raises(WorkloadUsageError, match="--max-flows"):
        build_workload(build_topology("fattree:4"), (30, 8, 0.1), max_flows=200)
    with pytest.raises(WorkloadUsageError, match="exactly one"):
        build_workload(build_topology("fattree:4"))


def test_check_schedulers_names_which_cannot_and_why():
    assert check_schedulers(["rapier", "aalo", "sincronia"]) == ["rapier", "aalo", "sincronia"]
    with pytest.raises(WorkloadUsageError) as ei:
        check_schedulers(["rapier", "pkg.mod:Mine", "nope"])
    msg = str(ei.value)
    assert "pkg.mod:Mine (a plugin class" in msg and "ryu-manager" in msg
    assert "nope (not a registered scheduler" in msg and "rapier (" not in msg


def test_simulate_uses_goodput_capacity():
    # one 1 MB flow over 10 Mbit/s links at goodput 0.5: 1e6 * 8 / 5e6 = 1.6 s
    cf = assign_ports([make_coflow("a", 0.0, [("h1", "h2", 1e6)])])
    res = simulate("leafspine:2,2,1", cf, "baseline", 10e6, 0.5)
    assert res.ccts.tolist() == pytest.approx([1.6])


def test_simulate_with_a_hand_off_delay():
    # the same flow, its start (a raise from nothing) 0.25 s late: 1.85 s
    cf = assign_ports([make_coflow("a", 0.0, [("h1", "h2", 1e6)])])
    res = simulate("leafspine:2,2,1", cf, "baseline", 10e6, 0.5, handoff_delay_s=0.25)
    assert res.ccts.tolist() == pytest.approx([1.85])


def test_table_shows_the_hand_off_column_when_simulated():
    from mininet_tests.emulate import format_table

    r = {"coflows": 8, "avg_cct_s": 4.2, "sim_avg_cct_s": 3.75, "p95_cct_s": 7.0,
         "sim_p95_cct_s": 6.9, "wall_s": 30.0}
    assert "hand-off" not in format_table({"rapier": dict(r)}, "t")
    text = format_table({"rapier": dict(r, sim_handoff_avg_cct_s=4.0)}, "t")
    assert "hand-off sim" in text
    assert "4.00   +5.0%" in text


def test_emulated_timelines_interpolate_bytes_and_step_rates():
    run = {"schedule_timeline": [
        {"t_s": 0.05, "allocations": {"a/0": {"path": ["h1"], "rate_bps": 8e6}}},
        {"t_s": 0.25, "allocations": {"a/0": {"path": ["h1"], "rate_bps": 4e6}}}],
        "coflows": [{"coflow_id": "a", "flows": [
            {"flow_id": "a/0", "size_bytes": 300, "finish_s": 0.3,
             "received": [[0.1, 0], [0.3, 300]]}]}]}
    tl = emulated_timelines(run)["a/0"]
    assert tl["t_s"] == [0.0, 0.1, 0.2, 0.3]
    assert tl["rate_bps"] == [0.0, 8e6, 8e6, 4e6]
    assert tl["received_bytes"] == pytest.approx([0.0, 0.0, 150.0, 300.0])


def test_simulated_timelines_from_event_records():
    # 1000 bytes at 8000 bit/s from 0 to 0.5 s (500 B), then 16000 bit/s: done 0.75 s
    evs = [SimpleNamespace(t_s=0.0, t_next_s=0.5, flow_ids=["a/0"], rates_bps=np.array([8000.0]),
                           remaining_bytes=np.array([1000.0]), finish_s=np.array([np.inf])),
           SimpleNamespace(t_s=0.5, t_next_s=0.75, flow_ids=["a/0"],
                           rates_bps=np.array([16000.0]), remaining_bytes=np.array([500.0]),
                           finish_s=np.array([0.75]))]
    tl = simulated_timelines(evs, {"a/0": 1000.0})["a/0"]
    assert tl["finish_s"] == 0.75
    assert tl["t_s"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    assert tl["sent_bytes"] == pytest.approx([0, 100, 200, 300, 400, 500, 700, 900, 1000])
    assert tl["rate_bps"][:6] == [8000.0] * 5 + [16000.0] and tl["rate_bps"][-1] == 0.0


def test_sender_waits_on_a_fifo_and_receiver_announces_done(tmp_path):
    import io
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out, ann = {}, io.StringIO()
    th = threading.Thread(target=lambda: out.update(transfer.receive(
        port, 300_000, str(tmp_path / "r.json"), bind="127.0.0.1", sample_s=0.001,
        announce=ann)))
    th.start()
    go = str(tmp_path / "go")
    os.mkfifo(go)
    res = {}
    sender = threading.Thread(target=lambda: res.update(transfer.send(
        "127.0.0.1", port, 300_000, str(tmp_path / "s.json"), go=go, preconnect=True)))
    sender.start()
    sender.join(0.3)
    assert sender.is_alive() and not res  # blocked on the FIFO
    _release_go(go)
    sender.join(10)
    th.join(10)
    assert res["bytes"] == 300_000 and out["ok"] is True
    line = ann.getvalue().split()
    assert line[:2] == ["done", "300000"] and float(line[2]) == pytest.approx(out["done_s"])
    samples = json.loads((tmp_path / "r.json").read_text())["samples"]
    assert samples[0][1] == 0 and samples[-1][1] == 300_000
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(samples, samples[1:]))


@pytest.mark.parametrize("argv, msg", [
    (["--synthetic", "4,4,0.5"], "--topology: required"),
    (["--topology", "fattree:4"], "--topology: applies only"),
    (["--topology", "fattree:4", "--synthetic", "4,4"], "--synthetic: expected"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--trace", "x"], "workload"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--limit", "3"], "--limit"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--goodput", "1.5"], "--goodput"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--headroom", "0"], "--headroom"),
    (["--topology", "nosuch:4", "--synthetic", "4,4,0.5"], "nosuch"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--schedulers", "a.b:C"],
     "a.b:C (a plugin class"),
    (["--topology", "fattree:4", "--synthetic", "40,8,0.5"], "--max-flows"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--queue-packets", "-1"],
     "--queue-packets: must be a positive integer or 0"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--rto-min-ms", "-1"],
     "--rto-min-ms: must be positive or 0"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--tsq-bytes", "0"],
     "--tsq-bytes: must be a positive integer"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--fair-queue", "12"],
     "--fair-queue: buckets: must be a power of two"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--tcp-cc", "nosuch"],
     "--tcp-cc: 'nosuch' is not one of"),
    (["--topology", "fattree:4", "--synthetic", "4,4,0.5", "--sim-handoff-delay", "-0.1"],
     "--sim-handoff-delay: must be a number of seconds >= 0"),
])
def test_emulate_refuses_bad_arguments_naming_them(capsys, argv, msg):
    from mininet_tests.emulate import main

    with pytest.raises(SystemExit) as ei:
        main(argv)
    assert ei.value.code == 2
    assert msg in capsys.readouterr().err


@pytest.mark.parametrize("argv, want", [
    # the defaults: short switch queues, a 20 ms minimum RTO, 32 fair-queue buckets
    ([], (100, 20.0, 32, None)),
    (["--queue-packets", "0", "--rto-min-ms", "0", "--fair-queue", "0"],
     (None, None, None, None)),  # Linux's own, one FIFO per port
    (["--queue-packets", "37", "--rto-min-ms", "5", "--fair-queue", "8", "--tcp-cc", "reno"],
     (37, 5.0, 8, "reno")),
])
def test_emulate_passes_the_tcp_options_to_each_run(monkeypatch, tmp_path, argv, want):
    from mininet_tests import emulate, runner

    seen = []

    def fake_run(name, spec, coflows, *a, **kw):
        seen.append((kw["queue_packets"], kw["rto_min_ms"], kw["fair_queue"], kw["tcp_cc"]))
        raise runner.EmulationError("not run here")

    monkeypatch.setattr(emulate, "run_workload", fake_run)
    monkeypatch.setattr(runner.OvsDaemons, "start", lambda self: None)
    monkeypatch.setattr(runner.OvsDaemons, "stop", lambda self: None)
    code = emulate.main(["--topology", "fattree:4", "--synthetic", "2,2,0.5",
                         "--schedulers", "rapier", "--out", str(tmp_path)] + argv)
    assert code == 1  # the (fake) run failed
    assert seen == [want]


def test_sender_uses_the_named_congestion_control(tmp_path):
    """``transfer send --cc`` sets TCP_CONGESTION on the socket before connecting;
    an algorithm the kernel lacks is an error naming ``cc``."""
    import socket
    import threading

    from mininet_tests import transfer

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    seen = {}

    def accept():
        c, _ = srv.accept()
        while c.recv(65536):
            pass
        c.close()

    th = threading.Thread(target=accept)
    th.start()
    orig = transfer._connect

    def spy(*a, **kw):
        sock = orig(*a, **kw)
        seen["cc"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
        return sock

    transfer._connect = spy
    try:
        transfer.send("127.0.0.1", port, 1000, cc="reno")
    finally:
        transfer._connect = orig
    th.join(5)
    srv.close()
    assert seen["cc"].rstrip(b"\0") == b"reno"
    with pytest.raises(OSError, match="cc: congestion control 'nosuch'"):
        transfer._connect("127.0.0.1", port, 1.0, cc="nosuch")
