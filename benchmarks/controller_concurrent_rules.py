"""Concurrent REST clients against the real controller and Open vSwitch: do the
switches hold exactly the controller's rules?  (One writer per switch and
barrier-confirmed rules; docs/operations.md.)

Mininet fat-tree (default fattree:4, 20 switches), ``ryu-manager`` with RAPIER, no
traffic.  ``--clients`` threads each submit ``--per-client`` single-flow coflows
(random host pairs, distinct TCP ports) and cancel every 4th one at once.  Then the
coflow rules (priority 100) of every switch are read back with ``ovs-ofctl
dump-flows`` and compared with the paths the controller reports for its active
flows: rules missing, with a wrong output port, and stale (no active flow).  Also
counts the rules the controller still reports pending.  Prints JSON.

Usage (root, Open vSwitch running)::

    .venv/bin/python benchmarks/controller_concurrent_rules.py --clients 4 --per-client 40
"""

import argparse
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from enforcement import client  # noqa: E402
from mininet_tests import ofctl  # noqa: E402
from mininet_tests.runner import REST_PREFIX, Emulation  # noqa: E402
from rapier_app.workload_options import add_workload_options  # noqa: E402


def run(topology: str = "fattree:4", scheduler: str = "rapier", clients: int = 4,
        per_client: int = 40) -> dict:
    """One run (root, Open vSwitch running): ``clients`` threads submit
    ``per_client`` coflows each and cancel every 4th, then the switches' coflow rules
    are compared with the controller's active paths.

    Returns:
        dict with ``rules_expected``, ``rules_on_switches``, ``missing``,
        ``wrong_port``, ``stale``, ``pending_in_controller_view`` (counts),
        ``active_coflows``, ``errors`` (first 5 non-2xx answers), ``submit_wall_s``
        and POST latency percentiles (s).

    Raises:
        EmulationError: Mininet, Open vSwitch or the controller did not start.
    """
    out = {"topology": topology, "clients": clients, "per_client": per_client}
    with Emulation(topology, scheduler=scheduler, enforce=False) as em:
        g = em.definition.graph
        hosts = list(em.definition.hosts)
        lat, errors = [], []

        def worker(k):
            rnd = random.Random(k)
            for i in range(per_client):
                src, dst = rnd.sample(hosts, 2)
                body = {"id": f"k{k}-{i}", "flows": [{"src": src, "dst": dst,
                                                      "size_bytes": 10 ** 9,
                                                      "dst_port": 20000 + 1000 * k + i}]}
                t = time.time()
                st, obj = client.request(em.rest, "POST", REST_PREFIX + "/coflows", body,
                                         timeout=60)
                lat.append(time.time() - t)
                if st != 201:
                    errors.append((st, obj))
                if i % 4 == 3:
                    st, obj = client.request(em.rest, "DELETE",
                                             f"{REST_PREFIX}/coflows/k{k}-{i - 1}", timeout=60)
                    if st != 200:
                        errors.append((st, obj))

        t0 = time.time()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["submit_wall_s"] = round(time.time() - t0, 2)
        lat.sort()
        out["post_latency_p50_s"] = round(lat[len(lat) // 2], 3)
        out["post_latency_p99_s"] = round(lat[int(len(lat) * 0.99)], 3)
        out["errors"] = errors[:5]
        time.sleep(2.0)
        _, page = client.request(em.rest, "GET", REST_PREFIX + "/coflows?state=active",
                                 timeout=30)
        expected = {}
        pending = 0
        for c in page["coflows"]:
            for f in c["flows"]:
                pending += f.get("rules", {}).get("pending", 0)
                path = f["path"]
                if not path:
                    continue
                for i, sw in enumerate(path[1:-1], start=1):
                    expected[(sw, f["src_ip"], f["dst_ip"], str(f["dst_port"]))] = \
                        g.edges[sw, path[i + 1]]["port"]
        have = {}
        for sw in em.definition.switches:
            for r in ofctl.dump_flows(sw):
                if r.priority == 100:
                    key = (sw, r.field("nw_src"), r.field("nw_dst"), r.field("tp_dst"))
                    ports = r.output_ports()
                    have[key] = ports[0] if ports else None
        out["active_coflows"] = len(page["coflows"])
        out["rules_expected"] = len(expected)
        out["rules_on_switches"] = len(have)
        out["missing"] = sum(1 for k in expected if k not in have)
        out["wrong_port"] = sum(1 for k, p in expected.items() if k in have and have[k] != p)
        out["stale"] = sum(1 for k in have if k not in expected)
        out["pending_in_controller_view"] = pending
    return out


def main(argv=None) -> int:
    """Run once and print the comparison as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_options(ap, "topology", topology=dict(default="fattree:4"))
    ap.add_argument("--scheduler", default="rapier")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--per-client", type=int, default=40)
    args = ap.parse_args(argv)
    print(json.dumps(run(args.topology, args.scheduler, args.clients, args.per_client),
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
