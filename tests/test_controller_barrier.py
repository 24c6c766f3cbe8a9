"""Issue 14, consistency: rules are recorded installed only on the barrier reply,
one writer per switch, cancel removes pending rules, idle timeouts.

The Ryu app runs in-process against fake switches that apply the OpenFlow 1.3
messages they receive (ADD replaces an entry of the same priority and match,
MODIFY_STRICT changes an existing one only, DELETE_STRICT removes it; section 6.4)
and answer barrier requests only when the test says so.
"""

import random
import threading
import time
from types import SimpleNamespace

import pytest

import rapier_app.controller as controller_pkg
from rapier_app.controller import ofmsgs
from rapier_app.controller.rules import FlowRule
from rapier_app.controller.settings import Settings
from rapier_app.controller.ledger import RuleLedger
from rapier_app.controller.stack import ofproto_v1_3 as ofp
from rapier_app.controller.stack import ofproto_v1_3_parser as parser

MB = 1 << 20


class FakeSwitch:
    """A datapath that applies flow/group mods to its tables and holds barrier
    requests until :meth:`answer` (``yield_every`` sleeps between messages so that
    OS threads interleave)."""

    ofproto = ofp
    ofproto_parser = parser

    def __init__(self, dpid, app, yield_every=False):
        self.id = dpid
        self.app = app
        self.xid = 0
        self.table = {}
        self.groups = {}
        self.barriers = []
        self.log = []
        self.yield_every = yield_every
        self._lock = threading.Lock()

    def set_xid(self, msg):
        with self._lock:
            self.xid += 1
            msg.set_xid(self.xid)
            return self.xid

    def send_msg(self, msg):
        msg.serialize()
        if self.yield_every:
            time.sleep(0)
        with self._lock:
            self.log.append(msg)
            if isinstance(msg, parser.OFPFlowMod):
                self._flow_mod(msg)
            elif isinstance(msg, parser.OFPGroupMod):
                if msg.command == ofp.OFPGC_DELETE:
                    if msg.group_id == ofp.OFPG_ALL:
                        self.groups.clear()
                    else:
                        self.groups.pop(msg.group_id, None)
                else:
                    self.groups[msg.group_id] = tuple(b.actions[0].port for b in msg.buckets)
            elif isinstance(msg, parser.OFPBarrierRequest):
                self.barriers.append(msg.xid)

    def _flow_mod(self, m):
        key = (m.priority, tuple(m.match._fields2))
        if m.command == ofp.OFPFC_DELETE:  # non-strict, by cookie mask: the clear
            for k in [k for k, v in self.table.items()
                      if v[0] & m.cookie_mask == m.cookie & m.cookie_mask]:
                del self.table[k]
        elif m.command == ofp.OFPFC_ADD:
            self.table[key] = (m.cookie, _actions(m))
        elif m.command == ofp.OFPFC_MODIFY_STRICT:
            if key in self.table:
                self.table[key] = (self.table[key][0], _actions(m))
        elif m.command == ofp.OFPFC_DELETE_STRICT:
            self.table.pop(key, None)

    def answer(self, n=None):
        """Send the barrier replies held so far (all, or the first ``n``)."""
        with self._lock:
            todo = self.barriers if n is None else self.barriers[:n]
            self.barriers = self.barriers[len(todo):]
        for x in todo:
            self.app.barrier_reply(SimpleNamespace(msg=SimpleNamespace(datapath=self, xid=x)))


def _actions(m):
    out = []
    for a in m.instructions[0].actions:
        if isinstance(a, parser.OFPActionGroup):
            out.append(("group", a.group_id))
        elif a.port == ofp.OFPP_CONTROLLER:
            out.append(("controller", 0))
        else:
            out.append(("output", a.port))
    return tuple(out)


def _view(rule: FlowRule):
    return (rule.priority, rule.match), (rule.cookie, rule.actions)


def make_app(**kw):
    opts = dict(scheduler="rapier", topology="leafspine:3,3,3", agent_url="", state_db="")
    opts.update(kw)
    return controller_pkg.RapierController(
                                           rapier_settings=Settings(**opts))


def connect(app, yield_every=False):
    sw = {}
    for s in app.core.topology.switches:
        dp = FakeSwitch(app.core.topology.graph.nodes[s]["dpid"], app, yield_every)
        app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
        sw[s] = dp
    return sw


def flow(src="h1", dst="h5", size=50 * MB, port=5001):
    return {"src": src, "dst": dst, "size_bytes": size, "dst_port": port}


def coflow_rules_on(dp):
    return {k: v for k, v in dp.table.items() if k[0] == 100}


def test_rule_is_pending_until_its_barrier_reply():
    app = make_app()
    sw = connect(app)
    for dp in sw.values():
        dp.answer()  # the defaults are installed
    assert app.core.installed == {}
    view = app.submit({"flows": [flow()], "id": "a"})
    path = view["flows"][0]["path"]
    assert len(path) == 5  # h1 l1 sX l2 h5: three switches, three rules
    assert view["flows"][0]["rules"] == {"installed": 0, "pending": 3}
    # The switches have the rule (sent) but no barrier reply came: still pending.
    assert all(len(coflow_rules_on(sw[s])) == 1 for s in path[1:-1])
    assert app.core.installed == {} and len(app.core.desired) == 3
    sw[path[1]].answer()
    v = app.core.coflow_view("a")["flows"][0]["rules"]
    assert v == {"installed": 1, "pending": 2}
    for s in path[2:-1]:
        sw[s].answer()
    assert app.core.coflow_view("a")["flows"][0]["rules"] == {"installed": 3, "pending": 0}
    assert app.core.installed == app.core.desired


def test_rejected_flow_mod_is_never_recorded_installed():
    app = make_app()
    sw = connect(app)
    for dp in sw.values():
        dp.answer()
    app.submit({"flows": [flow()], "id": "a"})
    first = sw["l1"]
    fm = [m for m in first.log if isinstance(m, parser.OFPFlowMod) and m.priority == 100][-1]
    err = SimpleNamespace(datapath=first, xid=fm.xid, type=ofp.OFPET_FLOW_MOD_FAILED,
                          code=ofp.OFPFMFC_TABLE_FULL, data=b"")
    app.error_msg(SimpleNamespace(msg=err))
    first.answer()
    assert app.core.coflow_view("a")["flows"][0]["rules"]["pending"] >= 1
    assert all(d != first.id for d, _ in app.core.installed)
    assert app.core.ledger.failed == 1
    assert any("rejected" in e for e in app.core.errors)


def test_cancel_removes_pending_rules():
    app = make_app()
    sw = connect(app)
    app.submit({"flows": [flow(), flow("h2", "h6", port=7)], "id": "a"})
    assert sum(len(coflow_rules_on(dp)) for dp in sw.values()) == 6
    app.cancel("a")  # no barrier reply seen yet: the adds are pending
    assert sum(len(coflow_rules_on(dp)) for dp in sw.values()) == 0
    for dp in sw.values():
        dp.answer()
    assert app.core.installed == {} and app.core.desired == {}


def test_barrier_of_an_earlier_connection_is_ignored():
    app = make_app()
    sw = connect(app)
    app.submit({"flows": [flow()], "id": "a"})
    old = sw["l1"]
    held = list(old.barriers)
    new = FakeSwitch(old.id, app)
    app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=new)))
    for x in held:  # late replies on the old connection
        app.barrier_reply(SimpleNamespace(msg=SimpleNamespace(datapath=old, xid=x)))
    assert app.core.ledger.confirmed[old.id] == {}
    new.answer()
    # The new connection got the defaults and a's rule again.
    assert len(coflow_rules_on(new)) == 1
    assert {k: v for k, v in (_view(r) for r in app.core.ledger.confirmed[new.id].values()
                              if isinstance(r, FlowRule))} == new.table


def test_four_concurrent_clients_leave_the_switches_equal_to_the_controller_view():
    app = make_app()
    sw = connect(app, yield_every=True)
    errors = []

    def client(k):
        rnd = random.Random(k)
        mine = []
        try:
            for i in range(12):
                src, dst = rnd.sample([f"h{n}" for n in range(1, 10)], 2)
                body = {"flows": [flow(src, dst, rnd.randint(1, 50) * MB, 10000 + 100 * k + i)],
                        "id": f"t{k}-{i}"}
                app.submit(body)
                mine.append(body["id"])
                if i % 3 == 2:
                    app.cancel(mine.pop(rnd.randrange(len(mine))))
        except Exception as exc:  # noqa: BLE001 -- reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for dp in sw.values():
        dp.answer()
    desired = {}
    for (dpid, _), r in app.core.desired.items():
        desired.setdefault(dpid, {})[(r.priority, r.match)] = (r.cookie, r.actions)
    n_rules = 0
    for dp in sw.values():
        confirmed = dict(_view(r) for r in app.core.ledger.confirmed[dp.id].values()
                         if isinstance(r, FlowRule))
        assert dp.table == confirmed  # the controller's view is the switch's table
        assert coflow_rules_on(dp) == desired.get(dp.id, {})
        assert app.core.ledger.pending(dp.id) == 0
        n_rules += len(coflow_rules_on(dp))
    # 4 clients x 12 coflows, 4 cancelled each: 32 active single-flow coflows, each
    # with a rule on 1 (same leaf) or 3 switches.
    assert len(app.core.active()) == 32
    assert 32 <= n_rules <= 96 and n_rules == len(app.core.desired)


def test_idle_timeout_of_a_wanted_rule_re_adds_it():
    app = make_app(rule_idle_timeout_s=30)
    sw = connect(app)
    for dp in sw.values():
        dp.answer()
    app.submit({"flows": [flow()], "id": "a"})
    l1 = sw["l1"]
    for dp in sw.values():
        dp.answer()
    fm = [m for m in l1.log if isinstance(m, parser.OFPFlowMod) and m.priority == 100][-1]
    assert fm.idle_timeout == 30 and fm.flags & ofp.OFPFF_SEND_FLOW_REM
    # Defaults never time out.
    assert all(m.idle_timeout == 0 for m in l1.log
               if isinstance(m, parser.OFPFlowMod) and m.priority != 100)
    key = (fm.priority, tuple(fm.match._fields2))
    del l1.table[key]  # the switch expired it
    n_before = len(l1.log)
    removed = SimpleNamespace(datapath=l1, reason=ofp.OFPRR_IDLE_TIMEOUT, cookie=fm.cookie,
                              priority=fm.priority, match=fm.match)
    app.flow_removed(SimpleNamespace(msg=removed))
    assert app.core.coflow_view("a")["flows"][0]["rules"]["pending"] == 1
    again = [m for m in l1.log[n_before:] if isinstance(m, parser.OFPFlowMod)]
    assert [(m.command, m.cookie) for m in again] == [(ofp.OFPFC_ADD, fm.cookie)]
    l1.answer()
    assert key in l1.table
    assert app.core.coflow_view("a")["flows"][0]["rules"]["pending"] == 0
    # Our own delete (reason DELETE) changes nothing.
    app.flow_removed(SimpleNamespace(msg=SimpleNamespace(
        datapath=l1, reason=ofp.OFPRR_DELETE, cookie=fm.cookie, priority=100,
        match=fm.match)))
    assert app.core.coflow_view("a")["flows"][0]["rules"]["pending"] == 0


def test_flow_mod_idle_timeout_range():
    dp = FakeSwitch(1, None)
    rule = FlowRule(1, 100, (("eth_type", 0x0800),), (("output", 1),), 5, "add", "a/0")
    assert ofmsgs.flow_mod(dp, rule, 65535).idle_timeout == 65535
    assert ofmsgs.flow_mod(dp, rule.with_command("modify"), 10).idle_timeout == 0
    for bad in (-1, 65536, 1.5, True):
        with pytest.raises(ValueError, match="idle_timeout_s"):
            ofmsgs.flow_mod(dp, rule, bad)
    default = FlowRule(1, 10, (("eth_type", 0x0800),), (("output", 1),))
    assert ofmsgs.message_for(dp, default, 300).idle_timeout == 0


def test_ledger_applies_batches_in_order_up_to_the_barrier():
    led = RuleLedger()
    a = FlowRule(1, 100, (("tcp_dst", 1),), (("output", 2),), 9, "add", "a/0")
    led.sent(1, 10, [(7, a)])
    led.sent(1, 12, [(11, FlowRule(1, 100, a.match, (("output", 3),), 9, "modify", "a/0"))])
    led.sent(1, 14, [(13, a.with_command("delete"))])
    assert led.pending(1) == 3
    assert led.barrier_reply(1, 99) == 0  # not ours
    assert led.barrier_reply(1, 12) == 2
    assert led.confirmed[1][(100, a.match)].actions == (("output", 3),)
    assert led.status(a) == "pending"  # other actions now
    assert led.barrier_reply(1, 14) == 1 and led.confirmed[1] == {}
    # A modify of a missing entry adds nothing (OpenFlow 1.3: no insert on modify).
    led.sent(1, 16, [(15, a.with_command("modify"))])
    led.barrier_reply(1, 16)
    assert led.confirmed[1] == {}


def test_dump_flows_reader_handles_the_send_flow_rem_flag():
    """ovs-ofctl prints flags of our idle-timeout rules with a space before the
    priority; the emulation's reader must still see priority 100 and the match."""
    from mininet_tests.ofctl import parse_dump_flows

    line = (" cookie=0x5241000000000004, duration=2.041s, table=0, n_packets=3, n_bytes=180,"
            " idle_timeout=300, send_flow_rem priority=100,tcp,nw_src=10.0.0.1,"
            "nw_dst=10.0.0.5,tp_dst=20001 actions=output:2")
    (r,) = parse_dump_flows(line)
    assert (r.priority, r.field("nw_dst"), r.field("tp_dst"), r.output_ports(), r.n_bytes) == \
        (100, "10.0.0.5", "20001", [2], 180)
