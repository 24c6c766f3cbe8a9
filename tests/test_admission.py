"""Admission (rapier_app/controller/admission.py): a coflow accepted while the
decision worker decides gets its ECMP paths at Algorithm 3's leftover rates, its
rules and its hosts' rate limits at once, ``provisional`` until a decision places it.
In-process core, no switches or agents (pushes are data)."""

import json

from rapier_app.controller.core import make_core
from rapier_app.controller.settings import Settings

MB = 1 << 20


def body(cid, flows):
    return json.dumps({"id": cid, "flows": [
        {"src": s, "dst": d, "size_bytes": size, "dst_port": port}
        for s, d, size, port in flows]}).encode()


def test_admission_gives_ecmp_paths_leftover_rates_rules_and_its_hosts_pushes():
    core = make_core(Settings(scheduler="rapier", topology="leafspine:3,3,3",
                              agent_url="http://{ip}:{port}", state_db="off"))
    core.worker_decides = True  # as under the worker: decisions are the worker's
    core.submit(body("a", [("h1", "h5", 50 * MB, 5001)]), 0.0, schedule=False)
    core.decide(0.0)
    a = core.coflows["a"].flows[0]
    assert core.decision["a"] == "scheduled" and a.rate_bps > 0
    core.submit(body("b", [("h1", "h6", 20 * MB, 5002), ("h2", "h4", 30 * MB, 5003)]),
                1.0, schedule=False)
    assert core.decision["b"] == "queued" and not core.admitted_count
    acts = core.admit("b", 1.0)
    assert core.decision["b"] == "provisional" and core.admitted_count == 1
    b1, b2 = core.coflows["b"].flows
    topo = core.topology
    cap = topo.capacity
    # the leftover along each ECMP path: a's rate on its links, then b2 (larger) first
    load = {li: a.rate_bps for li in topo.path_links(a.path).tolist()}
    for f in (b2, b1):
        assert f.path == tuple(core._route_target().ecmp_path(f))
        links = topo.path_links(f.path).tolist()
        want = max(0.0, min(cap[li] - load.get(li, 0.0) for li in links))
        assert abs(f.rate_bps - want) <= 1e-6 * cap.max()
        for li in links:
            load[li] = load.get(li, 0.0) + f.rate_bps
    assert b1.rate_bps == 0.0  # h1's uplink is a's (RAPIER gave it all)
    # rules: one per switch of each path, handed over in the call
    sent = {(r.dpid, r.flow_id) for r in acts.rules}
    assert sent == {k for k in core.desired if k[1] in (b1.flow_id, b2.flow_id)}
    assert len(sent) == len(b1.path) - 2 + len(b2.path) - 2
    # pushes: the two source hosts only, each its full set (h1 keeps a's limit)
    pushes = {p.host: {e["flow_id"]: e["rate_bps"] for e in p.flows} for p in acts.pushes}
    assert set(pushes) == {"h1", "h2"}
    assert pushes["h1"] == {a.flow_id: int(a.rate_bps),
                            b1.flow_id: int(core.settings.min_rate_bps)}
    assert pushes["h2"] == {b2.flow_id: int(b2.rate_bps)}
    assert core.admit("b", 1.0).rules == []  # admitted once
    core.decide(2.0)  # the worker's next decision places it
    assert core.decision["b"] == "scheduled"
    assert all(f.path is not None for f in (b1, b2))
