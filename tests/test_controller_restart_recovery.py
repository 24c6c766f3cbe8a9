"""A restarted controller learns at once which flows finished while it was down.

In-process: the Ryu app runs against fake switches that keep their flow tables and
per-entry byte counters across a controller crash (Open vSwitch in ``secure`` fail
mode does), answer flow-statistics requests with the counters they had when the
request arrived, and apply the clear and the re-added rules that follow it (a
re-added rule counts from zero).  The controller dies (``del app``) and a new one is
built on the same database file.

Workload: on leafspine:3,3,3, coflow ``a`` (h1 -> h4, 8 MB) and coflow ``b`` (h1 ->
h5, 12 MB) share h1's access link; RAPIER gives ``a`` the link and holds ``b``.
"""

from types import SimpleNamespace

import pytest

from rapier_app.controller.rules import cookie_for
from test_controller_barrier import FakeSwitch, flow, make_app
from rapier_app.controller.stack import ofproto_v1_3_parser as parser

MB = 1 << 20
HDR = 66
PKT = 1448  # payload bytes per packet of the counters below


class CountingSwitch(FakeSwitch):
    """A :class:`FakeSwitch` whose entries count bytes (``count``) and that answers
    flow-statistics requests (:meth:`answer_stats`) with its counters at the time
    each request arrived."""

    def __init__(self, dpid, app):
        super().__init__(dpid, app)
        self.counters = {}  # (priority, match) -> [bytes, packets]
        self.mods = {}  # (priority, match) -> the OFPFlowMod that added the entry
        self.stats_asked = []  # one list of OFPFlowStats per request held

    def send_msg(self, msg):
        if isinstance(msg, parser.OFPFlowStatsRequest):
            msg.serialize()
            self.log.append(msg)
            self.stats_asked.append([self._stats(k) for k in self.table])
            return
        super().send_msg(msg)
        if isinstance(msg, parser.OFPFlowMod):
            key = (msg.priority, tuple(msg.match._fields2))
            if msg.command == parser.ofproto.OFPFC_ADD:
                self.counters.pop(key, None)  # a new entry counts from zero
                self.mods[key] = msg
            for k in [k for k in self.counters if k not in self.table]:
                del self.counters[k]

    def _stats(self, key):
        m = self.mods[key]
        nbytes, npkts = self.counters.get(key, (0, 0))
        return parser.OFPFlowStats(table_id=0, duration_sec=0, duration_nsec=0,
                                   priority=m.priority, idle_timeout=m.idle_timeout,
                                   hard_timeout=0, flags=m.flags, cookie=self.table[key][0],
                                   packet_count=npkts, byte_count=nbytes, match=m.match,
                                   instructions=m.instructions)

    def count(self, cookie, payload):
        """The entry with ``cookie`` forwarded ``payload`` bytes (in PKT packets)."""
        (key,) = [k for k, v in self.table.items() if v[0] == cookie]
        n = -(-payload // PKT)
        self.counters[key] = [payload + n * HDR, n]

    def answer_stats(self):
        """Reply to every flow-statistics request held (one reply each)."""
        todo, self.stats_asked = self.stats_asked, []
        for body in todo:
            self.app.flow_stats_reply(SimpleNamespace(msg=SimpleNamespace(
                datapath=self, flags=0, body=body)))


def connect(app, switches=None, answer_stats=True):
    """Connect every switch of the topology to ``app`` (the given ones again, or new
    ones) and answer, in the order a switch would, the flow-statistics request sent
    first (unless not ``answer_stats``) and the barriers; returns them by name."""
    sw = switches or {s: CountingSwitch(app.core.topology.graph.nodes[s]["dpid"], app)
                      for s in app.core.topology.switches}
    for dp in sw.values():
        dp.app = app
        app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
        if answer_stats:
            dp.answer_stats()
        dp.answer()
    return sw


def rates(app):
    return {f["flow_id"]: (f["state"], f["rate_bps"])
            for cid in ("a", "b") for f in app.core.coflow_view(cid)["flows"]}


def crash_after_a_sent(tmp_path, a_counted):
    """Run a and b, write a's progress (3 MB), let the first-hop rule of a count
    ``a_counted`` payload bytes while no controller runs, restart; returns the new
    app, the switches (not yet reconnected) and the link rate (bit/s)."""
    db = str(tmp_path / "c.sqlite3")
    app = make_app(state_db=db)
    sw = connect(app)
    app.submit({"flows": [flow("h1", "h4", 8 * MB, 5401)], "id": "a"})
    app.submit({"flows": [flow("h1", "h5", 12 * MB, 5402)], "id": "b"})
    for dp in sw.values():
        dp.answer()
    full = app.core.topology.graph.edges["h1", "l1"]["capacity_bps"]
    assert rates(app) == {"a/0": ("active", full), "b/0": ("active", 0.0)}
    sw["l1"].count(cookie_for(1), 3 * MB)
    app.poll_once()
    sw["l1"].answer_stats()
    app.core.persist_progress(app.now(), force=True)
    assert app.core.coflow_view("a")["bytes_sent"] == 3 * MB
    del app  # killed: the switches keep their rules, and they go on counting
    sw["l1"].count(cookie_for(1), a_counted)
    sw["l1"].count(cookie_for(2), 40_000)  # b's trickle
    app2 = make_app(state_db=db)
    # the reload decided without knowing: a still holds the link
    assert rates(app2) == {"a/0": ("active", full), "b/0": ("active", 0.0)}
    return app2, sw, full


def test_flow_counted_whole_at_reconnect_is_done_and_releases_the_next(tmp_path):
    app, sw, full = crash_after_a_sent(tmp_path, 8 * MB)
    t_reload = app.core.tracks["a/0"].restored_s
    n = app.core.schedule_count
    sent = len(sw["l1"].log)
    connect(app, sw, answer_stats=False)
    # the first message to a reconnected switch asks for its counters, before the clear
    assert isinstance(sw["l1"].log[sent], parser.OFPFlowStatsRequest)
    assert len(sw["l1"].stats_asked) == 1
    assert rates(app)["b/0"] == ("active", 0.0)
    sw["l1"].answer_stats()
    # a's old rule counted all 8 MB: done at once (at the reload), and the decision
    # that follows, the first since the reload, gives b the whole link
    assert app.core.coflow_view("a")["state"] == "done"
    assert app.core.coflow_view("a")["finish_s"] == pytest.approx(t_reload)
    assert app.core.schedule_count == n + 1
    assert rates(app) == {"a/0": ("done", 0.0), "b/0": ("active", full)}
    assert app.core.coflow_view("b")["flows"][0]["bytes_sent"] == 40_000
    # b's rule on l1 was re-added and counts from zero: its progress adds up
    sw["l1"].count(cookie_for(2), 1 * MB)
    app.poll_once()
    sw["l1"].answer_stats()
    assert app.core.coflow_view("b")["flows"][0]["bytes_sent"] == 40_000 + 1 * MB


def test_flow_short_of_its_size_at_reconnect_carries_on_from_its_counters(tmp_path):
    app, sw, full = crash_after_a_sent(tmp_path, 6 * MB)
    connect(app, sw)
    assert rates(app) == {"a/0": ("active", full), "b/0": ("active", 0.0)}
    # 6 MB counted by the old rule, more than the 3 MB stored: the new start
    assert app.core.coflow_view("a")["flows"][0]["bytes_sent"] == 6 * MB
    sw["l1"].count(cookie_for(1), 2 * MB)  # the re-added rule: the last 2 MB
    app.poll_once()
    sw["l1"].answer_stats()
    assert rates(app) == {"a/0": ("done", 0.0), "b/0": ("active", full)}


def test_deferred_start_takes_the_report_before_the_kernels_and_decides_once(tmp_path):
    """``ryu-manager``'s start (``rapier_defer_start``): the app is built (its REST and
    OpenFlow servers may listen) before the scheduler's kernels load; the restored
    coflows are then not decided and no agent is sent a set, not even by the
    poller's push retries (it would clear the limits the agents keep), until the
    worker's first step.  A report that came meanwhile is in that first decision:
    ``a`` is done, and the one decision gives ``b`` the whole link, pushed at once."""
    import rapier_app.controller as controller_pkg
    from rapier_app.controller.settings import Settings

    opts = dict(scheduler="rapier", topology="leafspine:3,3,3",
                agent_url="unix:/nonexistent/{host}.sock", state_db=str(tmp_path / "c.sqlite3"))
    app = controller_pkg.RapierController(
                                          rapier_settings=Settings(**opts))
    app.submit({"flows": [flow("h1", "h4", 8 * MB, 5401)], "id": "a"})
    app.submit({"flows": [flow("h1", "h5", 12 * MB, 5402)], "id": "b"})
    full = app.core.topology.graph.edges["h1", "l1"]["capacity_bps"]
    assert rates(app) == {"a/0": ("active", full), "b/0": ("active", 0.0)}
    del app  # killed
    app = controller_pkg.RapierController(rapier_defer_start=True,
                                          rapier_settings=Settings(**opts))
    n = app.core.schedule_count
    assert not app.start_decided and app._pending == {}
    assert rates(app) == {"a/0": ("active", 0.0), "b/0": ("active", 0.0)}  # undecided
    app._start_loop()  # as start() does: decisions are the worker's
    app.poll_once()  # no push retry before the decision: the agents keep their limits
    assert app._pending == {}
    # the receiver's report is taken, the decision waits for the worker
    assert app.flow_done("a", 0)["finished"] is True
    assert app.core.schedule_count == n and app._pending == {}
    app._first_decisions()  # the worker's first step (not running: in place)
    assert app.start_decided and app.core.schedule_count == n + 1
    assert rates(app) == {"a/0": ("done", 0.0), "b/0": ("active", full)}
    # every agent gets its full set: h1 the link for b, the others [] (limits cleared)
    assert sorted(app._pending) == sorted(app.core.topology.hosts)
    assert [(f["flow_id"], f["rate_bps"]) for f in app._pending["h1"].flows] == [("b/0", full)]
    assert all(app._pending[h].flows == [] for h in app._pending if h != "h1")
