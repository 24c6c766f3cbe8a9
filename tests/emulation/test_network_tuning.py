"""The emulated network's TCP knobs (issue 13): ``queue_packets`` puts a
``pfifo`` of that many packets under Mininet's HTB class on every shaped switch port,
and ``rto_min_ms`` sets TCP's minimum retransmission timeout on every host's route
to the fabric, ``tsq_bytes`` sets every host's TCP small-queues limit (a
per-namespace sysctl: the machine's own stays), every interface hands its qdiscs
one TCP segment per packet (``GSO_MAX_SEGS``), and the hosts still reach each
other.  Bad values are refused with
the option named, before anything starts.  About 10 s.
"""

import re
import subprocess
import sys
import time

import pytest

from mininet_tests.runner import Emulation, EmulationError


def test_queue_limit_and_rto_min_are_in_place(ovs):
    with Emulation("leafspine:2,2,2", scheduler="rapier", bw_mbps=10.0,
                   queue_packets=37, rto_min_ms=25, tsq_bytes=20000) as em:
        for h in em.net.hosts:
            route = h.cmd("ip route")
            assert re.search(r"10\.0\.0\.0/8 .*rto_min (lock )?25ms", route), route
            tsq = h.cmd("sysctl -n net.ipv4.tcp_limit_output_bytes").strip()
            assert tsq == "20000", (h.name, tsq)
        for sw in em.net.switches:
            for intf in sw.intfList():
                if intf.name == "lo":
                    continue
                q = sw.cmd(f"tc qdisc show dev {intf.name}")
                assert "pfifo 10: parent 5:1 limit 37p" in q, (intf.name, q)
        mine = subprocess.run(["sysctl", "-n", "net.ipv4.tcp_limit_output_bytes"],
                              capture_output=True, text=True).stdout.strip()
        assert mine != "20000"
    with Emulation("leafspine:2,2,2", scheduler="rapier", bw_mbps=10.0,
                   queue_packets=12, fair_queue=4) as em:
        for sw in em.net.switches:
            for intf in sw.intfList():
                if intf.name == "lo":
                    continue
                cls = sw.cmd(f"tc class show dev {intf.name}")
                # Mininet's shaper, the inner class, four buckets in hex minors
                for cid in ("5:1", "10:1", "10:10", "10:13"):
                    assert f"class htb {cid} " in cls, (intf.name, cid, cls)
                q = sw.cmd(f"tc qdisc show dev {intf.name}")
                assert q.count("limit 12p") == 4, (intf.name, q)
        h1, h4 = em.net.get("h1"), em.net.get("h4")
        out = h1.cmd(f"ping -c 1 -W 2 {h4.IP()}")
        assert " 0% packet loss" in out, out


RECEIVER = r"""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); c, _ = s.accept()
got, t0, marks = 0, None, []
while True:
    n = len(c.recv(65536))
    if not n:
        break
    got += n; now = time.time(); marks.append((now, got))
print(" ".join(f"{t:.3f}:{g}" for t, g in marks))
"""
SENDER = r"""
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2]))); b = b"x" * 65536
end = time.time() + float(sys.argv[3])
while time.time() < end:
    s.send(b)
s.close()
"""


def test_fair_queue_shares_a_port_equally(ovs):
    """Three TCP flows (the machine's congestion control) from h1 to h2, started 1 s
    apart, share the 10 Mbit/s switch port toward h2: with the fair-queueing stage
    each gets a third of it once all three run (one tail-drop FIFO gave 0.88, 2.01
    and 6.93 Mbit/s in the same shape, mininet_tests/switchq.py)."""
    with Emulation("leafspine:2,2,2", scheduler="rapier", bw_mbps=10.0, fair_queue=8,
                   start_controller=False) as em:
        h1, h2 = em.net.get("h1"), em.net.get("h2")
        ports = (5001, 5002, 5003)
        rx = [h2.popen([sys.executable, "-c", RECEIVER, str(p)], stdout=subprocess.PIPE,
                       text=True) for p in ports]
        time.sleep(0.5)
        tx = []
        for i, p in enumerate(ports):
            tx.append(h1.popen([sys.executable, "-c", SENDER, h2.IP(), str(p), str(6 - i)]))
            time.sleep(1.0)
        for p in tx:
            p.wait(timeout=30)
        marks = []
        for p in rx:
            out, _ = p.communicate(timeout=30)
            marks.append([(float(t), int(g)) for t, g in
                          (m.split(":") for m in out.split())])

    def got_by(m, t):
        return max([g for x, g in m if x <= t], default=0)

    t_all = min(m[0][0] for m in marks[2:]) + 0.5  # the third flow has started
    rates = [(got_by(m, t_all + 2.0) - got_by(m, t_all)) * 8 / 2.0 for m in marks]
    assert min(rates) > 0, rates
    assert max(rates) / min(rates) < 1.3, rates
    assert 8e6 < sum(rates) < 10.5e6, rates  # the port's rate less the headers


def test_unenforced_hosts_are_held_to_their_access_link(ovs):
    """``baseline`` runs no agent shaping: the hosts' own interfaces are shaped at
    the access link rate (switchq.host_shaping_lines).  h1 sends to h2 (same leaf)
    and to h3 (other leaf): the two flows share nothing but h1's access link, so
    without host shaping they got about 10 Mbit/s each; with it, 10 Mbit/s
    together, as the simulator's model has it."""
    with Emulation("leafspine:2,2,2", scheduler="baseline", bw_mbps=10.0, enforce=False,
                   start_controller=False) as em:
        h1, h2, h3 = em.net.get("h1"), em.net.get("h2"), em.net.get("h3")
        q = h1.cmd(f"tc qdisc show dev {h1.defaultIntf().name}")
        assert "htb 5:" in q, q
        rx = [h.popen([sys.executable, "-c", RECEIVER, "5001"], stdout=subprocess.PIPE,
                      text=True) for h in (h2, h3)]
        time.sleep(0.5)
        tx = [h1.popen([sys.executable, "-c", SENDER, h.IP(), "5001", "4"]) for h in (h2, h3)]
        for p in tx:
            p.wait(timeout=30)
        marks = []
        for p in rx:
            out, _ = p.communicate(timeout=30)
            marks.append([(float(t), int(g)) for t, g in (m.split(":") for m in out.split())])

    def got_by(m, t):
        return max([g for x, g in m if x <= t], default=0)

    t0 = max(m[0][0] for m in marks) + 1.0
    rates = [(got_by(m, t0 + 2.0) - got_by(m, t0)) * 8 / 2.0 for m in marks]
    assert min(rates) > 0, rates
    assert sum(rates) < 10.5e6, rates  # one access link, not two


def test_interfaces_send_one_segment_per_packet(ovs):
    with Emulation("leafspine:2,2,2", scheduler="rapier", bw_mbps=10.0) as em:
        for node in em.net.hosts + em.net.switches:
            for intf in node.intfList():
                if intf.name != "lo":
                    # one TCP segment per packet handed to a qdisc (GSO_MAX_SEGS)
                    link = node.cmd(f"ip -d link show dev {intf.name}")
                    assert re.search(r"gso_max_segs 1\b", link), (intf.name, link)
        h1, h4 = em.net.get("h1"), em.net.get("h4")
        out = h1.cmd(f"ping -c 1 -W 2 {h4.IP()}")
        assert " 0% packet loss" in out, out


@pytest.mark.parametrize("kw, field", [({"queue_packets": 0}, "queue_packets"),
                                       ({"queue_packets": 2.5}, "queue_packets"),
                                       ({"rto_min_ms": 0}, "rto_min_ms"),
                                       ({"rto_min_ms": -5}, "rto_min_ms"),
                                       ({"tsq_bytes": 0}, "tsq_bytes"),
                                       ({"tcp_cc": "nosuch"}, "tcp_cc")])
def test_bad_values_are_refused_by_name(kw, field):
    with pytest.raises(EmulationError, match=field):
        Emulation("leafspine:2,2,2", **kw)
