"""``GET /metrics``: the controller's Prometheus metrics (rapier_app/controller/metrics.py).

In-process app on Ryu's WSGI router (as tests/test_controller_app.py); each scrape is
parsed with ``prometheus_client``'s own parser and checked against what the REST
views say (coflow states, CCTs, decisions, link capacities and scheduled rates).
"""

from __future__ import annotations

import ast
import json
import os
from types import SimpleNamespace

import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families
from webob import Request

from rapier_app.controller import agent_client
from test_rest_security import make_app as rest_security_app

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "s3cret-token-for-tests-0123"
MB = 1 << 20
STEP_S = 0.003  # every decision takes this long on the fake wall clock


def make_app(**kw):
    """test_rest_security's in-process app, with ``rapier`` unless told otherwise."""
    return rest_security_app(**{"scheduler": "rapier", **kw})


def fake_wall_clock(step_s):
    """A wall clock advancing ``step_s`` per reading: every decision (two readings)
    takes exactly ``step_s``."""
    t = [0.0, 0]

    def clock():
        t[1] += 1
        if t[1] % 2 == 0:
            t[0] += step_s
        return t[0]
    return clock


def call(app, method, path, body=None, auth=None):
    req = Request.blank(path, method=method, body=b"" if body is None else
                        json.dumps(body).encode())
    if auth is not None:
        req.headers["Authorization"] = auth
    resp = req.get_response(app.wsgi)
    return resp


def rest(app, method, path, body=None):
    resp = call(app, method, path, body)
    return resp.status_int, json.loads(resp.body)


def scrape(app):
    """``GET /metrics`` parsed: {(sample name, sorted labels): value}."""
    resp = call(app, "GET", "/metrics")
    assert resp.status_int == 200
    assert resp.headers["Content-Type"] == CONTENT_TYPE_LATEST
    out = {}
    for fam in text_string_to_metric_families(resp.body.decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def val(m, name, **labels):
    return m[(name, tuple(sorted(labels.items())))]


def flow(src, dst, size, port=5001):
    return {"src": src, "dst": dst, "size_bytes": size, "dst_port": port}


def test_metrics_follow_coflows_decisions_and_links():
    app = make_app()
    app.core.wall_clock = fake_wall_clock(STEP_S)
    topo = app.core.topology
    m = scrape(app)
    assert [val(m, "rapier_coflows", state=s) for s in ("active", "done", "cancelled")] == [0, 0, 0]
    assert val(m, "rapier_coflow_completion_seconds_count") == 0
    # decisions taken at startup (restore), on the real clock, before the fake one
    n0, sum0 = app.core.schedule_count, val(m, "rapier_decision_seconds_sum")
    assert val(m, "rapier_decision_seconds_count") == n0
    # per-link capacity is the topology's, for every directed link
    caps = {(lab[0][1], lab[1][1]): v for (n, lab), v in m.items()
            if n == "rapier_link_capacity_bps"}
    assert caps == {(u, v): float(topo.graph.edges[u, v]["capacity_bps"]) for u, v in topo.links}
    assert len(caps) == len(topo.links) > 0

    bodies = {"a": [flow("h1", "h5", 20 * MB)],
              "b": [flow("h2", "h6", 30 * MB), flow("h3", "h9", 10 * MB, 5002)],
              "c": [flow("h4", "h8", 40 * MB)]}
    for cid, flows in bodies.items():
        assert rest(app, "POST", "/rapier/v1/coflows", {"id": cid, "flows": flows})[0] == 201
    m = scrape(app)
    assert val(m, "rapier_coflows", state="active") == 3
    assert val(m, "rapier_flows", state="active") == 4 and val(m, "rapier_flows", state="done") == 0
    # scheduled rate per link = the sum of /schedule's allocations crossing it
    _, sched = rest(app, "GET", "/rapier/v1/schedule")
    want = {e: 0.0 for e in topo.links}
    for a in sched["allocations"].values():
        for e in zip(a["path"], a["path"][1:]):
            want[e] += a["rate_bps"]
    assert sum(want.values()) > 0
    for (u, v), bps in want.items():
        assert val(m, "rapier_link_scheduled_bps", src=u, dst=v) == pytest.approx(bps)
        assert val(m, "rapier_link_residual_bps", src=u, dst=v) == pytest.approx(
            caps[(u, v)] - bps)

    # finish a and b (every flow reported done by its receiver)
    for cid in ("a", "b"):
        for i in range(len(bodies[cid])):
            st, body = rest(app, "POST", f"/rapier/v1/coflows/{cid}/flows/{i}/done")
            assert st == 200
    ccts = [rest(app, "GET", f"/rapier/v1/coflows/{cid}")[1]["cct_s"] for cid in ("a", "b")]
    assert all(c is not None and c > 0 for c in ccts)
    assert rest(app, "DELETE", "/rapier/v1/coflows/c")[0] == 200
    m = scrape(app)
    assert [val(m, "rapier_coflows", state=s) for s in ("active", "done", "cancelled")] == [0, 2, 1]
    assert val(m, "rapier_flows", state="done") == 3
    assert val(m, "rapier_coflow_completion_seconds_count") == 2
    assert val(m, "rapier_coflow_completion_seconds_sum") == pytest.approx(sum(ccts), rel=1e-12)
    n = app.core.schedule_count
    assert n - n0 >= 4  # 3 arrivals + at least one completion
    assert val(m, "rapier_decision_seconds_count") == n
    assert val(m, "rapier_decision_seconds_sum") - sum0 == pytest.approx((n - n0) * STEP_S)
    assert val(m, "rapier_decision_seconds_bucket", le="0.0025") == n0
    assert val(m, "rapier_decision_seconds_bucket", le="0.005") == n
    assert val(m, "rapier_decisions_over_budget_total") == 0
    assert all(val(m, "rapier_coflows_fallback_total", reason=r) == 0
               for r in ("budget", "scheduler_error", "scheduler", "background"))
    # nothing left scheduled once every coflow ended
    assert all(val(m, "rapier_link_scheduled_bps", src=u, dst=v) == 0 for u, v in topo.links)


def test_budget_and_failures_are_counted_by_reason(monkeypatch):
    app = make_app(decision_budget_s=0.05)
    app.core.wall_clock = fake_wall_clock(0.2)
    assert rest(app, "POST", "/rapier/v1/coflows", {"id": "a", "flows": [flow("h1", "h5", MB)]}
                )[0] == 201
    m = scrape(app)
    assert val(m, "rapier_decisions_over_budget_total") == 1
    # over budget, the decision is applied: no coflow goes to default forwarding
    assert val(m, "rapier_coflows_fallback_total", reason="budget") == 0
    # the startup decision (real clock) is under 0.1 s, the one of "a" is not
    assert val(m, "rapier_decision_seconds_count") - val(
        m, "rapier_decision_seconds_bucket", le="0.1") == 1

    app.core.wall_clock = fake_wall_clock(0.0)

    def boom(*a, **k):
        raise RuntimeError("LP failed")
    monkeypatch.setattr(app.core.scheduler, "schedule", boom)
    assert rest(app, "POST", "/rapier/v1/coflows", {"id": "b", "flows": [flow("h2", "h6", MB)]}
                )[0] == 201
    m = scrape(app)
    # both active coflows got the scheduler's failure as their (new) reason
    assert val(m, "rapier_coflows_fallback_total", reason="scheduler_error") == 2
    assert val(m, "rapier_decisions_over_budget_total") == 1


def test_switches_links_and_rules():
    from test_controller_fakes import FakeDatapath

    app = make_app(scheduler="baseline")
    topo = app.core.topology
    assert val(scrape(app), "rapier_switches_connected") == 0
    for s in topo.switches:
        dp = FakeDatapath(topo.graph.nodes[s]["dpid"])
        app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
    assert rest(app, "POST", "/rapier/v1/coflows", {"id": "a", "flows": [flow("h1", "h5", MB)]}
                )[0] == 201
    m = scrape(app)
    assert val(m, "rapier_switches_connected") == len(topo.switches)
    assert val(m, "rapier_rules_pending") == app.core.ledger.pending_total() > 0
    assert val(m, "rapier_rules_installed") == len(app.core.installed)
    assert val(m, "rapier_links_down") == 0
    u, v = next((u, v) for u, v in topo.links if u in topo.switches and v in topo.switches)
    app.core.link_state.port_status(topo.graph.nodes[u]["dpid"], topo.graph.edges[u, v]["port"],
                                    False)
    assert val(scrape(app), "rapier_links_down") == 2  # both directions of the cable


def test_agent_pushes_are_counted_and_timed(monkeypatch):
    app = make_app()
    push = SimpleNamespace(url="http://127.0.0.1:1", body=lambda: {"flows": []}, flows=[], gen=0)
    monkeypatch.setattr(agent_client, "put_flows", lambda *a, **k: None)
    app._push_one("h1", push)

    def refuse(*a, **k):
        raise agent_client.AgentError("refused")
    monkeypatch.setattr(agent_client, "put_flows", refuse)
    app._push_one("h2", push)
    m = scrape(app)
    assert val(m, "rapier_agent_pushes_total") == 1
    assert val(m, "rapier_agent_push_failures_total") == 1
    assert val(m, "rapier_agent_push_seconds_count") == 2


def test_metrics_route_rules_and_separate_registries():
    """Same rules as GET /rapier/v1/schedule: with a token, reads stay open and
    mutating methods are refused; two in-process controllers keep their own counts."""
    app = make_app(rest_token=TOKEN)
    for path in ("/metrics", "/rapier/v1/schedule"):
        assert call(app, "GET", path).status_int == 200
    assert call(app, "HEAD", "/metrics").status_int == 200
    resp = call(app, "POST", "/metrics")
    assert resp.status_int == 405 and resp.headers["Allow"] == "GET, HEAD"
    other = make_app()
    assert call(other, "POST", "/rapier/v1/coflows",
                {"flows": [flow("h1", "h5", MB)]}).status_int == 201
    assert val(scrape(other), "rapier_coflows", state="active") == 1
    assert val(scrape(app), "rapier_coflows", state="active") == 0


def test_metrics_module_is_pure_and_declares_each_metric_once():
    src = open(os.path.join(REPO, "rapier_app", "controller", "metrics.py")).read()
    mods = {a.name for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)}
    assert not any(str(x).startswith(("ryu", "mininet")) for x in mods)
    m = scrape(make_app())
    names = {n for n, _ in m}
    assert all(n.startswith("rapier_") for n in names)
    text = call(make_app(), "GET", "/metrics").body.decode()
    helps = [line.split()[2] for line in text.splitlines() if line.startswith("# HELP")]
    assert len(helps) == len(set(helps)) >= 20
