"""Unit tests of the controller's pure core (no Ryu, no switch, no agent).

Forwarding is checked behaviourally on a fake flow-table fabric
(:class:`test_controller_fakes.FakeFabric`): packets are walked hop by hop through
the rules the core emits.
"""

import json
import math
import struct

import pytest

from rapier_app.controller import rules as C
from rapier_app.controller.arp import build_arp_reply, parse_arp_request
from rapier_app.controller.core import ControllerCore, make_core
from rapier_app.controller.rules import check_observed, cookie_for, default_forwarding
from rapier_app.controller.settings import Settings, SettingsError, build_scheduler
from rapier_app.controller.validation import parse_coflow_request
from rapier_app.httpjson import RequestError
from topologies import build_topology

from test_controller_fakes import FakeFabric, PinnedScheduler, tcp_pkt

MB = 1 << 20


def flow(src="h1", dst="h5", size=50 * MB, port=5001):
    return {"src": src, "dst": dst, "size_bytes": size, "dst_port": port}


@pytest.fixture
def ls():
    return build_topology("leafspine:3,3,3")


def pinned_core(topo, **settings):
    sched = PinnedScheduler()
    core = ControllerCore(topo, sched, Settings(**settings))
    fab = FakeFabric(topo)
    for dpid in fab.name_of:
        fab.apply(core.default_rules(dpid))
    return core, sched, fab


# ---------------------------------------------------------------------------
# Request validation
# ---------------------------------------------------------------------------
def test_parse_resolves_names_and_ips(ls):
    req = parse_coflow_request(json.dumps({"flows": [flow("h1", "10.0.0.5"), flow("10.0.0.2", "h6",
                                                                                   size=1000, port=6000)],
                                           "id": 7, "weight": 2}).encode(), ls)
    assert req["id"] == "7"
    assert req["weight"] == 2.0
    assert [f[:4] for f in req["flows"]] == [("h1", "h5", 50.0 * MB, 5001),
                                             ("h2", "h6", 1000.0, 6000)]
    assert [(f.src_port, f.protocol) for f in req["flows"]] == [(None, "tcp")] * 2


@pytest.mark.parametrize("body,status,field", [
    (b"{not json", 400, "body"),
    (b"\xff\xfe", 400, "body"),
    (b"[1, 2]", 400, "body"),
    ({"flows": []}, 400, "flows"),
    ({}, 400, "flows"),
    ({"flows": [flow()], "colour": 1}, 400, "colour"),
    ({"flows": ["h1"]}, 400, "flows[0]"),
    ({"flows": [flow(src="h99")]}, 400, "flows[0].src"),
    ({"flows": [flow(dst="10.9.9.9")]}, 400, "flows[0].dst"),
    ({"flows": [flow(dst="h1")]}, 400, "flows[0].dst"),
    ({"flows": [flow(size=0)]}, 400, "flows[0].size_bytes"),
    ({"flows": [flow(size=-5)]}, 400, "flows[0].size_bytes"),
    ({"flows": [flow(size="big")]}, 400, "flows[0].size_bytes"),
    ({"flows": [flow(size=True)]}, 400, "flows[0].size_bytes"),
    ({"flows": [flow(size=float("inf"))]}, 400, "flows[0].size_bytes"),
    ({"flows": [flow(port=0)]}, 400, "flows[0].dst_port"),
    ({"flows": [flow(port=65536)]}, 400, "flows[0].dst_port"),
    ({"flows": [flow(port="5001")]}, 400, "flows[0].dst_port"),
    ({"flows": [{"src": "h1", "dst": "h5", "size_bytes": 1}]}, 400, "flows[0].dst_port"),
    ({"flows": [dict(flow(), extra=1)]}, 400, "flows[0].extra"),
    ({"flows": [flow(), flow(size=7)]}, 400, "flows[1]"),
    ({"flows": [flow()], "id": "a/b"}, 400, "id"),
    ({"flows": [flow()], "id": ""}, 400, "id"),
    ({"flows": [flow()], "id": True}, 400, "id"),
    ({"flows": [flow()], "weight": 0}, 400, "weight"),
    ({"flows": [flow()], "weight": "heavy"}, 400, "weight"),
])
def test_parse_rejects_bad_input_naming_the_field(ls, body, status, field):
    with pytest.raises(RequestError) as ei:
        parse_coflow_request(body, ls)
    assert ei.value.status == status
    assert ei.value.field == field
    assert ei.value.to_json()["error"].startswith(field + ":")


def test_same_pair_on_other_port_is_not_a_duplicate(ls):
    req = parse_coflow_request({"flows": [flow(port=5001), flow(port=5002)]}, ls)
    assert [f[3] for f in req["flows"]] == [5001, 5002]


# ---------------------------------------------------------------------------
# Default forwarding and ARP
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["leafspine:3,3,3", "fattree:4", "vl2:4,4,2", "fig1"])
def test_default_forwarding_reaches_every_host_on_shortest_paths(spec):
    topo = build_topology(spec)
    fab = FakeFabric(topo)
    rules = default_forwarding(topo)
    for dpid, (groups, frs) in rules.items():
        fab.apply(groups + frs)
    for s in topo.hosts:
        for d in topo.hosts:
            if s == d:
                continue
            pkt = {"eth_type": 0x0800, "ipv4_dst": topo.graph.nodes[d]["ip"]}
            walks = fab.walks(s, pkt)
            shortest = len(topo.candidate_paths(s, d)[0])
            for w in walks:
                assert w[-1] == d, (s, d, w)
                assert len(w) == shortest, (s, d, w)


def test_default_forwarding_uses_select_groups_for_ecmp(ls):
    rules = default_forwarding(ls)
    l1 = ls.graph.nodes["l1"]["dpid"]
    groups, frs = rules[l1]
    # l1 reaches the six hosts of l2 and l3 over its three spine ports (4, 5, 6).
    assert sorted(g.group_id for g in groups) == [4, 5, 6, 7, 8, 9]
    assert all(g.ports == (4, 5, 6) for g in groups)
    arp = [r for r in frs if r.match == (("eth_type", 0x0806),)]
    assert arp and arp[0].actions == (("controller", 0),)
    local = {r.match_dict()["ipv4_dst"]: r.actions for r in frs if "ipv4_dst" in r.match_dict()}
    assert local["10.0.0.2"] == (("output", 2),)
    # A spine has one port towards each leaf: no groups.
    assert rules[ls.graph.nodes["s1"]["dpid"]][0] == []


def test_arp_request_gets_reply_with_target_mac(ls):
    core = make_core(Settings(scheduler="baseline", agent_url=""))
    req = (b"\xff" * 6 + bytes.fromhex("000000000001") + b"\x08\x06" +
           struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + bytes.fromhex("000000000001") +
           bytes([10, 0, 0, 1]) + b"\x00" * 6 + bytes([10, 0, 0, 5]))
    assert parse_arp_request(req) == ("00:00:00:00:00:01", "10.0.0.1", "10.0.0.5")
    rep = core.arp_answer(req)
    assert rep[0:6] == bytes.fromhex("000000000001")  # to the requester
    assert rep[6:12] == bytes.fromhex("000000000005")  # from h5's MAC
    assert struct.unpack("!H", rep[20:22])[0] == 2  # ARP reply
    assert rep[22:28] == bytes.fromhex("000000000005") and rep[28:32] == bytes([10, 0, 0, 5])
    assert rep[32:38] == bytes.fromhex("000000000001") and rep[38:42] == bytes([10, 0, 0, 1])
    assert parse_arp_request(rep) is None  # a reply is not a request
    unknown = req[:38] + bytes([10, 0, 0, 99])
    assert core.arp_answer(unknown) is None
    assert core.arp_answer(b"\x00" * 60) is None
    assert build_arp_reply("00:00:00:00:00:01", "10.0.0.1", "00:00:00:00:00:05",
                           "10.0.0.5") == rep


def test_check_observed_reports_mismatches(ls):
    g = ls.graph
    dp = {s: g.nodes[s]["dpid"] for s in ls.switches}
    good_ports = {dp[s]: [g.edges[s, n]["port"] for n in g.successors(s)] for s in ls.switches}
    good_links = [(dp[u], d["port"], dp[v], d["peer_port"]) for u, v, d in g.edges(data=True)
                  if u in dp and v in dp]
    assert check_observed(ls, good_ports, good_links) == []
    l1, s1 = dp["l1"], dp["s1"]
    p = g.edges["l1", "s1"]["port"]
    bad = check_observed(ls, {**good_ports, 99: [1], l1: [1, 2, 3, 4, 5]},
                         [(l1, p, s1, 7), (l1, 1, dp["l2"], 1)])
    assert any("dpid=0x63" in m for m in bad)
    assert any("l1" in m and "port 6 towards s3 is missing" in m for m in bad)
    assert any("observed ports 4->7" in m for m in bad)
    assert any("l1:1 -> l2:1 is not in topology" in m for m in bad)
    assert C.missing_switches(ls, [dp["l1"]]) == ["s1", "s2", "s3", "l2", "l3"]


# ---------------------------------------------------------------------------
# Submit, rules, path changes, cancel
# ---------------------------------------------------------------------------
def test_submit_installs_path_rules_that_carry_the_flow(ls):
    core, sched, fab = pinned_core(ls)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 4e8)
    c, acts = core.submit({"flows": [flow()]}, 3.0)
    assert c.coflow_id == "c1" and c.arrival_s == 3.0
    assert [r.command for r in acts.rules] == ["add", "add", "add"]
    assert all(r.cookie == cookie_for(1) and r.priority > C.PRIORITY_DEFAULT for r in acts.rules)
    fab.apply(acts.rules)
    assert fab.walks("h1", tcp_pkt(ls, "h1", "h5", 5001)) == [("h1", "l1", "s2", "l2", "h5")]
    # Another port of the same pair is not matched: default forwarding (ECMP) instead.
    other = fab.walks("h1", tcp_pkt(ls, "h1", "h5", 5002))
    assert sorted(w[2] for w in other) == ["s1", "s2", "s3"]
    assert acts.pushes[0].host == "h1"
    assert acts.pushes[0].flows == [{"flow_id": "c1/0", "src_ip": "10.0.0.1",
                                     "dst_ip": "10.0.0.5", "proto": "tcp", "dst_port": 5001,
                                     "rate_bps": 400000000}]
    assert acts.pushes[0].url == "http://10.0.0.1:7070"
    assert sched.calls == [(3.0, ["c1"])]


def test_path_change_modifies_shared_switches_and_deletes_old_ones(ls):
    core, sched, fab = pinned_core(ls)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 4e8)
    _, acts = core.submit({"flows": [flow()]}, 0.0)
    fab.apply(acts.rules)
    sched.plan["c1/0"] = (("h1", "l1", "s3", "l2", "h5"), 4e8)
    sched.plan["c2/0"] = (("h2", "l1", "s2", "l3", "h8"), 1e8)
    _, acts = core.submit({"flows": [flow("h2", "h8", 10, 80)]}, 1.0)
    byname = {(fab.name_of[r.dpid], r.flow_id): r.command for r in acts.rules}
    assert byname == {("l1", "c1/0"): "modify", ("s3", "c1/0"): "add",
                      ("s2", "c1/0"): "delete",
                      ("l1", "c2/0"): "add", ("s2", "c2/0"): "add", ("l3", "c2/0"): "add"}
    assert ("l2", "c1/0") not in byname  # unchanged rule: nothing sent
    assert acts.rules[-1].command == "delete"  # deletes come after the new path is up
    fab.apply(acts.rules)
    assert fab.walks("h1", tcp_pkt(ls, "h1", "h5", 5001)) == [("h1", "l1", "s3", "l2", "h5")]
    assert fab.walks("h2", tcp_pkt(ls, "h2", "h8", 80)) == [("h2", "l1", "s2", "l3", "h8")]
    # The rate of c1/0 did not change: only h2 gets a push.
    assert [p.host for p in acts.pushes] == ["h2"]


def test_bad_submit_changes_nothing(ls):
    core, sched, fab = pinned_core(ls)
    sched.plan["x/0"] = (("h1", "l1", "s2", "l2", "h5"), 4e8)
    core.submit({"flows": [flow()], "id": "x"}, 0.0)
    before = (list(core.coflows), dict(core.desired), dict(core.pushed), len(sched.calls))
    for body, field, status in [({"flows": [flow(port=6000)], "id": "x"}, "id", 400),
                                ({"flows": [flow(size=3)]}, "flows[0]", 409),  # overlaps x/0
                                ({"flows": [flow(port=6000), flow(src="h7", size=-1)]},
                                 "flows[1].size_bytes", 400)]:
        with pytest.raises(RequestError) as ei:
            core.submit(body, 1.0)
        assert ei.value.field == field and ei.value.status == status
    assert (list(core.coflows), dict(core.desired), dict(core.pushed),
            len(sched.calls)) == before


def test_cancel_removes_rules_and_limits(ls):
    core, sched, fab = pinned_core(ls)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 4e8)
    _, acts = core.submit({"flows": [flow()]}, 0.0)
    fab.apply(acts.rules)
    acts = core.cancel("c1", 2.0)
    assert sorted(r.command for r in acts.rules) == ["delete"] * 3
    fab.apply(acts.rules)
    assert fab.coflow_rules() == {d: [] for d in fab.name_of}
    assert [(p.host, p.flows) for p in acts.pushes] == [("h1", [])]
    assert core.coflow_view("c1")["state"] == "cancelled"
    assert core.coflow_view("c1")["cct_s"] is None
    with pytest.raises(RequestError) as ei:
        core.cancel("c1", 3.0)
    assert ei.value.status == 400
    with pytest.raises(RequestError) as ei:
        core.cancel("nope", 3.0)
    assert (ei.value.status, ei.value.field) == (404, "id")
    # The 5-tuple is free again after the cancel.
    core.submit({"flows": [flow()]}, 4.0)


def test_waiting_flow_gets_min_rate_and_unchanged_schedule_pushes_nothing(ls):
    core, sched, _ = pinned_core(ls, min_rate_bps=12345.0)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 0.0)
    _, acts = core.submit({"flows": [flow()]}, 0.0)
    assert acts.pushes[0].flows[0]["rate_bps"] == 12345
    assert core.reschedule(1.0).pushes == []
    core.push_failed("h1")
    assert [p.host for p in core.reschedule(2.0).pushes] == ["h1"]
    core.push_failed("h1")
    retry = core.retry_pushes()
    assert [(p.host, p.flows[0]["flow_id"]) for p in retry.pushes] == [("h1", "c1/0")]
    assert core.retry_pushes().pushes == []


def test_rates_applied_once_the_agent_acknowledged_a_set_with_the_flows_limit(ls):
    # a sender released before its agent holds the limit runs unshaped: the view says
    # "pending" from the decision until the source host acknowledged a set with it
    core, sched, _ = pinned_core(ls)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 1e8)
    _, acts = core.submit({"flows": [flow()]}, 0.0)
    (push,) = acts.pushes
    assert push.host == "h1" and push.gen == 1
    assert core.coflow_view("c1")["rates"] == "pending"
    core.push_succeeded("h1", push.gen)
    assert core.coflow_view("c1")["rates"] == "applied"
    # a new rate on its way: the flow is still limited (by the older rate)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 5e7)
    (push2,) = core.reschedule(1.0).pushes
    assert push2.gen == 2 and core.coflow_view("c1")["rates"] == "applied"
    # a second coflow from the same host: pending until a set holding it is acked;
    # the acknowledgement of an older set does not count
    sched.plan["c2/0"] = (("h1", "l1", "s2", "l2", "h5"), 1e7)
    _, acts3 = core.submit({"id": "c2", "flows": [flow(port=5002)]}, 2.0)
    (push3,) = acts3.pushes
    assert push3.gen == 3 and core.coflow_view("c2")["rates"] == "pending"
    core.push_succeeded("h1", 2)
    assert core.coflow_view("c2")["rates"] == "pending"
    core.push_succeeded("h1", 3)
    assert core.coflow_view("c2")["rates"] == "applied"
    # a failed push leaves the host's set unknown: pending until a retry goes through
    core.push_failed("h1")
    assert core.coflow_view("c1")["rates"] == "pending"
    (again,) = core.retry_pushes().pushes
    core.push_succeeded("h1", again.gen)
    assert core.coflow_view("c1")["rates"] == "applied"


def test_rates_are_applied_at_once_without_agents(ls):
    core, sched, _ = pinned_core(ls, agent_url="")
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 1e8)
    core.submit({"flows": [flow()]}, 0.0)
    assert core.coflow_view("c1")["rates"] == "applied"


def test_unix_agent_url_template(ls):
    core, sched, _ = pinned_core(ls, agent_url="unix:/tmp/rapier-agents/{host}.sock")
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 1e8)
    _, acts = core.submit({"flows": [flow()]}, 0.0)
    assert acts.pushes[0].url == "unix:/tmp/rapier-agents/h1.sock"
    core2, sched2, _ = pinned_core(ls, agent_url="")
    _, acts2 = core2.submit({"flows": [flow()]}, 0.0)
    assert acts2.pushes == []


def test_scheduler_failure_falls_back_to_default_forwarding(ls):
    core, sched, fab = pinned_core(ls)
    sched.fail = RuntimeError("LP time limit exceeded")
    c, acts = core.submit({"flows": [flow()]}, 0.0)
    # One counting rule on the first hop, with l1's default ECMP action for h5.
    assert len(acts.rules) == 1
    r = acts.rules[0]
    assert fab.name_of[r.dpid] == "l1" and r.actions == (("group", 5),)
    fab.apply(acts.rules)
    walks = fab.walks("h1", tcp_pkt(ls, "h1", "h5", 5001))
    assert sorted(w[2] for w in walks) == ["s1", "s2", "s3"]
    view = core.coflow_view("c1")
    assert view["state"] == "active" and "LP time limit" in view["fallback"]
    assert view["flows"][0]["path"] is None
    assert acts.pushes == []  # fallback flows are not rate-limited
    assert "LP time limit" in core.schedule_view()["errors"][0]


def test_scheduler_reported_fallback_only_hits_that_coflow(ls):
    core, sched, fab = pinned_core(ls)
    sched.plan["a/0"] = (("h1", "l1", "s2", "l2", "h5"), 5e8)
    sched.plan["b/0"] = (("h2", "l1", "s3", "l3", "h8"), 5e8)
    sched.fallback["b"] = "LP failed"
    core.submit({"flows": [flow()], "id": "a"}, 0.0)
    _, acts = core.submit({"flows": [flow("h2", "h8")], "id": "b"}, 0.0)
    assert core.coflow_view("a")["flows"][0]["path"] == ["h1", "l1", "s2", "l2", "h5"]
    assert core.coflow_view("b")["flows"][0]["path"] is None
    assert core.coflow_view("b")["fallback"] == "LP failed"
    assert len([r for r in core.desired.values() if r.flow_id == "b/0"]) == 1


# ---------------------------------------------------------------------------
# Progress and completion
# ---------------------------------------------------------------------------
def test_byte_counters_give_progress_and_interpolated_finish(ls):
    core, sched, fab = pinned_core(ls, finish_slack_bytes=0)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 1e8)
    sched.plan["c1/1"] = (("h2", "l1", "s3", "l2", "h6"), 1e8)
    c, acts = core.submit({"flows": [flow(size=1448 * 1000), flow("h2", "h6", 1448 * 10, 5002)]}, 1.0)
    fab.apply(acts.rules)
    l1 = ls.graph.nodes["l1"]["dpid"]
    s2 = ls.graph.nodes["s2"]["dpid"]
    hdr = 66
    assert core.stats_dpids() == [l1]
    # 500 full segments + SYN on the first hop; a non-first-hop switch is ignored.
    acts = core.apply_flow_stats(l1, [(cookie_for(1), 501 * hdr + 500 * 1448, 501)], 2.0)
    assert acts.finished == [] and c.flows[0].bytes_sent == 500 * 1448
    core.apply_flow_stats(s2, [(cookie_for(1), 10 ** 9, 10)], 2.0)
    assert c.flows[0].bytes_sent == 500 * 1448
    # At t=3 s the counter shows 1500 segments' worth: the size was crossed halfway.
    acts = core.apply_flow_stats(l1, [(cookie_for(1), 1501 * hdr + 1500 * 1448, 1501),
                                      (cookie_for(2), 5 * hdr + 4 * 1448, 5)], 3.0)
    assert acts.finished == ["c1/0"]
    assert c.flows[0].finish_s == pytest.approx(2.5)
    assert core.coflow_view("c1")["state"] == "active"
    # The finished flow's three rules go; the other flow keeps its rules.
    assert sorted((fab.name_of[r.dpid], r.command) for r in acts.rules) == [
        ("l1", "delete"), ("l2", "delete"), ("s2", "delete")]
    assert [(p.host, p.flows) for p in acts.pushes] == [("h1", [])]
    acts = core.apply_flow_stats(l1, [(cookie_for(2), 11 * hdr + 10 * 1448, 11)], 4.0)
    assert acts.finished == ["c1/1"]
    v = core.coflow_view("c1")
    assert v["state"] == "done"
    assert v["cct_s"] == pytest.approx(4.0 - 1.0)
    assert v["flows"][1]["finish_s"] == pytest.approx(4.0)
    assert v["flows"][0]["fct_s"] == pytest.approx(1.5)
    assert core.desired == {}


def test_counter_reset_is_accumulated(ls):
    core, sched, _ = pinned_core(ls, finish_slack_bytes=0)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 1e8)
    c, _ = core.submit({"flows": [flow(size=1000 * 1448)]}, 0.0)
    l1 = ls.graph.nodes["l1"]["dpid"]
    core.apply_flow_stats(l1, [(cookie_for(1), 600 * (1448 + 66), 600)], 1.0)
    # Switch reconnected, rule re-added: counters restart from 0.
    core.apply_flow_stats(l1, [(cookie_for(1), 100 * (1448 + 66), 100)], 2.0)
    assert c.flows[0].bytes_sent == 700 * 1448
    acts = core.apply_flow_stats(l1, [(cookie_for(1), 400 * (1448 + 66), 400)], 3.0)
    assert acts.finished == ["c1/0"]


def test_idle_rule_finishes_a_nearly_complete_stalled_flow(ls):
    core, sched, _ = pinned_core(ls, idle_finish_s=2.0, idle_fraction=0.05)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 1e8)
    sched.plan["c1/1"] = (("h2", "l1", "s2", "l2", "h6"), 1e8)
    c, _ = core.submit({"flows": [flow(size=100 * 1448), flow("h2", "h6", 100 * 1448, 5002)]}, 0.0)
    l1 = ls.graph.nodes["l1"]["dpid"]
    core.apply_flow_stats(l1, [(cookie_for(1), 96 * (1448 + 66), 96),
                               (cookie_for(2), 90 * (1448 + 66), 90)], 1.0)
    assert core.check_idle(2.9).finished == []
    acts = core.check_idle(3.1)
    assert acts.finished == ["c1/0"]  # 96% >= 95%; 90% is not enough
    assert c.flows[0].finish_s == 1.0 and c.flows[1].finish_s is None


@pytest.mark.parametrize("mode,decisions", [("flow", 2), ("coflow", 1)])
def test_flow_completion_reschedules_only_in_flow_mode(ls, mode, decisions):
    """reschedule_on=coflow keeps the last decision when a flow finishes but its
    coflow does not (as the simulator does): no scheduler call, the finished flow's
    rules and agent rate go, the other flow keeps its path and rate."""
    core, sched, fab = pinned_core(ls, finish_slack_bytes=0, reschedule_on=mode)
    sched.plan["c1/0"] = (("h1", "l1", "s2", "l2", "h5"), 1e8)
    sched.plan["c1/1"] = (("h2", "l1", "s3", "l2", "h6"), 2e8)
    c, acts = core.submit({"flows": [flow(size=1448 * 10), flow("h2", "h6", 1448 * 1000, 5002)]},
                          1.0)
    fab.apply(acts.rules)
    assert core.schedule_count == 1
    l1 = ls.graph.nodes["l1"]["dpid"]
    acts = core.apply_flow_stats(l1, [(cookie_for(1), 11 * 66 + 10 * 1448, 11)], 2.0)
    assert acts.finished == ["c1/0"]
    assert core.schedule_count == decisions
    assert sorted((fab.name_of[r.dpid], r.command) for r in acts.rules) == [
        ("l1", "delete"), ("l2", "delete"), ("s2", "delete")]
    assert [(p.host, p.flows) for p in acts.pushes] == [("h1", [])]
    view = core.schedule_view()
    assert view["allocations"]["c1/1"]["rate_bps"] == 2e8
    assert "c1/0" not in view["allocations"] and view["reschedule_on"] == mode
    # the coflow's end is a decision point in both modes
    core.apply_flow_stats(l1, [(cookie_for(2), 1001 * 66 + 1000 * 1448, 1001)], 3.0)
    assert core.coflow_view("c1")["state"] == "done"
    assert core.schedule_count == decisions + 1


def test_reschedule_mode_auto_follows_the_scheduler(ls):
    # RAPIER and Varys decide at every flow completion (work conservation between
    # coflow events); the setting can still restrict them to coflow events
    assert make_core(Settings(scheduler="rapier", agent_url="")).reschedule_mode() == "flow"
    assert make_core(Settings(scheduler="baseline", agent_url="")).reschedule_mode() == "flow"
    core = make_core(Settings(scheduler="rapier", agent_url="", reschedule_on="coflow"))
    assert core.reschedule_mode() == "coflow"


def test_rapier_end_to_end_through_the_core(ls):
    """The real RAPIER scheduler: two coflows share l1's uplinks; rates respect
    capacities and every active flow gets a valid path with rules."""
    core = make_core(Settings(scheduler="rapier", topology="leafspine:3,3,3", agent_url=""))
    fab = FakeFabric(core.topology)
    for dpid in fab.name_of:
        fab.apply(core.default_rules(dpid))
    _, a1 = core.submit({"flows": [flow("h1", "h4", 100 * MB), flow("h2", "h5", 100 * MB, 5002)]}, 0.0)
    fab.apply(a1.rules)
    _, a2 = core.submit({"flows": [flow("h3", "h7", 10 * MB, 5003)]}, 0.5)
    fab.apply(a2.rules)
    sched = core.schedule_view()
    assert sched["scheduler"] == "rapier" and sched["fallback"] == {}
    assert set(sched["allocations"]) == {"c1/0", "c1/1", "c2/0"}
    load = {}
    for fid, a in sched["allocations"].items():
        for u, v in zip(a["path"], a["path"][1:]):
            load[(u, v)] = load.get((u, v), 0.0) + a["rate_bps"]
        f = core.coflows[fid.split("/")[0]].flows[int(fid.split("/")[1])]
        walks = fab.walks(f.src, tcp_pkt(core.topology, f.src, f.dst, f.dst_port))
        assert walks == [tuple(a["path"])]
    assert max(load.values()) <= 1e9 * (1 + 1e-9)
    # The small coflow is not starved: it gets bandwidth.
    assert sched["allocations"]["c2/0"]["rate_bps"] > 0


# ---------------------------------------------------------------------------
# Settings and scheduler construction
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("key,value", [
    ("rest_port", 0), ("rest_port", 70000), ("agent_port", -1), ("agent_url", "ftp://x"),
    ("agent_url", "http://{address}:{port}"), ("lp_time_limit_s", 0), ("delta_s", -1),
    ("stats_interval_s", float("nan")), ("idle_fraction", 1.0), ("header_bytes", -1),
    ("link_bps", 0), ("scheduler", ""), ("max_paths", 1.5), ("reschedule_on", "often")])
def test_settings_reject_bad_values_naming_the_option(key, value):
    with pytest.raises(SettingsError) as ei:
        Settings(**{key: value}).validate()
    assert str(ei.value).startswith(key + ":")


def test_settings_from_mapping_rejects_unknown_option():
    with pytest.raises(SettingsError, match="^colour: unknown option"):
        Settings.from_mapping({"colour": "red"})
    assert Settings.from_mapping({"scheduler": "baseline"}).scheduler == "baseline"


def test_make_core_names_bad_topology_and_scheduler():
    with pytest.raises(SettingsError, match="^topology:"):
        make_core(Settings(topology="torus:3"))
    with pytest.raises(SettingsError, match="^scheduler:"):
        make_core(Settings(scheduler="no-such-scheduler"))


def test_build_scheduler_passes_rapier_params_only_where_accepted(ls):
    r = build_scheduler(Settings(scheduler="rapier", delta_s=3.5, lp_time_limit_s=0.25), ls)
    assert (r.delta_s, r.lp_time_limit_s) == (3.5, 0.25)
    rr = build_scheduler(Settings(scheduler="rapier-residual", delta_s=2.0), ls)
    assert rr.delta_s == 2.0 and rr.route_on == "residual"
    b = build_scheduler(Settings(scheduler="baseline", delta_s=3.5), ls)
    assert b.name == "baseline"


def test_views_are_json_serialisable(ls):
    core = make_core(Settings(scheduler="rapier", agent_url=""))
    core.submit({"flows": [flow()]}, 0.0)
    for v in (core.coflows_view(), core.schedule_view(), core.topology_view({"x": 1})):
        json.dumps(v, allow_nan=False)
    topo = core.topology_view()
    h5 = [h for h in topo["hosts"] if h["name"] == "h5"][0]
    assert (h5["ip"], h5["mac"], h5["switch"], h5["port"]) == ("10.0.0.5", "00:00:00:00:00:05",
                                                               "l2", 2)
    assert math.isfinite(core.schedule_view()["info"]["t_min_s"]["c1"])


def _check_decision(core, fab, coflows):
    """The rules and the agent rates carry exactly the scheduler's last decision:
    every active flow has an allocation with a path; packets of the flow walk that
    path through the fake switches; the flow's rate is the allocated one and the
    rate pushed for its host agent is it too (the floor ``min_rate_bps`` for a
    waiting flow); links stay within capacity; something sends.  A scheduler that
    returns an empty schedule fails here (issue 17)."""
    topo = core.topology
    alloc = core.last_schedule.allocations
    pushed = {d["flow_id"]: d["rate_bps"] for lst in core._pushes.limits.values() for d in lst}
    load = {}
    total = 0.0
    for c in coflows:
        for f in c.active_flows():
            a = alloc.get(f.flow_id)
            assert a is not None, f"{f.flow_id}: no allocation"
            path = tuple(a.path)
            assert path[0] == f.src and path[-1] == f.dst
            assert fab.walks(f.src, tcp_pkt(topo, f.src, f.dst, f.dst_port)) == [path]
            assert f.path == path and f.rate_bps == a.rate_bps >= 0
            want = a.rate_bps if a.rate_bps > 0 else core.settings.min_rate_bps
            assert pushed[f.flow_id] == int(round(max(want, 1.0)))
            for e in zip(path, path[1:]):
                load[e] = load.get(e, 0.0) + a.rate_bps
            total += a.rate_bps
    assert total > 0
    assert max(load.values()) <= 1e9 * (1 + 1e-6)


@pytest.mark.parametrize("name", __import__("rapier_app.scheduling", fromlist=["x"])
                         .scheduler_names())
def test_every_registered_scheduler_runs_in_the_controller(name):
    """Each scheduler selectable by the ``scheduler`` option drives the core from
    arrival to completion: valid paths within capacity, rules that carry the flows,
    and the CCT from byte counters."""
    core = make_core(Settings(scheduler=name, topology="leafspine:3,3,3", agent_url="",
                              finish_slack_bytes=0))
    topo = core.topology
    fab = FakeFabric(topo)
    for dpid in fab.name_of:
        fab.apply(core.default_rules(dpid))
    seg = 1448 + 66
    c1, a = core.submit({"flows": [flow("h1", "h4", 1448 * 100), flow("h2", "h4", 1448 * 50, 5002)]},
                        0.0)
    fab.apply(a.rules)
    _check_decision(core, fab, (c1,))
    c2, a = core.submit({"flows": [flow("h3", "h7", 1448 * 10, 5003)]}, 0.1)
    fab.apply(a.rules)
    _check_decision(core, fab, (c1, c2))
    l1 = topo.graph.nodes["l1"]["dpid"]
    acts = core.apply_flow_stats(l1, [(cookie_for(1), 100 * seg, 100), (cookie_for(2), 50 * seg, 50),
                                      (cookie_for(3), 10 * seg, 10)], 1.0)
    assert sorted(acts.finished) == ["c1/0", "c1/1", "c2/0"]
    assert core.coflow_view("c1")["state"] == "done" and core.coflow_view("c2")["state"] == "done"
    assert core.coflow_view("c2")["cct_s"] == pytest.approx(0.9)
    assert core.desired == {}
