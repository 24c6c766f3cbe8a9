"""End-to-end smoke check of the controller on real (userspace) OVS switches.

Builds a topology from ``topologies/`` in Mininet (switches, hosts, ports and dpids
from the same definition the controller reads), starts
``ryu-manager rapier_app.controller --observe-links`` on private ports, checks that
``pingall`` succeeds despite the fabric's loops (proxy ARP + default forwarding),
that Ryu's discovered links match the configuration, then posts a coflow, runs
TCP transfers of exactly ``size_bytes`` on the flows' TCP ports and polls
``GET /rapier/v1/coflows/<id>`` until the controller reports it done.

Run as root on a machine prepared by ``scripts/install.sh`` with OVS started
(``/usr/share/openvswitch/scripts/ovs-ctl start``)::

    .venv/bin/python scripts/controller_smoke.py --topology leafspine:3,3,3

Node names get a prefix (``x`` by default) so that the run can share the machine's
OVS with another Mininet run; everything it starts is stopped by PID at the end
(it never runs ``mn -c``).  Not a unit test: it needs root, OVS and Mininet.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
try:
    import mininet  # noqa: F401
except ImportError:  # Debian's python3-mininet (pure Python) works from the venv
    sys.path.append("/usr/lib/python3/dist-packages")

from mininet.link import TCLink  # noqa: E402
from mininet.net import Mininet  # noqa: E402
from mininet.node import OVSSwitch, RemoteController  # noqa: E402

from topologies import build_topology  # noqa: E402

OFFLOADS = "tx off rx off tso off gso off gro off"
#: One-shot TCP receiver: accept one connection on argv[1], read to EOF.
RECEIVER = """import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); c, _ = s.accept()
while c.recv(1 << 16): pass
c.close()
"""
#: Sender of exactly argv[3] bytes to argv[1]:argv[2]; waits for the peer's close.
SENDER = """import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
n = int(sys.argv[3]); buf = bytes(1 << 16)
while n > 0:
    k = min(n, len(buf)); s.sendall(buf[:k]); n -= k
s.shutdown(socket.SHUT_WR); s.recv(1); s.close()
"""


def http(method: str, url: str, body=None, timeout: float = 10.0):
    """(status, decoded JSON) of one HTTP request."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def build_net(topo, prefix: str, of_port: int, bw_mbps: float):
    """A Mininet network mirroring ``topo`` (ports, dpids, IPs, MACs)."""
    net = Mininet(controller=None, link=TCLink, autoSetMacs=False, build=False)
    net.addController(prefix + "c0", controller=RemoteController, ip="127.0.0.1", port=of_port)
    g = topo.graph
    for s in topo.switches:
        net.addSwitch(prefix + s, cls=OVSSwitch, dpid="%016x" % g.nodes[s]["dpid"],
                      datapath="user", protocols="OpenFlow13", failMode="secure")
    for h in topo.hosts:
        net.addHost(prefix + h, ip=g.nodes[h]["ip"] + "/8", mac=g.nodes[h]["mac"])
    done = set()
    for u, v, d in sorted(g.edges(data=True), key=lambda e: (e[2]["port"], e[0], e[1])):
        if (v, u) in done:
            continue
        done.add((u, v))
        pu = d["port"] - (1 if topo.is_host(u) else 0)
        pv = d["peer_port"] - (1 if topo.is_host(v) else 0)
        net.addLink(prefix + u, prefix + v, port1=pu, port2=pv, bw=bw_mbps)
    return net


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default="leafspine:3,3,3")
    ap.add_argument("--scheduler", default="rapier")
    ap.add_argument("--prefix", default="x")
    ap.add_argument("--of-port", type=int, default=6733)
    ap.add_argument("--rest-port", type=int, default=8089)
    ap.add_argument("--bw-mbps", type=float, default=100.0)
    ap.add_argument("--size-bytes", type=int, default=8 * 131072 * 10)
    ap.add_argument("--logdir", default="/work/ctl-logs")
    ap.add_argument("--skip-transfer", action="store_true")
    args = ap.parse_args(argv)
    os.makedirs(args.logdir, exist_ok=True)
    topo = build_topology(args.topology)
    conf = os.path.join(args.logdir, "smoke.conf")
    with open(conf, "w") as fh:
        fh.write(f"[rapier]\ntopology = {args.topology}\nscheduler = {args.scheduler}\n"
                 f"agent_url =\nlink_bps = {args.bw_mbps * 1e6}\n")
    log = open(os.path.join(args.logdir, "smoke-ryu.log"), "w")
    ryu = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "rapier-controller"),
                            "--observe-links", "--config-file", conf,
                            "--ofp-tcp-listen-port", str(args.of_port),
                            "--wsapi-port", str(args.rest_port)],
                           stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    base = f"http://127.0.0.1:{args.rest_port}/rapier/v1"
    net = None
    procs = []
    ok = True
    try:
        for _ in range(100):
            try:
                if http("GET", base + "/health")[0] == 200:
                    break
            except OSError:
                time.sleep(0.2)
        t0 = time.time()
        net = build_net(topo, args.prefix, args.of_port, args.bw_mbps)
        net.build()
        net.start()
        for node in net.hosts + net.switches:
            for intf in node.intfList():
                if intf.name != "lo":
                    node.cmd(f"ethtool -K {intf.name} {OFFLOADS} >/dev/null 2>&1")
        print(f"network up in {time.time() - t0:.1f} s")
        for _ in range(100):
            h = http("GET", base + "/health")[1]
            if h["switches_connected"] == h["switches_configured"]:
                break
            time.sleep(0.2)
        print("health:", h)
        loss = net.pingAll(timeout="1")
        print(f"pingall loss: {loss}%")
        ok &= loss == 0
        time.sleep(3)
        obs = http("GET", base + "/topology")[1]["observed"]
        print("observed:", json.dumps(obs))
        ok &= not obs["mismatches"] and not obs["missing"]
        if not args.skip_transfer:
            hs = topo.hosts
            n = len(hs)
            pairs = [(hs[0], hs[n // 2 + 1]), (hs[1], hs[n // 2 + 1]), (hs[2], hs[-1])]
            flows = [{"src": s, "dst": d, "size_bytes": args.size_bytes, "dst_port": 5001 + i}
                     for i, (s, d) in enumerate(pairs)]
            st, body = http("POST", base + "/coflows", {"flows": flows, "id": "smoke"})
            print("POST:", st, body["id"] if st == 201 else body)
            ok &= st == 201
            servers = []
            for f in flows:
                dst = net.get(args.prefix + f["dst"])
                servers.append(dst.popen([sys.executable, "-c", RECEIVER, str(f["dst_port"])]))
            procs += servers
            time.sleep(0.5)
            t_start = time.time()
            for f in flows:
                src = net.get(args.prefix + f["src"])
                ip = topo.graph.nodes[f["dst"]]["ip"]
                procs.append(src.popen([sys.executable, "-c", SENDER, ip, str(f["dst_port"]),
                                        str(f["size_bytes"])]))
            for p in procs[len(servers):]:
                p.wait(timeout=120)
            t_iperf = time.time() - t_start
            view = None
            for _ in range(100):
                view = http("GET", base + "/coflows/smoke")[1]
                if view["state"] == "done":
                    break
                time.sleep(0.2)
            print(f"senders done after {t_iperf:.2f} s; controller: state "
                  f"{view['state']}, cct_s {view['cct_s']}")
            for f in view["flows"]:
                print(f"  {f['flow_id']} {f['src']}->{f['dst']} path {f['path']} "
                      f"sent {f['bytes_sent']:.0f}/{f['size_bytes']:.0f} fct {f['fct_s']}")
            ok &= view["state"] == "done"
            print("schedule:", json.dumps(http("GET", base + "/schedule")[1])[:400])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if net is not None:
            net.stop()
        ryu.terminate()
        try:
            ryu.wait(timeout=5)
        except subprocess.TimeoutExpired:
            ryu.kill()
        log.close()
    print("SMOKE", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
