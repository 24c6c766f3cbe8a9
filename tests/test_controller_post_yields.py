"""A 1,000-flow POST yields to the event loop without ever showing a half-added coflow.

The app is built in-process and driven as ``ryu-manager`` drives it: green threads
on one hub, the app's lock a green lock, the core's ``hold_pause`` the app's
``_pause`` (:meth:`~rapier_app.controller.loop.DecisionLoopMixin._start_loop`).
``SLICE_S = 0`` makes every pause point yield, so the tests count yields, not time.
Requests go through the app's WSGI application (webob ``Request.blank``).
"""

import json
import random

import eventlet
import pytest
from eventlet.green import threading as green_threading
from webob import Request

import rapier_app.controller as controller_pkg
from rapier_app.controller import validation
from rapier_app.controller.jsonslices import LONG, dumps_sliced
from rapier_app.controller.settings import Settings

MB = 1 << 20
N = 1000


def body(cid, n=N, seed=1, port0=1024):
    rnd = random.Random(seed)
    hosts = [f"h{i}" for i in range(1, 17)]
    flows = []
    for j in range(n):
        s, d = rnd.sample(hosts, 2)
        flows.append({"src": s, "dst": d, "size_bytes": rnd.randint(1, 100) * MB,
                      "dst_port": port0 + j})
    return {"id": cid, "flows": flows}


def call(app, method, path, data=None):
    raw = b"" if data is None else json.dumps(data).encode()
    req = Request.blank(path, method=method, body=raw,
                        headers={"Content-Type": "application/json"})
    resp = req.get_response(app.wsgi)
    return resp.status_int, json.loads(resp.body)


@pytest.fixture
def green_app(tmp_path):
    """The app as under ryu-manager (green lock, pauses on, every pause a yield), with
    its decision worker marked running (admission in the POST) but no worker
    green thread: nothing is decided."""
    app = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler="baseline", topology="fattree:4", agent_url="",
        state_db=str(tmp_path / "db.sqlite3")))
    app._lock = green_threading.RLock()
    app.green = True  # the green-thread model, whatever the stack in use
    app._start_loop()
    app.worker.running = True
    app.SLICE_S = 0.0
    yields = []

    def sleep(_s):
        yields.append(list(app.core.coflows))
        eventlet.sleep(0)

    app._sleep = sleep
    app.yields = yields
    return app


def test_post_yields_and_readers_never_see_a_half_added_coflow(green_app):
    app = green_app
    seen = {}

    def probe_once():
        """At the first yield after the coflow entered the core (lock held by the
        POST): ask /health and the coflow's view from green threads of their own."""
        if "c1" in app.core.coflows and "get" not in seen:
            seen["get"] = eventlet.spawn(call, app, "GET", "/rapier/v1/coflows/c1")
            seen["list"] = eventlet.spawn(call, app, "GET", "/rapier/v1/coflows")
            seen["health"] = eventlet.spawn(call, app, "GET", "/rapier/v1/health")
            seen["at"] = len(app.yields)

    inner = app._sleep

    def sleep(s):
        probe_once()
        inner(s)
        if "health" in seen and "health_done_at" not in seen and seen["health"].dead:
            seen["health_done_at"] = len(app.yields)
            seen["get_dead_then"] = seen["get"].dead or seen["list"].dead

    app._sleep = sleep
    post = eventlet.spawn(call, app, "POST", "/rapier/v1/coflows", body("c1"))
    status, view = post.wait()
    total = len(app.yields)
    assert status == 201 and view["decision"] == "provisional"
    # /health answered while the POST held the lock, part-way through it
    assert seen["at"] < seen["health_done_at"] < total
    assert seen["health"].wait()[0] == 200
    # the readers waited for the whole coflow: every flow, its admission's paths
    assert seen["get_dead_then"] is False
    st, got = seen["get"].wait()
    assert st == 200 and len(got["flows"]) == N and got["decision"] == "provisional"
    assert all(f["path"] for f in got["flows"]) and \
        sum(f["rules"]["pending"] for f in got["flows"]) == len(app.core.desired)
    st, page = seen["list"].wait()
    assert st == 200 and [c["id"] for c in page["coflows"]] == ["c1"]
    # yields counted: validation, overlap check, records, database rows,
    # registration and admission each yield every PAUSE_EVERY flows (SLICE_S = 0)
    per = N // validation.PAUSE_EVERY - (N % validation.PAUSE_EVERY == 0)
    rows = -(-N // app.core.store.PAUSE_ROWS) - 1
    assert total >= 5 * per + rows
    # before the coflow entered the core (validation: no lock), it was nowhere
    first_in = next(i for i, ids in enumerate(app.yields) if ids)
    assert first_in >= per  # every validation yield came first
    assert app.core.store.get("c1") is not None


def test_refused_post_after_yields_changes_nothing(green_app):
    app = green_app
    assert call(app, "POST", "/rapier/v1/coflows", body("c1"))[0] == 201
    before = (list(app.core.coflows), len(app.core.desired), len(app.core.tracks),
              app.core._next_cookie)
    n0 = len(app.yields)
    bad = body("c2", seed=2, port0=1024 + N)
    bad["flows"][-1] = dict(body("c1")["flows"][0])  # the last flow overlaps c1's first
    status, err = call(app, "POST", "/rapier/v1/coflows", bad)
    assert status == 409 and err["field"] == f"flows[{N - 1}]"
    assert len(app.yields) - n0 >= N // validation.PAUSE_EVERY  # it yielded first
    assert (list(app.core.coflows), len(app.core.desired), len(app.core.tracks),
            app.core._next_cookie) == before
    assert app.core.store.get("c2") is None
    assert call(app, "GET", "/rapier/v1/coflows/c2")[0] == 404


def test_big_view_is_encoded_in_slices_as_json_dumps(green_app):
    app = green_app
    assert call(app, "POST", "/rapier/v1/coflows", body("c1"))[0] == 201
    with app._lock:
        view = app.core.coflow_view("c1")
    calls = []
    text = dumps_sliced(view, lambda: calls.append(1))
    assert text == json.dumps(view)
    assert len(calls) == N  # one pause after each flow of the long list
    small = {"a": list(range(LONG)), "b": {"c": [1, 2]}}
    assert dumps_sliced(small, lambda: calls.append(1)) == json.dumps(small)
    assert len(calls) == N  # short lists: one piece, no pause
    # the route gives the same bytes, yielding while it encodes
    n0 = len(app.yields)
    st, got = call(app, "GET", "/rapier/v1/coflows/c1")
    assert st == 200 and got == json.loads(text)
    assert len(app.yields) - n0 >= N


def test_health_reads_without_the_lock_on_the_loop(green_app):
    app = green_app
    holder_in, release = eventlet.event.Event(), eventlet.event.Event()

    def hold():
        with app._lock:
            holder_in.send()
            release.wait()

    g = eventlet.spawn(hold)
    holder_in.wait()
    with eventlet.Timeout(2):
        st, h = call(app, "GET", "/rapier/v1/health")
    assert st == 200 and h["ok"] is True
    release.send()
    g.wait()
    app._health_unlocked = False  # before its worker runs, an app reads it under the lock
    assert app._health_guard() is app._lock
