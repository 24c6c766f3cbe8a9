"""Doors and input limits of the controller's REST API and of the host agent (issue 14).

* With ``rest_token`` set, POST/DELETE without (or with a wrong) bearer token are 401
  and change nothing; GETs stay open.  Same for the agent on TCP.
* By default REST and OpenFlow listen on 127.0.0.1: checked on the addresses the app
  computes, on the address the real ``ryu-manager`` binds (``/proc/net/tcp``), and by
  a connection attempt to a non-loopback address of this machine (refused).
* Off loopback without a token the controller (and the agent on TCP) refuses to start.
* The agent's Unix socket is 0600; its pool answers 503 when every worker is busy;
  idle connections hold no worker and are closed after the timeout.
* Input limits: ids, number ranges (ints above 1e308), short quotes of the input.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import subprocess
import threading
import time
from types import SimpleNamespace

import pytest
from webob import Request

import rapier_app.controller as controller_pkg
from enforcement import agent, client
from mininet_tests.ryuproc import ControllerError, start_controller, stop_controller
from rapier_app import httpjson
from rapier_app.controller import rest, validation
from rapier_app.controller.settings import Settings, SettingsError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "s3cret-token-for-tests-0123"
FLOW = {"src": "h1", "dst": "h5", "size_bytes": 1_000_000, "dst_port": 5001}


def make_app(**kw):
    opts = dict(scheduler="baseline", topology="leafspine:3,3,3", agent_url="",
                state_db=":memory:")
    opts.update(kw)
    app = controller_pkg.RapierController(rapier_settings=Settings(**opts))
    return app


def call(app, method, path, body=None, auth=None):
    req = Request.blank(path, method=method, body=b"" if body is None else
                        (body if isinstance(body, bytes) else json.dumps(body).encode()))
    if auth is not None:
        req.headers["Authorization"] = auth
    resp = req.get_response(app.wsgi)
    return resp.status_int, json.loads(resp.body), resp.headers


def test_post_goes_through_the_apps_one_submit(monkeypatch):
    """The route calls ``RapierController.submit`` (the one submit path); without a
    running decision worker the coflow is decided before the reply."""
    app = make_app()
    seen, real = [], app.submit
    monkeypatch.setattr(app, "submit", lambda body: seen.append(body) or real(body))
    st, body, _ = call(app, "POST", "/rapier/v1/coflows", {"flows": [FLOW], "id": "a"})
    assert st == 201 and seen == [{"flows": [FLOW], "id": "a"}]
    assert body["coflow"]["decision"] == "scheduled" and app.core.queued() == []
    assert not hasattr(app, "submit_async")


# -----------------------------------------------------------------------------------
# bearer token on the controller
# -----------------------------------------------------------------------------------
def test_token_required_on_post_and_delete_only():
    app = make_app(rest_token=TOKEN)
    good = f"Bearer {TOKEN}"
    for auth in (None, "Bearer wrong-token-0000000000", TOKEN, f"Basic {TOKEN}",
                 f"Bearer {TOKEN}x", "Bearer \xe9"):
        st, err, hdrs = call(app, "POST", "/rapier/v1/coflows", {"flows": [FLOW]}, auth)
        assert (st, err["field"]) == (401, "authorization")
        assert hdrs["WWW-Authenticate"] == "Bearer"
    assert call(app, "GET", "/rapier/v1/coflows")[1]["coflows"] == []  # nothing accepted
    st, body, _ = call(app, "POST", "/rapier/v1/coflows", {"flows": [FLOW], "id": "a"}, good)
    assert st == 201 and body["id"] == "a"
    st, err, _ = call(app, "DELETE", "/rapier/v1/coflows/a")
    assert st == 401
    st, c, _ = call(app, "GET", "/rapier/v1/coflows/a")  # reads need no token
    assert st == 200 and c["state"] == "active"
    st, c, _ = call(app, "DELETE", "/rapier/v1/coflows/a", auth=f"bearer {TOKEN}")
    assert st == 200 and c["state"] == "cancelled"  # the scheme is case-insensitive


def test_head_works_where_get_does():
    """HEAD on every GET route (and on an unknown id, a bad id, an unknown path): the
    status and headers of the GET, no body, no token needed; 405s list HEAD in Allow."""
    app = make_app(rest_token=TOKEN)
    assert call(app, "POST", "/rapier/v1/coflows", {"flows": [FLOW], "id": "a"},
                f"Bearer {TOKEN}")[0] == 201
    seen = set()
    for path in ("/rapier/v1/coflows", "/rapier/v1/coflows?state=active",
                 "/rapier/v1/coflows/a", "/rapier/v1/coflows/nope", "/rapier/v1/coflows/%ff",
                 "/rapier/v1/topology", "/rapier/v1/topology/file", "/rapier/v1/schedule",
                 "/rapier/v1/health", "/rapier/v1/nothing-here"):
        got = {}
        for method in ("GET", "HEAD"):
            resp = Request.blank(path, method=method).get_response(app.wsgi)
            got[method] = (resp.status_int, resp.headers.get("Content-Type"),
                           resp.headers.get("Content-Length"), resp.body)
        assert got["HEAD"][:3] == got["GET"][:3] and got["HEAD"][3] == b"", (path, got)
        assert int(got["GET"][2]) == len(got["GET"][3]) > 0
        seen.add(got["GET"][0])
    assert {200, 400, 404} <= seen
    st, _, hdrs = call(app, "PUT", "/rapier/v1/schedule")
    assert st == 405 and hdrs["Allow"] == "GET, HEAD"


def test_no_token_configured_means_open_on_loopback():
    app = make_app()
    assert call(app, "POST", "/rapier/v1/coflows", {"flows": [FLOW]})[0] == 201


# -----------------------------------------------------------------------------------
# listen addresses
# -----------------------------------------------------------------------------------
class FakeConf(SimpleNamespace):
    """Ryu's CONF as far as configure_listeners uses it (Ryu's defaults)."""

    def __init__(self, **kw):
        super().__init__(**{"wsapi_host": "0.0.0.0", "wsapi_port": 8080,
                            "ofp_listen_host": "0.0.0.0", **kw})
        self.overrides = {}

    def set_override(self, name, value):
        self.overrides[name] = value
        setattr(self, name, value)

    def clear_override(self, name):
        self.overrides.pop(name, None)


def test_default_listen_addresses_are_loopback():
    conf = FakeConf()
    addrs = rest.configure_listeners(conf, Settings())
    assert addrs == {"rest_host": "127.0.0.1", "ofp_host": "127.0.0.1"}
    assert conf.overrides == {"wsapi_host": "127.0.0.1", "ofp_listen_host": "127.0.0.1"}
    # rest_port applies unless --wsapi-port was given
    conf = FakeConf()
    rest.configure_listeners(conf, Settings(rest_port=8181))
    assert conf.wsapi_port == 8181
    conf = FakeConf(wsapi_port=9000)
    rest.configure_listeners(conf, Settings(rest_port=8181))
    assert conf.wsapi_port == 9000


@pytest.mark.parametrize("host, loop", [("127.0.0.1", True), ("127.3.2.1", True),
                                        ("::1", True), ("[::1]", True), ("localhost", True),
                                        ("0.0.0.0", False), ("", False), ("::", False),
                                        ("10.0.0.1", False), ("example.org", False)])
def test_is_loopback(host, loop):
    assert rest.is_loopback(host) is loop


def test_off_loopback_needs_a_token():
    with pytest.raises(SettingsError, match="^rest_token: required"):
        rest.listen_addresses(Settings(rest_host="0.0.0.0"))
    with pytest.raises(SettingsError, match="^rest_token: required"):
        rest.listen_addresses(Settings(), wsapi_host="10.1.2.3")  # explicit --wsapi-host
    assert rest.listen_addresses(Settings(rest_host="0.0.0.0", rest_token=TOKEN)) == {
        "rest_host": "0.0.0.0", "ofp_host": "127.0.0.1"}
    # the command line wins over the config file, for both listeners
    assert rest.listen_addresses(Settings(rest_host="10.9.9.9", ofp_host="10.8.8.8",
                                          rest_token=TOKEN),
                                 wsapi_host="127.0.0.2", ofp_listen_host="10.7.7.7") == {
        "rest_host": "127.0.0.2", "ofp_host": "10.7.7.7"}
    # the app refuses to start
    with pytest.raises(SettingsError, match="rest_token"):
        make_app(rest_host="0.0.0.0")


@pytest.mark.parametrize("kw, name", [({"rest_token": "short"}, "rest_token"),
                                      ({"rest_token": "has space in the token"}, "rest_token"),
                                      ({"agent_token": "x" * 15}, "agent_token"),
                                      ({"max_body_bytes": 100}, "max_body_bytes"),
                                      ({"max_flows_per_coflow": 0}, "max_flows_per_coflow"),
                                      ({"ofp_host": ""}, "ofp_host")])
def test_security_settings_are_validated(kw, name):
    with pytest.raises(SettingsError, match=f"^{name}:"):
        Settings(**kw).validate()


def _listening_tcp(port: int):
    """Local addresses (IPv4 hex ``AABBCCDD`` as in /proc/net/tcp) listening on ``port``."""
    out = set()
    with open("/proc/net/tcp") as fh:
        for line in fh.read().splitlines()[1:]:
            parts = line.split()
            addr, p = parts[1].split(":")
            if int(p, 16) == port and parts[3] == "0A":  # TCP_LISTEN
                out.add(addr)
    return out


def _non_loopback_ipv4():
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True,
                             text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        ip = line.split()[3].split("/")[0]
        if not ip.startswith("127."):
            return ip
    return None


def test_real_ryu_manager_listens_on_loopback_only_and_wants_the_token(tmp_path):
    """``ryu-manager rapier_app.controller`` with no listen options: REST and OpenFlow
    sockets are bound to 127.0.0.1 (0100007F), not 0.0.0.0; a non-loopback address of
    this machine is refused; POST without the configured token is 401 over HTTP."""
    try:
        ryu, base, rest_port, of_port = start_controller(
            f"[rapier]\ntopology = leafspine:2,2,2\nscheduler = baseline\n"
            f"agent_url =\nstate_db = off\nrest_token = {TOKEN}\n", str(tmp_path))
    except ControllerError as exc:
        pytest.fail(str(exc))
    try:
        for _ in range(50):  # the OpenFlow listener starts with the apps
            if _listening_tcp(of_port):
                break
            time.sleep(0.1)
        assert _listening_tcp(rest_port) == {"0100007F"}
        assert _listening_tcp(of_port) == {"0100007F"}
        ip = _non_loopback_ipv4()
        if ip is not None:
            with pytest.raises(OSError):
                client.request(f"http://{ip}:{rest_port}", "GET", "/rapier/v1/health",
                               timeout=2)
        st, err = client.request(base, "POST", "/rapier/v1/coflows", {"flows": [FLOW]})
        assert st == 401 and err["field"] == "authorization"
        st, _ = client.request(base, "POST", "/rapier/v1/coflows",
                               {"flows": [{**FLOW, "dst": "h3"}]}, token=TOKEN)
        assert st == 201
        # non-UTF-8 escape and '..' as ids over the real server: 400, no traceback
        conn = http.client.HTTPConnection("127.0.0.1", rest_port, timeout=5)
        conn.request("HEAD", "/rapier/v1/health")  # HEAD over the real server
        resp = conn.getresponse()
        assert resp.status == 200 and int(resp.getheader("Content-Length")) > 0
        assert resp.read() == b""
        for path in ("/rapier/v1/coflows/%ff", "/rapier/v1/coflows/%2e%2e"):
            conn.request("GET", path)
            resp = conn.getresponse()
            body = json.loads(resp.read())
            assert resp.status == 400 and body["field"] == "id", (path, body)
        conn.close()
    finally:
        stop_controller(ryu)
        ryu.stdout.close()


@pytest.mark.parametrize("conf,option", [
    ("topology = file:{tmp}/bad.yaml", "topology"),  # a topology file that does not parse
    ("topology = leafspine:2,2,2\nmax_flows_per_coflow = abc", "max_flows_per_coflow"),
    ("topology = leafspine:2,2,2\nscheduler = no-such-scheduler", "scheduler"),
    ("topology = leafspine:2,2,2\nrest_host = 0.0.0.0", "rest_token"),
])
def test_real_controller_refuses_a_bad_config_in_one_line(tmp_path, conf, option):
    """``rapier-controller --config-file BAD`` (and ``ryu-manager rapier_app.controller``
    where the stack is Ryu): exit status 2 and one line ``rapier: <option>: ...``
    naming the option, no traceback."""
    from mininet_tests.ryuproc import free_port, manager_commands
    (tmp_path / "bad.yaml").write_text("switches: [\n")
    cfile = tmp_path / "controller.conf"
    cfile.write_text("[rapier]\nagent_url =\nstate_db = off\n"
                     + conf.format(tmp=tmp_path) + "\n")
    for cmd in manager_commands("--config-file", str(cfile), "--wsapi-port", str(free_port()),
                                "--ofp-tcp-listen-port", str(free_port())):
        res = subprocess.run(cmd, cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=60)
        out = res.stdout.decode(errors="replace")
        assert res.returncode == 2, (cmd[0], out[-2000:])
        assert "Traceback" not in out, out[-2000:]
        mine = [line for line in out.splitlines() if line.startswith("rapier: ")]
        assert len(mine) == 1 and mine[0].startswith(f"rapier: {option}: "), out[-2000:]
        assert out.rstrip().splitlines()[-1] == mine[0]


# -----------------------------------------------------------------------------------
# agent
# -----------------------------------------------------------------------------------
class Recorder:
    def __init__(self):
        self.cmds = []

    def __call__(self, cmd):
        self.cmds.append(cmd)


def limit(fid="1/0", port=5001):
    return {"flow_id": fid, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.4", "proto": "tcp",
            "dst_port": port, "rate_bps": 1e6}


@pytest.fixture
def tcp_agent():
    rec = Recorder()
    enf = agent.Enforcer("h1-eth0", runner=rec)
    enf.start()
    srv = agent.make_server("127.0.0.1:0", enf, token=TOKEN)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", rec, enf
    finally:
        srv.shutdown()
        srv.server_close()


def test_agent_on_tcp_requires_the_token(tcp_agent):
    base, rec, enf = tcp_agent
    assert client.request(base, "GET", "/v1/health")[0] == 200  # liveness stays open
    n = len(rec.cmds)
    for tok in ("", "wrong-token-000000000000"):
        assert client.request(base, "PUT", "/v1/flows", {"flows": [limit()]}, token=tok)[0] == 401
        assert client.request(base, "DELETE", "/v1/flows", token=tok)[0] == 401
        assert client.request(base, "GET", "/v1/flows", token=tok)[0] == 401
    assert len(rec.cmds) == n and enf.snapshot() == []
    st, obj = client.request(base, "PUT", "/v1/flows", {"flows": [limit()]}, token=TOKEN)
    assert st == 200 and obj["commands"] == 2


def test_stalled_unauthenticated_connections_do_not_hold_the_agents_workers(tcp_agent):
    """8 connections (the default pool) send a PUT's headers without a token and with a
    large ``Content-Length``, then nothing: each gets 401 and is closed at once (the
    body is never awaited), and authenticated pushes are served within 100 ms."""
    base, rec, enf = tcp_agent
    port = int(base.rsplit(":", 1)[1])
    assert agent.DEFAULT_WORKERS == 8
    stalled = []
    try:
        for _ in range(agent.DEFAULT_WORKERS):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"PUT /v1/flows HTTP/1.1\r\nHost: agent\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
            stalled.append(s)
        for s in stalled:
            s.settimeout(2)
            reply = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break  # closed by the agent without waiting for the body
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 401 "), reply[:80]
        took = []
        for i in range(5):
            t0 = time.monotonic()
            st, _ = client.request(base, "PUT", "/v1/flows", {"flows": [limit(port=5001 + i)]},
                                   token=TOKEN, timeout=5)
            took.append(time.monotonic() - t0)
            assert st == 200
        assert sorted(took)[2] < 0.1, took
        assert len(enf.snapshot()) == 1
    finally:
        for s in stalled:
            s.close()


def test_agent_head_is_get_without_a_body(tcp_agent):
    """HEAD works where GET does (same status and headers, no body), with the same
    token rule: open on /v1/health, 401 without the token elsewhere."""
    base, rec, enf = tcp_agent
    port = int(base.rsplit(":", 1)[1])
    for path, auth, want in (("/v1/health", None, 200), ("/v1/flows", None, 401),
                             ("/v1/flows", TOKEN, 200), ("/v1/nope", TOKEN, 404)):
        hdrs = {"Authorization": f"Bearer {auth}"} if auth else {}
        got = {}
        for method in ("GET", "HEAD"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request(method, path, headers=hdrs)
            resp = conn.getresponse()
            got[method] = (resp.status, resp.getheader("Content-Type"),
                           resp.getheader("Content-Length"), resp.read())
            conn.close()
        assert got["GET"][0] == want, (path, got)
        assert got["HEAD"][:3] == got["GET"][:3] and got["HEAD"][3] == b"", (path, got)
        assert int(got["GET"][2]) == len(got["GET"][3]) > 0


def test_agent_refuses_tcp_without_token_and_bad_tokens():
    enf = agent.Enforcer("h1-eth0", runner=Recorder())
    with pytest.raises(ValueError, match="^token: required on TCP"):
        agent.make_server("127.0.0.1:0", enf)
    with pytest.raises(ValueError, match="^token:"):
        agent.make_server("127.0.0.1:0", enf, token="short")
    assert agent.DEFAULT_LISTEN.startswith("unix:")


def test_agent_main_refuses_tcp_without_token(monkeypatch, capsys):
    monkeypatch.delenv(agent.TOKEN_ENV, raising=False)
    assert agent.main(["--iface", "eth9", "--listen", "127.0.0.1:0"]) == 2
    assert "token: required on TCP" in capsys.readouterr().err


def test_read_token(tmp_path):
    f = tmp_path / "tok"
    f.write_text(TOKEN + "\nignored\n")
    assert agent.read_token(str(f), {}) == TOKEN
    assert agent.read_token(None, {agent.TOKEN_ENV: f" {TOKEN} "}) == TOKEN
    assert agent.read_token(None, {}) == ""
    with pytest.raises(ValueError, match="^token-file:"):
        agent.read_token(str(tmp_path / "missing"), {})


def test_agent_unix_socket_is_0600_and_only_a_socket_is_replaced(tmp_path):
    enf = agent.Enforcer("h1-eth0", runner=Recorder())
    path = str(tmp_path / "a.sock")
    srv = agent.make_server("unix:" + path, enf)
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    finally:
        srv.server_close()
    srv = agent.make_server("unix:" + path, enf)  # a stale socket is replaced
    srv.server_close()
    os.unlink(path)
    other = tmp_path / "not-a-socket"
    other.write_text("keep me")
    with pytest.raises(OSError, match="not a socket"):
        agent.make_server(f"unix:{other}", enf)
    assert other.read_text() == "keep me"


def test_agent_pool_is_bounded_and_idle_connections_time_out():
    """2 workers, 2 s timeout: two authenticated PUTs whose body never comes hold
    both workers; a third request gets 503 after waiting BUSY_WAIT_S (1 s); the
    stalled ones are closed by the server after the timeout, and then requests are
    served again.  Idle connections (nothing sent) hold no worker: requests are
    served beside them, and they are closed after the timeout too."""
    enf = agent.Enforcer("h1-eth0", runner=Recorder())
    srv = agent.make_server("127.0.0.1:0", enf, token=TOKEN, workers=2, timeout_s=2.0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    base = f"http://127.0.0.1:{port}"
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
    busy = []
    try:
        assert client.request(base, "GET", "/v1/health", timeout=5)[0] == 200
        for _ in range(2):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"PUT /v1/flows HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer "
                      + TOKEN.encode() + b"\r\nContent-Length: 100\r\n\r\n{")
            busy.append(s)
        time.sleep(0.2)  # both are on a worker, reading the body
        t0 = time.monotonic()
        st, obj = client.request(base, "GET", "/v1/health", timeout=5)
        assert st == 503 and "busy" in obj["error"]
        assert agent.BUSY_WAIT_S <= time.monotonic() - t0 < 2.0
        for s in busy + idle:
            s.settimeout(5)
            assert s.recv(1) == b""  # closed by the server
        assert time.monotonic() - t0 < 3.5
        assert client.request(base, "GET", "/v1/health", timeout=5)[0] == 200
    finally:
        for s in busy + idle:
            s.close()
        srv.shutdown()
        srv.server_close()


# -----------------------------------------------------------------------------------
# input limits (pure functions)
# -----------------------------------------------------------------------------------
def test_short_quotes_at_most_64_characters():
    assert httpjson.short("abc") == "'abc'"
    long = httpjson.short("x" * 10_000)
    assert len(long) <= 64 + 3 and "..." in long
    nested = [[[[[[["deep"]]]]]]]
    assert httpjson.short(nested) == "[[[...]]]"
    assert len(httpjson.short(10 ** 4000)) <= 67


@pytest.mark.parametrize("v, ok", [(1, True), (10 ** 15, True), (10 ** 15 + 1, False),
                                   (10 ** 400, False), (-(10 ** 400), False), (0.5, False),
                                   (float("nan"), False), (float("inf"), False),
                                   (True, False), ("5", False)])
def test_number_in_range_is_exact_for_any_int(v, ok):
    assert validation.number_in_range(v, 1, validation.MAX_SIZE_BYTES) is ok


@pytest.mark.parametrize("cid, ok", [("a", True), ("9", True), ("job-7.x:1_2", True),
                                     ("a" * 128, True), ("a" * 129, False), (".", False),
                                     ("..", False), ("-a", False), ("_a", False),
                                     ("a/b", False), ("\xff", False), ("a b", False),
                                     ("", False), ("a\n", False), ("a\nb", False)])
def test_coflow_id_pattern(cid, ok):
    if ok:
        assert validation.check_coflow_id(cid) == cid
    else:
        with pytest.raises(httpjson.RequestError) as ei:
            validation.check_coflow_id(cid)
        assert ei.value.status == 400 and ei.value.field == "id"


@pytest.mark.parametrize("body, status, field", [
    ({"flows": [{**FLOW, "size_bytes": 10 ** 309}]}, 400, "flows[0].size_bytes"),
    ({"flows": [FLOW], "weight": 10 ** 309}, 400, "weight"),
    ({"flows": [FLOW], "weight": 1e-7}, 400, "weight"),
    ({"flows": [FLOW], "id": ".."}, 400, "id"),
    ({"flows": [FLOW], "id": 10 ** 200}, 400, "id"),
    (b'{"flows": [], "weight": NaN}', 400, "body"),
    (b"[" * 3000 + b"]" * 3000, 400, "body"),
    ({"flows": [{**FLOW, "dst_port": p} for p in range(1, 12)]}, 413, "flows"),
    ({"flows": [FLOW], "id": "x" * 9000}, 413, "body"),
])
def test_post_limits_answer_4xx_naming_the_field(body, status, field):
    app = make_app(max_body_bytes=8192, max_flows_per_coflow=10)
    st, err, _ = call(app, "POST", "/rapier/v1/coflows", body)
    assert (st, err["field"]) == (status, field)
    assert len(err["error"]) < 200
    assert call(app, "GET", "/rapier/v1/coflows")[1]["coflows"] == []


def test_non_utf8_id_in_the_url_is_400_not_a_traceback():
    app = make_app()
    req = Request.blank("/")
    req.environ["PATH_INFO"] = "/rapier/v1/coflows/\xff"  # what eventlet makes of %ff
    resp = req.get_response(app.wsgi)
    assert resp.status_int == 400 and json.loads(resp.body)["field"] == "id"
    assert b"Traceback" not in resp.body


def test_controller_sends_agent_token_to_agents_on_tcp(tcp_agent):
    """agent_client with and without the token; the app's pusher sends ``agent_token``
    (one agent on TCP stands for every host: the URL has no placeholder)."""
    from rapier_app.controller import agent_client

    base, _, enf = tcp_agent
    body = json.dumps({"flows": [limit()]}).encode()
    with pytest.raises(agent_client.AgentError, match="401"):
        agent_client.put_flows(base, body, 2.0)
    assert agent_client.put_flows(base, body, 2.0, token=TOKEN)["commands"] == 2
    agent_client.put_flows(base, b'{"flows": []}', 2.0, token=TOKEN)
    app = make_app(agent_url=base, agent_token=TOKEN)
    st, _, _ = call(app, "POST", "/rapier/v1/coflows", {"flows": [FLOW], "id": "t"})
    assert st == 201
    app.push_pending()
    assert [f["flow_id"] for f in enf.snapshot()] == ["t/0"]
