"""The cost of one ``GET /metrics`` as the controller holds more coflows.

The in-process controller (the Ryu app built in this process, its WSGI router called
directly, as the controller tests do) with a fake switch for every switch of the
topology, each answering its barriers, so that rules are installed and the scrape
reports them.  Coflows are submitted in steps (single-flow coflows between random
hosts, 100 MB each, never finishing); after each step ``GET /metrics`` is timed
``--scrapes`` times.  This is the scrape's own cost: in ``ryu-manager`` a scrape
also waits for whatever holds the hub (a decision in progress), which
``benchmarks/controller_post_latency.py --scrape-every 1`` measures.

Usage::

    .venv/bin/python benchmarks/metrics_scrape.py --topology fattree:4 --coflows 1000
    .venv/bin/python benchmarks/metrics_scrape.py --topology fattree:8 --coflows 1000

Prints, per step: coflows, flows, rules installed, the exposition's size and samples,
and the scrape time p50 / p99 / max (ms).  ``--scheduler`` defaults to ``baseline``
(fast decisions, so the steps are quick; the scrape's cost depends on the coflows,
flows, rules and links held, not on the scheduler).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from types import SimpleNamespace

import _common  # noqa: F401 -- puts the repository on sys.path

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from rapier_app.controller.stack import ofproto_v1_3, ofproto_v1_3_parser  # noqa: E402
from webob import Request  # noqa: E402

import rapier_app.controller as controller_pkg  # noqa: E402
from rapier_app.controller.settings import Settings  # noqa: E402


class BarrierSwitch:
    """A Ryu datapath stand-in that drops every message but remembers the barrier
    requests' xids, answered by :meth:`answer` (as a switch would, later)."""

    ofproto = ofproto_v1_3
    ofproto_parser = ofproto_v1_3_parser

    def __init__(self, dpid: int):
        self.id = dpid
        self.xid = 0
        self.barriers = []

    def set_xid(self, msg):
        self.xid += 1
        msg.set_xid(self.xid)
        return self.xid

    def send_msg(self, msg):
        if msg.xid is None:
            self.set_xid(msg)
        if isinstance(msg, ofproto_v1_3_parser.OFPBarrierRequest):
            self.barriers.append(msg.xid)

    def answer(self, app) -> None:
        """Send the app a barrier reply for every barrier request so far."""
        xids, self.barriers = self.barriers, []
        for xid in xids:
            app.barrier_reply(SimpleNamespace(msg=SimpleNamespace(datapath=self, xid=xid)))


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main(argv=None) -> int:
    """Run the measurement; prints one line per step (and JSON with ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default="fattree:4")
    ap.add_argument("--scheduler", default="baseline")
    ap.add_argument("--coflows", type=int, default=1000, help="coflows at the last step")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--scrapes", type=int, default=50, help="scrapes timed per step")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    app = controller_pkg.RapierController(rapier_settings=Settings(
        scheduler=args.scheduler, topology=args.topology, agent_url="", state_db=":memory:"))
    topo = app.core.topology
    switches = []
    for s in topo.switches:
        dp = BarrierSwitch(topo.graph.nodes[s]["dpid"])
        app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
        switches.append(dp)
    hosts = list(topo.hosts)
    rnd = random.Random(1)
    rows, n = [], 0
    for step in range(1, args.steps + 1):
        target = args.coflows * step // args.steps
        while n < target:
            s, d = rnd.sample(hosts, 2)
            body = {"id": f"m{n}", "flows": [{"src": s, "dst": d, "size_bytes": 100 << 20,
                                               "dst_port": 10000 + n}]}
            resp = Request.blank("/rapier/v1/coflows", method="POST",
                                 body=json.dumps(body).encode()).get_response(app.wsgi)
            if resp.status_int != 201:
                print(f"POST {body['id']}: {resp.status_int} {resp.body[:200]!r}",
                      file=sys.stderr)
                return 1
            n += 1
            for dp in switches:
                dp.answer(app)
        lat = []
        for _ in range(args.scrapes):
            t = time.perf_counter()
            resp = Request.blank("/metrics").get_response(app.wsgi)
            lat.append(time.perf_counter() - t)
            assert resp.status_int == 200
        fams = list(text_string_to_metric_families(resp.body.decode()))
        m = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in fams for s in f.samples}
        row = {"coflows": n, "flows": int(m[("rapier_flows", (("state", "active"),))]),
               "rules_installed": int(m[("rapier_rules_installed", ())]),
               "rules_pending": int(m[("rapier_rules_pending", ())]),
               "bytes": len(resp.body), "samples": sum(len(f.samples) for f in fams),
               "p50_ms": 1e3 * statistics.median(lat), "p99_ms": 1e3 * _pct(lat, .99),
               "max_ms": 1e3 * max(lat)}
        rows.append(row)
        print(f"{args.topology} ({len(topo.switches)} switches, {len(topo.links)} directed "
              f"links), {row['coflows']} coflows / {row['flows']} flows, "
              f"{row['rules_installed']} rules installed ({row['rules_pending']} pending): "
              f"{row['bytes']} bytes, {row['samples']} samples; scrape p50 "
              f"{row['p50_ms']:.1f} ms  p99 {row['p99_ms']:.1f} ms  max {row['max_ms']:.1f} ms")
    if args.json:
        print(json.dumps({"topology": args.topology, "scheduler": args.scheduler,
                          "steps": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
