"""POST and /health latency of a real ``ryu-manager`` while N clients submit coflows.

Responsiveness: the POST returns once the coflow is stored (the decision
worker schedules after the reply), so its latency no longer grows with the scheduler's
work; ``/health`` is asked every 50 ms meanwhile.  No switches are connected (rules for
absent switches are skipped; the scheduler still runs every decision).

Usage::

    .venv/bin/python benchmarks/controller_post_latency.py --clients 4 --per-client 50 \\
        --topology fattree:4

Prints POST and health latency percentiles (s), and the decision worker's counters
from ``GET /rapier/v1/schedule`` (decisions, budget_exceeded).

Large coflows and reads (``/health`` still asked every 50 ms)::

    .venv/bin/python benchmarks/controller_post_latency.py --clients 1 --per-client 20 \
        --flows 1000 --reads --scheduler baseline

``--flows N`` gives every coflow N flows; ``--reads`` then times ``GET
/rapier/v1/coflows`` (the default page) and ``GET /rapier/v1/coflows/<id>`` of the
last coflow, and the last POST is printed on its own.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from enforcement import client  # noqa: E402
from mininet_tests.ryuproc import ControllerError, start_controller, stop_controller  # noqa: E402
from rapier_app.workload_options import add_workload_options  # noqa: E402


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main(argv=None) -> int:
    """Run the measurement; returns the exit status (0 ok, 1 a request failed)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--per-client", type=int, default=50)
    add_workload_options(ap, "topology", topology=dict(default="fattree:4"))
    ap.add_argument("--scheduler", default="rapier")
    ap.add_argument("--flows", type=int, default=1, help="flows per coflow (default 1)")
    ap.add_argument("--reads", action="store_true",
                    help="then time GET /coflows and GET /coflows/<id>")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="rapier-lat-")
    try:
        ryu, base, _, _ = start_controller(
            f"[rapier]\ntopology = {args.topology}\nscheduler = {args.scheduler}\n"
            f"agent_url =\nstate_db = {tmp}/db.sqlite3\n", tmp, quiet=True)
    except ControllerError as exc:
        print(f"controller did not start: {exc}", file=sys.stderr)
        return 1
    try:
        hosts = client.request(base, "GET", "/rapier/v1/topology")[1]["hosts"]
        names = [h["name"] for h in hosts]
        post_lat, health_lat, health_at, failures = [], [], [], []
        done = threading.Event()

        def worker(k):
            rnd = random.Random(k)
            for i in range(args.per_client):
                flows = []
                for j in range(args.flows):
                    s, d = rnd.sample(names, 2)
                    port = 10000 + 1000 * k + i if args.flows == 1 else \
                        1024 + ((k * args.per_client + i) * args.flows + j) % 64000
                    flows.append({"src": s, "dst": d, "size_bytes": rnd.randint(1, 100) << 20,
                                  "dst_port": port})
                body = {"id": f"b{k}-{i}", "flows": flows}
                t = time.perf_counter()
                st, _ = client.request(base, "POST", "/rapier/v1/coflows", body, timeout=60)
                post_lat.append(time.perf_counter() - t)
                if st != 201:
                    failures.append(st)

        def health():
            while not done.is_set():
                t = time.perf_counter()
                st, _ = client.request(base, "GET", "/rapier/v1/health", timeout=30)
                health_lat.append(time.perf_counter() - t)
                health_at.append(t)
                time.sleep(0.05)

        h = threading.Thread(target=health)
        h.start()
        t0 = time.perf_counter()
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(args.clients)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        wall = time.perf_counter() - t0
        reads = []
        t_reads = time.perf_counter()
        if args.reads:
            for path in ("/rapier/v1/coflows",
                         f"/rapier/v1/coflows/b0-{args.per_client - 1}"):
                t = time.perf_counter()
                st, _ = client.request(base, "GET", path, timeout=600)
                reads.append((path, st, time.perf_counter() - t))
        t_end = time.perf_counter()
        time.sleep(1.0)
        done.set()
        h.join()
        sched = client.request(base, "GET", "/rapier/v1/schedule", timeout=30)[1]
        print(f"{args.clients} clients x {args.per_client} POSTs on {args.topology} "
              f"({args.scheduler}): {wall:.1f} s, failures {failures}")
        print(f"POST   p50 {statistics.median(post_lat):.4f} s  p99 {_pct(post_lat, .99):.4f} s  "
              f"max {max(post_lat):.4f} s")
        if args.flows > 1 or args.reads:
            print(f"last POST {post_lat[-1]:.4f} s ({args.flows} flows per coflow)")
        for path, st, dt in reads:
            print(f"GET {path}: {st} in {dt:.4f} s")
        if reads:
            during = [x for x, t in zip(health_lat, health_at) if t_reads <= t <= t_end]
            print(f"health during the reads: max {max(during, default=0):.4f} s "
                  f"({len(during)} requests)")
        print(f"health p50 {statistics.median(health_lat):.4f} s  p99 "
              f"{_pct(health_lat, .99):.4f} s  max {max(health_lat):.4f} s "
              f"({len(health_lat)} requests)")
        print(f"decisions {sched['count']}, queued {sched.get('queued')}, budget_exceeded "
              f"{sched.get('budget_exceeded')}, last solve {sched['solve_s']:.4f} s")
        return 1 if failures else 0
    finally:
        stop_controller(ryu)


if __name__ == "__main__":
    sys.exit(main())
