"""docs/api.md's code runs and prints what the page says (the page cannot rot)."""

import contextlib
import io
import json
import os
import re
import sys

import pytest

from rapier_app.scheduling import REGISTRY, load_all

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "api.md")


def _blocks(lang):
    text = open(DOC).read()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


@pytest.fixture
def clean_registry():
    load_all()  # the built-ins are registered before the snapshot
    before = dict(REGISTRY)
    yield
    for k in set(REGISTRY) - set(before):
        del REGISTRY[k]
    sys.modules.pop("mysched", None)


def test_api_page_examples(tmp_path, monkeypatch, clean_registry):
    py = _blocks("python")
    assert len(py) == 4, "api.md: example, scheduler module, trace writer, progress"
    example, module, trace_block, progress_block = py
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(example, "api.md:example", "exec"), ns)
    assert buf.getvalue() == _blocks("text")[0]
    # the scheduler module, importable as mysched
    (tmp_path / "mysched.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    import mysched  # noqa: F401
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim import simulate
    topo, coflows = ns["topo"], ns["coflows"]
    for by in ("bytes", "width"):
        res = simulate(topo, coflows, make_scheduler("smallest-first", topo, seed=1, by=by))
        # never better than the bound, never worse than serving coflows one by one
        assert res.ccts.mean() >= 1.835
    with pytest.raises(Exception, match="by: must be 'bytes' or 'width'"):
        make_scheduler("smallest-first", topo, by="size")
    exec(compile(trace_block, "api.md:trace", "exec"), ns)
    assert (tmp_path / "five.txt").exists()
    exec(compile(progress_block, "api.md:progress", "exec"), ns)
    assert len(ns["res"].coflows) == 5


def test_api_page_cli_plugin_command(tmp_path, monkeypatch, capsys, clean_registry):
    # the page's shell example, with the module from the page, on a smaller workload
    (tmp_path / "mysched.py").write_text(_blocks("python")[1])
    monkeypatch.syspath_prepend(str(tmp_path))
    sh = _blocks("sh")[0]
    assert "mysched:SmallestFirst" in sh and "smallest-first.by=width" in sh
    from rapier_app.cli import main
    assert main(["--topology", "fattree:4", "--synthetic", "5,8,0.1", "--schedulers",
                 "baseline,mysched:SmallestFirst", "--param", "smallest-first.by=width",
                 "--json", "-q", "--no-plot", "--out", str(tmp_path / "o")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"baseline", "smallest-first"}
    assert out["smallest-first"]["coflows"] == 5


def test_rest_routes_are_the_documented_ones():
    """Every route of the controller's REST API (rest.py) is in api.md's table, and the
    table names no other."""
    src = open(os.path.join(ROOT, "rapier_app", "controller", "rest.py")).read()
    routes = re.findall(r'@route\("rapier", PREFIX \+ "([^"]+)", methods=\["(\w+)"(?:, "HEAD")?\]'
                        r'(?:,\s*requirements=\w+)?\)\s*\n\s*@rest_method', src)
    code = {f"{m} /rapier/v1{p}".replace("{coflow_id}", "<id>").replace("{index}", "<n>")
            for p, m in routes}
    text = open(DOC).read().split("## The controller's REST API", 1)[1]
    doc = set(re.findall(r"^\| `((?:GET|POST|PUT|DELETE|PATCH) /rapier/v1[^`]*)` \|", text,
                         flags=re.M))
    assert len(code) == 12 and code == doc - {"GET /rapier/v1/dashboard"}
    # the dashboard's page and files (HTML/JS/CSS, not the JSON error boundary)
    assert re.search(r'@route\("rapier", PREFIX \+ "/dashboard", methods=\["GET", "HEAD"\]\)',
                     src)
    assert "GET /rapier/v1/dashboard" in doc
    # /metrics (Prometheus text, outside the JSON prefix)
    assert re.search(r'@route\("rapier", "/metrics", methods=\["GET", "HEAD"\]\)', src)
    assert re.search(r"^\| `GET /metrics` \|", text, flags=re.M)
