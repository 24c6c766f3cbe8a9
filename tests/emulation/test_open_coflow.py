"""An open coflow whose flows are registered as their connections exist, matched by
the server's (source) port: the OpenFlow rules and the agent's filter match the real
TCP connections, the rules carry the traffic and the agent shapes it.

Switch tables are read back every second meanwhile (reconciliation): OVS's report of
these matches compares equal to the controller's rules (no repair).

A shuffle in miniature: a "mapper" on h4 serves its partitions from fixed ports
7000 and 7001; two "reducers" (h1, h2) connect from ephemeral ports.  Once connected,
each reducer's flow is added to the open coflow (h4 -> h1 with both ports, 2X bytes;
h4 -> h2 by the source port only, X bytes), then the data moves.  Both flows leave
h4 on its 20 Mbit/s uplink: RAPIER gives them 2/3 and 1/3 of it so they finish
together, which only the agent's limits can make TCP do (without them the two
would split the uplink about evenly).
"""

import re
import subprocess
import time

from enforcement import client
from mininet_tests import ofctl
from mininet_tests.runner import REST_PREFIX, Emulation

LINK_MBPS = 20.0
X_BYTES = 2_000_000  # 3X bytes at 20 Mbit/s: 2.4 s
P = REST_PREFIX + "/coflows"

SERVER = r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
c.recv(1)                                   # the reducer's "go"
data, left = bytes(65536), int(sys.argv[2])
while left > 0:
    n = min(left, len(data)); c.sendall(data[:n]); left -= n
c.close()
"""

CLIENT = r"""
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
print("port", c.getsockname()[1], flush=True)
sys.stdin.readline()                        # released by the test
t0 = time.time(); c.sendall(b"g"); got = 0
while True:
    b = c.recv(65536)
    if not b:
        break
    got += len(b)
print("done", got, time.time() - t0, flush=True)
"""


def _popen(em, host, args):
    p = em.net[host].popen(["python3", "-c"] + args, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    em.transfers.append(p)
    return p


def _rules_with(rules, **fields):
    return [r for r in rules if all(r.field(k) == str(v) for k, v in fields.items())]


def test_open_coflow_matched_by_source_port_is_routed_and_shaped(ovs):
    with Emulation("leafspine:3,3,3", scheduler="rapier", bw_mbps=LINK_MBPS,
                   controller_opts={"reconcile_interval_s": 1.0}) as em:
        g = em.definition.graph
        ip = {h: em.net[h].IP() for h in ("h1", "h2", "h4")}
        servers = [_popen(em, "h4", [SERVER, str(port), str(size)])
                   for port, size in ((7000, 2 * X_BYTES), (7001, X_BYTES))]
        for s in servers:
            assert s.stdout.readline().strip() == "listening"
        clients = [_popen(em, h, [CLIENT, ip["h4"], str(port)])
                   for h, port in (("h1", 7000), ("h2", 7001))]
        eph = [int(c.stdout.readline().split()[1]) for c in clients]

        st, v = client.request(em.rest, "POST", P, {"id": "sh", "open": True,
                                                    "name": "shuffle"})
        assert st == 201 and v["open"] is True
        st, v = client.request(em.rest, "POST", P + "/sh/flows", {"flows": [
            {"src": "h4", "dst": ip["h1"], "src_port": 7000, "dst_port": eph[0],
             "size_bytes": 2 * X_BYTES},
            {"src": "h4", "dst": "h2", "src_port": 7001, "size_bytes": X_BYTES}]})
        assert st == 201 and [f["index"] for f in v["flows"]] == [0, 1], v
        deadline = time.time() + 10
        while True:  # decided, and both limits acknowledged by h4's agent
            view = em.coflow_state("sh")
            if view and view["rates"] == "applied" and all(
                    f["path"] and f["rate_bps"] > 0 for f in view["flows"]):
                break
            assert time.time() < deadline, view
            time.sleep(0.01)
        flows = view["flows"]
        r0, r1 = flows[0]["rate_bps"], flows[1]["rate_bps"]
        assert abs(r0 / r1 - 2.0) < 0.1, (r0, r1)

        # the agent on h4: limits on exactly the ports of each flow
        agent = {f["flow_id"]: f for f in
                 client.request(em.agent_url("h4"), "GET", "/v1/flows")[1]["flows"]}
        assert (agent["sh/0"]["src_port"], agent["sh/0"]["dst_port"]) == (7000, eph[0])
        assert (agent["sh/1"]["src_port"], agent["sh/1"]["dst_port"]) == (7001, None)
        assert agent["sh/1"]["enforced_rate_bps"] == round(r1)
        filters = em.net["h4"].cmd(f"tc filter show dev {em.net['h4'].defaultIntf().name}")
        # u32 keys at offset 20: source port in the high 16 bits, destination port low
        assert "1b590000/ffff0000 at 20" in filters                    # sport 7001 alone
        assert f"1b58{eph[0]:04x}/ffffffff at 20" in filters or (
            "1b580000/ffff0000 at 20" in filters and f"{eph[0]:08x}/0000ffff at 20" in filters)

        # the switches on each flow's path hold its rule (tp_src, and tp_dst for sh/0)
        def path_rules():
            out = {}
            for f, extra in ((flows[0], {"tp_dst": eph[0]}), (flows[1], {})):
                path = f["path"]
                for i, sw in enumerate(path[1:-1], start=1):
                    mine = _rules_with(ofctl.dump_flows(sw), nw_src=f["src_ip"],
                                       nw_dst=f["dst_ip"], tp_src=f["src_port"], **extra)
                    assert len(mine) == 1, (f["flow_id"], sw, mine)
                    if not extra:
                        assert mine[0].field("tp_dst") is None, mine[0]
                    assert mine[0].output_ports() == [g.edges[sw, path[i + 1]]["port"]]
                    out[(f["flow_id"], sw)] = mine[0].n_bytes
            return out

        assert set(path_rules().values()) == {0}  # nothing sent yet
        t0 = time.time()
        for c in clients:
            c.stdin.write("go\n")
            c.stdin.flush()
        time.sleep(1.0)
        moving = path_rules()  # mid-transfer: every rule on the paths counts bytes
        assert all(n > 200_000 for n in moving.values()), moving
        done = {}
        for fid, c in zip(("sh/0", "sh/1"), clients):
            line = c.stdout.readline().split()
            assert line[0] == "done" and int(line[1]) == (2 if fid == "sh/0" else 1) * X_BYTES
            done[fid] = float(line[2])
            client.request(em.rest, "POST", f"{P}/sh/flows/{fid[-1]}/done")
        assert time.time() - t0 < 20
        # switch tables read back every second while the rules were there (OVS's own
        # report of tcp_src/tcp_dst matches): nothing to repair, no false difference
        rec = client.request(em.rest, "GET", REST_PREFIX + "/schedule")[1]["reconcile"]
        assert rec["rounds"] >= 2 * len(em.definition.switches), rec
        assert (rec["missing"], rec["wrong"], rec["stale"]) == (0, 0, 0), rec
        measured = {fid: (2 if fid == "sh/0" else 1) * X_BYTES * 8 / done[fid] for fid in done}
        print({fid: round(b / 1e6, 2) for fid, b in measured.items()}, "Mbit/s measured;",
              round(r0 / 1e6, 2), round(r1 / 1e6, 2), "scheduled")
        # the agent held sh/1 to its third of the uplink (TCP alone: about half)
        assert abs(measured["sh/1"] - r1) <= 0.2 * r1, measured
        st, v = client.request(em.rest, "POST", P + "/sh/close")
        assert st == 200 and v["open"] is False
        assert em.coflow_state("sh")["state"] == "done"
        assert re.fullmatch(r"\d+", str(eph[0])) and eph[0] not in (7000, 7001)
