"""Concurrent REST clients against the real controller and Open vSwitch: do the
switches hold exactly the controller's rules?  (One writer per switch and
barrier-confirmed rules; docs/operations.md.)

Mininet fat-tree (default fattree:4, 20 switches), ``ryu-manager`` with RAPIER, no
traffic.  ``--clients`` threads each submit ``--per-client`` single-flow coflows
(random host pairs, distinct TCP ports) and cancel every 4th one at once.  Then the
coflow rules (priority 100) of every switch are read back with ``ovs-ofctl
dump-flows`` and compared with the paths the controller reports for its active
flows: rules missing, with a wrong output port, and stale (no active flow).  Also
counts the rules the controller still reports pending, and its own reconciliation
totals (``GET /schedule``'s ``reconcile``: rules it found missing, wrong and stale
when it read the switches back, and repaired).  With ``--cancel-all`` a second phase
follows: the clients cancel every coflow still active (concurrently), then wait
``--settle`` seconds (a reconciliation round of every switch at least,
``reconcile_interval_s``) and the switches are compared again (they must hold no
coflow rule); ``cancel_phase`` gives the reconciliation totals of that phase.
Prints JSON.

Usage (root, Open vSwitch running)::

    .venv/bin/python benchmarks/controller_concurrent_rules.py --clients 4 --per-client 40
    .venv/bin/python benchmarks/controller_concurrent_rules.py --clients 4 --per-client 250 --cancel-all
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


def _reconcile_totals(em) -> dict:
    """The controller's reconciliation totals (``GET /schedule``'s ``reconcile``)."""
    _, sch = client.request(em.rest, "GET", REST_PREFIX + "/schedule", timeout=30)
    return dict(sch.get("reconcile") or {})


def _compare(em, g) -> dict:
    """The switches' coflow rules (priority 100, ``ovs-ofctl``) against the active
    flows' paths in the controller's view."""
    out = {}
    coflows, offset = [], 0
    while offset is not None:  # every page, with the flows (GET /coflows is paged)
        _, page = client.request(em.rest, "GET", REST_PREFIX + "/coflows?state=active"
                                 f"&flows=1&limit=500&offset={offset}", timeout=30)
        coflows.extend(page["coflows"])
        offset = page.get("next_offset")
    expected = {}
    pending = 0
    for c in coflows:
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
    out["active_coflows"] = len(coflows)
    out["rules_expected"] = len(expected)
    out["rules_on_switches"] = len(have)
    out["missing"] = sum(1 for k in expected if k not in have)
    out["wrong_port"] = sum(1 for k, p in expected.items() if k in have and have[k] != p)
    out["stale"] = sum(1 for k in have if k not in expected)
    out["pending_in_controller_view"] = pending
    return out


def run(topology: str = "fattree:4", scheduler: str = "rapier", clients: int = 4,
        per_client: int = 40, cancel_all: bool = False, settle_s: float = 12.0) -> dict:
    """One run (root, Open vSwitch running): ``clients`` threads submit
    ``per_client`` coflows each and cancel every 4th, then the switches' coflow rules
    are compared with the controller's active paths; with ``cancel_all``, every
    coflow still active is then cancelled by the same clients, and after
    ``settle_s`` seconds the switches are compared again.

    Returns:
        dict with ``rules_expected``, ``rules_on_switches``, ``missing``,
        ``wrong_port``, ``stale``, ``pending_in_controller_view`` (counts),
        ``active_coflows``, ``errors`` (first 5 non-2xx answers), ``submit_wall_s``
        and POST latency percentiles (s), ``reconcile`` (the controller's totals);
        with ``cancel_all`` also ``cancel_phase``: ``cancel_wall_s``, ``errors``,
        ``reconcile`` (totals of the phase) and the comparison's keys.

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
        out.update(_compare(em, g))
        out["reconcile"] = before = _reconcile_totals(em)
        if cancel_all:
            phase = {}
            errs = []

            def canceller(k):
                for i in range(per_client):
                    if i % 4 == 2 and i + 1 < per_client:
                        continue  # cancelled in the first phase
                    st, obj = client.request(em.rest, "DELETE",
                                             f"{REST_PREFIX}/coflows/k{k}-{i}", timeout=60)
                    if st != 200:
                        errs.append((st, obj))

            t0 = time.time()
            threads = [threading.Thread(target=canceller, args=(k,)) for k in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            phase["cancel_wall_s"] = round(time.time() - t0, 2)
            phase["errors"] = errs[:5]
            time.sleep(settle_s)
            phase.update(_compare(em, g))
            after = _reconcile_totals(em)
            phase["reconcile"] = {k: after.get(k, 0) - before.get(k, 0) for k in after}
            out["cancel_phase"] = phase
    return out


def main(argv=None) -> int:
    """Run once and print the comparison as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_options(ap, "topology", topology=dict(default="fattree:4"))
    ap.add_argument("--scheduler", default="rapier")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--per-client", type=int, default=40)
    ap.add_argument("--cancel-all", action="store_true",
                    help="then cancel every coflow still active and compare again")
    ap.add_argument("--settle", type=float, default=12.0,
                    help="seconds between the cancels and the second comparison")
    args = ap.parse_args(argv)
    print(json.dumps(run(args.topology, args.scheduler, args.clients, args.per_client,
                         args.cancel_all, args.settle), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
