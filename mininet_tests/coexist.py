"""Coexistence on the emulated testbed: coflows beside an unregistered TCP flow.

One run (:func:`run_coexistence`): the scaled Table II testbed scenario
(``leafspine:3,3,3``, 10 Mbit/s links, ``rapier``) while an ``iperf3`` TCP flow
``h1 -> h6`` paced at ``paced_mbps`` (``iperf3 -b``) crosses the coflows' links
(h1's uplink carries coflow 1's flow ``h1 -> h4``, h6's downlink coflows 2 and
3's flows into h6).  The controller knows nothing of the iperf3 flow; with the
site broker on it measures it from port counters and schedules the coflows on what
is left (:mod:`rapier_app.controller.coexist`).  A small coflow (below
``small_coflow_bytes``) arrives with the others and must go by default forwarding
at once.

Measured: the iperf3 flow's delivered rate (its receiver's 0.5 s intervals) while
the coflows run against its rate before they arrive; the coflows' emulated CCTs;
and the simulator's CCTs for the same workload told the same background (the
broker's predictions per link when the coflows arrive, in payload terms, as a
constant :class:`~rapier_app.sim.background.BackgroundLoad`; the broker has had its
readings before the coflows arrive, as in the emulation).

Run as root under the Mininet lock::

    flock /tmp/rapier-mininet.lock python -m mininet_tests.coexist [--no-broker]

Units: bit/s, bytes, seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Dict, List, Optional

from enforcement import client
from .runner import REST_PREFIX, Emulation, EmulationError, stop_pid
from .workloads import DEFAULT_HEADROOM, HEADER_GOODPUT, controller_named, sim_topology

#: the scaled testbed's sizes (Table II x this): CCTs of 1.5-6 s alone
SCALE = 1.0 / 3200
LINK_MBPS = 10.0
IPERF_PORT = 5999
#: below this many bytes a coflow is background (the run's controller option)
SMALL_BYTES = 20_000
#: seconds the iperf3 flow runs before the coflows arrive (broker readings)
LEAD_S = 8.0
#: the simulator's hand-off model of the emulated controller (docs/emulation.md)
HANDOFF_S = 0.15


def workload(scale: float = SCALE) -> list:
    """The scaled testbed coflows (controller flow ids) plus ``small``: one 5,000-byte
    flow ``h2 -> h4`` arriving with them (below :data:`SMALL_BYTES`)."""
    from rapier_app.core.model import make_coflow
    from rapier_app.core.workload import testbed_workload

    cfs = controller_named(testbed_workload(scale))
    small = make_coflow("small", 0.0, [("h2", "h4", 5000.0)], dst_ports=[5100])
    return cfs + controller_named([small])


def simulate_with_background(coflows, predictions: Dict[str, float], plan_bps: float,
                             goodput: float = HEADER_GOODPUT, lead_s: float = 3.0,
                             handoff_delay_s: float = 0.0) -> List[float]:
    """CCTs (s, coflow order) of ``coflows`` under ``rapier`` in the simulator with
    the background ``predictions`` (``"u-v" -> bit/s`` on the wire) on those links,
    times ``goodput`` (the simulator's links carry payload: capacity ``plan_bps x
    goodput``).  Arrivals are shifted by ``lead_s`` so that the broker has its
    readings first.  ``handoff_delay_s`` > 0: rate raises take effect that long
    after their decision (:mod:`rapier_app.sim.handoff`, the project's model of
    the emulated controller's hand-off, 0.15 s)."""
    from rapier_app.core.broker import BrokerSettings
    from rapier_app.core.model import CoflowSpec
    from rapier_app.scheduling import load_all, make_scheduler
    from rapier_app.sim import simulate
    from rapier_app.sim.background import BackgroundLoad, BackgroundNetwork

    load_all()
    topo = sim_topology("leafspine:3,3,3", plan_bps, goodput)
    changes = []
    for name, bps in predictions.items():
        u, v = name.split("-")
        changes.append((0.0, topo.link_ids[(u, v)], bps * goodput))
    load = BackgroundLoad.from_changes(topo, changes)
    sched = make_scheduler("rapier", topo)
    if handoff_delay_s > 0:
        from rapier_app.sim.handoff import HandoffDelay

        sched = HandoffDelay(sched, handoff_delay_s)
    net = BackgroundNetwork(sched, topo, load, BrokerSettings(period_s=1.0, weight=0.5))
    shifted = [CoflowSpec(c.coflow_id, c.arrival_s + lead_s, c.flows, c.weight)
               for c in coflows]
    res = simulate(topo, shifted, net)
    by = {r.coflow_id: r.cct_s for r in res.coflows}
    return [float(by[c.coflow_id]) for c in coflows]


def _iperf_rates(path: str, t_start_unix: float) -> List[tuple]:
    """``(start_unix_s, end_unix_s, bits_per_second)`` per receiver interval of an
    ``iperf3 -s -J`` output file, anchored at ``t_start_unix``."""
    with open(path) as fh:
        obj = json.load(fh)
    out = []
    for iv in obj.get("intervals", []):
        s = iv["sum"]
        out.append((t_start_unix + s["start"], t_start_unix + s["end"],
                    float(s["bits_per_second"])))
    return out


def _mean_rate(ivs: List[tuple], a: float, b: float) -> float:
    """Mean bit/s over the intervals that lie within [a, b] (unix seconds)."""
    sel = [(e - s, r) for s, e, r in ivs if s >= a - 1e-3 and e <= b + 1e-3]
    dur = sum(d for d, _ in sel)
    return sum(d * r for d, r in sel) / dur if dur > 0 else float("nan")


def run_coexistence(broker: bool = True, paced_mbps: float = 3.0, scale: float = SCALE,
                    timeout_s: float = 120.0, workdir: Optional[str] = None) -> dict:
    """One emulated run (module docstring).

    Returns:
        ``{"broker", "paced_bps", "iperf_alone_bps", "iperf_during_bps",
        "coflow_ids", "ccts_s", "decisions", "sim_ccts_s", "sim_bg_ccts_s",
        "sim_bg_handoff_ccts_s", "predictions_bps", "small_decided_s", "small_cct_s",
        "workdir"}``: iperf3's
        delivered rate before the coflows and while they run; per coflow (``small``
        last) its emulated CCT and decision; the simulator's CCTs of the scheduled
        coflows alone (``sim_ccts_s``) and told the broker's background
        (``sim_bg_ccts_s``; ``sim_bg_handoff_ccts_s`` with the 0.15 s hand-off
        model); the broker's predictions (wire bit/s) on the links above
        0.5 Mbit/s when the coflows arrived.

    Raises:
        EmulationError: a component failed or a flow did not finish.
    """
    from .workloads import simulate

    plan_bps = LINK_MBPS * 1e6 * DEFAULT_HEADROOM
    opts: Dict[str, object] = {"link_bps": plan_bps, "stats_interval_s": 0.1,
                               "stats_completion": "false",
                               "broker": "true" if broker else "false",
                               "broker_period_s": 1.0, "small_coflow_bytes": SMALL_BYTES}
    cfs = workload(scale)
    em = Emulation("leafspine:3,3,3", scheduler="rapier", bw_mbps=LINK_MBPS, enforce=True,
                   workdir=workdir, controller_opts=opts)
    with em:
        g = em.definition.graph
        srv_out = os.path.join(em.workdir, "iperf3-server.json")
        total_s = LEAD_S + 60.0
        with open(srv_out, "w") as fh:
            srv = em.net["h6"].popen(["iperf3", "-s", "-1", "-J", "-i", "0.5", "-p",
                                      str(IPERF_PORT)], stdout=fh, stderr=subprocess.DEVNULL)
        em.transfers.append(srv)
        time.sleep(0.5)
        t_iperf = time.time()
        cli = em.net["h1"].popen(["iperf3", "-c", g.nodes["h6"]["ip"], "-p", str(IPERF_PORT),
                                  "-b", f"{paced_mbps}M", "-t", str(int(total_s)), "-i", "0.5"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        em.transfers.append(cli)
        time.sleep(LEAD_S)
        st, view = client.request(em.rest, "GET", REST_PREFIX + "/schedule", timeout=10)
        b = view.get("broker", {}) if st == 200 else {}
        preds = {d["link"]: d["prediction_bps"] for d in b.get("links", [])
                 if d["prediction_bps"] > 0.5e6}
        trace: List[dict] = []
        seen = [0.0]

        def monitor(elapsed: float) -> None:
            # the broker's view once a second while the coflows run (broker.json)
            if elapsed - seen[0] < 1.0:
                return
            seen[0] = elapsed
            st, v = client.request(em.rest, "GET", REST_PREFIX + "/schedule", timeout=5)
            if st == 200 and v.get("broker", {}).get("links"):
                trace.append({"t_s": elapsed, "version": v["broker"]["version"],
                              "links": {d["link"]: [d["sample_bps"], d["prediction_bps"],
                                                    d["in_force_bps"]]
                                        for d in v["broker"]["links"]
                                        if d["in_force_bps"] < d["capacity_bps"]}})

        res = em.run_coflows(cfs, timeout_s=timeout_s, monitor=monitor)
        with open(os.path.join(em.workdir, "broker.json"), "w") as fh:
            json.dump(trace, fh)
        t_end = time.time()
        stop_pid(cli, "iperf3 client")
        stop_pid(srv, "iperf3 server", timeout_s=10.0)
        decisions = [(c.controller or {}).get("decision") for c in res.coflows]
    ivs = _iperf_rates(srv_out, t_iperf)
    t0 = res.t0_unix_s
    finish = [t0 + c.finish_s for c in res.coflows if c.coflow_id != "small"]
    alone = _mean_rate(ivs, t_iperf + 1.0, t0)
    during = _mean_rate(ivs, t0, max(finish))
    big = [c for c in cfs if c.coflow_id != "small"]
    sim_alone = [float(x) for x in simulate("leafspine:3,3,3", big, "rapier", plan_bps,
                                            HEADER_GOODPUT).ccts]
    ids = [c.coflow_id for c in res.coflows]
    small = res.coflows[ids.index("small")]
    return {"broker": broker, "paced_bps": paced_mbps * 1e6, "iperf_alone_bps": alone,
            "iperf_during_bps": during, "coflow_ids": ids, "ccts_s": res.ccts,
            "decisions": decisions, "sim_ccts_s": sim_alone,
            "sim_bg_ccts_s": simulate_with_background(big, preds, plan_bps),
            "sim_bg_handoff_ccts_s": simulate_with_background(big, preds, plan_bps,
                                                              handoff_delay_s=HANDOFF_S),
            "predictions_bps": preds,
            "small_decided_s": (None if small.decided_s is None
                                else small.decided_s - small.arrival_s),
            "small_cct_s": small.cct_s, "workdir": em.workdir, "wall_s": t_end - t_iperf}


def main(argv=None) -> int:
    """``python -m mininet_tests.coexist [--no-broker] [--paced-mbps M]``: one run,
    its result as JSON on stdout."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--no-broker", action="store_true", help="controller broker = false")
    p.add_argument("--paced-mbps", type=float, default=3.0, help="iperf3 -b (Mbit/s)")
    args = p.parse_args(argv)
    try:
        out = run_coexistence(broker=not args.no_broker, paced_mbps=args.paced_mbps)
    except EmulationError as exc:
        print(f"coexist: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
