"""Issue 14, durability and retention: the SQLite store, restart of the controller
on the same file, a rejected request writes nothing, paging and state filters,
ended coflows leaving memory.

In-process: the Ryu app (or the pure core) is built, fed, dropped, and built again
on the same database file; REST is called through the WSGI app with webob.
"""

import json
import os
import sqlite3
from types import SimpleNamespace

import pytest
from webob import Request

import rapier_app.controller as controller_pkg
from rapier_app.controller.core import make_core
from rapier_app.controller.rules import cookie_for
from rapier_app.controller.settings import Settings, SettingsError
from rapier_app.httpjson import RequestError
from rapier_app.controller.store import SCHEMA_VERSION, CoflowRecord, FlowRecord, Store, StoreError

MB = 1 << 20
HDR = 66


def flow(src="h1", dst="h5", size=50 * MB, port=5001):
    return {"src": src, "dst": dst, "size_bytes": size, "dst_port": port}


def build(db, **kw):
    opts = dict(scheduler="rapier", topology="leafspine:3,3,3", agent_url="", state_db=db)
    opts.update(kw)
    app = controller_pkg.RapierController(rapier_settings=Settings(**opts))
    return app


def call(app, method, path, body=None):
    raw = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    resp = Request.blank(path, method=method, body=raw or b"",
                         headers={"Content-Type": "application/json"}).get_response(app.wsgi)
    return resp.status_int, json.loads(resp.body)


def stats(app, dpid, entries):
    msg = SimpleNamespace(datapath=SimpleNamespace(id=dpid, ofproto=SimpleNamespace(
        OFPMPF_REPLY_MORE=1)), flags=0,
        body=[SimpleNamespace(cookie=c, byte_count=b, packet_count=p) for c, b, p in entries])
    app.flow_stats_reply(SimpleNamespace(msg=msg))


def rows(db):
    with sqlite3.connect(db) as con:
        return con.execute("SELECT id, state FROM coflows ORDER BY seq").fetchall()


# ---------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------
def test_in_process_cores_write_nothing_unless_asked(tmp_path, monkeypatch):
    """``make_core(Settings(...))`` without ``state_db`` keeps its state in memory:
    nothing is written in the working directory (whatever ``$RAPIER_STATE_DB`` says,
    which is the default of ``ryu-manager`` only), and a second core there starts
    empty; an explicit ``state_db`` file is still written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAPIER_STATE_DB", raising=False)
    for _ in range(2):  # a second core in the same directory: "b0" is new again
        core = make_core(Settings(scheduler="baseline", topology="leafspine:3,3,3",
                                  agent_url=""))
        state, _ = core.submit({"id": "b0", "flows": [flow()]}, 0.0)
        assert state.coflow_id == "b0"
        core.store.close()
    assert os.listdir(tmp_path) == []
    monkeypatch.setenv("RAPIER_STATE_DB", str(tmp_path / "env.sqlite3"))
    make_core(Settings(scheduler="baseline", topology="leafspine:3,3,3",
                       agent_url="")).store.close()
    assert os.listdir(tmp_path) == []
    core = make_core(Settings(scheduler="baseline", topology="leafspine:3,3,3", agent_url="",
                              state_db="mine.sqlite3"))
    core.submit({"id": "b0", "flows": [flow()]}, 0.0)
    core.store.close()
    assert rows(str(tmp_path / "mine.sqlite3")) == [("b0", "active")]


def test_store_file_is_wal_and_versioned(tmp_path):
    db = str(tmp_path / "state" / "c.sqlite3")
    s = Store(db)
    s.add_coflow(CoflowRecord("a", 2.0, 1.5, "active", flows=[
        FlowRecord("a/0", 0, "h1", "h5", 1000.0, 5001, cookie_for(1))]))
    s.close()
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    (rec,) = Store(db).load()
    assert (rec.id, rec.weight, rec.arrival_s, rec.state) == ("a", 2.0, 1.5, "active")
    assert rec.flows[0].cookie == cookie_for(1) and rec.flows[0].size_bytes == 1000.0


#: Schema 1 (before open coflows), as the controller wrote it.
SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE coflows (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
    weight REAL NOT NULL, arrival_s REAL NOT NULL, state TEXT NOT NULL, ended_s REAL,
    finish_s REAL);
CREATE INDEX coflows_state ON coflows (state, seq);
CREATE TABLE flows (flow_id TEXT PRIMARY KEY, coflow_id TEXT NOT NULL REFERENCES coflows (id),
    idx INTEGER NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL, size_bytes REAL NOT NULL,
    dst_port INTEGER, cookie INTEGER NOT NULL, bytes_sent REAL NOT NULL DEFAULT 0,
    finish_s REAL);
CREATE INDEX flows_coflow ON flows (coflow_id, idx);
INSERT INTO coflows(id, weight, arrival_s, state) VALUES('old', 1.0, 0.5, 'active');
INSERT INTO flows VALUES('old/0', 'old', 0, 'h1', 'h5', 1000.0, 5001, 2, 10.0, NULL);
PRAGMA user_version = 1;
"""


def test_schema_1_file_is_upgraded_in_place(tmp_path):
    """A database of the previous schema opens: its coflows are closed, their flows
    TCP by destination port with known sizes."""
    db = str(tmp_path / "v1.sqlite3")
    with sqlite3.connect(db) as con:
        con.executescript(SCHEMA_1)
    s = Store(db)
    (rec,) = s.load()
    s.close()
    assert (rec.id, rec.open, rec.name) == ("old", False, None)
    fr = rec.flows[0]
    assert (fr.flow_id, fr.dst_port, fr.src_port, fr.proto, fr.size_known, fr.start_s,
            fr.bytes_sent) == ("old/0", 5001, None, "tcp", True, None, 10.0)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 2


def test_store_refuses_newer_corrupt_and_foreign_files(tmp_path):
    newer = str(tmp_path / "newer.sqlite3")
    Store(newer).close()
    with sqlite3.connect(newer) as con:
        con.execute("PRAGMA user_version = 7")
    with pytest.raises(StoreError, match="schema version 7 is newer than this controller's"):
        Store(newer)
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a usable RAPIER database"):
        Store(str(junk))
    assert junk.read_bytes() == b"this is not a database" * 100  # left alone
    foreign = str(tmp_path / "foreign.sqlite3")
    with sqlite3.connect(foreign) as con:
        con.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match="no schema version"):
        Store(foreign)
    # make_core names the option.
    with pytest.raises(SettingsError, match="^state_db: .*newer"):
        make_core(Settings(agent_url="", state_db=newer))


# ---------------------------------------------------------------------------
# Restart
# ---------------------------------------------------------------------------
def test_restart_reloads_every_coflow_and_carries_on(tmp_path):
    db = str(tmp_path / "controller.sqlite3")
    app = build(db)
    for i, body in enumerate([{"flows": [flow()], "id": "done-one"},
                              {"flows": [flow("h2", "h6", 10 * MB, 6000),
                                         flow("h3", "h9", 20 * MB, 6001)], "id": "running"},
                              {"flows": [flow("h4", "h8", MB, 7000)], "id": "gone"},
                              {"flows": [flow("h7", "h2", MB, 7001)]}]):
        assert call(app, "POST", "/rapier/v1/coflows", body)[0] == 201
    assert call(app, "DELETE", "/rapier/v1/coflows/gone")[0] == 200
    # Every accepted coflow is in the file before the POST returned.
    assert rows(db) == [("done-one", "active"), ("running", "active"), ("gone", "cancelled"),
                        ("c1", "active")]
    l1 = app.core._dpid["l1"]
    # done-one completes; running/0 sent 4 MB (written by the progress writer).
    stats(app, l1, [(cookie_for(1), 50 * MB + 40000 * HDR, 40000),
                    (cookie_for(2), 4 * MB + 3000 * HDR, 3000)])
    app.core.persist_progress(app.now(), force=True)
    before = call(app, "GET", "/rapier/v1/coflows")[1]["coflows"]
    assert [c["state"] for c in before] == ["done", "active", "cancelled", "active"]
    cct = before[0]["cct_s"]
    del app  # the controller dies

    app2 = build(db)
    st, body = call(app2, "GET", "/rapier/v1/coflows?flows=1")
    assert st == 200 and body["total"] == 4
    after = body["coflows"]
    assert [(c["id"], c["state"]) for c in after] == [
        ("done-one", "done"), ("running", "active"), ("gone", "cancelled"), ("c1", "active")]
    assert after[0]["cct_s"] == pytest.approx(cct)
    assert after[0]["arrival_s"] == pytest.approx(before[0]["arrival_s"])
    assert after[1]["flows"][0]["bytes_sent"] == 4 * MB
    # The unfinished ones were scheduled again: a path and a rule per hop.
    running = after[1]["flows"]
    assert all(f["path"] and f["rate_bps"] > 0 for f in running)
    assert {fid for _, fid in app2.core.desired} == {"running/0", "running/1", "c1/0"}
    # Cookies map back to the same flows; ids and cookies continue.
    assert app2.core.tracks["running/0"].cookie == cookie_for(2)
    st, body = call(app2, "POST", "/rapier/v1/coflows", {"flows": [flow("h5", "h1", MB, 1)]})
    assert (st, body["id"]) == (201, "c2")
    assert app2.core.tracks["c2/0"].cookie == cookie_for(6)
    assert call(app2, "POST", "/rapier/v1/coflows",
                {"flows": [flow(port=2)], "id": "gone"})[0] == 400
    # Progress after the restart adds to the stored bytes (counters restart at 0).
    stats(app2, l1, [(cookie_for(2), 6 * MB + 4000 * HDR, 4000)])
    assert app2.core.coflow_view("running")["flows"][0]["state"] == "done"
    assert app2.now() >= before[1]["arrival_s"]  # the clock carried on


def test_restart_pushes_every_agent_its_full_set(tmp_path):
    db = str(tmp_path / "c.sqlite3")
    url = "unix:" + str(tmp_path / "agents" / "{host}.sock")
    app = build(db, agent_url=url)
    call(app, "POST", "/rapier/v1/coflows", {"flows": [flow()], "id": "a"})
    assert sorted(app._pending) == ["h1"]
    del app
    app2 = build(db, agent_url=url)
    # h1 gets its limit again, every other host [] (stale limits of the old run go).
    assert sorted(app2._pending) == sorted(app2.core.topology.hosts)
    assert [f["flow_id"] for f in app2._pending["h1"].flows] == ["a/0"]
    assert all(p.flows == [] for h, p in app2._pending.items() if h != "h1")


def test_rejected_requests_write_nothing(tmp_path):
    db = str(tmp_path / "c.sqlite3")
    app = build(db)
    call(app, "POST", "/rapier/v1/coflows", {"flows": [flow()], "id": "a"})
    size = os.path.getsize(db)
    for body, status in [(b"{oops", 400), ({"flows": [flow(src="h42")]}, 400),
                         ({"flows": [flow(size=-1)]}, 400),
                         ({"flows": [flow(port=7)], "id": "a"}, 400),
                         ({"flows": [flow()]}, 409)]:  # overlaps a/0
        st, _ = call(app, "POST", "/rapier/v1/coflows", body)
        assert st == status
    assert call(app, "DELETE", "/rapier/v1/coflows/nope")[0] == 404
    assert rows(db) == [("a", "active")]
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM flows").fetchone()[0] == 1
        assert con.execute("SELECT value FROM meta WHERE key='next_cookie'").fetchone() == ("2",)
    assert os.path.getsize(db) == size


def test_a_failed_database_write_refuses_the_coflow(tmp_path, monkeypatch):
    app = build(str(tmp_path / "c.sqlite3"))

    def full(*_a, **_k):
        raise StoreError("state_db c.sqlite3: write failed: database or disk is full")

    monkeypatch.setattr(app.core.store, "add_coflow", full)
    n = app.core.schedule_count
    st, err = call(app, "POST", "/rapier/v1/coflows", {"flows": [flow()], "id": "a"})
    assert (st, err["field"]) == (503, "store")
    assert app.core.coflows == {} and app.core.desired == {} and app.core.schedule_count == n
    assert call(app, "GET", "/rapier/v1/coflows")[1]["total"] == 0


def test_restored_flow_that_finished_while_the_controller_was_down(tmp_path):
    db = str(tmp_path / "c.sqlite3")
    app = build(db, idle_finish_s=1.0)
    call(app, "POST", "/rapier/v1/coflows", {"flows": [flow(size=10 * MB)], "id": "a"})
    l1 = app.core._dpid["l1"]
    stats(app, l1, [(cookie_for(1), 6 * MB + 5000 * HDR, 5000)])
    app.core.persist_progress(app.now(), force=True)
    del app
    app2 = build(db, idle_finish_s=1.0)
    core = app2.core
    t0 = core.tracks["a/0"].restored_s
    assert core.coflow_view("a")["flows"][0]["bytes_sent"] == 6 * MB
    # Its re-added rule never counts a byte: the sender had finished meanwhile.
    core.apply_flow_stats(l1, [(cookie_for(1), 0, 0)], t0 + 1.0)
    assert core.check_idle(t0 + 4.9).finished == []
    assert core.check_idle(t0 + 5.0).finished == ["a/0"]
    assert core.coflow_view("a")["state"] == "done"
    assert rows(db) == [("a", "done")]


# ---------------------------------------------------------------------------
# Paging, filters, retention
# ---------------------------------------------------------------------------
def test_list_pages_and_filters(tmp_path):
    app = build(str(tmp_path / "c.sqlite3"))
    for i in range(7):
        call(app, "POST", "/rapier/v1/coflows",
             {"flows": [flow(f"h{1 + i}", "h9", MB, 100 + i)], "id": f"k{i}"})
    for i in (1, 4):
        call(app, "DELETE", f"/rapier/v1/coflows/k{i}")
    st, p = call(app, "GET", "/rapier/v1/coflows?limit=3")
    assert st == 200 and [c["id"] for c in p["coflows"]] == ["k0", "k1", "k2"]
    assert (p["total"], p["offset"], p["limit"], p["next_offset"]) == (7, 0, 3, 3)
    st, p = call(app, "GET", "/rapier/v1/coflows?limit=3&offset=6")
    assert [c["id"] for c in p["coflows"]] == ["k6"] and p["next_offset"] is None
    st, p = call(app, "GET", "/rapier/v1/coflows?state=cancelled")
    assert [c["id"] for c in p["coflows"]] == ["k1", "k4"] and p["total"] == 2
    st, p = call(app, "GET", "/rapier/v1/coflows?state=active&offset=1&limit=2")
    assert [c["id"] for c in p["coflows"]] == ["k2", "k3"] and p["total"] == 5
    st, p = call(app, "GET", "/rapier/v1/coflows?state=finished,active")
    assert p["total"] == 7
    for q, field in [("limit=0", "limit"), ("limit=1001", "limit"), ("limit=-1", "limit"),
                     ("offset=x", "offset"), ("state=running", "state"), ("limit=1e3", "limit")]:
        st, err = call(app, "GET", "/rapier/v1/coflows?" + q)
        assert (st, err["field"]) == (400, field), q
    # the same rule and words whichever layer refuses it; a repeated or unknown
    # parameter is refused, not silently dropped
    for q, field, msg in [("limit=0", "limit", "must be an integer 1..1000"),
                          ("limit=5000", "limit", "must be an integer 1..1000"),
                          ("offset=1234567890", "offset", "must be an integer 0..999999999"),
                          ("state=active&state=done", "state", "given more than once"),
                          ("limt=5", "limt", "unknown query parameter")]:
        st, err = call(app, "GET", "/rapier/v1/coflows?" + q)
        assert (st, err["field"]) == (400, field) and msg in err["error"], (q, err)


def test_ended_coflows_leave_memory_but_stay_listed(tmp_path):
    core = make_core(Settings(scheduler="rapier", agent_url="", retention_s=10.0,
                              state_db=str(tmp_path / "c.sqlite3")))
    core.submit({"flows": [flow()], "id": "a"}, 0.0)
    core.submit({"flows": [flow("h2", "h6")], "id": "b"}, 0.0)
    core.cancel("a", 5.0)
    core.errors.extend(f"e{i}" for i in range(500))
    assert core.prune(14.9) == [] and "a" in core.coflows
    assert core.prune(15.0) == ["a"]
    assert "a" not in core.coflows and "a/0" not in core.tracks
    assert cookie_for(1) not in core.flow_by_cookie and len(core.errors) == 200
    v = core.coflow_view("a")  # from the database
    assert (v["state"], v["ended_s"], v["flows"][0]["size_bytes"]) == ("cancelled", 5.0, 50 * MB)
    page = core.coflows_page()
    assert [c["id"] for c in page["coflows"]] == ["a", "b"]
    with pytest.raises(RequestError) as ei:
        core.cancel("a", 20.0)
    assert (ei.value.status, str(ei.value)) == (400, "id: coflow 'a' is already cancelled")
    with pytest.raises(RequestError) as ei:
        core.submit({"flows": [flow(port=9)], "id": "a"}, 20.0)
    assert ei.value.status == 400 and "already exists" in str(ei.value)
    # Without a database, an ended coflow is gone after the retention time.
    mem = make_core(Settings(scheduler="rapier", agent_url="", retention_s=0.0, state_db=""))
    mem.submit({"flows": [flow()], "id": "a"}, 0.0)
    mem.cancel("a", 1.0)
    assert mem.prune(1.0) == ["a"] and mem.coflows_page()["total"] == 0


def test_first_bytes_are_written_at_once_and_an_unstarted_restored_flow_waits_longer(tmp_path):
    db = str(tmp_path / "c.sqlite3")
    app = build(db, idle_finish_s=1.0, store_progress_interval_s=3600.0)
    call(app, "POST", "/rapier/v1/coflows", {"flows": [flow(size=10 * MB),
                                                       flow("h2", "h6", MB, 9)], "id": "a"})
    l1 = app.core._dpid["l1"]
    stats(app, l1, [(cookie_for(1), 2000 + 2 * HDR, 2)])  # first bytes of a/0 only
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT flow_id, bytes_sent FROM flows ORDER BY idx").fetchall() \
            == [("a/0", 2000.0), ("a/1", 0.0)]
    del app
    core = build(db, idle_finish_s=1.0).core
    t0 = core.tracks["a/0"].restored_s
    core.apply_flow_stats(l1, [(cookie_for(1), 0, 0), (cookie_for(2), 0, 0)], t0 + 0.5)
    assert core.check_idle(t0 + 5.0).finished == ["a/0"]  # had started: 5 x idle_finish_s
    assert core.check_idle(t0 + 14.9).finished == []
    assert core.check_idle(t0 + 15.0).finished == ["a/1"]  # never counted: 15 x


def test_state_db_sync_sets_sqlite_synchronous(tmp_path):
    # SQLite's PRAGMA synchronous: 1 NORMAL (the default here), 2 FULL
    for sync, want in (("normal", 1), ("full", 2)):
        s = Store(str(tmp_path / f"{sync}.sqlite3"), sync=sync)
        assert s._db.execute("PRAGMA synchronous").fetchone()[0] == want
        s.close()
    with pytest.raises(StoreError, match="state_db_sync"):
        Store(str(tmp_path / "x.sqlite3"), sync="fast")
    with pytest.raises(SettingsError, match="state_db_sync: must be normal or full"):
        Settings(state_db_sync="always").validate()


def test_progress_writes_only_changed_flows_in_chunks_with_pauses(tmp_path, monkeypatch):
    """The poller's progress write touches the flows whose bytes_sent moved since
    their last write, a chunk at a time, yielding (``hold_pause``) between chunks."""
    db = str(tmp_path / "c.sqlite3")
    app = build(db, scheduler="baseline")
    hosts = [f"h{i}" for i in range(1, 10)]
    flows = [flow(hosts[i % 9], hosts[(i + 1 + i // 9) % 9], MB, 1000 + i) for i in range(70)]
    assert call(app, "POST", "/rapier/v1/coflows", {"flows": flows, "id": "w"})[0] == 201
    core = app.core
    monkeypatch.setattr(type(core), "PROGRESS_CHUNK", 30)
    writes, pauses = [], []
    real = core.store.update_flows
    monkeypatch.setattr(core.store, "update_flows",
                        lambda rows: (writes.append([r[0] for r in rows]), real(rows)))
    core.hold_pause = lambda: pauses.append(len(writes))
    assert core.persist_progress(app.now(), force=True) == 70
    assert [len(w) for w in writes] == [30, 30, 10]
    # a pause between two writes (after the first and the second), none before the first
    # write and two in the scan of 70 flows (every 32)
    assert pauses.count(1) == 1 and pauses.count(2) == 1 and pauses.count(0) == 2
    writes.clear()
    assert core.persist_progress(app.now(), force=False) == 0  # interval not passed
    core._progress_written_s = -1e9
    assert core.persist_progress(app.now()) == 0 and writes == []  # nothing moved
    # one flow moves: only it is written
    f = core.coflows["w"].flows[5]
    f.bytes_sent = 12345
    core._progress_written_s = -1e9
    assert core.persist_progress(app.now()) == 1 and writes == [[f.flow_id]]
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT bytes_sent FROM flows WHERE flow_id=?",
                           (f.flow_id,)).fetchone()[0] == 12345


def test_schedule_view_yields_while_it_is_built(tmp_path):
    """``GET /schedule`` with many flows yields to the event loop (``hold_pause``)
    every 32 flows while building its allocations, and lists every live flow once."""
    app = build(str(tmp_path / "c.sqlite3"), scheduler="baseline")
    hosts = [f"h{i}" for i in range(1, 10)]
    flows = [flow(hosts[i % 9], hosts[(i + 1 + i // 9) % 9], MB, 1000 + i) for i in range(70)]
    assert call(app, "POST", "/rapier/v1/coflows", {"flows": flows, "id": "w"})[0] == 201
    core = app.core
    pauses = []
    core.hold_pause = lambda: pauses.append(1)
    view = core.schedule_view()
    # 70 live flows scanned, then 70 allocations built: 140 steps, a pause every 32
    assert len(pauses) == 140 // 32
    assert sorted(view["allocations"]) == sorted(f"w/{i}" for i in range(70))
    assert list(view)[:8] == ["scheduler", "computed_at_s", "count", "solve_s",
                              "reschedule_on", "order", "fallback", "allocations"]
    core.hold_pause = None
    assert core.schedule_view() == view
