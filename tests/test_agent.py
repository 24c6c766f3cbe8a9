"""Unit tests of the host agent: tc commands as data, planning, HTTP API (no root).

The HTTP tests run a real agent server in-process on a Unix socket and on TCP, with
a recording fake in place of ``tc``.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from enforcement import agent, client, tc
from enforcement.tc import FlowLimit, TcState
from rapier_app.httpjson import RequestError

IF = "h1-eth0"


def lim(fid="1/0", rate=10e6, dport=5001, src="10.0.0.1", dst="10.0.0.4", **kw):
    return FlowLimit(flow_id=fid, src_ip=src, dst_ip=dst, proto=kw.pop("proto", "tcp"),
                     dst_port=dport, src_port=kw.pop("sport", None), rate_bps=rate)


def req(fid="1/0", rate=10e6, dport=5001, **kw):
    d = {"flow_id": fid, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.4", "proto": "tcp",
         "dst_port": dport, "rate_bps": rate}
    d.update(kw)
    return d


# ------------------------------------------------------------------ commands as data
def test_setup_and_teardown_commands():
    assert tc.setup_commands(IF) == [["tc", "qdisc", "replace", "dev", IF, "root", "handle",
                                      "1:", "htb", "default", "0"]]
    assert tc.teardown_commands(IF) == [["tc", "qdisc", "del", "dev", IF, "root"]]


def test_add_commands_exact():
    cmds = tc.add_commands(IF, 16, lim(rate=25e6, sport=40000))
    assert cmds[0] == ["tc", "class", "add", "dev", IF, "parent", "1:", "classid", "1:10",
                       "htb", "rate", "25000000bit", "ceil", "25000000bit", "quantum", "1514"]
    assert cmds[1] == ["tc", "filter", "add", "dev", IF, "parent", "1:", "protocol", "ip",
                       "prio", "16", "u32",
                       "match", "ip", "src", "10.0.0.1/32", "match", "ip", "dst", "10.0.0.4/32",
                       "match", "ip", "protocol", "6", "0xff",
                       "match", "ip", "sport", "40000", "0xffff",
                       "match", "ip", "dport", "5001", "0xffff", "flowid", "1:10"]


def test_udp_without_ports():
    f = tc.filter_add_command(IF, 300, lim(proto="udp", dport=None))
    assert "dport" not in f and "sport" not in f
    assert f[f.index("protocol", 10) + 1] == "17"
    assert f[-1] == "1:12c"  # 300 in hex


def test_remove_commands_use_prio_and_classid():
    assert tc.remove_commands(IF, 31) == [
        ["tc", "filter", "del", "dev", IF, "parent", "1:", "protocol", "ip", "prio", "31"],
        ["tc", "class", "del", "dev", IF, "classid", "1:1f"]]


def test_classid_range():
    with pytest.raises(ValueError, match="slot"):
        tc.classid(15)
    with pytest.raises(ValueError, match="slot"):
        tc.classid(0xFFFF)


def test_zero_rate_is_enforced_as_minimum():
    assert lim(rate=0).enforced_rate_bps == tc.MIN_RATE_BPS
    assert lim(rate=1e6 + 0.4).enforced_rate_bps == 1_000_000


# ------------------------------------------------------------------ planning
def test_plan_add_change_keep_remove():
    s0 = TcState(IF)
    cmds, s1 = tc.plan(s0, [lim("a", 10e6, 5001), lim("b", 20e6, 5002)])
    assert [c[1:3] for c in cmds] == [["class", "add"], ["filter", "add"]] * 2
    assert {f: i.slot for f, i in s1.flows.items()} == {"a": 16, "b": 17}
    assert s0.flows == {}  # input state untouched
    # same request again: nothing to do (idempotent)
    again, s2 = tc.plan(s1, [lim("a", 10e6, 5001), lim("b", 20e6, 5002)])
    assert again == [] and s2.flows == s1.flows
    # change a's rate, drop b, add c: c reuses b's slot
    cmds, s3 = tc.plan(s2, [lim("a", 5e6, 5001), lim("c", 1e6, 5003)])
    assert cmds[0:2] == tc.remove_commands(IF, 17)
    assert cmds[2] == tc.class_command(IF, 16, 5_000_000, "change")
    assert cmds[3:] == tc.add_commands(IF, 17, lim("c", 1e6, 5003))
    assert s3.flows["c"].slot == 17 and s3.flows["a"].limit.rate_bps == 5e6
    # empty list clears
    cmds, s4 = tc.plan(s3, [])
    assert cmds == tc.remove_commands(IF, 16) + tc.remove_commands(IF, 17)
    assert s4.flows == {}


def test_plan_new_match_replaces_filter_only():
    _, s1 = tc.plan(TcState(IF), [lim("a", 10e6, 5001)])
    cmds, s2 = tc.plan(s1, [lim("a", 10e6, 6000)])
    assert cmds == [tc.filter_del_command(IF, 16),
                    tc.filter_add_command(IF, 16, lim("a", 10e6, 6000))]
    assert s2.flows["a"].limit.dst_port == 6000


def test_plan_rate_change_below_minimum_is_noop():
    _, s1 = tc.plan(TcState(IF), [lim("a", 0)])
    cmds, _ = tc.plan(s1, [lim("a", 1000)])  # both enforce MIN_RATE_BPS
    assert cmds == []


def test_rebuild_commands():
    _, s1 = tc.plan(TcState(IF), [lim("a", 10e6, 5001), lim("b", 2e6, 5002)])
    cmds = tc.rebuild_commands(s1)
    assert cmds[0] == tc.setup_commands(IF)[0]
    assert cmds[1:] == (tc.add_commands(IF, 16, lim("a", 10e6, 5001))
                        + tc.add_commands(IF, 17, lim("b", 2e6, 5002)))


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("body, field", [
    ([], "body"),
    ({}, "flows"),
    ({"flows": {}}, "flows"),
    ({"flows": [], "extra": 1}, "extra"),
    ({"flows": [1]}, "flows[0]"),
    ({"flows": [req(rate=-1)]}, "flows[0].rate_bps"),
    ({"flows": [req(rate="fast")]}, "flows[0].rate_bps"),
    ({"flows": [req(rate=True)]}, "flows[0].rate_bps"),
    ({"flows": [req(rate=float("inf"))]}, "flows[0].rate_bps"),
    ({"flows": [req(rate=2e11)]}, "flows[0].rate_bps"),
    ({"flows": [req(dport=0)]}, "flows[0].dst_port"),
    ({"flows": [req(dport=70000)]}, "flows[0].dst_port"),
    ({"flows": [req(dport="5001")]}, "flows[0].dst_port"),
    ({"flows": [req(src_port=-3)]}, "flows[0].src_port"),
    ({"flows": [req(src_ip="10.0.0.300")]}, "flows[0].src_ip"),
    ({"flows": [req(dst_ip=167772161)]}, "flows[0].dst_ip"),
    ({"flows": [req(proto="icmp")]}, "flows[0].proto"),
    ({"flows": [req(fid="")]}, "flows[0].flow_id"),
    ({"flows": [req(fid=7)]}, "flows[0].flow_id"),
    ({"flows": [req(colour="red")]}, "flows[0].colour"),
    ({"flows": [{k: v for k, v in req().items() if k != "dst_ip"}]}, "flows[0].dst_ip"),
    ({"flows": [req("a"), req("a", dport=5002)]}, "flows[1].flow_id"),
    ({"flows": [req("a"), req("b")]}, "flows[1]"),
])
def test_parse_flow_set_rejects(body, field):
    with pytest.raises(RequestError) as ei:
        tc.parse_flow_set(body)
    assert ei.value.field == field
    assert str(ei.value).startswith(field + ":")


def test_parse_flow_set_accepts_and_normalises():
    out = tc.parse_flow_set({"flows": [req("1/0", 250_000_000), {
        "flow_id": "x", "src_ip": "10.0.0.2", "dst_ip": "10.0.0.9", "rate_bps": 0}]})
    assert out[0] == lim("1/0", 250e6)
    assert out[1].proto == "tcp" and out[1].dst_port is None and out[1].rate_bps == 0.0


# ------------------------------------------------------------------ HTTP (in process)
class Recorder:
    """Fake tc: records commands; fails on commands containing ``fail_on``."""

    def __init__(self):
        self.cmds = []
        self.fail_on = None

    def __call__(self, cmd):
        if self.fail_on and self.fail_on in cmd:
            raise agent.TcError("RTNETLINK answers: fake failure")
        self.cmds.append(cmd)


@pytest.fixture
def served():
    """An agent on a Unix socket with a fake tc; yields (base URL, recorder, enforcer)."""
    rec = Recorder()
    enf = agent.Enforcer(IF, runner=rec)
    enf.start()
    d = tempfile.mkdtemp(prefix="rapier-agent-test-")
    path = os.path.join(d, "h1.sock")
    srv = agent.make_server("unix:" + path, enf)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield "unix:" + path, rec, enf
    finally:
        srv.shutdown()
        srv.server_close()
        enf.stop()
        os.unlink(path)
        os.rmdir(d)


def test_http_health_and_set_change_remove(served):
    base, rec, enf = served
    assert rec.cmds == tc.setup_commands(IF)
    st, obj = client.request(base, "GET", "/v1/health")
    assert st == 200 and obj["ok"] is True and obj["iface"] == IF and obj["flows"] == 0
    st, obj = client.request(base, "PUT", "/v1/flows", {"flows": [req("1/0", 10e6)]})
    assert st == 200 and obj["commands"] == 2
    assert obj["flows"][0]["classid"] == "1:10" and obj["flows"][0]["rate_bps"] == 10e6
    # repeated request: idempotent, no tc command
    n = len(rec.cmds)
    st, obj = client.request(base, "PUT", "/v1/flows", {"flows": [req("1/0", 10e6)]})
    assert st == 200 and obj["commands"] == 0 and len(rec.cmds) == n
    # change one flow by URL (flow id with a slash, percent-encoded)
    st, obj = client.request(base, "PUT", "/v1/flows/1%2F0", {k: v for k, v in
                                                               req(rate=3e6).items()
                                                               if k != "flow_id"})
    assert st == 200 and rec.cmds[-1] == tc.class_command(IF, 16, 3_000_000, "change")
    st, obj = client.request(base, "GET", "/v1/flows/1/0")
    assert st == 200 and obj["rate_bps"] == 3e6
    st, obj = client.request(base, "DELETE", "/v1/flows/1/0")
    assert st == 200 and obj["flows"] == []
    assert rec.cmds[-2:] == tc.remove_commands(IF, 16)
    st, obj = client.request(base, "DELETE", "/v1/flows/1/0")
    assert st == 404 and "1/0" in obj["error"]


def test_http_bad_requests_get_400_naming_field(served):
    base, rec, _ = served
    n = len(rec.cmds)
    st, obj = client.request(base, "PUT", "/v1/flows", {"flows": [req(rate=-5)]})
    assert st == 400 and obj["field"] == "flows[0].rate_bps" and "rate_bps" in obj["error"]
    st, obj = client.request(base, "PUT", "/v1/flows/z", {**req(), "flow_id": "other"})
    assert st == 400 and obj["field"] == "flow_id"
    assert len(rec.cmds) == n  # nothing applied
    # malformed JSON
    conn = client.UnixHTTPConnection(base[5:], 5)
    conn.request("PUT", "/v1/flows", body=b"{not json", headers={"Content-Length": "9"})
    resp = conn.getresponse()
    assert resp.status == 400 and "invalid JSON" in json.loads(resp.read())["error"]
    conn.close()
    assert client.request(base, "GET", "/v2/flows")[0] == 404
    assert client.request(base, "POST", "/v1/flows", {"flows": []})[0] == 405


def test_http_tc_failure_gives_500_and_rebuilds(served):
    base, rec, enf = served
    client.request(base, "PUT", "/v1/flows", {"flows": [req("a", 10e6, 5001)]})
    rec.fail_on = "change"
    st, obj = client.request(base, "PUT", "/v1/flows", {"flows": [req("a", 2e6, 5001)]})
    assert st == 500 and "fake failure" in obj["error"]
    # the previous state is kept and re-installed from scratch
    assert enf.snapshot()[0]["rate_bps"] == 10e6
    assert rec.cmds[-3:] == tc.rebuild_commands(enf.state)


def test_no_enforce_records_without_commands():
    rec = Recorder()
    enf = agent.Enforcer(IF, runner=rec, enforce=False)
    enf.start()
    st, obj = agent.handle(enf, "PUT", "/v1/flows", json.dumps({"flows": [req()]}).encode())
    assert st == 200 and obj["commands"] == 0 and obj["flows"][0]["enforced_rate_bps"] is None
    assert rec.cmds == []


def test_parse_listen():
    assert agent.parse_listen("0.0.0.0:7070") == ("tcp", ("0.0.0.0", 7070))
    assert agent.parse_listen("unix:/tmp/x.sock") == ("unix", "/tmp/x.sock")
    for bad in ("7070", "host:port", "h:70000", "unix:"):
        with pytest.raises(ValueError, match="listen"):
            agent.parse_listen(bad)


def test_default_iface(tmp_path):
    dev = tmp_path / "dev"
    head = ("Inter-|   Receive                            |  Transmit\n"
            " face |bytes    packets errs drop fifo frame compressed multicast|bytes\n")
    dev.write_text(head + "    lo: 0 0 0 0 0 0 0 0 0\nh3-eth1: 10 1 0 0 0 0 0 0 5\n")
    assert agent.default_iface(str(dev)) == "h3-eth1"
    dev.write_text(head + "    lo: 0 0\nh3-eth1: 1 1\nh3-eth2: 1 1\n")
    with pytest.raises(RuntimeError, match="iface"):
        agent.default_iface(str(dev))
    with pytest.raises(RuntimeError, match="iface"):
        agent.default_iface(str(tmp_path / "missing"))


def test_daemon_over_tcp_exits_cleanly_and_removes_qdisc(tmp_path):
    """The real ``main()`` in a subprocess, with a fake ``tc`` on PATH that logs argv
    (one line per command; ``tc -batch -``, the agent's default, logs its stdin lines)."""
    log = tmp_path / "tc.log"
    fake = tmp_path / "tc"
    fake.write_text(f"#!/bin/sh\nif [ \"$1\" = -batch ]; then cat >> {log}; "
                    f"else echo \"$@\" >> {log}; fi\n")
    fake.chmod(0o755)
    token = "t0k3n-for-the-daemon-test"  # TCP needs a token (issue 14)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
               RAPIER_AGENT_TOKEN=token)
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "enforcement.agent", "--iface", "eth9",
                          "--listen", f"127.0.0.1:{port}"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if client.request(base, "GET", "/v1/health", timeout=1)[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        st, _ = client.request(base, "PUT", "/v1/flows", {"flows": [req()]})
        assert st == 401  # no token
        st, _ = client.request(base, "PUT", "/v1/flows", {"flows": [req()]}, token=token)
        assert st == 200
        p.send_signal(signal.SIGTERM)
        assert p.wait(10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    lines = log.read_text().splitlines()
    assert lines[0] == "qdisc replace dev eth9 root handle 1: htb default 0"
    assert lines[1].startswith("class add dev eth9 parent 1: classid 1:10 htb rate 10000000bit")
    assert lines[-1] == "qdisc del dev eth9 root"


# ------------------------------------------------------------------ tc -batch (issue 15)
def test_batch_runner_sends_all_commands_to_one_tc_and_names_the_failing_one(tmp_path,
                                                                            monkeypatch):
    """``run_tc_batch``: one ``tc -batch -`` process gets every command (argv without
    the leading ``tc``, one per line); on failure the error names the command of the
    line tc reports (``Command failed -:2`` -> the second command)."""
    log = tmp_path / "tc.log"
    fake = tmp_path / "tc"
    fake.write_text(f"#!/bin/sh\necho \"ARGV $@\" >> {log}\ncat >> {log}\n"
                    f"if grep -q FAIL {log}; then echo 'RTNETLINK answers: File exists' >&2; "
                    f"echo 'Command failed -:2' >&2; exit 1; fi\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    cmds = tc.add_commands(IF, 16, lim("a", 5e6, 5001))
    agent.run_tc_batch(cmds)
    assert log.read_text().splitlines() == ["ARGV -batch -", " ".join(cmds[0][1:]),
                                            " ".join(cmds[1][1:])]
    log.write_text("")
    bad = [cmds[0], cmds[1][:-1] + ["FAIL"], tc.class_del_command(IF, 16)]
    with pytest.raises(agent.TcError, match=r"^tc filter add dev h1-eth0 .* flowid FAIL: exit 1: "
                                            r"RTNETLINK answers: File exists"):
        agent.run_tc_batch(bad)
    with pytest.raises(ValueError, match="cmds"):
        agent.run_tc_batch([["tc", "class", "add", "dev", "eth 0"], cmds[0]])
    agent.run_tc_batch([])  # nothing to do: no process


def test_enforcer_default_batches_one_change_into_one_call():
    """Without a per-command runner the Enforcer hands a whole change to its batch
    runner: PUT of 2 new flows = 4 commands in one call; a repeated PUT none."""
    calls = []
    enf = agent.Enforcer(IF, batch=calls.append)
    enf.start()
    assert [len(c) for c in calls] == [1]
    assert enf.replace_all([lim("a", 5e6, 5001), lim("b", 6e6, 5002)]) == 4
    assert [len(c) for c in calls] == [1, 4]
    assert calls[1][0] == tc.class_command(IF, 16, 5_000_000)
    assert enf.replace_all([lim("a", 5e6, 5001), lim("b", 6e6, 5002)]) == 0
    assert len(calls) == 2
    assert agent.Enforcer(IF).batch is agent.run_tc_batch
    assert agent.Enforcer(IF, runner=calls.append).batch is None


# ------------------------------------------------------- stalled unauthenticated clients
@pytest.mark.parametrize("stall", ["headers", "partial", "idle", "health"])
def test_eight_stalled_unauthenticated_connections_leave_pushes_served(stall):
    """8 raw sockets (the default pool) connect without a token and stall: ``headers``
    sends a ``PUT /v1/flows`` head declaring a 1 MB body, then never the body and
    never reads the 401; ``partial`` stops in the middle of the head; ``idle`` sends
    nothing; ``health`` asks the open ``GET /v1/health`` and keeps the connection.
    Authenticated pushes sent right after are all served (200, not the 503 of a full
    pool, which comes only after waiting ``BUSY_WAIT_S`` for a worker).  The latency
    is measured by ``benchmarks/agent_stalled_clients.py`` (the same code)."""
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "benchmarks")
    sys.path.insert(0, bench)
    try:
        import agent_stalled_clients
    finally:
        sys.path.remove(bench)
    out = agent_stalled_clients.measure(stall, stalled=agent.DEFAULT_WORKERS, pushes=10)
    assert out["workers"] == out["stalled"] == 8
    assert out["with"]["statuses"] == {"200": 10}, out
    assert out["with"]["max_s"] < agent.BUSY_WAIT_S, out  # never waited for a worker
