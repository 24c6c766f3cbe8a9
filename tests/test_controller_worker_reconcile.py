"""Issue 14, responsiveness and reconciliation: the decision worker (POST returns
before the scheduler runs, queued submissions decided together, the decision budget),
switch reconciliation (a missing, a wrong-port and a stale rule repaired in one
round), agent push backoff, and /health under 200 idle sockets on the real
``ryu-manager``.

The in-process tests reuse the fake switches of ``test_controller_barrier`` (they
apply the OpenFlow messages they receive and answer barriers when told).
"""

import json
import os
import queue
import select
import socket
import time
from types import SimpleNamespace

import pytest
from webob import Request

from enforcement import client
from mininet_tests.ryuproc import ControllerError, start_controller, stop_controller
from rapier_app.controller import reconcile
from rapier_app.controller.rules import COOKIE_TAG, FlowRule, diff_rules
from rapier_app.controller.pushes import PushBook
from rapier_app.controller.worker import DecisionWorker
from rapier_app.controller.stack import ofproto_v1_3 as ofp
from rapier_app.controller.stack import ofproto_v1_3_parser as parser

from test_controller_barrier import connect, flow, make_app  # noqa: I100

MB = 1 << 20


def rest_app(**kw):
    import rapier_app.controller as controller_pkg
    from rapier_app.controller.settings import Settings

    opts = dict(scheduler="rapier", topology="leafspine:3,3,3", agent_url="", state_db="")
    opts.update(kw)
    app = controller_pkg.RapierController(rapier_settings=Settings(**opts))
    return app


def call(app, method, path, body=None):
    req = Request.blank(path, method=method,
                        body=b"" if body is None else json.dumps(body).encode(),
                        headers={"Content-Type": "application/json"})
    resp = req.get_response(app.wsgi)
    return resp.status_int, json.loads(resp.body)


def stats_of(dp):
    """The fake switch's table as OFPFlowStats-like entries (what a read-back gives)."""
    out = []
    for (prio, match), (cookie, actions) in dp.table.items():
        acts = [parser.OFPActionGroup(a) if k == "group" else
                parser.OFPActionOutput(ofp.OFPP_CONTROLLER if k == "controller" else a)
                for k, a in actions]
        out.append(SimpleNamespace(priority=prio, cookie=cookie, match=parser.OFPMatch(**dict(match)),
                                   instructions=[SimpleNamespace(actions=acts)],
                                   byte_count=0, packet_count=0))
    return out


def read_back(app, dp):
    """Answer the flow-stats request the poller sent to ``dp`` with its table."""
    msg = SimpleNamespace(datapath=dp, body=stats_of(dp), flags=0)
    app.flow_stats_reply(SimpleNamespace(msg=msg))


def want_view(app, dpid):
    return {(r.priority, tuple(r.match)): (r.cookie, r.actions)
            for r in app.core.switch_want(dpid)}


# -- reconcile.diff_table (pure) --------------------------------------------------------
def _rule(port, tcp=5001, flow_id="c1/0"):
    match = (("eth_type", 0x0800), ("ip_proto", 6), ("ipv4_src", "10.0.0.1"),
             ("ipv4_dst", "10.0.0.5"), ("tcp_dst", tcp))
    return FlowRule(7, 100, match, (("output", port),), COOKIE_TAG | 2, "add", flow_id)


def test_diff_table_counts_missing_wrong_and_stale_and_ignores_match_order():
    a, b, c = _rule(1, 5001, "a"), _rule(2, 5002, "b"), _rule(3, 5003, "c")
    have = [
        # a: same rule, match fields reported in another order -> no difference
        reconcile.Entry(100, tuple(reversed(a.match)), a.actions, a.cookie),
        # b: wrong output port
        reconcile.Entry(100, b.match, (("output", 9),), b.cookie),
        # stale: tcp 6000 is not wanted
        reconcile.Entry(100, _rule(4, 6000).match, (("output", 4),), COOKIE_TAG | 9),
    ]
    rep = reconcile.diff_table(7, [a, b, c], have)
    assert (rep.missing, rep.wrong, rep.stale, rep.differences) == (1, 1, 1, 3)
    assert [(r.command, dict(r.match)["tcp_dst"]) for r in rep.rules] == \
        [("add", 5002), ("add", 5003), ("delete", 6000)]
    assert rep.rules[0].actions == (("output", 2),)
    # a matching table needs nothing
    same = [reconcile.Entry(r.priority, r.match, r.actions, r.cookie) for r in (a, b, c)]
    assert reconcile.diff_table(7, [a, b, c], same).rules == []
    # another cookie on the same entry is wrong too (MODIFY_STRICT cannot fix it)
    other = [reconcile.Entry(100, a.match, a.actions, COOKIE_TAG | 5)]
    assert reconcile.diff_table(7, [a], other).wrong == 1


def test_entry_from_stats_reads_ryu_actions():
    st = SimpleNamespace(priority=20, cookie=COOKIE_TAG | 1,
                         match=parser.OFPMatch(eth_type=0x0806),
                         instructions=[SimpleNamespace(actions=[
                             parser.OFPActionOutput(ofp.OFPP_CONTROLLER),
                             parser.OFPActionGroup(4), parser.OFPActionOutput(3)])])
    e = reconcile.entry_from_stats(st)
    assert e == reconcile.Entry(20, (("eth_type", 0x0806),),
                                (("controller", 0), ("group", 4), ("output", 3)), COOKIE_TAG | 1)


# -- reconciliation through the app and the fake switches --------------------------------
def test_missing_wrong_port_and_stale_rules_are_repaired_in_one_round():
    app = make_app(reconcile_interval_s=0.0)
    sw = connect(app)
    for dp in sw.values():
        dp.answer()
    app.submit({"flows": [flow("h1", "h5", 50 * MB, 5001), flow("h2", "h6", 50 * MB, 5002)]})
    for dp in sw.values():
        dp.answer()
    # h1 -> h5 crosses l1, a spine, l2; both flows have rules on the spine they use
    rules = {}
    for (dpid, fid), r in app.core.desired.items():
        rules.setdefault(fid, {})[dpid] = r
    f0 = app.core.coflows["c1"].flows[0]
    spine = f0.path[2]
    dp_spine = sw[spine]
    dp_l1 = sw[f0.path[1]]
    r_first = rules[f0.flow_id][dp_l1.id]
    r_spine = rules[f0.flow_id][dp_spine.id]
    # break the switches behind the controller's back
    del dp_l1.table[(r_first.priority, r_first.match)]                       # missing
    wrong_port = next(p for p in (1, 2, 3, 4, 5) if ("output", p) not in r_spine.actions)
    dp_spine.table[(r_spine.priority, r_spine.match)] = (r_spine.cookie,
                                                         (("output", wrong_port),))  # wrong
    stale_match = tuple(_rule(1, 7777).match)
    dp_spine.table[(100, stale_match)] = (COOKIE_TAG | 999, (("output", 1),))   # stale
    assert dp_l1.table != want_view(app, dp_l1.id)
    # one round: the poller reads every switch back (on reconnect they were due)
    for dp in sw.values():
        dp.log.clear()
    app.poll_once()
    for dp in sw.values():
        reqs = [m for m in dp.log if isinstance(m, parser.OFPFlowStatsRequest)]
        assert len(reqs) == 1 and (reqs[0].cookie, reqs[0].cookie_mask) == \
            (COOKIE_TAG, 0xFFFF << 48)
        read_back(app, dp)
    for dp in sw.values():
        dp.answer()
    counts = app.core.reconcile_counts
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (1, 1, 1)
    assert counts["rounds"] == len(sw) and counts["skipped"] == 0
    for dp in sw.values():
        assert dp.table == want_view(app, dp.id), dp.id
        assert app.core.ledger.pending(dp.id) == 0
    assert app.core.schedule_view()["reconcile"]["stale"] == 1
    # a second round finds nothing
    app._reconcile_due |= set(sw_dp.id for sw_dp in sw.values())
    app.poll_once()
    for dp in sw.values():
        read_back(app, dp)
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (1, 1, 1)


def test_round_is_skipped_while_rules_are_in_flight():
    app = make_app(reconcile_interval_s=0.0)
    sw = connect(app)  # the install's barriers are not answered yet
    app.poll_once()
    for dp in sw.values():
        read_back(app, dp)
    counts = app.core.reconcile_counts
    assert counts["rounds"] == 0 and counts["skipped"] == len(sw)
    for dp in sw.values():  # nothing sent to repair a table still being filled
        assert not [m for m in dp.log if isinstance(m, parser.OFPFlowMod)
                    and m.command == ofp.OFPFC_DELETE_STRICT]
    assert app._reconcile_due == {dp.id for dp in sw.values()}  # retried next round


# -- the decision worker ------------------------------------------------------------------
def test_post_returns_before_the_decision_and_queued_posts_share_one_decision():
    app = rest_app()
    app.worker.running = True  # as after start(): POST only queues
    dps = connect(app)
    for dp in dps.values():
        dp.answer()
        dp.log.clear()
    before = app.core.schedule_count
    ids = []
    for i, (s, d) in enumerate([("h1", "h5"), ("h2", "h6"), ("h3", "h9")]):
        st, body = call(app, "POST", "/rapier/v1/coflows",
                        {"flows": [flow(s, d, 10 * MB, 6000 + i)]})
        # admitted in the handler: its ECMP path, no scheduler call (.admission)
        assert st == 201 and body["coflow"]["decision"] == "provisional"
        path = body["coflow"]["flows"][0]["path"]
        assert path[0] == s and path[-1] == d
        ids.append(body["id"])
    assert app.core.schedule_count == before
    # the handler sent the admitted flows' rules only: one per switch of each path
    assert sum(isinstance(m, parser.OFPFlowMod) for dp in dps.values() for m in dp.log) \
        == len(app.core.desired) == sum(len(c.flows[0].path) - 2
                                        for c in app.core.active())
    admitted = dict(app.core.desired)
    for dp in dps.values():
        dp.log.clear()
    assert app.worker.backlog() == 3
    assert app.worker.run_once(block=False) == ids
    assert app.core.schedule_count == before + 1  # one decision for the three
    assert app.worker.stats()["largest_batch"] == 3 and app.worker.backlog() == 0
    for cid in ids:
        st, c = call(app, "GET", f"/rapier/v1/coflows/{cid}")
        assert c["decision"] == "scheduled" and c["flows"][0]["path"] is not None
    # the decision sent only what changed from the admitted paths (re-routes)
    assert sum(isinstance(m, parser.OFPFlowMod) for dp in dps.values() for m in dp.log) \
        == len(diff_rules(admitted, dict(app.core.desired)))
    assert app.worker.run_once(block=False) == []  # empty queue: no decision


def test_decision_over_budget_is_applied_and_counted():
    """A decision longer than decision_budget_s (a scheduler call of 3.5 s on the
    wall clock) is still applied: the new coflow gets its paths, not default
    forwarding; the overrun is counted."""
    app = rest_app(decision_budget_s=2.0)
    connect(app)
    st, first = call(app, "POST", "/rapier/v1/coflows", {"flows": [flow("h1", "h5")]})
    assert first["coflow"]["decision"] == "scheduled"
    ticks = iter([0.0, 3.5])  # the next scheduler call takes 3.5 s of wall clock
    app.core.wall_clock = lambda: next(ticks)
    st, body = call(app, "POST", "/rapier/v1/coflows", {"flows": [flow("h2", "h6")]})
    assert st == 201
    c = body["coflow"]
    assert c["decision"] == "scheduled" and c["fallback"] is None
    assert c["flows"][0]["path"][0] == "h2" and c["flows"][0]["path"][-1] == "h6"
    fid = c["flows"][0]["flow_id"]
    assert len([d for (d, f) in app.core.desired if f == fid]) == len(c["flows"][0]["path"]) - 2
    st, old = call(app, "GET", f"/rapier/v1/coflows/{first['id']}")
    assert old["decision"] == "scheduled" and old["flows"][0]["path"] is not None
    assert app.core.budget_exceeded == 1 and app.core.last_solve_s == 3.5


def test_worker_batches_and_survives_a_failed_decision():
    seen = []

    def decide(ids):
        seen.append(list(ids))
        if ids == ["boom"]:
            raise RuntimeError("solver exploded")

    w = DecisionWorker(queue.Queue(), queue.Empty, decide)
    for cid in ("a", "b", "c"):
        w.put(cid)
    assert w.run_once() == ["a", "b", "c"] and seen == [["a", "b", "c"]]
    w.put("boom")
    with pytest.raises(RuntimeError):
        w.run_once()
    assert (w.decisions, w.submissions, w.largest_batch) == (2, 4, 3)


# -- agent push backoff ------------------------------------------------------------------
def test_agent_push_backoff_doubles_up_to_the_cap_and_resets():
    book = PushBook(lambda h: f"unix:/tmp/{h}.sock")
    lim = {"flow_id": "c1/0", "src_ip": "10.0.0.1", "dst_ip": "10.0.0.5", "proto": "tcp",
           "dst_port": 5001, "rate_bps": 1000}
    assert len(book.update({"h1": [lim]})) == 1
    delays = [book.failed("h1", 10.0, 0.5, 1.5) for _ in range(4)]
    assert delays == [0.5, 1.0, 1.5, 1.5]
    assert book.retry(11.4) == []          # due at 10.0 + 1.5
    (again,) = book.retry(11.5)
    assert again.flows == [lim]
    book.succeeded("h1")
    assert book.failed("h1", 20.0, 0.5, 1.5) == 0.5
    # the periodic full push repeats the set even when nothing changed
    book.update({"h1": [lim]})
    assert [(p.host, p.flows) for p in book.push_all()] == [("h1", [lim])]


def test_agent_push_backoff_survives_ten_thousand_failures():
    # 2.0 ** 1024 overflows a float: the exponent is capped before the power
    book = PushBook(lambda h: f"unix:/tmp/{h}.sock")
    delays = [book.failed("h1", float(i), 0.5, 30.0) for i in range(10_000)]
    assert delays[:7] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    assert set(delays[6:]) == {30.0}
    assert book.backoff["h1"] == (10_000, 9_999.0 + 30.0)


# -- /health under idle sockets on the real ryu-manager ----------------------------------
def test_health_answers_within_2_s_with_200_idle_sockets_and_idle_ones_are_closed(tmp_path):
    try:
        ryu, base, rest_port, _ = start_controller(
            "[rapier]\ntopology = leafspine:2,2,2\nscheduler = baseline\n"
            "agent_url =\nstate_db = off\nrest_socket_timeout_s = 3\n", str(tmp_path))
    except ControllerError as exc:
        pytest.fail(str(exc))
    idle = []
    try:
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", rest_port), timeout=5)
            s.sendall(b"GET /rapier/v1/health HTTP/1.1\r\nHost: x\r\n")  # never finished
            idle.append(s)
        t0 = time.monotonic()
        st, body = client.request(base, "GET", "/rapier/v1/health", timeout=2)
        assert st == 200 and body["ok"] is True
        assert time.monotonic() - t0 < 2.0
        # rest_socket_timeout_s = 3: the server closes the idle connections
        time.sleep(4.0)
        ready, _, _ = select.select(idle, [], [], 2.0)
        closed = 0
        for s in ready:
            s.setblocking(False)
            try:
                closed += s.recv(1024) == b""
            except ConnectionResetError:
                closed += 1
            except BlockingIOError:
                pass
        assert closed == 200
    finally:
        for s in idle:
            s.close()
        stop_controller(ryu)
        ryu.stdout.close()


# -- reads that predate queued rules (the churn under cancels) ----------------------------
def _ready(app, sw, coflows):
    """Submit ``coflows`` (id -> flows), let every switch confirm everything, and run
    one poller round: every switch is asked for its table (due since it connected);
    returns each switch's table as it was when the request reached it (its reply)."""
    for dp in sw.values():
        dp.answer()
    for cid, flows in coflows.items():
        app.submit({"flows": flows, "id": cid})
    for dp in sw.values():
        dp.answer()
    app.poll_once()
    return {name: stats_of(dp) for name, dp in sw.items()}


def test_a_read_back_older_than_rules_still_queued_repairs_nothing():
    """A cancel's deletes go out switch by switch; while the writer waits on one
    switch (Ryu's send queue full: the green thread yields), the read-back of a later
    switch of the same path, taken before the cancel, is handled.  That table still
    holds the cancelled flow's rule, whose delete is queued but not sent: it is not
    stale, and repairing it is churn (the cause of the repairs counted during the
    cancel phase of a burst).  The round is skipped (retried), nothing is sent but
    the cancel's own deletes, and the next round finds the switches right."""
    app = make_app(reconcile_interval_s=0.0)
    sw = connect(app)
    replies = _ready(app, sw, {"a": [flow("h1", "h5", 50 * MB, 5001)],
                               "b": [flow("h2", "h6", 50 * MB, 5002)]})
    path = app.core.coflows["a"].flows[0].path  # h1, l1, spine, l2, h5
    first, later = sw[path[2]], sw[path[1]]  # the spine's dpid sorts before l1's
    assert first.id < later.id
    for name, dp in sw.items():  # every other switch answers in time, unchanged
        if dp is not later:
            read_back(app, dp)
    counts = app.core.reconcile_counts
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (0, 0, 0)
    rounds = counts["rounds"]
    send = first.send_msg
    delivered = []

    def blocked_send(msg):  # the writer yields on the spine: the event loop runs
        if not delivered and isinstance(msg, parser.OFPFlowMod):
            delivered.append(msg)
            app.flow_stats_reply(SimpleNamespace(msg=SimpleNamespace(
                datapath=later, body=replies[path[1]], flags=0)))
        send(msg)

    first.send_msg = blocked_send
    app.cancel("a")
    assert delivered
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (0, 0, 0), counts
    assert counts["rounds"] == rounds and counts["skipped"] >= 1
    dels = [m for m in later.log if isinstance(m, parser.OFPFlowMod)
            and m.command == ofp.OFPFC_DELETE_STRICT]
    assert len(dels) == 1  # the cancel's, no repair behind it
    for dp in sw.values():
        dp.answer()
    app._reconcile_due |= {dp.id for dp in sw.values()}
    app.poll_once()
    for dp in sw.values():
        read_back(app, dp)
        assert dp.table == want_view(app, dp.id)
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (0, 0, 0), counts


def test_a_read_back_asked_during_a_multipart_reply_waits_for_a_whole_reply():
    """A large table comes in several parts (``OFPMPF_REPLY_MORE``).  When the
    poller asks for a read-back while the parts of an earlier reply are arriving,
    only whole replies are compared: the tail of that reply alone would make the
    rules of its first parts look missing."""
    app = make_app(reconcile_interval_s=0.0)
    sw = connect(app)
    _ready(app, sw, {"a": [flow("h1", "h5", 50 * MB, 5001), flow("h2", "h6", 50 * MB, 5002)]})
    for dp in sw.values():
        read_back(app, dp)  # the round asked for by the poller: all equal
    counts = app.core.reconcile_counts
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (0, 0, 0)
    dp = sw["l1"]
    table = stats_of(dp)
    assert len(table) > 4
    head, tail = table[:len(table) // 2], table[len(table) // 2:]
    more = ofp.OFPMPF_REPLY_MORE

    def part(body, flags):
        app.flow_stats_reply(SimpleNamespace(msg=SimpleNamespace(datapath=dp, body=body,
                                                                 flags=flags)))

    part(head, more)  # a progress poll's reply, first part
    app._reconcile_due.add(dp.id)
    app.poll_once()  # the read-back is asked for now
    part(tail, 0)  # the same reply ends
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (0, 0, 0), counts
    part(head, more)  # the read-back's own reply, whole
    part(tail, 0)
    assert (counts["missing"], counts["wrong"], counts["stale"]) == (0, 0, 0), counts
    assert dp.id not in app._reconcile_req  # it was compared
