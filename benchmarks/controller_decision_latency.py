"""Decision latency of the controller under load: in-process app, fake switches.

The Ryu app (:class:`rapier_app.controller.app.RapierController`) is built in this
process with fake datapaths on every switch of the fabric (they record the time each
flow mod is handed to them; no default forwarding is installed, no barrier is
answered) and its decision worker runs in a thread, the scheduler call in it, as
``tpool`` runs it under ``ryu-manager``; REST calls go through the app's WSGI
routes.  ``/health`` is asked every 20 ms throughout.

``--mode arrivals`` (default): ``--live`` coflows of ``--width`` flows are decided
first, then ``--arrivals`` more come at ``--rate`` per second.  Decision latency of
an arrival: from its POST to the first flow mod of its flows handed to a switch
(``rules``: the POST admits it on its ECMP paths at leftover rates,
``rapier_app/controller/admission.py``), and to the decision that placed it by
Algorithm 1 (``placed``; decisions cut by ``decision_budget_s`` spread a pass over
several slices)::

    .venv/bin/python benchmarks/controller_decision_latency.py --topology fattree:16 \\
        --live 100 --width 128 --arrivals 50 --rate 10 [--budget 0.1] \\
        [--scheduler-params lp=fast]

``--mode burst``: ``--clients`` threads POST ``--coflows`` single-flow coflows in
all as fast as they can (every fourth POST of a client is followed by the DELETE of
its previous coflow, as ``controller_concurrent_rules.py`` does on Mininet); prints
POST and DELETE latency, and once the burst is decided the coflows left on default
forwarding (``decision`` ``fallback`` or still ``queued``: must be 0)::

    .venv/bin/python benchmarks/controller_decision_latency.py --mode burst \\
        --topology fattree:4 --clients 4 --coflows 1000

Times are wall-clock seconds on this machine (run it under
``flock -x /tmp/rapier-timing.lock``).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import statistics
import sys
import threading
import time
from typing import Dict, List

import _common  # noqa: F401 -- puts the repository root on sys.path

from rapier_app.controller.stack import ofproto_v1_3 as ofp  # noqa: E402
from rapier_app.controller.stack import ofproto_v1_3_parser as parser  # noqa: E402
from webob import Request  # noqa: E402

import rapier_app.controller as controller_pkg  # noqa: E402
from rapier_app.controller.settings import Settings  # noqa: E402

MB = 1 << 20


class FakeDatapath:
    """A switch that records when each cookie's first flow mod reached it."""

    ofproto = ofp
    ofproto_parser = parser

    def __init__(self, dpid: int, first_seen: Dict[int, float]):
        self.id = dpid
        self.xid = 0
        self.first_seen = first_seen
        self.flow_mods = 0

    def set_xid(self, msg):
        self.xid += 1
        msg.set_xid(self.xid)
        return self.xid

    def send_msg(self, msg):
        if isinstance(msg, parser.OFPFlowMod):
            self.flow_mods += 1
            self.first_seen.setdefault(msg.cookie, time.perf_counter())


def call(app, method, path, body=None):
    """One REST call through the app's WSGI routes: (status, JSON body)."""
    req = Request.blank(path, method=method,
                        body=b"" if body is None else json.dumps(body).encode(),
                        headers={"Content-Type": "application/json"})
    resp = req.get_response(app.wsgi)
    return resp.status_int, json.loads(resp.body)


def pct(xs: List[float], q: float) -> float:
    """The q-quantile of xs (nearest rank; 0 for an empty list)."""
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def build(args):
    """The in-process app with fake datapaths on every switch."""
    settings = Settings(scheduler=args.scheduler, topology=args.topology, agent_url="",
                        state_db="", decision_budget_s=args.budget,
                        scheduler_params=args.scheduler_params)
    app = controller_pkg.RapierController(rapier_settings=settings)
    first_seen: Dict[int, float] = {}
    g = app.core.topology.graph
    for s in app.core.topology.switches:
        dpid = g.nodes[s]["dpid"]
        app.datapaths[dpid] = FakeDatapath(dpid, first_seen)
    return app, first_seen


class Health:
    """A thread asking ``/health`` every ``period_s`` (latencies with their start)."""

    def __init__(self, app, period_s=0.02):
        self.app, self.period_s = app, period_s
        self.samples: List[tuple] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            t = time.perf_counter()
            call(self.app, "GET", "/rapier/v1/health")
            self.samples.append((t, time.perf_counter() - t))
            time.sleep(self.period_s)

    def between(self, t0, t1):
        return [d for t, d in self.samples if t0 <= t <= t1]


def start_worker(app):
    """The decision worker in a thread, deciding as under ryu-manager."""
    app.worker.queue, app.worker.empty_exc = queue.Queue(), queue.Empty  # OS threads
    app.worker.running = True
    app._offload = None  # the worker thread is the native thread here
    app.settle_gc = True  # as RapierController.start() does under ryu-manager
    app._start_loop()
    threading.Thread(target=app.worker.loop, daemon=True).start()


def coflow_body(cid, width, hosts, rnd, port0):
    flows = []
    for j in range(width):
        s, d = rnd.sample(hosts, 2)
        flows.append({"src": s, "dst": d, "size_bytes": rnd.randint(1, 100) * MB,
                      "dst_port": 1024 + (port0 + j) % 60000})
    return {"id": cid, "flows": flows}


def arrivals(args) -> int:
    rnd = random.Random(args.seed)
    app, first_seen = build(args)
    core = app.core
    hosts = list(core.topology.hosts)
    t = time.perf_counter()
    budget = core.settings.decision_budget_s
    core.settings.decision_budget_s = 1e9  # the live coflows: one full decision
    for i in range(args.live):  # accepted, decided together below
        body = coflow_body(f"live{i}", args.width, hosts, rnd, i * args.width)
        core.submit(json.dumps(body).encode(), app.now(), schedule=False)
    setup_post_s = time.perf_counter() - t
    app.core.wall_clock = time.perf_counter
    t = time.perf_counter()
    while core.wants_decision():
        app._decide_batch([])
    setup_s = time.perf_counter() - t
    core.settings.decision_budget_s = budget
    print(f"{args.live} live coflows of {args.width} flows on {args.topology} "
          f"({args.scheduler}{', ' + args.scheduler_params if args.scheduler_params else ''}"
          f"): POSTed in {setup_post_s:.1f} s, first decision "
          f"{setup_s:.1f} s, {len(core.desired)} rules")
    placed: Dict[str, float] = {}
    end = core.end_decision
    cuts = []

    def spy(job, now):
        acts = end(job, now)
        tt = time.perf_counter()
        deferred = job.sched.info.get("deferred", []) if job.sched else []
        cuts.append((len(job.planned), len(deferred), job.solve_s))
        for c in job.active:
            if core.decision.get(c.coflow_id) == "scheduled":
                placed.setdefault(c.coflow_id, tt)
        return acts

    core.end_decision = spy
    mods0 = sum(dp.flow_mods for dp in app.datapaths.values())
    start_worker(app)
    health = Health(app)
    posted: Dict[str, float] = {}
    post_lat = []
    t0 = time.perf_counter()
    base = args.live * args.width
    for i in range(args.arrivals):
        due = t0 + i / args.rate
        time.sleep(max(0.0, due - time.perf_counter()))
        cid = f"new{i}"
        body = coflow_body(cid, args.width, hosts, rnd, base + i * args.width)
        ts = time.perf_counter()
        st, out = call(app, "POST", "/rapier/v1/coflows", body)
        post_lat.append(time.perf_counter() - ts)
        assert st == 201, out
        posted[cid] = ts
    deadline = time.perf_counter() + args.timeout
    while time.perf_counter() < deadline and (core.wants_decision() or core.deciding or
                                              len(placed) < len(posted) + args.live):
        time.sleep(0.05)
    t1 = time.perf_counter()
    time.sleep(1.0)  # the last decision's rules are still being handed to the switches
    health.stop.set()
    rules_lat, placed_lat = [], []
    for cid, ts in posted.items():
        cookies = [core.tracks[f.flow_id].cookie for f in core.coflows[cid].flows]
        seen = [first_seen[ck] for ck in cookies if ck in first_seen]
        if seen:
            rules_lat.append(min(seen) - ts)
        if cid in placed:
            placed_lat.append(placed[cid] - ts)
    hl = health.between(t0, t1)
    left = [cid for cid in posted if core.decision.get(cid) != "scheduled"]
    print(f"{args.arrivals} arrivals at {args.rate:g}/s, decision_budget_s {budget:g}: "
          f"{len(cuts)} decisions ({sum(1 for _, d, _ in cuts if d)} cut by the budget), "
          f"budget_exceeded {core.budget_exceeded}")
    print(f"decision latency, POST -> rules handed to the switches: p50 "
          f"{pct(rules_lat, .5):.3f} s  p99 {pct(rules_lat, .99):.3f} s  "
          f"({len(rules_lat)} coflows)")
    print(f"decision latency, POST -> placed by Algorithm 1:       p50 "
          f"{pct(placed_lat, .5):.3f} s  p99 {pct(placed_lat, .99):.3f} s  "
          f"({len(placed_lat)} coflows)")
    print(f"scheduler call per decision: p50 {pct([s for *_, s in cuts], .5):.3f} s  "
          f"max {max([s for *_, s in cuts], default=0):.3f} s")
    print(f"POST p50 {pct(post_lat, .5):.4f} s  p99 {pct(post_lat, .99):.4f} s")
    print(f"/health during the arrivals: p50 {pct(hl, .5):.4f} s  p99 {pct(hl, .99):.4f} s  "
          f"max {max(hl, default=0):.4f} s ({len(hl)} requests)")
    mods = sum(dp.flow_mods for dp in app.datapaths.values()) - mods0
    print(f"flow mods handed to the switches from the first arrival on: {mods}")
    print(f"not placed at the end: {len(left)}")
    return 1 if left else 0


def burst(args) -> int:
    app, first_seen = build(args)
    core = app.core
    hosts = list(core.topology.hosts)
    start_worker(app)
    health = Health(app)
    per = args.coflows // args.clients
    post_lat, del_lat, errors = [], [], []

    def client(k):
        rnd = random.Random(args.seed + k)
        for i in range(per):
            s, d = rnd.sample(hosts, 2)
            body = {"id": f"k{k}-{i}", "flows": [{"src": s, "dst": d, "size_bytes": 10 ** 9,
                                                  "dst_port": 20000 + 1000 * k + i}]}
            t = time.perf_counter()
            st, out = call(app, "POST", "/rapier/v1/coflows", body)
            post_lat.append(time.perf_counter() - t)
            if st != 201:
                errors.append((st, out))
            if i % 4 == 3:
                t = time.perf_counter()
                st, out = call(app, "DELETE", f"/rapier/v1/coflows/k{k}-{i - 1}")
                del_lat.append(time.perf_counter() - t)
                if st != 200:
                    errors.append((st, out))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t_posted = time.perf_counter() - t0
    deadline = time.perf_counter() + args.timeout
    while time.perf_counter() < deadline and (core.wants_decision() or core.deciding
                                              or app.worker.backlog()):
        time.sleep(0.05)
    t1 = time.perf_counter()
    health.stop.set()
    active = [c.coflow_id for c in core.active()]
    left = [cid for cid in active if core.decision.get(cid) in ("fallback", "queued")]
    hl = health.between(t0, t1)
    st = app.worker.stats()
    print(f"burst: {args.clients} clients, {per * args.clients} coflows on {args.topology} "
          f"({args.scheduler}), decision_budget_s {core.settings.decision_budget_s:g}: "
          f"posted in {t_posted:.1f} s, decided {t1 - t0:.1f} s after the first POST; "
          f"errors {len(errors)}")
    print(f"decisions {st['decisions']}, largest batch {st['largest_batch']}, "
          f"budget_exceeded {core.budget_exceeded}")
    print(f"POST   p50 {pct(post_lat, .5):.4f} s  p99 {pct(post_lat, .99):.4f} s  "
          f"max {max(post_lat):.4f} s")
    print(f"DELETE p50 {pct(del_lat, .5):.4f} s  p99 {pct(del_lat, .99):.4f} s  "
          f"max {max(del_lat, default=0):.4f} s ({len(del_lat)})")
    print(f"/health p50 {pct(hl, .5):.4f} s  p99 {pct(hl, .99):.4f} s  "
          f"max {max(hl, default=0):.4f} s ({len(hl)} requests)")
    print(f"active coflows {len(active)}, left on default forwarding: {len(left)}")
    return 1 if left or errors else 0


def main(argv=None) -> int:
    """Run the measurement; returns 0, or 1 when a coflow was left undecided."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("arrivals", "burst"), default="arrivals")
    ap.add_argument("--topology", default=None,
                    help="fattree:16 (arrivals) or fattree:4 (burst) by default")
    ap.add_argument("--scheduler", default="rapier")
    ap.add_argument("--budget", type=float, default=2.0, help="decision_budget_s (s)")
    ap.add_argument("--scheduler-params", default="",
                    help="the controller's scheduler_params, e.g. lp=fast (default: none)")
    ap.add_argument("--live", type=int, default=100)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--arrivals", type=int, default=50)
    ap.add_argument("--rate", type=float, default=10.0, help="arrivals per second")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--coflows", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds to wait for the last decisions")
    args = ap.parse_args(argv)
    if args.topology is None:
        args.topology = "fattree:16" if args.mode == "arrivals" else "fattree:4"
    return arrivals(args) if args.mode == "arrivals" else burst(args)


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    os._exit(rc)  # the worker thread may be inside the solver: do not wait for it
