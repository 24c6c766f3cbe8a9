"""The live dashboard's routes (rapier_app/controller/dashboard.py, rest.py):
the page and its files are served from the package, nothing else is (path
traversal refused), ``GET /summary`` agrees with ``GET /coflows``, and the page
reads only GET routes of its own origin.

In-process app on Ryu's WSGI router (test_rest_security.make_app).  The page in a
real browser during an emulation: tests/emulation/test_observability.py.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from webob import Request

from rapier_app.controller import dashboard
from test_rest_security import TOKEN, make_app

PAGE = "/rapier/v1/dashboard"


def get(app, path, method="GET", auth=None):
    req = Request.blank(path, method=method)
    if auth is not None:
        req.headers["Authorization"] = auth
    return req.get_response(app.wsgi)


def test_page_and_files_are_served_from_the_package_with_their_types():
    app = make_app()
    for path, name in ((PAGE, "index.html"), (PAGE + "/", "index.html"),
                       (PAGE + "/index.html", "index.html"),
                       (PAGE + "/dashboard.js", "dashboard.js"),
                       (PAGE + "/dashboard.css", "dashboard.css")):
        resp = get(app, path)
        assert resp.status_int == 200, (path, resp.body[:200])
        with open(os.path.join(dashboard.STATIC_DIR, name), "rb") as fh:
            assert resp.body == fh.read(), path
        assert resp.headers["Content-Type"] == dashboard.ASSETS[name], path
        assert "script-src 'self'" in resp.headers["Content-Security-Policy"], path
        assert resp.headers["X-Content-Type-Options"] == "nosniff", path
    head = get(app, PAGE + "/dashboard.js", method="HEAD")
    assert head.status_int == 200 and head.body == b""
    assert head.headers["Content-Type"] == dashboard.ASSETS["dashboard.js"]
    root = get(app, "/")
    assert root.status_int == 302 and root.headers["Location"].endswith("localhost" + PAGE)


def test_the_page_loads_its_files_from_the_dashboard_route_only():
    """Every ``src``/``href`` of the page is one of the served files, and no file
    names another origin (nothing is fetched from the internet)."""
    app = make_app()
    html = get(app, PAGE).body.decode()
    refs = [r for r in re.findall(r'(?:src|href)="([^"]+)"', html) if r != "data:,"]
    assert sorted(refs) == [PAGE + "/dashboard.css", PAGE + "/dashboard.js"]
    for name in dashboard.ASSETS:
        text = get(app, PAGE + "/" + name).body.decode()
        text = text.replace('"http://www.w3.org/2000/svg"', "")  # a name, not a fetch
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text, re.I), name
    js = get(app, PAGE + "/dashboard.js").body.decode()
    # it reads the API with GET only: no method other than the default
    assert "method:" not in js and "XMLHttpRequest" not in js
    reads = set(re.findall(r'getJSON\("(/[a-z]+)', js))
    assert reads == {"/topology", "/summary", "/schedule", "/coflows"}


@pytest.mark.parametrize("path", [
    PAGE + "/../rest.py",
    PAGE + "/..%2Frest.py",
    PAGE + "/%2e%2e%2frest.py",
    PAGE + "/%2E%2E/%2E%2E/controller/rest.py",
    PAGE + "/..%5Crest.py",
    PAGE + "/static/index.html",
    PAGE + "/%2Fetc%2Fpasswd",
    PAGE + "//etc/passwd",
    PAGE + "/options.toml",
    PAGE + "/dashboard.py",
    PAGE + "/index.html%00.js",
    PAGE + "/index.html/",
    PAGE + "/./index.html",
    PAGE + "/INDEX.HTML",
])
def test_no_other_file_is_served(path):
    """Names are looked up in ``ASSETS``, never joined to a path: traversal,
    encoded separators, absolute paths and files beside the assets are JSON 404s
    (or, for a literal ``..`` the router resolves first, a 404 of the API)."""
    app = make_app()
    resp = get(app, path)
    assert resp.status_int == 404, (path, resp.status_int, resp.body[:200])
    body = json.loads(resp.body)
    assert body["field"] == "path", body
    assert b"import" not in resp.body and b"root:" not in resp.body


def test_asset_refuses_anything_but_its_names():
    for name in ("../rest.py", "/etc/passwd", "..", "", "static/dashboard.js",
                 os.path.join(dashboard.STATIC_DIR, "index.html")):
        with pytest.raises(dashboard.RequestError) as exc:
            dashboard.asset(name)
        assert exc.value.status == 404 and exc.value.field == "path"


def test_reads_need_no_token_and_writes_are_refused():
    """With ``rest_token`` set the page and its reads need no token (GET, as the
    other read routes); other methods on the page are 405."""
    app = make_app(rest_token=TOKEN)
    for path in (PAGE, PAGE + "/dashboard.js", "/rapier/v1/summary"):
        assert get(app, path).status_int == 200, path
    for method in ("POST", "PUT", "DELETE"):
        resp = get(app, PAGE, method=method, auth="Bearer " + TOKEN)
        assert resp.status_int == 405, method
        assert resp.headers["Allow"] == "GET, HEAD"
        resp = get(app, "/rapier/v1/summary", method=method, auth="Bearer " + TOKEN)
        assert resp.status_int == 405, method


def test_summary_counts_and_ccts_agree_with_the_coflow_list():
    app = make_app()
    t = [10.0]
    app.now = lambda: t[0]
    for i in range(4):
        flows = [{"src": "h1", "dst": "h5", "size_bytes": 1_000_000, "dst_port": 5001 + i},
                 {"src": "h2", "dst": "h6", "size_bytes": 2_000_000, "dst_port": 5101 + i}]
        req = Request.blank("/rapier/v1/coflows", method="POST",
                            body=json.dumps({"id": f"c{i}", "flows": flows}).encode())
        assert req.get_response(app.wsgi).status_int == 201
        t[0] += 0.5
    # c0 finishes at 12.5, c2 at 14.0 (both flows reported done); c3 cancelled
    for cid, at in (("c0", 12.5), ("c2", 14.0)):
        t[0] = at
        for n in (0, 1):
            r = Request.blank(f"/rapier/v1/coflows/{cid}/flows/{n}/done", method="POST")
            assert r.get_response(app.wsgi).status_int == 200
    assert get(app, "/rapier/v1/coflows/c3", method="DELETE").status_int == 200
    t[0] = 15.0
    summary = json.loads(get(app, "/rapier/v1/summary").body)
    assert summary["now_s"] == 15.0 and summary["scheduler"] == "baseline"
    assert summary["counts"] == {"active": 1, "done": 2, "cancelled": 1}
    done = json.loads(get(app, "/rapier/v1/coflows?state=done").body)["coflows"]
    assert summary["ccts_s"] == sorted(c["cct_s"] for c in done)
    assert summary["ccts_s"] == pytest.approx([2.5, 3.0])  # 12.5 - 10.0, 14.0 - 11.0
