"""Reads, ``/health`` and POSTs of a controller holding 20 coflows of 1,000 flows.

The controller is built in-process and served over real HTTP on loopback the way
``ryu-manager`` serves it (:class:`rapier_app.controller.inprocess.GreenServer`:
``eventlet.wsgi`` with the controller's settings, the decision worker as a green
thread, the scheduler call in a native thread through ``eventlet.tpool``), with fake
switches on every switch of the fabric (each flow mod is built and handed to them,
as to a connected switch; no barrier is answered) and its database in a file.

``--coflows`` coflows of ``--flows`` flows (random host pairs) are POSTed one by one;
meanwhile ``/health`` is asked every ``--health-ms`` (from a process of its own,
from before the first POST to after the last read) and a reader thread GETs
``/rapier/v1/coflows`` (the default page) and ``/rapier/v1/coflows/<id>`` of the
last coflow POSTed, in turn, every 50 ms.  Once every decision is taken, both GETs
are asked ``--reps`` more times.  Prints p50/p99/max of each (ms), the last POST on
its own, and the flows the rule-apply step handled (``apply_counts``)::

    .venv/bin/python benchmarks/controller_reads.py --coflows 20 --flows 1000 \\
        --scheduler baseline --topology fattree:4

Times are wall-clock on this machine (run it under ``flock -x
/tmp/rapier-timing.lock``).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time

import _common  # noqa: F401 -- puts the repository root on sys.path

from controller_decision_latency import FakeDatapath  # noqa: E402
from enforcement import client  # noqa: E402

MB = 1 << 20


def pct(xs, q):
    """The ``q`` quantile of ``xs`` (nearest rank; 0 for none)."""
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def line(name, xs):
    """One printed row: count, p50, p99 and max in ms."""
    return (f"{name:28s} n={len(xs):4d}  p50 {pct(xs, .5) * 1e3:7.1f} ms  p99 "
            f"{pct(xs, .99) * 1e3:7.1f} ms  max {max(xs, default=0) * 1e3:7.1f} ms")


def make_app(args, db: str):
    """The controller built in-process, fake datapaths on every switch."""
    import rapier_app.controller as controller_pkg
    from rapier_app.controller.settings import Settings

    app = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler=args.scheduler, topology=args.topology, agent_url="", state_db=db))
    app.settle_gc = True  # as RapierController.start() does under ryu-manager
    from rapier_app.controller.stack import hub
    app._spawn = hub.spawn  # ditto (a POST's rules go out after its reply)
    seen = {}
    g = app.core.topology.graph
    for s in app.core.topology.switches:
        dpid = g.nodes[s]["dpid"]
        app.datapaths[dpid] = FakeDatapath(dpid, seen)
    return app


class Poller:
    """A thread GETting ``paths()`` in turn every ``period_s``; keeps (start,
    latency s) per path kind."""

    def __init__(self, base, paths, period_s):
        self.base, self.paths, self.period_s = base, paths, period_s
        self.samples = {}
        self.errors = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            for kind, path in self.paths():
                t = time.perf_counter()
                st, _ = client.request(self.base, "GET", path, timeout=60)
                self.samples.setdefault(kind, []).append((t, time.perf_counter() - t))
                if st != 200:
                    self.errors.append((path, st))
                self.stop.wait(self.period_s)

    def lat(self, kind, t0=0.0, t1=float("inf")):
        return [d for t, d in self.samples.get(kind, []) if t0 <= t <= t1]


def clients(base, args, posted, decided, out) -> None:
    """The clients, in a process of their own (no interpreter lock shared with the
    controller): POSTs one by one, ``/health`` and the reads meanwhile, then the
    reads again once the parent saw every decision taken (``decided``)."""
    rnd = random.Random(args.seed)
    hosts = [f"h{i}" for i in range(1, args.hosts + 1)]
    bodies = []
    for i in range(args.coflows):
        flows = []
        for j in range(args.flows):
            s, d = rnd.sample(hosts, 2)
            flows.append({"src": s, "dst": d, "size_bytes": rnd.randint(1, 100) * MB,
                          "dst_port": 1024 + (i * args.flows + j) % 60000})
        bodies.append({"id": f"c{i}", "flows": flows})
    ids, post_lat, failures = [], [], []
    reads = Poller(base, lambda: [("list", "/rapier/v1/coflows"),
                                  ("one", f"/rapier/v1/coflows/{ids[-1]}")]
                   if ids else [], 0.05)
    t0 = time.perf_counter()
    for body in bodies:
        t = time.perf_counter()
        st, res = client.request(base, "POST", "/rapier/v1/coflows", body, timeout=60)
        post_lat.append(time.perf_counter() - t)
        if st != 201:
            failures.append((body["id"], st, str(res)[:200]))
        ids.append(body["id"])
    t_posted = time.perf_counter()
    posted.set()
    decided.wait(600)
    t_decided = time.perf_counter()
    reads.stop.set()
    reads.thread.join()
    after = {"list": [], "one": []}
    for _ in range(args.reps):
        for kind, path in (("list", "/rapier/v1/coflows"), ("one", f"/rapier/v1/coflows/{ids[-1]}")):
            t = time.perf_counter()
            st, _ = client.request(base, "GET", path, timeout=60)
            after[kind].append(time.perf_counter() - t)
            if st != 200:
                failures.append((path, st))
            time.sleep(0.02)
    t_end = time.perf_counter()
    out.put({"post": post_lat, "posted_s": t_posted - t0, "decided_s": t_decided - t0,
             "list_during": reads.lat("list", t0, t_decided),
             "one_during": reads.lat("one", t0, t_decided),
             "list_after": after["list"], "one_after": after["one"],
             "failures": failures + reads.errors})


def health_checker(base, period_s, done, out) -> None:
    """``/health`` every ``period_s`` from a process of its own (as a monitoring
    agent asks it: no interpreter lock shared with the clients, which encode
    0.1 MB bodies and decode 0.4 MB replies) until ``done`` is set."""
    health = Poller(base, lambda: [("health", "/rapier/v1/health")], period_s)
    done.wait(900)
    health.stop.set()
    health.thread.join()
    out.put({"health": health.lat("health"), "failures": health.errors})


def main(argv=None) -> int:
    """Run the measurement; returns 0, or 1 when a request failed."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coflows", type=int, default=20)
    ap.add_argument("--flows", type=int, default=1000, help="flows per coflow")
    ap.add_argument("--scheduler", default="baseline")
    ap.add_argument("--topology", default="fattree:4")
    ap.add_argument("--health-ms", type=float, default=15.0, help="/health period (ms)")
    ap.add_argument("--reps", type=int, default=20, help="GETs of each kind at the end")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", action="store_true",
                    help="profile the controller's thread (cProfile) and print its top 15")
    args = ap.parse_args(argv)

    import multiprocessing

    from rapier_app.controller.inprocess import GreenServer

    tmp = tempfile.mkdtemp(prefix="rapier-reads-")
    app = make_app(args, os.path.join(tmp, "db.sqlite3"))
    core = app.core
    args.hosts = len(core.topology.hosts)
    assert sorted(core.topology.hosts) == sorted(f"h{i}" for i in range(1, args.hosts + 1))
    ctx = multiprocessing.get_context("spawn")
    posted, decided, out = ctx.Event(), ctx.Event(), ctx.Queue()
    finished, health_out = ctx.Event(), ctx.Queue()
    prof = None
    with GreenServer(app) as srv:
        if args.profile:
            import cProfile
            prof = cProfile.Profile()
            srv.profile(prof)
        checker = ctx.Process(target=health_checker, args=(srv.url, args.health_ms / 1e3,
                                                           finished, health_out))
        checker.start()
        proc = ctx.Process(target=clients, args=(srv.url, args, posted, decided, out))
        proc.start()
        posted.wait(600)
        while core.deciding or core.wants_decision() or app.worker.backlog():
            time.sleep(0.02)  # every decision taken (read in-process: no request)
        decided.set()
        res = out.get(timeout=600)
        proc.join(60)
        finished.set()
        hres = health_out.get(timeout=60)
        res["health"] = hres["health"]
        res["failures"] = res["failures"] + hres["failures"]
        checker.join(60)
        if prof is not None:
            srv.profile(None)
    failures = res["failures"]
    print(f"{args.coflows} coflows x {args.flows} flows on {args.topology} "
          f"({args.scheduler}), fake switches, database file, clients in another process: "
          f"POSTed in {res['posted_s']:.1f} s, decided {res['decided_s']:.1f} s after the "
          f"first POST; {len(core.desired)} rules; failures {len(failures)}")
    print(line("POST", res["post"]))
    print(f"{'last POST':28s} {res['post'][-1] * 1e3:7.1f} ms")
    print(line("GET /coflows while POSTing", res["list_during"]))
    print(line("GET /coflows/<id> while POSTing", res["one_during"]))
    print(line("GET /coflows at the end", res["list_after"]))
    print(line("GET /coflows/<id> at the end", res["one_after"]))
    print(line("/health throughout", res["health"]))
    print(f"decisions {app.worker.decisions}, largest batch {app.worker.largest_batch}; "
          f"apply step: {core.apply_counts}")
    if prof is not None:
        import pstats
        pstats.Stats(prof).sort_stats("cumulative").print_stats(15)
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    for f in failures[:5]:
        print("failed:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    os._exit(rc)
