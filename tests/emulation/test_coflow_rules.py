"""A coflow scheduled by ``rapier``: its rules are on exactly the switches of the
chosen paths (read back with ``ovs-ofctl -O OpenFlow13 dump-flows``), each forwarding
towards the path's next hop, and its flows run at their scheduled rates within 20 %.

Workload: one coflow of two flows from h1 (h1->h4, 2X bytes; h1->h5, X bytes).  Both
share h1's 20 Mbit/s uplink, so RAPIER gives them 2/3 and 1/3 of it to finish
together; without the agents' limits TCP would split the uplink about evenly.
"""

from enforcement import client
from rapier_app.core.model import CoflowSpec, FlowSpec
from mininet_tests import ofctl
from mininet_tests.runner import Emulation

LINK_MBPS = 20.0
X_BYTES = 3_000_000  # 3X bytes at 20 Mbit/s: 3.6 s


def test_rules_on_chosen_switches_and_rates(ovs):
    coflow = CoflowSpec("r", 0.0, (FlowSpec("r/0", "r", "h1", "h4", 2 * X_BYTES, 5301),
                                   FlowSpec("r/1", "r", "h1", "h5", X_BYTES, 5302)))
    seen = {}

    with Emulation("leafspine:3,3,3", scheduler="rapier", bw_mbps=LINK_MBPS) as em:
        g = em.definition.graph

        def monitor(elapsed_s):
            if "view" in seen or elapsed_s < 0.3:
                return
            view = em.coflow_state("r")
            if not view or view["state"] != "active":
                return
            seen["view"] = view
            seen["rules"] = {s: ofctl.dump_flows(s) for s in em.definition.switches}
            seen["agent"] = client.request(em.agent_url("h1"), "GET", "/v1/flows")[1]

        res = em.run_coflows([coflow], timeout_s=60, monitor=monitor)

    assert "view" in seen, "never saw the coflow active"
    flows = {f["flow_id"]: f for f in seen["view"]["flows"]}
    assert sorted(flows) == ["r/0", "r/1"]
    for fid, f in flows.items():
        path = f["path"]
        assert path[0] == f["src"] and path[-1] == f["dst"], path
        on_path = {}
        for i, sw in enumerate(path[1:-1], start=1):
            on_path[sw] = g.edges[sw, path[i + 1]]["port"]
        with_rule = {}
        for sw, rules in seen["rules"].items():
            mine = ofctl.flow_rules(rules, f["src_ip"], f["dst_ip"], f["dst_port"])
            if mine:
                assert len(mine) == 1, f"{fid}: {len(mine)} rules on {sw}"
                with_rule[sw] = mine[0].output_ports()
        assert set(with_rule) == set(on_path), f"{fid}: rules on {sorted(with_rule)}, path {path}"
        for sw, port in on_path.items():
            assert with_rule[sw] == [port], f"{fid}: {sw} outputs {with_rule[sw]}, next hop port {port}"

    # RAPIER's rates: 2:1, filling h1's uplink, and the agent on h1 enforces them
    r0, r1 = flows["r/0"]["rate_bps"], flows["r/1"]["rate_bps"]
    assert abs(r0 / r1 - 2.0) < 0.1, (r0, r1)
    assert abs((r0 + r1) - LINK_MBPS * 1e6) < 0.01 * LINK_MBPS * 1e6, (r0, r1)
    agent = {f["flow_id"]: f for f in seen["agent"]["flows"]}
    assert agent["r/0"]["enforced_rate_bps"] == round(r0) and agent["r/1"]["enforced_rate_bps"] == round(r1)

    measured = {}
    for fr in res.coflows[0].flows:
        assert fr.received_bytes == fr.size_bytes
        measured[fr.flow_id] = fr.size_bytes * 8 / (fr.finish_s - fr.start_s)
    print({fid: (round(measured[fid] / 1e6, 2), round(r / 1e6, 2))
           for fid, r in (("r/0", r0), ("r/1", r1))}, "Mbit/s measured, scheduled")
    for fid, rate in (("r/0", r0), ("r/1", r1)):
        assert abs(measured[fid] - rate) <= 0.2 * rate, \
            f"{fid}: measured {measured[fid] / 1e6:.2f} Mbit/s, scheduled {rate / 1e6:.2f}"
