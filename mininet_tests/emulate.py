"""``rapier-emulate``: the simulator's workloads in Mininet, beside the simulator.

``rapier-emulate --scenario testbed`` (the default) runs the three coflows of RAPIER
Table II on the 3x3 leaf-spine (9 hosts); ``rapier-emulate --topology SPEC
--synthetic N,WIDTH,INTERARRIVAL_S [--sizes D] [--seed S]`` and ``--topology SPEC
--trace PATH --limit N`` run the simulator's synthetic and trace workloads
(:mod:`mininet_tests.workloads`) on ``fattree:K``, ``vl2:DA,DI,S``,
``leafspine:L,S,H`` or ``file:PATH`` (a topology file, docs/topology.md: Mininet
builds exactly its switches, dpids, ports, IPs, MACs and link speeds).  Each scheduler (``--schedulers``, any registered name; the CLI
refuses, naming it and why, one that cannot drive the controller) runs on a fresh
network with a fresh controller.  Printed per scheduler: emulated and simulated
CCTs (per coflow for up to 4 coflows, else average and p95 with the deviation) and
RAPIER's improvement ``(avg_other - avg_rapier) / avg_other`` (Section V-A).
``--json`` prints one JSON object: for each scheduler ``{"coflows", "avg_cct_s",
"p95_cct_s", "ccts_s", "sim_avg_cct_s", "sim_p95_cct_s", "sim_ccts_s", "wall_s",
...}``; with ``--sim-handoff-delay S`` also ``sim_handoff_avg_cct_s`` (and its p95
and CCTs), the simulator with every rate raise S seconds late
(:mod:`rapier_app.sim.handoff`; not for the unenforced ``baseline``).  ``--out``
(default ``rapier-emu-out``) receives ``summary.json``, ``timelines.json`` (per
flow, every 0.1 s: the controller's rate and the bytes received, and the
simulator's rate and bytes), ``run-<scheduler>.json``, and with ``--plot [COFLOW]``
one ``timeline-<scheduler>-<coflow>.png`` each.

Scaling (these machines run Open vSwitch in userspace on 2 cores): links run at
``--link-mbps`` (default 10 Mbit/s; a topology file's links run at their own
speeds, and ``--link-mbps`` sets its slowest host link, every link scaled in
proportion) and flow sizes are multiplied by ``--scale``
(testbed default 1/1600: every transfer takes 1/16 of its 1 Gbit/s testbed time;
fabric default 0.01: the simulator's times at 1 Gbit/s).  The simulator runs the
same scaled workload on the same fabric with every capacity at the rate the
controller plans with (``--headroom`` x link; the full link for ``baseline``, whose
TCP fills it) times ``--goodput`` (default 1448/1514, the payload share of a full
TCP segment's frame).  Completion: receivers announce their last byte and the run
reports it to the controller at once (controller ``stats_completion = false``);
senders connect before the clock starts; the controller polls flow statistics
every ``--stats-interval`` (0.1 s) for the bytes sent that RAPIER reads at each
arrival.  mininet_tests/README.md measures each of these causes of deviation.

``baseline`` is ECMP without rate limits: its controller has no agent URL (it pushes
no rates) and its agents run with ``--no-enforce``.

Units: bytes, bit/s, seconds.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from rapier_app.workload_options import add_workload_options, apply_goodput, parse_synthetic

from .switchq import DEFAULT_BUCKETS, SwitchQueueError, check_buckets
from .transfer import available_congestion_controls
from .workloads import DEFAULT_HEADROOM, HEADER_GOODPUT, MAX_FLOWS, controller_named

#: Default link speed of the emulation, Mbit/s.
DEFAULT_LINK_MBPS = 10.0
#: Default size scale: 1/1600 of Table II's volumes (with 10 Mbit/s links: 1/16 of the time).
DEFAULT_SCALE = 1.0 / 1600
SCHEDULERS = ("rapier", "routing-only", "baseline")
#: Default schedulers on the fabrics (--synthetic, --trace).
FABRIC_SCHEDULERS = ("rapier", "scheduling-only", "routing-only", "baseline")
#: Default size scale on the fabrics: with 10 Mbit/s links (1/100 of 1 Gbit/s) every
#: transfer takes the time the unscaled workload takes in the simulator at 1 Gbit/s.
DEFAULT_FABRIC_SCALE = 0.01
#: The controller's flow-statistics period in the emulation (its default is 0.5 s).
DEFAULT_STATS_INTERVAL_S = 0.1
#: ``rapier-emulate``'s switch-port queue limit (packets; 120 ms at 10 Mbit/s) and
#: hosts' minimum TCP RTO (ms): with Linux's 1000 packets and 200 ms, ``baseline``
#: (TCP filling tail-drop queues) was +8 to +39 % off the flow model in paired runs,
#: +2 to +16 % with these (mininet_tests/README.md); 0 on the command line keeps
#: Linux's value.
DEFAULT_QUEUE_PACKETS = 100
DEFAULT_RTO_MIN_MS = 20.0
#: ``rapier-emulate``'s TCP congestion control for the senders ("default": the
#: machine's, ``bbr`` here).
DEFAULT_TCP_CC = "default"
#: ``rapier-emulate``'s fair-queueing buckets per switch port (0: one FIFO).
DEFAULT_FAIR_QUEUE = DEFAULT_BUCKETS
LOG = logging.getLogger("rapier-emulate")


def simulate_testbed(scheduler: str, scale: float, link_bps: float,
                     goodput: float = 1.0) -> List[float]:
    """Simulated CCTs (s, coflow order 1..3) of the scaled Table II scenario.

    Same topology (``leaf_spine(3, 3, 3, link_bps)``, capacities x ``goodput``),
    sizes and flow ids (:func:`controller_named`) as the emulated run.

    Raises:
        rapier_app.scheduling.SchedulerError: unknown scheduler.
    """
    from rapier_app.core.workload import testbed_workload
    from rapier_app.scheduling import load_all, make_scheduler
    from rapier_app.sim import simulate
    from topologies import leaf_spine

    load_all()
    topo = apply_goodput(leaf_spine(3, 3, 3, link_bps=link_bps), goodput)
    res = simulate(topo, controller_named(testbed_workload(scale)),
                   make_scheduler(scheduler, topo))
    return [float(x) for x in res.ccts]


def improvement(avg_other: float, avg_rapier: float) -> float:
    """RAPIER's improvement over another scheme: ``(other - rapier) / other`` (fraction)."""
    return (avg_other - avg_rapier) / avg_other


def _summary(ccts: Sequence[float]) -> Tuple[float, float]:
    """(mean, 95th percentile with linear interpolation) of CCTs in seconds."""
    import numpy as np

    a = np.asarray(list(ccts), dtype=float)
    return float(a.mean()), float(np.percentile(a, 95))


def run_workload(scheduler: str, topology: str, coflows: Sequence, link_mbps: float,
                 timeout_s: float, goodput: float = HEADER_GOODPUT,
                 controller_opts: Optional[Dict[str, object]] = None,
                 workdir: Optional[str] = None, report_done: bool = True,
                 extra: Optional[dict] = None, headroom: float = DEFAULT_HEADROOM,
                 stats_interval_s: float = DEFAULT_STATS_INTERVAL_S,
                 queue_packets: Optional[int] = None,
                 rto_min_ms: Optional[float] = None,
                 tsq_bytes: Optional[int] = None,
                 tcp_cc: Optional[str] = None,
                 fair_queue: Optional[int] = None,
                 sim_handoff_delay_s: float = 0.0) -> dict:
    """Emulate ``coflows`` on ``topology`` under one scheduler, and simulate them.

    Args:
        coflows: the scaled workload with controller flow ids and unique dst ports
            (:func:`mininet_tests.workloads.build_workload`, :func:`controller_named`).
        link_mbps: every link's speed (Mbit/s); the simulator runs the same fabric
            with each capacity x ``goodput`` (:func:`mininet_tests.workloads.simulate`).
        report_done: completions reported by the receivers at once, and only by
            them (controller ``stats_completion = false``); False: the controller's
            flow-statistics polling only.
        extra: keys copied into the result (e.g. ``scale``).
        headroom: the controller plans with ``link_bps = headroom * link_mbps``
            (enforcing schedulers), so that the rates it sets leave the shaped link
            a margin and its queue drains; the simulator then runs at that planned
            capacity (x ``goodput``).  ``baseline`` (no limits: TCP fills the shaped
            link) is simulated at the full link speed x ``goodput``.
        stats_interval_s: the controller's flow-statistics period (its view of
            bytes sent, which RAPIER reads at every coflow arrival).
        controller_opts: further controller options (override the two above).
        queue_packets, rto_min_ms, tsq_bytes: the network's switch-port queue limit
            (packets), the hosts' minimum TCP retransmission timeout (ms) and TCP
            small-queues limit (bytes); None: Linux's defaults
            (:class:`mininet_tests.runner.Emulation`).
        tcp_cc: the senders' TCP congestion control (None: the machine's default).
        fair_queue: hashed FIFOs per switch port served round robin (None: one FIFO;
            :class:`mininet_tests.runner.Emulation`).
        sim_handoff_delay_s: > 0: also simulate with every rate raise in force this
            many seconds after its decision (:mod:`rapier_app.sim.handoff`), reported
            as ``sim_handoff_avg_cct_s``, ``sim_handoff_p95_cct_s``,
            ``sim_handoff_ccts_s`` and ``sim_handoff_delay_s``.  Not for ``baseline``
            (no enforcing agents: nothing is handed off; its figures are the plain
            simulator's).

    Returns:
        ``{"coflows", "avg_cct_s", "p95_cct_s", "ccts_s", "sim_avg_cct_s",
        "sim_p95_cct_s", "sim_ccts_s", "coflow_ids", "wall_s", "transfer_wall_s",
        "link_bps", "goodput", "topology", "workdir", "_run", "_sim_timelines"}``;
        ``wall_s`` covers the whole run (network and controller start, transfers,
        teardown).  The ``_`` keys (the raw run and the simulator's per-flow
        timelines) are for the output folder, not the printed JSON.

    Raises:
        mininet_tests.runner.EmulationError: a component failed or a flow did not finish.
    """
    from .runner import Emulation, EmulationError
    from .timelines import simulated_timelines
    from .workloads import simulate

    t0 = time.time()
    enforce = scheduler != "baseline"
    plan_bps = link_mbps * 1e6 * (headroom if enforce else 1.0)
    opts: Dict[str, object] = {"link_bps": plan_bps, "stats_interval_s": stats_interval_s,
                               "stats_completion": "false" if report_done else "true"}
    opts.update(controller_opts or {})
    for attempt in (1, 2):
        em = Emulation(topology, scheduler=scheduler, bw_mbps=link_mbps,
                       enforce=enforce, workdir=workdir, controller_opts=opts,
                       queue_packets=queue_packets, rto_min_ms=rto_min_ms,
                       tsq_bytes=tsq_bytes, tcp_cc=tcp_cc, fair_queue=fair_queue)
        try:
            em.__enter__()
        except EmulationError as exc:  # start-up only: everything was stopped already
            if attempt == 2:
                raise
            LOG.warning("%s: start-up failed (%s); retrying once", scheduler, exc)
            continue
        try:
            res = em.run_coflows(coflows, timeout_s=timeout_s, report_done=report_done)
        finally:
            em.__exit__(None, None, None)
        break
    log: list = []
    sim = simulate(topology, coflows, scheduler, float(opts["link_bps"]), goodput,
                   seed=int(opts.get("seed", 0)), event_log=log)
    sizes = {f.flow_id: f.size_bytes for c in coflows for f in c.flows}
    ccts, sim_ccts = res.ccts, [float(x) for x in sim.ccts]
    avg, p95 = _summary(ccts)
    savg, sp95 = _summary(sim_ccts)
    out = {"coflows": len(ccts), "avg_cct_s": avg, "p95_cct_s": p95, "ccts_s": ccts,
           "sim_avg_cct_s": savg, "sim_p95_cct_s": sp95, "sim_ccts_s": sim_ccts,
           "coflow_ids": [c.coflow_id for c in res.coflows],
           "wall_s": time.time() - t0, "transfer_wall_s": res.wall_s,
           "link_bps": link_mbps * 1e6, "planned_link_bps": float(opts["link_bps"]),
           "goodput": goodput, "topology": topology, "workdir": em.workdir,
           "queue_packets": queue_packets, "rto_min_ms": rto_min_ms, "tsq_bytes": tsq_bytes,
           "tcp_cc": tcp_cc, "fair_queue": fair_queue,
           "decision_delay_s": [c.decided_s - c.arrival_s for c in res.coflows
                                if c.decided_s is not None]}
    if sim_handoff_delay_s > 0:
        # an unenforced run (baseline) has no rates to hand off: TCP takes freed
        # capacity within round trips, so its model is the plain simulation
        hsim = simulate(topology, coflows, scheduler, float(opts["link_bps"]), goodput,
                        seed=int(opts.get("seed", 0)),
                        handoff_delay_s=sim_handoff_delay_s if enforce else 0.0)
        h_ccts = [float(x) for x in hsim.ccts]
        out["sim_handoff_avg_cct_s"], out["sim_handoff_p95_cct_s"] = _summary(h_ccts)
        out["sim_handoff_ccts_s"] = h_ccts
        out["sim_handoff_delay_s"] = sim_handoff_delay_s if enforce else 0.0
    out.update(extra or {})
    out["_run"] = res.to_dict()
    out["_sim_timelines"] = simulated_timelines(log, sizes)
    return out


def run_scheduler(scheduler: str, scale: float, link_mbps: float, timeout_s: float,
                  controller_opts: Optional[Dict[str, object]] = None,
                  workdir: Optional[str] = None, goodput: float = HEADER_GOODPUT,
                  report_done: bool = True, headroom: float = DEFAULT_HEADROOM,
                  **net) -> dict:
    """Emulate the scaled testbed scenario (Table II on ``leafspine:3,3,3``) under one
    scheduler: :func:`run_workload` with ``testbed_workload(scale)`` and the
    controller's flow ids (result also has ``scale``); ``net``: ``queue_packets``,
    ``rto_min_ms``, ``tsq_bytes``, ``tcp_cc``, ``fair_queue`` as :func:`run_workload`."""
    from rapier_app.core.workload import testbed_workload

    return run_workload(scheduler, "leafspine:3,3,3", controller_named(testbed_workload(scale)),
                        link_mbps, timeout_s, goodput, controller_opts, workdir, report_done,
                        extra={"scale": scale}, headroom=headroom, **net)


def add_improvements(results: Dict[str, dict]) -> None:
    """Add to ``results["rapier"]`` RAPIER's improvement over each other scheduler run:
    ``improvement_over`` (emulated) and ``sim_improvement_over`` (simulated), fractions."""
    ra = results.get("rapier")
    if ra is None:
        return
    others = [n for n in results if n != "rapier"]
    ra["improvement_over"] = {n: improvement(results[n]["avg_cct_s"], ra["avg_cct_s"])
                              for n in others}
    ra["sim_improvement_over"] = {n: improvement(results[n]["sim_avg_cct_s"],
                                                 ra["sim_avg_cct_s"]) for n in others}


def format_table(results: Dict[str, dict], title: str = "") -> str:
    """Human-readable table: CCTs emulated / simulated per scheduler, then RAPIER's
    improvements.  Up to 4 coflows: one column per coflow (the testbed's layout);
    more: average and p95 only, with the emulated average's deviation from the
    simulator's in %."""
    lines = []
    any_r = next(iter(results.values()))
    if title:
        lines.append(title)
    else:
        lines.append(f"RAPIER Table II testbed, scaled: sizes x {any_r['scale']:g}, links "
                     f"{any_r['link_bps'] / 1e6:g} Mbit/s (CCTs in seconds; emulated / "
                     f"simulated)")
    n = max(r["coflows"] for r in results.values())
    if n <= 4:
        head = f"{'scheduler':<14}" + "".join(f"{'coflow ' + str(i + 1):>18}" for i in range(n))
        head += f"{'average':>18}{'wall s':>9}"
        lines.append(head)
        for name, r in results.items():
            cells = "".join(f"{e:>9.2f} / {s:<6.2f}" for e, s in zip(r["ccts_s"], r["sim_ccts_s"]))
            lines.append(f"{name:<14}{cells}{r['avg_cct_s']:>9.2f} / {r['sim_avg_cct_s']:<6.2f}"
                         f"{r['wall_s']:>9.1f}")
    else:
        hand = any("sim_handoff_avg_cct_s" in r for r in results.values())
        lines.append(f"{'scheduler':<18}{'coflows':>8}{'average':>18}{'deviation':>10}"
                     f"{'p95':>18}{'wall s':>9}" + (f"{'hand-off sim':>14}{'dev.':>8}"
                                                    if hand else ""))
        for name, r in results.items():
            dev = 100 * (r["avg_cct_s"] - r["sim_avg_cct_s"]) / r["sim_avg_cct_s"]
            line = (f"{name:<18}{r['coflows']:>8}{r['avg_cct_s']:>9.2f} / "
                    f"{r['sim_avg_cct_s']:<6.2f}{dev:>+9.1f}%"
                    f"{r.get('p95_cct_s', float('nan')):>9.2f} / "
                    f"{r.get('sim_p95_cct_s', float('nan')):<6.2f}{r['wall_s']:>9.1f}")
            if "sim_handoff_avg_cct_s" in r:
                h = r["sim_handoff_avg_cct_s"]
                line += f"{h:>14.2f}{100 * (r['avg_cct_s'] - h) / h:>+7.1f}%"
            lines.append(line)
    if "rapier" in results:
        ra = results["rapier"]
        for other in [o for o in results if o != "rapier"]:
            o = results[other]
            lines.append(f"improvement of rapier over {other}: emulated "
                         f"{100 * improvement(o['avg_cct_s'], ra['avg_cct_s']):.1f} %, "
                         f"simulated "
                         f"{100 * improvement(o['sim_avg_cct_s'], ra['sim_avg_cct_s']):.1f} %")
    return "\n".join(lines)


def write_outputs(results: Dict[str, dict], out_dir: str, meta: dict,
                  plot: Optional[str] = None) -> Dict[str, dict]:
    """Write ``summary.json`` (the printed JSON plus ``meta``), ``timelines.json``
    (per scheduler, per flow: emulated controller rate and bytes received, simulated
    rate and bytes sent, on a 0.1 s grid: :mod:`mininet_tests.timelines`) and each
    run's ``run-<scheduler>.json`` into ``out_dir``; with ``plot`` (a coflow id, or
    ``""`` for the first coflow) one ``timeline-<scheduler>-<coflow>.png`` per
    scheduler.  Removes the ``_`` keys from ``results`` (in place) and returns it.

    Raises:
        OSError: ``out_dir`` not writable.  KeyError: ``plot`` names no coflow.
    """
    from .timelines import emulated_timelines, plot_coflow

    os.makedirs(out_dir, exist_ok=True)
    tls = {}
    for name, r in results.items():
        run = r.pop("_run", None)
        sim_tl = r.pop("_sim_timelines", {})
        if run is None:
            continue
        emu_tl = emulated_timelines(run)
        tls[name] = {"emulated": emu_tl, "simulated": sim_tl}
        with open(os.path.join(out_dir, f"run-{name}.json"), "w") as fh:
            json.dump(run, fh, indent=1)
        if plot is not None:
            cid = plot or r["coflow_ids"][0]
            if cid not in r["coflow_ids"]:
                raise KeyError(f"--plot: no coflow {cid!r} (coflows: "
                               f"{', '.join(r['coflow_ids'][:10])}...)")
            i = r["coflow_ids"].index(cid)
            arr = run["coflows"][i]["arrival_s"]
            png = os.path.join(out_dir, f"timeline-{name}-{cid}.png")
            plot_coflow(cid, emu_tl, sim_tl, png, arrival_s=arr,
                        sim_arrival_s=meta.get("arrivals_s", {}).get(cid, arr),
                        title=f"{name}, coflow {cid}: emulated CCT {r['ccts_s'][i]:.2f} s, "
                              f"simulated {r['sim_ccts_s'][i]:.2f} s")
            r["plot"] = png
    with open(os.path.join(out_dir, "timelines.json"), "w") as fh:
        json.dump(tls, fh)
    with open(os.path.join(out_dir, "summary.json"), "w") as fh:
        json.dump({"results": results, **meta}, fh, indent=1)
    return results


def build_parser() -> argparse.ArgumentParser:
    """The ``rapier-emulate`` argument parser."""
    ap = argparse.ArgumentParser(prog="rapier-emulate", description=__doc__.split("\n\n")[0])
    add_workload_options(
        ap, "scenario", "topology", "synthetic", "sizes", "seed", "trace", "limit",
        scenario=dict(choices=["testbed"], default=None,
                      help="RAPIER Table II testbed (the default workload)"),
        topology=dict(help="fattree:K, vl2:DA,DI,SERVERS_PER_TOR, leafspine:L,S,H or "
                           "file:PATH (a topology file; with --synthetic or --trace)"),
        synthetic=dict(help="the simulator's synthetic workload (RAPIER Section V-B)"),
        sizes=dict(help="synthetic flow sizes before scaling (default uniform:10,100 MB)"),
        trace=dict(help="coflow-benchmark trace (with --limit)"),
        limit=dict(help="first N coflows of --trace"))
    ap.add_argument("--max-flows", type=int, default=MAX_FLOWS,
                    help="refuse workloads with more flows (default %(default)s)")
    ap.add_argument("--schedulers", default=None,
                    help="comma-separated registry names (default: testbed "
                         f"{','.join(SCHEDULERS)}; otherwise {','.join(FABRIC_SCHEDULERS)})")
    add_workload_options(
        ap, "scale",
        scale=dict(help=f"flow size factor (default testbed {DEFAULT_SCALE:g}; otherwise "
                        f"{DEFAULT_FABRIC_SCALE:g}: with 10 Mbit/s links the times of the "
                        f"unscaled workload on 1 Gbit/s)"))
    ap.add_argument("--link-mbps", type=float, default=None,
                    help=f"emulated link speed in Mbit/s (default {DEFAULT_LINK_MBPS:g}; "
                         f"for file:PATH its own speeds: this sets its slowest host "
                         f"link and scales every link in proportion)")
    add_workload_options(
        ap, "goodput", goodput=dict(default=HEADER_GOODPUT, metavar=None,
                                    help="simulator link capacity factor (payload share; "
                                         "default %(default).4f = 1448/1514)"))
    ap.add_argument("--headroom", type=float, default=DEFAULT_HEADROOM,
                    help="share of the link speed the controller plans with (default "
                         "%(default)g; the simulator uses the same)")
    ap.add_argument("--stats-interval", type=float, default=DEFAULT_STATS_INTERVAL_S,
                    help="controller flow-stats period in s (default %(default)g)")
    ap.add_argument("--queue-packets", type=int, default=DEFAULT_QUEUE_PACKETS,
                    metavar="N",
                    help="packets each shaped switch port may queue (default %(default)s; "
                         "0: Linux's 1000, 1.2 s at 10 Mbit/s)")
    ap.add_argument("--rto-min-ms", type=float, default=DEFAULT_RTO_MIN_MS, metavar="MS",
                    help="hosts' minimum TCP retransmission timeout in ms (default "
                         "%(default)g; 0: Linux's 200)")
    ap.add_argument("--tsq-bytes", type=int, default=None, metavar="BYTES",
                    help="hosts' net.ipv4.tcp_limit_output_bytes (TCP small queues; "
                         "default: the kernel's 4 MiB)")
    ap.add_argument("--fair-queue", type=int, default=DEFAULT_FAIR_QUEUE, metavar="N",
                    help="switch ports share their rate round robin among N FIFOs "
                         "hashed on the TCP destination port (max-min sharing, as the "
                         "simulator has it; a power of two up to 256; default "
                         "%(default)s; 0: one tail-drop FIFO per port)")
    ap.add_argument("--tcp-cc", default=DEFAULT_TCP_CC, metavar="NAME",
                    help="senders' TCP congestion control (default %(default)s; one of "
                         "the kernel's tcp_available_congestion_control; 'default': "
                         "the machine's own)")
    ap.add_argument("--no-report", action="store_true",
                    help="completions from the controller's flow-stats polling only "
                         "(no receiver reports; for measuring their effect)")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds one scheduler's transfers may take (default %(default)g)")
    ap.add_argument("--out", default="rapier-emu-out",
                    help="output folder: summary.json, timelines.json, run-*.json, plots "
                         "(default %(default)s)")
    ap.add_argument("--plot", nargs="?", const="", default=None, metavar="COFLOW",
                    help="draw one coflow's per-flow timelines beside the simulator's "
                         "(default: the first coflow)")
    ap.add_argument("--sim-handoff-delay", type=float, default=0.0, metavar="S",
                    help="also simulate with every rate raise in force S seconds after its "
                         "decision (the controller-to-wire hand-off, rapier_app.sim.handoff; "
                         "about 0.15 s measured here); reported as sim_handoff_avg_cct_s "
                         "and a 'hand-off' column (default 0: not run)")
    ap.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``rapier-emulate``; exit status 0 when every run completed,
    1 when a run failed, 2 for bad arguments."""
    from rapier_app.cli_common import add_common_arguments, setup_logging
    from rapier_app.progress import bar, note, progress_enabled
    from topologies import TopologyError, build_topology

    from .workloads import WorkloadUsageError, build_workload, check_schedulers

    ap = build_parser()
    add_common_arguments(ap, quiet_help="no progress on stderr (-qq: errors only)",
                         verbose_help="INFO log lines of the run (-vv: DEBUG)")
    args = ap.parse_args(argv)
    fabric = bool(args.synthetic or args.trace)
    if args.synthetic and args.trace:
        ap.error("workload: give one of --synthetic, --trace, --scenario")
    if fabric and args.scenario:
        ap.error("--scenario: not with --synthetic/--trace")
    if fabric and not args.topology:
        ap.error("--topology: required with --synthetic and --trace")
    if not fabric:
        for opt, v in (("topology", args.topology), ("sizes", args.sizes),
                       ("limit", args.limit)):
            if v is not None:
                ap.error(f"--{opt}: applies only to --synthetic/--trace; the testbed brings "
                         f"its own")
    if args.limit is not None and not args.trace:
        ap.error("--limit: applies only to --trace")
    if args.sizes is not None and not args.synthetic:
        ap.error("--sizes: applies only to --synthetic")
    scale = args.scale if args.scale is not None else \
        (DEFAULT_FABRIC_SCALE if fabric else DEFAULT_SCALE)
    if fabric and args.topology.strip().lower().startswith("file:"):
        from topologies import absolute_spec, reference_bps

        args.topology = absolute_spec(args.topology)
        try:
            ftopo = build_topology(args.topology)
        except TopologyError as exc:
            ap.error(str(exc))
        multi = [h for h in ftopo.hosts if ftopo.graph.out_degree(h) > 1]
        if multi:
            ap.error(f"--topology: host {multi[0]} has {ftopo.graph.out_degree(multi[0])} "
                     f"interfaces; the emulation's host agents shape one interface per "
                     f"host")
        if args.link_mbps is None:  # the file's own speeds
            args.link_mbps = reference_bps(ftopo) / 1e6
    if args.link_mbps is None:
        args.link_mbps = DEFAULT_LINK_MBPS
    for field, v in (("scale", scale), ("link-mbps", args.link_mbps),
                     ("timeout", args.timeout), ("max-flows", args.max_flows)):
        if not v > 0:
            ap.error(f"--{field}: must be positive, got {v}")
    if args.queue_packets < 0:
        ap.error(f"--queue-packets: must be a positive integer or 0, got {args.queue_packets}")
    args.queue_packets = args.queue_packets or None  # 0: Linux's default
    if args.tsq_bytes is not None and args.tsq_bytes < 1:
        ap.error(f"--tsq-bytes: must be a positive integer, got {args.tsq_bytes}")
    if not args.rto_min_ms >= 0:
        ap.error(f"--rto-min-ms: must be positive or 0, got {args.rto_min_ms}")
    args.rto_min_ms = args.rto_min_ms or None  # 0: Linux's default
    if args.fair_queue:
        try:
            check_buckets(args.fair_queue)
        except SwitchQueueError as exc:
            ap.error(f"--fair-queue: {exc}")
    args.fair_queue = args.fair_queue or None  # 0: one FIFO per port
    if args.tcp_cc == "default":
        args.tcp_cc = None
    elif args.tcp_cc not in available_congestion_controls():
        ap.error(f"--tcp-cc: {args.tcp_cc!r} is not one of this kernel's "
                 f"{' '.join(available_congestion_controls()) or '(none readable)'}")
    for field, v in (("goodput", args.goodput), ("headroom", args.headroom)):
        if not 0 < v <= 1:
            ap.error(f"--{field}: must be in (0, 1], got {v}")
    if not args.stats_interval > 0:
        ap.error(f"--stats-interval: must be positive, got {args.stats_interval}")
    if not (args.sim_handoff_delay >= 0 and math.isfinite(args.sim_handoff_delay)):
        ap.error(f"--sim-handoff-delay: must be a number of seconds >= 0, got "
                 f"{args.sim_handoff_delay}")
    default_names = FABRIC_SCHEDULERS if fabric else SCHEDULERS
    names = [s.strip() for s in (args.schedulers or ",".join(default_names)).split(",")
             if s.strip()]
    try:
        check_schedulers(names)
        if fabric:
            topo = build_topology(args.topology)
            coflows, desc = build_workload(
                topo, parse_synthetic(args.synthetic) if args.synthetic else None,
                args.sizes or "uniform:10,100", args.seed, args.trace, args.limit, scale,
                args.max_flows)
            spec = args.topology
        else:
            from rapier_app.core.workload import testbed_workload

            coflows = controller_named(testbed_workload(scale))
            desc, spec = f"RAPIER Table II testbed, sizes x {scale:g}", "leafspine:3,3,3"
    except (WorkloadUsageError, TopologyError, ValueError) as exc:
        ap.error(str(exc))
    if os.geteuid() != 0:
        print("rapier-emulate: must run as root (Mininet, Open vSwitch, tc)", file=sys.stderr)
        return 2
    setup_logging(args, logging.WARNING, fmt="%(asctime)s %(name)s %(message)s")
    show = progress_enabled(args.quiet > 0, args.json)
    tell = args.quiet == 0

    def _term(signum, _frame):  # SIGTERM -> exception, so that cleanup runs
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _term)
    from .runner import EmulationError, OvsDaemons

    ovs = OvsDaemons()
    results: Dict[str, dict] = {}
    failed = []
    runs = bar(len(names), "rapier-emulate", unit="run", enabled=show)
    note(f"[rapier-emulate] {spec}: {desc}; {len(coflows)} coflows, "
         f"{sum(len(c.flows) for c in coflows)} flows, links {args.link_mbps:g} Mbit/s", tell)
    try:
        ovs.start()
        for name in names:
            runs.set_postfix_str(name)
            note(f"[rapier-emulate] {name}: running", tell)
            try:
                results[name] = run_workload(name, spec, coflows, args.link_mbps, args.timeout,
                                             args.goodput, report_done=not args.no_report,
                                             extra={"scale": scale}, headroom=args.headroom,
                                             stats_interval_s=args.stats_interval,
                                             queue_packets=args.queue_packets,
                                             rto_min_ms=args.rto_min_ms,
                                             tsq_bytes=args.tsq_bytes,
                                             tcp_cc=args.tcp_cc,
                                             fair_queue=args.fair_queue,
                                             sim_handoff_delay_s=args.sim_handoff_delay)
            except (EmulationError, OSError) as exc:
                note(f"[rapier-emulate] {name}: FAILED: {exc}")
                failed.append(name)
                runs.update(1)
                continue
            r = results[name]
            note(f"[rapier-emulate] {name}: average CCT {r['avg_cct_s']:.2f} s "
                 f"(simulated {r['sim_avg_cct_s']:.2f} s), {r['wall_s']:.1f} s wall; logs in "
                 f"{r['workdir']}", tell)
            runs.update(1)
    finally:
        runs.close()
        ovs.stop()
    meta = {"topology": spec, "workload": desc, "link_bps": args.link_mbps * 1e6,
            "scale": scale, "goodput": args.goodput, "report_done": not args.no_report,
            "headroom": args.headroom, "stats_interval_s": args.stats_interval,
            "queue_packets": args.queue_packets, "rto_min_ms": args.rto_min_ms,
            "tsq_bytes": args.tsq_bytes, "tcp_cc": args.tcp_cc,
            "fair_queue": args.fair_queue, "sim_handoff_delay_s": args.sim_handoff_delay,
            "load_avg": list(os.getloadavg()),
            "arrivals_s": {c.coflow_id: c.arrival_s for c in coflows}}
    try:
        write_outputs(results, args.out, meta, args.plot)
    except (OSError, KeyError) as exc:
        print(f"rapier-emulate: {exc}", file=sys.stderr)
        failed.append("outputs")
    add_improvements(results)
    if args.json:
        print(json.dumps(results, indent=1))
    elif results:
        title = "" if not fabric else (
            f"{spec}: {desc}, links {args.link_mbps:g} Mbit/s (CCTs in seconds; emulated / "
            f"simulated with goodput {args.goodput:.3f})")
        print(format_table(results, title))
    if failed:
        print(f"[rapier-emulate] failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
