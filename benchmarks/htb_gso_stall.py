#!/usr/bin/env python3
"""One TCP flow through a host-agent-style HTB class whose rate drops and comes back:
how long does the flow stall, with and without one-segment packets (root only).

The emulation (issue 13) showed flows that received nothing for seconds after the
controller raised their rate from a low one (rapier, fattree:4: flow c8/6 at
0.23 Mbit/s, then 1.94 and 9.5 Mbit/s, nothing received for 3.8 s).  This script
reproduces the mechanism with two network namespaces and a veth pair, the way
``enforcement/tc.py`` builds a flow's limit (``htb rate R ceil R quantum 1514`` and a
u32 filter on the destination port, changed with ``tc class change``):

* the sender's interface has its offloads off, as the emulation sets them;
* the class runs at ``--high`` Mbit/s for 1 s, ``--low`` Mbit/s for 2 s, then
  ``--high`` again for 3 s, while the sender keeps its socket full;
* the receiver records the longest time without a byte.

Run once with Linux's ``gso_max_segs`` and once with ``gso_max_segs 1``.  Linux builds
multi-segment TCP packets (software GSO splits them after the qdisc, so ``ethtool
-K gso off`` does not stop it) and HTB charges a whole packet against the class's
rate: at 64 kbit/s a 47-segment packet (68 KB) costs 8.5 s.  Measured here
(2026-11-24, kernel 6.18): longest gap 8.52 s with 4 retransmission timeouts and no
byte retransmitted (the packets sat in the class), against 0.38 s with one segment
per packet, where the flow also resumed at the full rate the moment its rate came
back.

Usage: ``sudo python benchmarks/htb_gso_stall.py [--low 0.064] [--high 9.5]``
Prints one line per setting: longest gap (s), when it began (s), bytes received.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import htb_class, netns_delete, sh, veth_pair  # noqa: E402

NS_TX, NS_RX = "gsostall-tx", "gsostall-rx"
RECEIVER = r"""
import json, socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5001)); s.listen(1)
c, _ = s.accept(); t0 = last = time.time(); got = 0; gap = (0.0, 0.0)
while True:
    n = len(c.recv(65536))
    if not n:
        break
    now = time.time()
    if now - last > gap[1]:
        gap = (last - t0, now - last)
    last = now; got += n
print(json.dumps({"gap_start_s": gap[0], "gap_s": gap[1], "bytes": got}))
"""
SENDER = r"""
import socket, sys, time
s = socket.create_connection(("10.99.0.2", 5001)); buf = b"x" * 65536
end = time.time() + float(sys.argv[1])
while time.time() < end:
    s.send(buf)
s.close()
"""


def teardown() -> None:
    netns_delete((NS_TX, NS_RX))


def trial(gso_max_segs: int, low_mbps: float, high_mbps: float) -> dict:
    """One flow through the rate steps; returns the receiver's longest gap."""
    veth_pair(NS_TX, NS_RX, "gsost0", "gsost1", "10.99.0", gso_max_segs)

    def rate(verb: str, mbps: float) -> None:
        htb_class(verb, "gsost0", NS_TX, "1:10", mbps)

    rate("add", high_mbps)
    sh("tc", "filter", "add", "dev", "gsost0", "parent", "1:", "protocol", "ip", "prio", "16",
       "u32", "match", "ip", "dport", "5001", "0xffff", "flowid", "1:10", ns=NS_TX)
    rx = subprocess.Popen(["ip", "netns", "exec", NS_RX, sys.executable, "-c", RECEIVER],
                          stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    tx = subprocess.Popen(["ip", "netns", "exec", NS_TX, sys.executable, "-c", SENDER, "6"])
    time.sleep(1.0)
    rate("change", low_mbps)
    time.sleep(2.0)
    rate("change", high_mbps)
    tx.wait(timeout=60)
    out, _ = rx.communicate(timeout=60)
    teardown()
    return json.loads(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--low", type=float, default=0.064, help="low rate, Mbit/s (default "
                    "0.064: the agent's MIN_RATE_BPS, what a paused flow gets)")
    ap.add_argument("--high", type=float, default=9.5, help="high rate, Mbit/s")
    a = ap.parse_args(argv)
    if not (0 < a.low < a.high):
        ap.error("--low, --high: need 0 < low < high")
    if os.geteuid() != 0:
        ap.error("needs root (it creates network namespaces and tc classes)")
    try:
        for segs in (0, 1):
            r = trial(segs, a.low, a.high)
            name = "gso_max_segs 1" if segs else "Linux's gso_max_segs"
            print(f"{name:22s} longest gap {r['gap_s']:.2f} s (from {r['gap_start_s']:.2f} s), "
                  f"{r['bytes']} bytes received")
    finally:
        teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
