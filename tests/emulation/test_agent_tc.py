"""The host agent on a real interface: a limited flow gets its rate (within 20 %), an
unclassified flow from the same interface is not throttled, the agent's HTB tree is
what it says, and its qdisc is gone after SIGTERM.  No controller: static routes."""

import json
import os
import signal
import subprocess
import time

from enforcement import client
from mininet_tests.runner import Emulation

LIMIT_BPS = 4e6
SECONDS = 4


def _iperf_pair(em, src, dst, port, seconds):
    """Start an iperf3 server on dst and a client on src; return (server, client) Popens."""
    srv = em.net[dst].popen(["iperf3", "-s", "-1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    em.transfers.append(srv)
    deadline = time.time() + 10
    while f":{port} " not in em.net[dst].cmd("ss -ltnH"):  # server listening?
        assert srv.poll() is None and time.time() < deadline, f"iperf3 -s on {dst} not up"
        time.sleep(0.05)
    cli = em.net[src].popen(["iperf3", "-c", em.net[dst].IP(), "-p", str(port), "-t",
                             str(seconds), "-J", "--connect-timeout", "3000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    em.transfers.append(cli)
    return srv, cli


def _received_bps(cli):
    out, err = cli.communicate(timeout=SECONDS + 20)
    rep = json.loads(out)
    assert "error" not in rep, rep.get("error")
    return rep["end"]["sum_received"]["bits_per_second"]


def test_agent_limits_one_flow_and_leaves_others(ovs):
    # links shaped at 20 Mbit/s on the switch side; h1 and h2 both send to h4 and h5
    with Emulation("leafspine:3,3,3", scheduler="static", bw_mbps=20.0,
                   start_controller=False) as em:
        h1 = em.net["h1"]
        iface = h1.defaultIntf().name
        url = em.agent_url("h1")
        # the agent found the host's interface by itself (namespace-aware)
        assert client.request(url, "GET", "/v1/health")[1]["iface"] == iface == "h1-eth1"
        body = {"flows": [{"flow_id": "x/0", "src_ip": h1.IP(), "dst_ip": em.net["h4"].IP(),
                           "proto": "tcp", "dst_port": 5201, "rate_bps": LIMIT_BPS}]}
        st, obj = client.request(url, "PUT", "/v1/flows", body)
        assert st == 200 and obj["flows"][0]["classid"] == "1:10"
        # idempotent: the same set again runs no command
        assert client.request(url, "PUT", "/v1/flows", body)[1]["commands"] == 0
        classes = h1.cmd(f"tc class show dev {iface}")
        assert "class htb 1:10 root prio 0 rate 4Mbit ceil 4Mbit" in classes
        filters = h1.cmd(f"tc filter show dev {iface}")
        assert "flowid 1:10" in filters and "00001451/0000ffff at 20" in filters  # dport 5201
        # bad input: 400 naming the field, nothing changed
        st, obj = client.request(url, "PUT", "/v1/flows",
                                 {"flows": [dict(body["flows"][0], rate_bps=-1)]})
        assert st == 400 and obj["field"] == "flows[0].rate_bps"

        # limited flow h1->h4:5201 and an unclassified flow h1->h5:5202, same interface
        _, c_lim = _iperf_pair(em, "h1", "h4", 5201, SECONDS)
        _, c_free = _iperf_pair(em, "h1", "h5", 5202, SECONDS)
        limited, free = _received_bps(c_lim), _received_bps(c_free)
        assert abs(limited - LIMIT_BPS) <= 0.2 * LIMIT_BPS, f"limited flow got {limited:.0f} bit/s"
        assert free > 2.5 * LIMIT_BPS, f"unclassified flow got only {free:.0f} bit/s"

        # change the rate, then remove the limit
        body["flows"][0]["rate_bps"] = 2 * LIMIT_BPS
        assert client.request(url, "PUT", "/v1/flows", body)[1]["commands"] == 1
        assert "rate 8Mbit ceil 8Mbit" in h1.cmd(f"tc class show dev {iface}")
        st, obj = client.request(url, "PUT", "/v1/flows", {"flows": []})
        assert st == 200 and obj["flows"] == []
        assert "1:10" not in h1.cmd(f"tc class show dev {iface}")

        # SIGTERM: the agent exits 0 and removes its root qdisc
        agent = em.agents.pop("h1")
        os.kill(agent.pid, signal.SIGTERM)
        assert agent.wait(10) == 0
        assert "htb 1:" not in h1.cmd(f"tc qdisc show dev {iface}")
        assert not os.path.exists(url[len("unix:"):])
