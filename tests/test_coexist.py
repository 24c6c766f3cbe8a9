"""The controller's coexistence with other traffic (rapier_app.controller.coexist):
port counters -> the site broker -> schedules on the residual, the REST view, the
Ryu shell's port-stats requests, and small coflows left to default forwarding."""

import json
from types import SimpleNamespace

import pytest
from webob import Request

import rapier_app.controller as controller_pkg
from rapier_app.controller.coexist import BACKGROUND, is_small, port_links
from rapier_app.controller.core import make_core
from rapier_app.controller.settings import Settings, SettingsError

from rapier_app.controller.stack import ofproto_v1_3, ofproto_v1_3_parser
from test_controller_fakes import FakeDatapath

MBIT = 125_000  # bytes


def flow(src="h1", dst="h2", size=10 * MBIT, port=5001):
    return {"src": src, "dst": dst, "size_bytes": size, "dst_port": port}


def core_of(**kw):
    s = dict(scheduler="rapier", topology="bigswitch:3", link_bps=10e6, agent_url="",
             state_db="off", broker=True)
    s.update(kw)
    return make_core(Settings(**s))


def port_counters(core, per_link_bytes):
    """Port-stats entries per dpid that make every link count ``per_link_bytes``."""
    out = {}
    for (dpid, port), items in port_links(core.topology).items():
        rx = tx = 0
        for i, kind in items:
            if kind == "tx":
                tx = per_link_bytes[i]
            else:
                rx = per_link_bytes[i]
        out.setdefault(dpid, []).append((port, rx, tx))
    return out


def feed(core, per_link_bytes, now):
    for dpid, entries in port_counters(core, per_link_bytes).items():
        core.broker_port_stats(dpid, entries, now)
    return core.broker_tick(now)


def test_port_links_tx_and_rx():
    core = core_of()
    topo = core.topology
    m = port_links(topo)
    sw = topo.graph.nodes["s1"]["dpid"]
    p1 = topo.graph.edges["s1", "h1"]["port"]
    # the port facing h1: tx counts s1->h1, rx counts h1->s1
    assert sorted(m[(sw, p1)]) == sorted([(topo.link_ids[("s1", "h1")], "tx"),
                                          (topo.link_ids[("h1", "s1")], "rx")])
    assert sum(len(v) for v in m.values()) == len(topo.links)


def test_background_measured_from_ports_lowers_the_rates():
    core = core_of()
    n = len(core.topology.links)
    c, acts = core.submit({"id": "a", "flows": [flow()]}, 0.0)
    assert core.decision["a"] == "scheduled"
    assert c.flows[0].rate_bps == pytest.approx(10e6)
    # counters: every link carried 3 Mbit/s for 1 s, none of it the coflow's (its
    # first-hop counter did not move)
    assert not feed(core, [0] * n, 0.0).rules
    acts = feed(core, [3 * MBIT] * n, 1.0)
    b = core.broker_feed.broker
    assert b.prediction_bps.tolist() == [3e6] * n
    assert b.version == 1
    # decided again on the residual: 7 Mbit/s, its rules unchanged (same path)
    assert c.flows[0].rate_bps == pytest.approx(7e6)
    view = core.schedule_view()["broker"]
    assert view["enabled"] and view["version"] == 1 and view["weight"] == 0.5
    link = {d["link"]: d for d in view["links"]}["h1-s1"]
    assert link["prediction_bps"] == 3e6 and link["in_force_bps"] == 7e6
    json.dumps(view)


def test_the_scheduled_flows_own_bytes_are_not_background():
    core = core_of()
    topo = core.topology
    n = len(topo.links)
    c, _ = core.submit({"id": "a", "flows": [flow()]}, 0.0)
    f = c.flows[0]
    tr = core.tracks[f.flow_id]
    feed(core, [0] * n, 0.0)
    # 1 s later the flow's first-hop rule counted 8 Mbit; its two links carried 8
    # Mbit plus 2 Mbit of other traffic; every other link nothing
    tr.last_bytes = 8 * MBIT
    counts = [0] * n
    for l in topo.path_links(f.path):
        counts[int(l)] = 10 * MBIT
    feed(core, counts, 1.0)
    pred = core.broker_feed.broker.prediction_bps
    on_path = set(int(l) for l in topo.path_links(f.path))
    assert [pred[i] for i in sorted(on_path)] == [2e6, 2e6]
    assert all(pred[i] == 0 for i in range(n) if i not in on_path)
    # 2 Mbit/s on the path's links: their residual 8 (moved 20 % > 10 %): in force
    b = core.broker_feed.broker
    assert b.version == 1
    assert [b.in_force_bps[i] for i in sorted(on_path)] == [8e6, 8e6]
    assert f.rate_bps == pytest.approx(8e6)


def test_a_finished_flows_last_bytes_come_from_its_size():
    # a flow's rules go when it finishes: its last bytes are never counted by them;
    # they are taken as its size plus 66 bytes per 1448-byte segment
    core = core_of()
    topo = core.topology
    n = len(topo.links)
    c, _ = core.submit({"id": "a", "flows": [flow(size=1_000_000)]}, 0.0)
    f = c.flows[0]
    path = f.path
    feed(core, [0] * n, 0.0)
    core.tracks[f.flow_id].last_bytes = 500_000
    counts = [0] * n
    for l in topo.path_links(path):
        counts[int(l)] = 500_000
    feed(core, counts, 1.0)
    assert core.report_flow_done("a", 0, 1.5)[0]
    wire = 1_000_000 + 691 * 66   # ceil(1e6 / 1448) = 691 segments
    for l in topo.path_links(path):
        counts[int(l)] = wire
    feed(core, counts, 2.0)
    b = core.broker_feed.broker
    assert b.sample_bps.tolist() == [0.0] * n
    assert core.broker_feed.coflow_bytes[int(topo.path_links(path)[0])] == wire


def test_broker_off_and_bad_options():
    core = core_of(broker=False)
    assert core.broker_feed is None
    assert core.broker_tick(1.0).rules == []
    assert core.schedule_view()["broker"] == {"enabled": False, "small_coflow_bytes": 0,
                                              "small_coflow_width": 0}
    for kw, name in ((dict(broker_weight=0), "broker_weight"),
                     (dict(broker_period_s=-1), "broker_period_s"),
                     (dict(broker_min_fraction=2), "broker_min_fraction"),
                     (dict(small_coflow_bytes=-1), "small_coflow_bytes"),
                     (dict(broker="yes"), "broker")):
        with pytest.raises(SettingsError, match=name):
            Settings(**kw).validate()


# -- small coflows -------------------------------------------------------------------
def test_threshold():
    assert not is_small(10, 1, 0, 0)                 # 0: off
    assert is_small(99_999, 5, 100_000, 0)           # any width
    assert not is_small(100_000, 1, 100_000, 0)      # "below": strictly
    assert is_small(50_000, 4, 100_000, 4) and not is_small(50_000, 5, 100_000, 4)


def test_small_coflow_is_background_at_once():
    core = core_of(small_coflow_bytes=100_000, agent_url="http://{ip}:{port}")
    calls = []
    inner = core.scheduler.schedule
    core.scheduler.schedule = lambda now, cs: calls.append([c.coflow_id for c in cs]) \
        or inner(now, cs)
    big, _ = core.submit({"id": "big", "flows": [flow(size=10 * MBIT)]}, 0.0)
    small, acts = core.submit({"id": "small", "flows": [flow("h3", "h2", 5000, 5002)]},
                              0.5, schedule=False)
    v = core.coflow_view("small")
    assert v["decision"] == BACKGROUND and v["rates"] == "applied"
    # one counting rule on the first hop, with the default-forwarding action
    (r,) = acts.rules
    assert r.flow_id == "small/0" and r.actions == core._counting_rule(small.flows[0]).actions
    assert not acts.pushes
    # a later decision never hands it to the scheduler and never limits it
    core.reschedule(1.0)
    assert calls == [["big"], ["big"]]
    pushed = [lim["flow_id"] for lims in core._pushes.limits.values() for lim in lims]
    assert "small/0" not in pushed and "big/0" in pushed
    assert small.flows[0].path is None
    assert core.decision["big"] == "scheduled" and core.decision["small"] == BACKGROUND
    # the same through the deciding submit: its counting rule, no scheduler call
    _, acts2 = core.submit({"id": "small2", "flows": [flow("h3", "h1", 5000, 5003)]}, 1.1)
    assert [r.flow_id for r in acts2.rules] == ["small2/0"] and len(calls) == 2
    # it completes as any flow: a done report
    done, _ = core.report_flow_done("small", 0, 1.2)
    assert done and core.state["small"] == "done"


def test_default_threshold_schedules_everything():
    core = core_of()
    core.submit({"id": "tiny", "flows": [flow(size=5)]}, 0.0)
    assert core.decision["tiny"] == "scheduled"


# -- the Ryu shell ----------------------------------------------------------------------
def test_app_polls_port_stats_and_feeds_the_broker():
    app = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler="rapier", topology="bigswitch:3", link_bps=10e6, agent_url="",
        state_db="off", broker=True, broker_period_s=1.0))
    dp = FakeDatapath(app.core.topology.graph.nodes["s1"]["dpid"])
    app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
    clock = [10.0]
    app.now = lambda: clock[0]
    dp.sent.clear()
    app.poll_once()  # the period is due: port stats asked
    reqs = [m for m in dp.sent if isinstance(m, ofproto_v1_3_parser.OFPPortStatsRequest)]
    assert len(reqs) == 1 and reqs[0].port_no == ofproto_v1_3.OFPP_ANY
    n = len(app.core.topology.links)
    for (dpid, entries) in port_counters(app.core, [0] * n).items():
        body = [SimpleNamespace(port_no=p, rx_bytes=rx, tx_bytes=tx) for p, rx, tx in entries]
        app.port_stats_reply(SimpleNamespace(msg=SimpleNamespace(datapath=dp, body=body)))
    clock[0] = 10.5
    dp.sent.clear()
    app.poll_once()  # observation of the 10.0 round; no new request (period 1 s)
    assert app.core.broker_feed.last_tick_s == 10.0
    assert not [m for m in dp.sent if isinstance(m, ofproto_v1_3_parser.OFPPortStatsRequest)]
    clock[0] = 11.0
    app.poll_once()
    for (dpid, entries) in port_counters(app.core, [4 * MBIT] * n).items():
        body = [SimpleNamespace(port_no=p, rx_bytes=rx, tx_bytes=tx) for p, rx, tx in entries]
        app.port_stats_reply(SimpleNamespace(msg=SimpleNamespace(datapath=dp, body=body)))
    clock[0] = 11.5
    app.poll_once()
    assert app.core.broker_feed.broker.prediction_bps.tolist() == [4e6] * n
    req = Request.blank("/rapier/v1/schedule", method="GET")
    view = json.loads(req.get_response(app.wsgi).body)["broker"]
    assert view["links"][0]["in_force_bps"] == 6e6 and view["observed_at_s"] == 11.0
