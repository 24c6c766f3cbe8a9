#!/usr/bin/env python3
"""How fast one TCP flow takes up a raised HTB rate (issue 13; root only).

In the emulation a raise is in force at the sender's agent a median 35-54 ms after
the last byte of the flow that freed the bandwidth, but rapier's and
scheduling-only's raised flows then took a median 150-270 ms (100 ms samples) to
reach 80 % of their new rate, and many never did before the next change
(``benchmarks/emulation_handoff.py``, ``mininet_tests/README.md``).  This script
isolates the sender: two network namespaces joined by a veth pair, the sender's
interface set up as the emulation's hosts are (offloads off, ``gso_max_segs 1``,
optionally ``rto_min``), one flow through an agent-style class (``htb rate R ceil R
quantum 1514``, a u32 filter on the destination port, ``tc class change``):

* ``--high`` Mbit/s for 1 s (warm-up), then ``--low`` Mbit/s for ``--low-s`` s, then
  ``--high`` again for 2 s, while the sender keeps its socket full;
* the receiver counts bytes in 10 ms bins; the script reports the time from the
  raise until a 50 ms window first carries 80 % of ``--high`` x 1448/1514 (payload
  of full segments), and the mean rate over the 0.5 s after the raise.

``--sysctl KEY=VALUE`` (repeatable) sets sender-namespace sysctls, to try what
shortens the ramp.

Usage: ``sudo python benchmarks/htb_ramp.py [--low 0.064 0.3 1 3] [--high 9.5]``
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

NS_TX, NS_RX = "htbramp-tx", "htbramp-rx"
RECEIVER = r"""
import json, socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5001)); s.listen(1)
c, _ = s.accept(); bins = {}
while True:
    n = len(c.recv(65536))
    if not n:
        break
    k = int(time.time() * 100)
    bins[k] = bins.get(k, 0) + n
print(json.dumps(sorted(bins.items())))
"""
SENDER = r"""
import socket, sys, time
s = socket.create_connection(("10.98.0.2", 5001)); buf = b"x" * 65536
end = time.time() + float(sys.argv[1])
while time.time() < end:
    s.send(buf)
s.close()
"""
PAYLOAD = 1448 / 1514


def teardown() -> None:
    netns_delete((NS_TX, NS_RX))


def trial(low: float, high: float, low_s: float, rto_min_ms: float, sysctls,
          show_ss: bool = False, fresh: bool = False, keep_old: bool = False) -> dict:
    """One flow through warm-up, low, high; returns the ramp figures."""
    veth_pair(NS_TX, NS_RX, "htbr0", "htbr1", "10.98.0", gso_max_segs=1)
    if rto_min_ms:
        sh("ip", "route", "replace", "10.98.0.0/24", "dev", "htbr0", "rto_min",
           f"{int(rto_min_ms)}ms", ns=NS_TX)
    for kv in sysctls:
        sh("sysctl", "-q", "-w", kv, ns=NS_TX)

    def rate(verb: str, mbps: float) -> None:
        htb_class(verb, "htbr0", NS_TX, "1:10", mbps)

    rate("add", high)
    sh("tc", "filter", "add", "dev", "htbr0", "parent", "1:", "protocol", "ip", "prio", "16",
       "u32", "match", "ip", "dport", "5001", "0xffff", "flowid", "1:10", ns=NS_TX)
    rx = subprocess.Popen(["ip", "netns", "exec", NS_RX, sys.executable, "-c", RECEIVER],
                          stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    tx = subprocess.Popen(["ip", "netns", "exec", NS_TX, sys.executable, "-c", SENDER,
                           str(1.0 + low_s + 2.0)])
    time.sleep(1.0)
    rate("change", low)
    time.sleep(low_s)
    before = sh("ss", "-tin", "dst", "10.98.0.2", ns=NS_TX) if show_ss else ""
    if fresh:
        # a new class at the new rate (fresh tokens), its filter added, the old
        # filter deleted, and the old class deleted (its queued packets dropped) or,
        # with --keep-old, kept (they leave at the old rate)
        htb_class("add", "htbr0", NS_TX, "1:11", high)
        sh("tc", "filter", "add", "dev", "htbr0", "parent", "1:", "protocol", "ip", "prio",
           "15", "u32", "match", "ip", "dport", "5001", "0xffff", "flowid", "1:11", ns=NS_TX)
        t_raise = time.time()
        sh("tc", "filter", "del", "dev", "htbr0", "parent", "1:", "prio", "16", ns=NS_TX)
        if not keep_old:
            sh("tc", "class", "del", "dev", "htbr0", "classid", "1:10", ns=NS_TX)
    else:
        rate("change", high)
        t_raise = time.time()
    if show_ss:
        time.sleep(0.05)
        print(f"ss before the raise:\n{before}ss 50 ms after:\n"
              f"{sh('ss', '-tin', 'dst', '10.98.0.2', ns=NS_TX)}")
    tx.wait(timeout=60)
    out, _ = rx.communicate(timeout=60)
    teardown()
    bins = dict((int(k), v) for k, v in json.loads(out))
    k0 = int(t_raise * 100)
    want = 0.8 * high * 1e6 * PAYLOAD / 8 * 0.05   # bytes in a 50 ms window
    ramp = None
    for k in range(k0, k0 + 200):
        if sum(bins.get(j, 0) for j in range(k, k + 5)) >= want:
            ramp = (k + 5) / 100 - t_raise
            break
    after = sum(bins.get(j, 0) for j in range(k0 + 1, k0 + 51)) * 8 / 0.5 / 1e6
    return {"low_mbps": low, "ramp_s": ramp, "mbps_0_5s_after": after}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--low", type=float, nargs="+", default=[0.064, 0.3, 1.0, 3.0],
                    help="low rates, Mbit/s (0.064: the agent's floor for a paused flow)")
    ap.add_argument("--high", type=float, default=9.5, help="raised rate, Mbit/s")
    ap.add_argument("--low-s", type=float, default=2.0, help="seconds at the low rate")
    ap.add_argument("--rto-min-ms", type=float, default=20.0,
                    help="the sender route's rto_min (the emulation's default 20; 0: Linux's)")
    ap.add_argument("--sysctl", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--fresh", action="store_true",
                    help="raise by moving the flow to a new class (fresh tokens) instead "
                         "of tc class change; the old class is deleted")
    ap.add_argument("--keep-old", action="store_true",
                    help="with --fresh: keep the old class (without its filter) so that "
                         "its queued packets are not dropped")
    ap.add_argument("--ss", action="store_true",
                    help="print the sender's ss -tin before and 50 ms after the raise")
    a = ap.parse_args(argv)
    if any(not 0 < x < a.high for x in a.low):
        ap.error("--low, --high: need 0 < low < high")
    if not a.low_s > 0:
        ap.error(f"--low-s: must be > 0 s, got {a.low_s}")
    if not a.rto_min_ms >= 0:
        ap.error(f"--rto-min-ms: must be >= 0 (0: Linux's), got {a.rto_min_ms}")
    if a.keep_old and not a.fresh:
        ap.error("--keep-old: applies only with --fresh")
    for kv in a.sysctl:
        if "=" not in kv:
            ap.error(f"--sysctl: expected KEY=VALUE, got {kv!r}")
    if os.geteuid() != 0:
        ap.error("needs root (it creates network namespaces and tc classes)")
    try:
        for low in a.low:
            r = trial(low, a.high, a.low_s, a.rto_min_ms, a.sysctl, a.ss, a.fresh, a.keep_old)
            ramp = "never within 2 s" if r["ramp_s"] is None else f"{r['ramp_s'] * 1e3:.0f} ms"
            print(("new class, old kept: " if a.fresh and a.keep_old else
                   "new class: " if a.fresh else "") + f"{low:g} -> {a.high:g} Mbit/s: 80 % of the new rate after {ramp}; "
                  f"{r['mbps_0_5s_after']:.2f} Mbit/s over the 0.5 s after the raise"
                  + (f" ({', '.join(a.sysctl)})" if a.sysctl else ""))
    finally:
        teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
