"""POST and /health latency of a real ``ryu-manager`` while N clients submit coflows.

Responsiveness: the POST returns once the coflow is stored (the decision
worker schedules after the reply), so its latency no longer grows with the scheduler's
work; ``/health`` is asked every 50 ms meanwhile (from a process of its own).  No switches are connected (rules for
absent switches are skipped; the scheduler still runs every decision).  The burst
starts once the controller's start ended (``/health``'s ``startup`` reached ``kernels``,
the compiled kernels' warm-up in a native thread, a second or two after the REST server
answers); ``--during-start`` starts it as soon as the REST server answers.

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

``/metrics`` scraped during a burst (a Prometheus every second), and the same burst
without the scraper on a fresh controller, for the POST latency with and without::

    .venv/bin/python benchmarks/controller_post_latency.py --clients 4 --per-client 250 \
        --scrape-every 1 --compare

``--scrape-every S`` GETs ``/metrics`` every S seconds from the first POST until the
burst's last decision (``GET /schedule``'s ``queued`` empty) and prints the scrape
latency percentiles, the exposition's size and samples; ``--compare`` first runs the
burst without scraping.
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
    ap.add_argument("--during-start", action="store_true",
                    help="start the burst and the /health checks as soon as the REST "
                         "server answers, during the kernels' warm-up (default: after "
                         "the controller's start ended, /health's startup phase "
                         "'kernels')")
    ap.add_argument("--reads", action="store_true",
                    help="then time GET /coflows and GET /coflows/<id>")
    ap.add_argument("--scrape-every", type=float, default=0.0, metavar="S",
                    help="GET /metrics every S seconds during the burst (0: never)")
    ap.add_argument("--compare", action="store_true",
                    help="run the burst without the scraper first (fresh controller)")
    args = ap.parse_args(argv)
    status = 0
    if args.compare and args.scrape_every > 0:
        print("-- without the scraper")
        status |= burst(args, 0.0)
        print(f"-- with /metrics scraped every {args.scrape_every:g} s")
    return status | burst(args, args.scrape_every)


def scraper(base: str, every_s: float, stop: threading.Event, out: list) -> None:
    """GET ``base``/metrics every ``every_s`` seconds until ``stop``; appends
    ``(latency s, status, body bytes)`` to ``out``; the last body is kept in
    ``scraper.last``."""
    import urllib.request

    while not stop.is_set():
        t = time.perf_counter()
        with urllib.request.urlopen(base + "/metrics", timeout=60) as resp:
            body = resp.read()
            out.append((time.perf_counter() - t, resp.status, len(body)))
        scraper.last = body
        stop.wait(max(0.0, every_s - (time.perf_counter() - t)))


def health_checker(base: str, done, out) -> None:
    """``/health`` every 50 ms from a process of its own (as a monitoring agent asks
    it: no interpreter lock shared with the clients building and encoding bodies)
    until ``done`` is set; puts ``(latencies s, start times)`` (``perf_counter``:
    the machine's monotonic clock, comparable across processes)."""
    lat, at = [], []
    while not done.is_set():
        t = time.perf_counter()
        client.request(base, "GET", "/rapier/v1/health", timeout=30)
        lat.append(time.perf_counter() - t)
        at.append(t)
        time.sleep(0.05)
    out.put((lat, at))


def burst(args, scrape_every: float) -> int:
    """One controller, one burst of ``clients x per_client`` POSTs (``/health`` every
    50 ms, ``/metrics`` every ``scrape_every`` s when > 0); prints the figures and
    returns 0, or 1 when a request failed."""
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
        post_lat, failures = [], []
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        done, health_out = ctx.Event(), ctx.Queue()

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

        if not args.during_start:
            # the start ends with the kernels' warm-up in a native thread (the REST
            # server answers before it): the burst and the /health figures begin after it
            t_up = time.perf_counter()
            while client.request(base, "GET", "/rapier/v1/health", timeout=30)[1].get(
                    "startup", {}).get("phases_s", {}).get("kernels") is None:
                if time.perf_counter() - t_up > 120:
                    print("the controller's start did not end within 120 s", file=sys.stderr)
                    return 1
                time.sleep(0.1)
        h = ctx.Process(target=health_checker, args=(base, done, health_out))
        h.start()
        time.sleep(0.5)  # the checker's interpreter started
        scrapes: list = []
        scraping = threading.Event()
        sc = None
        if scrape_every > 0:
            sc = threading.Thread(target=scraper, args=(base, scrape_every, scraping, scrapes))
            sc.start()
        t0 = time.perf_counter()
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(args.clients)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        wall = time.perf_counter() - t0
        if sc is not None:  # scrape until the burst is decided
            while client.request(base, "GET", "/rapier/v1/schedule", timeout=120)[1].get(
                    "queued"):
                time.sleep(0.2)
            scraping.set()
            sc.join()
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
        health_lat, health_at = health_out.get(timeout=60)
        h.join(30)
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
        if scrapes:
            from prometheus_client.parser import text_string_to_metric_families

            lat = [x[0] for x in scrapes]
            fams = list(text_string_to_metric_families(scraper.last.decode()))
            print(f"/metrics p50 {statistics.median(lat):.4f} s  p99 {_pct(lat, .99):.4f} s  "
                  f"max {max(lat):.4f} s ({len(lat)} scrapes every {scrape_every:g} s, "
                  f"statuses {sorted({x[1] for x in scrapes})}; last "
                  f"{scrapes[-1][2]} bytes, {sum(len(f.samples) for f in fams)} samples)")
            if any(x[1] != 200 for x in scrapes):
                failures.append("metrics")
        return 1 if failures else 0
    finally:
        stop_controller(ryu)


if __name__ == "__main__":
    sys.exit(main())
