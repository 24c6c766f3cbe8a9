"""The Grafana dashboard (configs/grafana/rapier.json) and the Prometheus scrape
configuration (configs/prometheus/prometheus.yml) over ``GET /metrics``: every metric
a panel queries is one the controller exports (declared in
rapier_app/controller/metrics.py), with the labels the panel uses; every query is
valid PromQL and the scrape configuration valid (``promtool``, Debian's prometheus
package); the dashboard imports (its data source an input, panel ids unique, no two
panels on the same grid cells)."""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from rapier_app.controller.core import make_core
from rapier_app.controller.settings import Settings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DASHBOARD = os.path.join(REPO, "configs", "grafana", "rapier.json")
SCRAPE = os.path.join(REPO, "configs", "prometheus", "prometheus.yml")
METRICS_PY = os.path.join(REPO, "rapier_app", "controller", "metrics.py")
#: Grafana's variables, as they are substituted for a check of the PromQL
GRAFANA_VARS = {"$__rate_interval": "1m", "$job": "rapier", "$instance": ".*"}


def load_dashboard():
    with open(DASHBOARD) as fh:
        return json.load(fh)


def queries(dash):
    """(panel title, target) for every query of the dashboard."""
    return [(p["title"], t) for p in dash["panels"] if p["type"] != "row"
            for t in p["targets"]]


@pytest.fixture(scope="module")
def exported():
    """{sample name: label names} of a controller core's registry (broker on: the
    background gauge too)."""
    core = make_core(Settings(topology="leafspine:2,2,2", broker=True, state_db="off"))
    out = {}
    for fam in core.metrics.registry.collect():
        for s in fam.samples:
            out.setdefault(s.name, set()).update(s.labels)
    return out


def test_every_queried_metric_is_exported_and_declared(exported):
    source = open(METRICS_PY).read()
    seen = set()
    for title, t in queries(load_dashboard()):
        names = set(re.findall(r"\brapier_[a-z0-9_]+", t["expr"]))
        assert names, (title, t["expr"])
        for name in names:
            assert name in exported, f"{title}: {name} is not exported by GET /metrics"
            family = re.sub(r"(_total|_bucket|_sum|_count|_bps)$", "", name)
            assert f'"{family}"' in source, f"{title}: {family} not declared in metrics.py"
        seen |= names
    # the overview metrics are all there
    assert {"rapier_coflows", "rapier_flows", "rapier_coflow_completion_seconds_bucket",
            "rapier_decision_seconds_bucket", "rapier_link_scheduled_bps",
            "rapier_link_capacity_bps", "rapier_switches_connected",
            "rapier_links_down"} <= seen


def test_labels_used_exist_on_the_metric(exported):
    for title, t in queries(load_dashboard()):
        expr = t["expr"]
        labels = set(re.findall(r"\{\{(\w+)\}\}", t.get("legendFormat", "")))
        for grp in re.findall(r"\bby \(([^)]*)\)", expr):
            labels |= {x.strip() for x in grp.split(",")}
        for sel in re.findall(r"\{([^}]*)\}", expr):
            labels |= {m for m in re.findall(r"(\w+)\s*=~?", sel)} - {"job", "instance"}
        have = set().union(*(exported[n] for n in re.findall(r"\brapier_[a-z0-9_]+", expr)))
        assert labels <= have, f"{title}: labels {labels - have} not on {expr}"


def test_every_query_filters_by_job_and_instance():
    for title, t in queries(load_dashboard()):
        for sel in re.findall(r"rapier_[a-z0-9_]+(\{[^}]*\})?", t["expr"]):
            assert 'job="$job"' in sel and 'instance=~"$instance"' in sel, (title, t["expr"])


def test_dashboard_imports():
    dash = load_dashboard()
    assert [i["name"] for i in dash["__inputs"]] == ["DS_PROMETHEUS"]
    assert dash["uid"] == "rapier-controller" and dash["title"] == "RAPIER controller"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    cells = {}
    for p in dash["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = p["title"]
        if p["type"] != "row":
            assert p["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
            assert all(t["datasource"] == p["datasource"] for t in p["targets"])
            refs = [t["refId"] for t in p["targets"]]
            assert len(refs) == len(set(refs)) and p["description"]
    variables = [v["name"] for v in dash["templating"]["list"]]
    assert variables == ["job", "instance"]


def test_queries_are_valid_promql(tmp_path):
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: apt-get install prometheus (scripts/install.sh)"
    rules = []
    for i, (title, t) in enumerate(queries(load_dashboard())):
        expr = t["expr"]
        for k, v in GRAFANA_VARS.items():
            expr = expr.replace(k, v)
        assert "$" not in expr, (title, expr)
        rules.append({"record": f"rapier:panel_query_{i}", "expr": expr})
    f = tmp_path / "rules.yml"
    f.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    res = subprocess.run([promtool, "check", "rules", str(f)], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(rules)} rules found" in res.stdout


def test_scrape_configuration(tmp_path):
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: apt-get install prometheus (scripts/install.sh)"
    res = subprocess.run([promtool, "check", "config", SCRAPE], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    conf = yaml.safe_load(open(SCRAPE))
    (job,) = conf["scrape_configs"]
    assert job["job_name"] == "rapier"  # the dashboard's default $job
    assert load_dashboard()["templating"]["list"][0]["current"]["value"] == "rapier"
    assert job["metrics_path"] == "/metrics"
    from rapier_app.controller.rest import DEFAULT_HOST
    assert job["static_configs"][0]["targets"] == [f"{DEFAULT_HOST}:8080"]
    # the docs show this very configuration
    doc = open(os.path.join(REPO, "docs", "operations.md")).read()
    assert "configs/prometheus/prometheus.yml" in doc


# -- every panel against a real Prometheus scraping a controller ---------------------------
def _flow(src, dst, size, port):
    return {"src": src, "dst": dst, "size_bytes": size, "dst_port": port}


def test_every_panel_answers_in_a_real_prometheus(tmp_path):
    """A real Prometheus (Debian's) scrapes an in-process controller's ``/metrics`` over
    HTTP every second while 3 coflows arrive, 2 finish; then every panel's query
    (Grafana's variables substituted) returns data, with the values the controller
    shows."""
    import time

    from mininet_tests.observe import Prometheus
    from rapier_app.controller.inprocess import InProcessServer
    from test_rest_security import call, make_app

    app = make_app(scheduler="rapier", topology="leafspine:2,2,2")
    topo = app.core.topology
    with InProcessServer(app.wsgi) as srv, \
            Prometheus([srv.url.split("//", 1)[1]], str(tmp_path / "prom"), 1.0) as prom:
        def wait(expr, ok, timeout_s=20.0):
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                r = prom.query(expr)
                if r and ok(r):
                    return r
                time.sleep(0.25)
            raise AssertionError(f"{expr}: {prom.query(expr)}")

        wait("up", lambda r: r[0]["value"][1] == "1")
        MB = 1 << 20
        for cid, flows in (("a", [_flow("h1", "h3", 20 * MB, 5001)]),
                           ("b", [_flow("h2", "h4", 30 * MB, 5002)]),
                           ("c", [_flow("h1", "h4", 40 * MB, 5003)])):
            assert call(app, "POST", "/rapier/v1/coflows", {"id": cid, "flows": flows})[0] == 201
        for cid in ("a", "b"):
            assert call(app, "POST", f"/rapier/v1/coflows/{cid}/flows/0/done")[0] == 200
        wait('rapier_coflows{state="done"}', lambda r: r[0]["value"][1] == "2")
        # two more scrapes, so that every rate() has points after the completions
        wait("count_over_time(up[1m])", lambda r: float(r[0]["value"][1]) >= 4)
        time.sleep(2.2)

        dash = load_dashboard()
        subst = dict(GRAFANA_VARS, **{"$__rate_interval": "1m"})
        results = {}
        for title, t in queries(dash):
            expr = t["expr"]
            for k, v in subst.items():
                expr = expr.replace(k, v)
            r = prom.query(expr)
            assert r, f"{title}: no data for {expr}"
            results.setdefault(title, []).append(r)
        # the dashboard's variables
        labels = prom.query('group by (job, instance) (rapier_coflows)')[0]["metric"]
    assert labels == {"job": "rapier", "instance": srv.url.split("//", 1)[1]}

    def one(title, i=0):
        (s,) = results[title][i]
        return float(s["value"][1])

    by_state = {s["metric"]["state"]: float(s["value"][1])
                for s in results["Coflows by state"][0]}
    assert by_state == {"active": 1.0, "done": 2.0, "cancelled": 0.0}
    assert one("Active coflows") == 1 and one("Coflows done") == 2
    assert one("Active flows") == 1
    assert one("Switches connected") == 0 and one("Links down") == 0
    util = results["Link utilisation now (scheduled / capacity)"][0]
    assert len(util) == len(topo.links)
    values = [float(s["value"][1]) for s in util]
    assert values == sorted(values, reverse=True) and 0 < values[0] <= 1  # c is scheduled
    assert {s["metric"]["src"] for s in util} <= set(topo.graph.nodes)
    p50 = one("Coflow completion time (CCT)", 0)
    assert p50 > 0 and p50 < 1e3  # two CCTs observed: a finite quantile
    assert len(results["Least residual capacity"][0]) == min(10, len(topo.links))
    reasons = {s["metric"]["reason"] for s in
               results["Coflows sent to default forwarding, by reason"][0]}
    assert reasons == {"budget", "scheduler_error", "scheduler", "background"}
