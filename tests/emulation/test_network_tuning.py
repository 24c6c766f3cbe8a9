"""The emulated network's TCP knobs (issue 13): ``queue_packets`` puts a
``pfifo`` of that many packets under Mininet's HTB class on every shaped switch port,
and ``rto_min_ms`` sets TCP's minimum retransmission timeout on every host's route
to the fabric, ``tsq_bytes`` sets every host's TCP small-queues limit (a
per-namespace sysctl: the machine's own stays), and the hosts still reach each
other.  Bad values are refused with
the option named, before anything starts.  About 10 s.
"""

import re

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
        import subprocess
        mine = subprocess.run(["sysctl", "-n", "net.ipv4.tcp_limit_output_bytes"],
                              capture_output=True, text=True).stdout.strip()
        assert mine != "20000"
        h1, h4 = em.net.get("h1"), em.net.get("h4")
        out = h1.cmd(f"ping -c 1 -W 2 {h4.IP()}")
        assert " 0% packet loss" in out, out


@pytest.mark.parametrize("kw, field", [({"queue_packets": 0}, "queue_packets"),
                                       ({"queue_packets": 2.5}, "queue_packets"),
                                       ({"rto_min_ms": 0}, "rto_min_ms"),
                                       ({"rto_min_ms": -5}, "rto_min_ms"),
                                       ({"tsq_bytes": 0}, "tsq_bytes")])
def test_bad_values_are_refused_by_name(kw, field):
    with pytest.raises(EmulationError, match=field):
        Emulation("leafspine:2,2,2", **kw)
