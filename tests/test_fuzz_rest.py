"""Fuzz tests (hypothesis) of every REST route of the controller and of the host agent
(issue 14, "Done means"): at least 2,000 generated requests each, 0 responses >= 500,
and 0 state change from a rejected request (nor from any GET).

* Controller: the Ryu app built in-process (as in ``test_controller_app.py``), its WSGI
  application called with webob requests whose ``PATH_INFO`` is set raw (as eventlet
  hands it over: percent-escapes decoded as latin-1, so ``%ff`` arrives as ``\\xff``);
  fake datapaths record every OpenFlow message.  A token is configured, so that
  POST/DELETE go through the 401 check with no, wrong and right tokens.  State
  snapshot: the coflow and schedule views, the schedule count and the number of
  messages sent to the switches.
* Agent: a real server on a Unix socket (in-process thread) with a recording fake
  ``tc``; requests are sent with :mod:`http.client` (methods, percent-escaped ids,
  raw bodies, headers).  State snapshot: the limits in force and the number of tc
  commands run.

Requests mix valid requests, valid requests with one field mutated (huge integers,
``NaN``, strings, nesting), random JSON, random bytes, deep nesting (~1000 levels) and
bodies over the caps (``max_body_bytes`` 4096 / ``--max-body-bytes`` 4096, 8 flows).
Derandomized with no example database.  (Hypothesis also draws literals found in the
imported modules, so the exact requests, and the counts printed with ``-s``, differ a
little with what else the session imported.)  1,000 examples of 2-3 requests: at
least 2,000 requests per target.
About 15 s CPU for both; 35-55 s wall on this 2-core machine under load.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import tempfile
import threading
from collections import Counter
from types import SimpleNamespace
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webob import Request

import rapier_app.controller as controller_pkg
from enforcement import agent
from rapier_app.controller.settings import Settings
from test_controller_fakes import FakeDatapath  # records what is sent

TOKEN = "fuzz-token-0123456789abcdef"
FUZZ = settings(max_examples=1000, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

# -----------------------------------------------------------------------------------
# shared strategies
# -----------------------------------------------------------------------------------
HUGE = [10 ** 309, -(10 ** 309), 10 ** 400, 2 ** 64, 2 ** 63 - 1, 10 ** 4000]
weird_numbers = st.one_of(
    st.sampled_from(HUGE), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1, 0.5, 1e-300, 1e300, 1e15, 1e15 + 1, 65535, 65536, True, False]))
json_scalars = st.one_of(st.none(), st.booleans(), weird_numbers, st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=12)


def _report(name, seen, keys) -> None:
    """Print the request count and the statuses (shown with ``pytest -s``)."""
    by_status = Counter()
    for k in keys:
        by_status[k[2]] += seen[k]
    print(f"\n{name} fuzz: {seen['total']} requests; statuses "
          f"{dict(sorted(by_status.items()))}")


def _dump(obj) -> bytes:
    return json.dumps(obj).encode()


def raw_bodies():
    """Bodies that are not (standard) JSON objects, or are too big or too deep."""
    deep = st.integers(min_value=900, max_value=3000).map(
        lambda n: b"[" * n + b"]" * n)
    deep_obj = st.integers(min_value=900, max_value=3000).map(
        lambda n: b'{"flows": ' + b"[" * n + b"]" * n + b"}")
    return st.one_of(
        st.binary(max_size=64), deep, deep_obj,
        st.sampled_from([b"", b"{", b"null", b"[]", b'{"flows": NaN}', b'{"weight": Infinity}',
                         b"\xff\xfe{}", b'{"id": "\xff"}', b"1" * 5000,
                         b'{"flows": []}', b" " * 5000]),
        json_values.map(_dump))


# -----------------------------------------------------------------------------------
# controller
# -----------------------------------------------------------------------------------
HOSTS = [f"h{i}" for i in range(1, 10)] + [f"10.0.0.{i}" for i in range(1, 10)]
FLOW_KEYS = ("src", "dst", "size_bytes", "dst_port", "src_port", "protocol")


@st.composite
def coflow_bodies(draw):
    """A valid POST /coflows body, then maybe one field broken."""
    n = draw(st.integers(min_value=1, max_value=4))
    flows = []
    for _ in range(n):
        s = draw(st.integers(0, 8))
        d = (s + draw(st.integers(1, 8))) % 9  # another host (same: a mutation's job)
        flows.append({"src": HOSTS[s + 9 * draw(st.integers(0, 1))],
                      "dst": HOSTS[d + 9 * draw(st.integers(0, 1))],
                      "size_bytes": draw(st.integers(min_value=1, max_value=10 ** 9)),
                      "dst_port": draw(st.integers(min_value=1, max_value=65535))})
    for f in flows:  # flows known by their source port, UDP, unknown sizes
        if draw(st.integers(0, 3)) == 0:
            f["src_port"] = draw(st.integers(min_value=1, max_value=65535))
            if draw(st.booleans()):
                del f["dst_port"]
        if draw(st.integers(0, 5)) == 0:
            f["protocol"] = "udp"
        if draw(st.integers(0, 4)) == 0:
            f["size_bytes"] = None
    body = {"flows": flows}
    if draw(st.integers(0, 3)) == 0:  # an open coflow (POST .../flows adds to it)
        body["open"] = True
        if draw(st.booleans()):
            body["name"] = draw(st.text(max_size=70))
    if draw(st.booleans()):
        body["weight"] = draw(st.floats(min_value=0.5, max_value=4))
    if draw(st.integers(0, 3)) == 0:
        body["id"] = draw(st.sampled_from(["job", "c1", "c2", "a.b", "x:y-z_1", "9"]))
    how = draw(st.sampled_from(["none"] * 6 + ["flow_field", "top_field", "extra",
                                               "drop", "many_flows", "big_body"]))
    if how == "flow_field":
        i = draw(st.integers(min_value=0, max_value=n - 1))
        flows[i][draw(st.sampled_from(FLOW_KEYS))] = draw(json_values)
    elif how == "top_field":
        body[draw(st.sampled_from(["id", "weight", "flows", "open", "name"]))] = \
            draw(json_values)
    elif how == "extra":
        body[draw(st.text(max_size=10))] = draw(json_values)
    elif how == "drop":
        flows[0].pop(draw(st.sampled_from(FLOW_KEYS)), None)
    elif how == "many_flows":
        body["flows"] = [dict(flows[0], dst_port=p) for p in range(1, 10)]  # cap: 8
    elif how == "big_body":
        body["id"] = "x" * 5000  # body cap: 4096 bytes
    return _dump(body)


@st.composite
def add_bodies(draw):
    """A POST /coflows/<id>/flows body: one or two flows, maybe one field broken."""
    flows = []
    for _ in range(draw(st.integers(1, 2))):
        s = draw(st.integers(0, 8))
        f = {"src": HOSTS[s], "dst": HOSTS[(s + draw(st.integers(1, 8))) % 9],
             "src_port": draw(st.integers(min_value=1, max_value=65535))}
        if draw(st.booleans()):
            f["dst_port"] = draw(st.integers(min_value=1, max_value=65535))
        if draw(st.booleans()):
            f["size_bytes"] = draw(st.integers(min_value=1, max_value=10 ** 9))
        flows.append(f)
    if draw(st.integers(0, 3)) == 0:
        flows[0][draw(st.sampled_from(FLOW_KEYS))] = draw(json_values)
    return _dump({"flows": flows})


RAW_BODIES = raw_bodies()
ADD_BODIES = add_bodies()
#: Built once: strategies built inside a draw are validated again at every draw.
CONTROLLER_BODIES = st.one_of(coflow_bodies(), coflow_bodies(), RAW_BODIES)

query_strings = st.one_of(
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["limit", "offset", "state", "x"]),
              st.one_of(st.sampled_from(["0", "1", "2", "999999999", "10000000000", "-1",
                                         "active", "done,cancelled", "finished", "bogus",
                                         "%ff", "1e3", ""]),
                        st.binary(max_size=8).map(lambda b: quote(b, safe="")))),
    st.binary(max_size=16).map(lambda b: b.decode("latin-1")))

#: Stands for the open coflow each example creates first (``o<n>``, see the test).
OPEN_ID = "OPEN"
path_ids = st.one_of(
    st.just(OPEN_ID),
    st.sampled_from(["c1", "c2", "c3", "job", "a.b", ".", "..", "-x", "x" * 129, "x" * 128]),
    st.binary(min_size=1, max_size=24).map(lambda b: b.decode("latin-1")),
    st.text(min_size=1, max_size=24))

ROUTES = ["/rapier/v1/coflows", "/rapier/v1/coflows/{id}", "/rapier/v1/coflows/{id}/flows",
          "/rapier/v1/coflows/{id}/close", "/rapier/v1/topology",
          "/rapier/v1/schedule", "/rapier/v1/health", "/rapier/v1/{id}", "/rapier/v2/coflows"]
METHODS = ["GET", "POST", "DELETE", "PUT", "PATCH"]


@st.composite
def controller_requests(draw):
    route = draw(st.sampled_from(ROUTES[:1] * 6 + ROUTES))  # most weight on POST
    method = draw(st.sampled_from(METHODS))
    if route.startswith("/rapier/v1/coflows") and route != "/rapier/v1/coflows/{id}" \
            and draw(st.integers(0, 3)) > 0:
        method = "POST"
    pid = OPEN_ID if route.endswith(("/flows", "/close")) and draw(st.booleans()) \
        else draw(path_ids)
    path = route.replace("{id}", pid) if "{id}" in route else route
    if route.endswith("/flows") and draw(st.booleans()):
        body = draw(ADD_BODIES)
    elif method in ("POST", "PUT", "PATCH") or draw(st.integers(0, 9)) == 0:
        body = draw(CONTROLLER_BODIES)
    else:
        body = b""
    auth = draw(st.sampled_from([f"Bearer {TOKEN}"] * 20 + [None, "Bearer wrong", TOKEN,
                                                             f"Basic {TOKEN}", "Bearer \xff"]))
    query = draw(st.one_of(st.just(""), st.just(""), query_strings))
    return method, route, path, body, auth, query


def _controller():
    app = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler="baseline", topology="leafspine:3,3,3", agent_url="", rest_token=TOKEN,
        max_body_bytes=4096, max_flows_per_coflow=8, state_db=":memory:"))
    dps = []
    for s in app.core.topology.switches:
        dp = FakeDatapath(app.core.topology.graph.nodes[s]["dpid"])
        app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
        dps.append(dp)
    return app, dps


def _controller_state(app, dps):
    core = app.core
    return (json.dumps(core.coflows_view(), sort_keys=True),
            json.dumps(core.schedule_view(), sort_keys=True, default=str),
            core.schedule_count, sum(len(dp.sent) for dp in dps))


def _call(app, method, path, body, auth, query=""):
    req = Request.blank("/", method=method, body=body,
                        headers={"Content-Type": "application/json"})
    req.environ["PATH_INFO"] = path  # raw, as eventlet.wsgi sets it
    req.environ["QUERY_STRING"] = query
    if auth is not None:
        req.environ["HTTP_AUTHORIZATION"] = auth
    return req.get_response(app.wsgi)


def test_controller_fuzz_no_5xx_and_rejected_requests_change_nothing():
    seen = Counter()
    box = {}

    @FUZZ
    @given(reqs=st.lists(controller_requests(), min_size=2, max_size=3))
    def run(reqs):
        # a fresh controller every 50 examples: the state snapshot stays cheap
        if seen["examples"] % 50 == 0:
            box["app"], box["dps"] = _controller()
        seen["examples"] += 1
        app, dps = box["app"], box["dps"]
        open_id = f"o{seen['examples']}"
        assert _call(app, "POST", "/rapier/v1/coflows", _dump({"id": open_id, "open": True}),
                     f"Bearer {TOKEN}").status_int == 201
        for method, route, path, body, auth, query in reqs:
            path = path.replace(OPEN_ID, open_id)
            before = _controller_state(app, dps)
            resp = _call(app, method, path, body, auth, query)
            status = resp.status_int
            seen["total"] += 1
            seen[(method, route, status)] += 1
            assert status < 500, (method, path[:80], query, body[:200], resp.body[:300])
            if route.startswith("/rapier/v1/"):
                assert resp.content_type == "application/json", (method, path[:80], status)
                if status >= 400:
                    err = json.loads(resp.body)
                    assert len(err["error"]) < 400  # a short prefix of the input at most
            if status >= 400 or method == "GET":
                assert _controller_state(app, dps) == before, (method, path[:80], body[:200])
        # keep the registry small: cancel what the fuzz accepted
        for c in app.core.active():
            app.cancel(c.coflow_id)

    run()
    keys = [k for k in seen if isinstance(k, tuple)]
    _report("controller", seen, keys)
    assert seen["total"] >= 2000
    statuses = {k[2] for k in keys}
    # every route was requested, and every kind of answer occurred
    assert {k[1] for k in keys} == set(ROUTES)
    assert {200, 201, 400, 401, 404, 405, 409, 413} <= statuses, statuses
    assert seen[("POST", "/rapier/v1/coflows/{id}/flows", 201)] >= 1, seen
    assert seen[("POST", "/rapier/v1/coflows", 201)] >= 20, seen  # valid ones got in


# -----------------------------------------------------------------------------------
# agent
# -----------------------------------------------------------------------------------
IPS = ["10.0.0.1", "10.0.0.2", "10.0.0.4", "192.168.1.7"]
LIMIT_KEYS = ("flow_id", "src_ip", "dst_ip", "proto", "dst_port", "src_port", "rate_bps")


@st.composite
def limit_objects(draw, fid=None):
    return {"flow_id": fid or draw(st.sampled_from(["1/0", "1/1", "a", "job/3", "x.y"])),
            "src_ip": draw(st.sampled_from(IPS)), "dst_ip": draw(st.sampled_from(IPS)),
            "proto": draw(st.sampled_from(["tcp", "udp"])),
            "dst_port": draw(st.one_of(st.none(), st.integers(1, 65535))),
            "rate_bps": draw(st.one_of(st.integers(0, 10 ** 10), st.floats(0, 1e11)))}


@st.composite
def agent_bodies(draw):
    n = draw(st.integers(min_value=0, max_value=4))
    flows = [dict(draw(LIMITS), flow_id=f"{i}/0", dst_port=5000 + i)
             for i in range(n)]
    how = draw(st.sampled_from(["none", "none", "field", "extra", "many", "big", "single"]))
    if how == "field" and flows:
        flows[0][draw(st.sampled_from(LIMIT_KEYS))] = draw(json_values)
    elif how == "extra":
        flows.append(draw(json_values))
    elif how == "many":
        flows = [dict(draw(LIMITS), flow_id=f"f{i}", dst_port=i + 1)
                 for i in range(10)]  # --max-flows 8
    elif how == "big":
        return _dump({"flows": flows, "pad": "x" * 5000})  # --max-body-bytes 4096
    elif how == "single":
        obj = draw(LIMITS)
        if draw(st.booleans()):
            obj[draw(st.sampled_from(LIMIT_KEYS))] = draw(json_values)
        return _dump(obj)
    return _dump({"flows": flows})


LIMITS = limit_objects()
AGENT_BODIES = st.one_of(agent_bodies(), agent_bodies(), RAW_BODIES)
AGENT_ROUTES = ["/v1/health", "/v1/flows", "/v1/flows/{id}", "/v1/{id}", "/v2/flows", "/"]
agent_ids = st.one_of(st.sampled_from(["1/0", "1%2F0", "a", "job/3", ".", "..", "%ff"]),
                      st.binary(min_size=1, max_size=16).map(lambda b: quote(b, safe="")))


@st.composite
def agent_requests(draw):
    route = draw(st.sampled_from(AGENT_ROUTES[1:3] * 3 + AGENT_ROUTES))
    method = draw(st.sampled_from(["GET", "PUT", "DELETE", "POST", "PATCH"]))
    if route.startswith("/v1/flows") and draw(st.integers(0, 3)) > 0:
        method = "PUT"
    path = route.replace("{id}", draw(agent_ids)) if "{id}" in route else route
    body = draw(AGENT_BODIES) if method in ("PUT", "POST", "PATCH") else b""
    auth = draw(st.sampled_from([f"Bearer {TOKEN}"] * 12 + [None, "Bearer nope", TOKEN]))
    return method, route, path, body, auth


class _Recorder:
    """Fake tc: records every command."""

    def __init__(self):
        self.cmds = []

    def __call__(self, cmd):
        self.cmds.append(cmd)


@pytest.fixture
def agent_server():
    rec = _Recorder()
    enf = agent.Enforcer("h1-eth0", runner=rec)
    enf.start()
    d = tempfile.mkdtemp(prefix="rapier-fuzz-")
    path = os.path.join(d, "agent.sock")
    srv = agent.make_server("unix:" + path, enf, token=TOKEN, workers=4, timeout_s=5,
                            max_body_bytes=4096, max_flows=8)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield path, rec, enf
    finally:
        srv.shutdown()
        srv.server_close()
        os.unlink(path)
        os.rmdir(d)


def _agent_call(sock_path, method, path, body, auth):
    """One request on a new connection, written by hand (any method, path, body); the
    answer is read even when the agent answered early (401, 413) and closed before the
    whole body was sent."""
    head = [f"{method} {path} HTTP/1.1", "Host: agent", "Content-Type: application/json",
            f"Content-Length: {len(body)}", "Connection: close"]
    if auth is not None:
        head.append(f"Authorization: {auth}")
    data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(sock_path)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = http.client.HTTPResponse(s)
        resp.begin()
        return resp.status, resp.read()
    finally:
        s.close()


def test_agent_fuzz_no_5xx_and_rejected_requests_change_nothing(agent_server):
    sock, rec, enf = agent_server
    seen = Counter()

    @FUZZ
    @given(reqs=st.lists(agent_requests(), min_size=2, max_size=3))
    def run(reqs):
        for method, route, path, body, auth in reqs:
            before = (json.dumps(enf.snapshot()), len(rec.cmds))
            status, raw = _agent_call(sock, method, path, body, auth)
            seen["total"] += 1
            seen[(method, route, status)] += 1
            assert status < 500, (method, path, body[:200], raw[:300])
            obj = json.loads(raw)
            assert len(obj.get("error", "")) < 400
            if status >= 400 or method == "GET":
                assert (json.dumps(enf.snapshot()), len(rec.cmds)) == before, (method, path)

    run()
    keys = [k for k in seen if isinstance(k, tuple)]
    _report("agent", seen, keys)
    assert seen["total"] >= 2000
    assert {k[1] for k in keys} == set(AGENT_ROUTES)
    statuses = {k[2] for k in keys}
    assert {200, 400, 401, 404, 405, 413} <= statuses, statuses
    assert seen[("PUT", "/v1/flows", 200)] >= 20, seen
