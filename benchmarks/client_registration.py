"""Registration latency of the Python client: the client call to its 201.

The controller is built in-process and served over real HTTP on loopback the way
``ryu-manager`` serves it (:class:`rapier_app.controller.inprocess.GreenServer`:
``eventlet.wsgi`` with the controller's settings and the decision worker deciding
after each reply); its database is a file (as ``ryu-manager``'s), no switches are
connected.  The client (``client/``, :mod:`rapier_client`) registers ``--coflows``
coflows one after the other, as an application would: open the coflow
(``POST /coflows`` open), add ``--flows`` flows to it one by one (``POST
/coflows/<id>/flows``, the call ``Coflow.connect`` and ``Coflow.register_socket`` make),
report each flow done, close it.

Usage::

    .venv/bin/python benchmarks/client_registration.py --coflows 50 --flows 8 \\
        --scheduler rapier --topology fattree:4

Prints p50/p90/p99/max (ms) of each call kind and the decision worker's counters.
``--state-db :memory:`` takes the database's disk writes out (each accepted call
commits with ``synchronous=FULL``: one fsync per call).
``--unknown-sizes`` leaves ``size_bytes`` out; ``--gap-ms`` pauses between calls;
``--profile`` prints the controller thread's ten most expensive functions.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

import _common  # noqa: F401  -- puts the repository root on sys.path

ROOT = _common.ROOT
sys.path.insert(0, os.path.join(ROOT, "client"))

from rapier_app.workload_options import add_workload_options  # noqa: E402


def pct(xs, q):
    """The ``q`` quantile of ``xs`` (nearest rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def make_app(scheduler: str, topology: str, state_db: str):
    """The controller built in-process as ``ryu-manager`` would build it."""
    import rapier_app.controller as controller_pkg
    from rapier_app.controller.settings import Settings

    app = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler=scheduler, topology=topology, agent_url="", state_db=state_db))
    return app


def main(argv=None) -> int:
    """Run the measurement; returns 0, or 1 when a call failed."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coflows", type=int, default=50)
    ap.add_argument("--flows", type=int, default=8, help="flows per coflow (default 8)")
    add_workload_options(ap, "topology", topology=dict(default="fattree:4"))
    ap.add_argument("--scheduler", default="rapier")
    ap.add_argument("--unknown-sizes", action="store_true", help="no size_bytes")
    ap.add_argument("--gap-ms", type=float, default=0.0, help="pause between calls (ms)")
    ap.add_argument("--state-db", default="file",
                    help="'file' (default: a file in a temporary folder, as ryu-manager "
                         "keeps one) or ':memory:' (no disk writes)")
    ap.add_argument("--profile", action="store_true",
                    help="profile the controller's thread (cProfile) and print its top 10")
    args = ap.parse_args(argv)

    from rapier_app.controller.inprocess import GreenServer
    from rapier_client import Controller

    tmp = tempfile.mkdtemp(prefix="rapier-clientlat-")
    db = os.path.join(tmp, "db.sqlite3") if args.state_db == "file" else args.state_db
    app = make_app(args.scheduler, args.topology, db)
    hosts = sorted(app.core.topology.hosts)
    rnd = random.Random(1)
    lat = {"open": [], "add": [], "done": [], "close": []}
    prof = None
    with GreenServer(app) as srv:
        ctl = Controller(srv.url, timeout=30, total_timeout=60, retries=0)
        ctl.request("GET", "/health")  # connect once (keep-alive), as an application would
        if args.profile:
            import cProfile
            prof = cProfile.Profile()
            srv.profile(prof)

        def timed(kind, fn, *a, **k):
            t = time.perf_counter()
            out = fn(*a, **k)
            lat[kind].append(time.perf_counter() - t)
            if args.gap_ms:
                time.sleep(args.gap_ms / 1e3)
            return out

        t0 = time.perf_counter()
        port = 20000
        for i in range(args.coflows):
            cf = ctl.coflow(name=f"bench {i}")
            timed("open", cf.open)
            flows = []
            for _ in range(args.flows):
                s, d = rnd.sample(hosts, 2)
                port += 1
                size = None if args.unknown_sizes else rnd.randint(1, 100) << 20
                flows.append(timed("add", cf.add_flow, s, d, src_port=port, dst_port=7000,
                                   size_bytes=size))
            for f in flows:
                timed("done", cf.done, f)
            timed("close", cf.close)
        wall = time.perf_counter() - t0
        sched = ctl.request("GET", "/schedule")
        if prof is not None:
            srv.profile(None)
    unregistered = ctl.policy.unshaped
    print(f"{args.coflows} coflows x {args.flows} flows on {args.topology} ({args.scheduler}"
          f"{', unknown sizes' if args.unknown_sizes else ''}, state_db {args.state_db}): "
          f"{wall:.2f} s, "
          f"unregistered {unregistered}")
    for kind, xs in lat.items():
        print(f"{kind:6s} n={len(xs):4d}  p50 {pct(xs, .5) * 1e3:7.2f} ms  p90 "
              f"{pct(xs, .9) * 1e3:7.2f} ms  p99 {pct(xs, .99) * 1e3:7.2f} ms  max "
              f"{max(xs) * 1e3:7.2f} ms")
    print(f"decisions {sched['count']}, budget_exceeded {sched.get('budget_exceeded')}, "
          f"last solve {sched['solve_s'] * 1e3:.1f} ms; worker: {app.worker.decisions} "
          f"decisions, largest batch {app.worker.largest_batch}")
    if prof is not None:
        import pstats
        pstats.Stats(prof).sort_stats("cumulative").print_stats(12)
    return 1 if unregistered else 0


if __name__ == "__main__":
    sys.exit(main())
