"""``rapier-emulate``: RAPIER's testbed experiment (Table II) in Mininet, beside the simulator.

``rapier-emulate --scenario testbed`` runs the three coflows of RAPIER Table II on the
3x3 leaf-spine (9 hosts), once per scheduler (``rapier``, ``routing-only``,
``baseline``), each time on a fresh network with a fresh controller, and prints per
coflow the emulated CCT and the simulator's prediction for the same scaled scenario,
the averages and RAPIER's improvement ``(avg_other - avg_rapier) / avg_other`` (the
paper's metric, Section V-A).  ``--json`` prints one JSON object instead: for each
scheduler ``{"coflows": N, "avg_cct_s": ..., "sim_avg_cct_s": ..., "wall_s": ...}``
plus per-coflow lists.

Scaling (these machines run Open vSwitch in userspace on 2 cores): links run at
``--link-mbps`` (default 10 Mbit/s, 1/100 of the testbed's 1 Gbit/s) and flow sizes
are multiplied by ``--scale`` (default 1/1600 = 0.000625), so every transfer takes
1/16 of its testbed time: 3.17 GB becomes 1.98 MB, 17.9 GB 11.2 MB.  (Slower links
with proportionally smaller flows keep the same durations and halve the packet rate
the userspace switches must carry, which keeps the emulation closer to the model
on a loaded 2-core machine.)  The simulator is run on the
same scaled topology (``leaf_spine(3, 3, 3, link_bps=link_mbps * 1e6)``) and sizes.

``baseline`` is ECMP without rate limits: its controller has no agent URL (it pushes
no rates) and its agents run with ``--no-enforce``.

Units: bytes, bit/s, seconds.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from typing import Dict, List, Optional, Sequence

#: Default link speed of the emulation, Mbit/s.
DEFAULT_LINK_MBPS = 10.0
#: Default size scale: 1/1600 of Table II's volumes (with 10 Mbit/s links: 1/16 of the time).
DEFAULT_SCALE = 1.0 / 1600
SCHEDULERS = ("rapier", "routing-only", "baseline")
LOG = logging.getLogger("rapier-emulate")


def controller_named(coflows: Sequence) -> list:
    """The workload with flow ids as the controller names them: ``<coflow>/<n>``, n from 0.

    ``testbed_workload`` numbers flows as Table II does (``1/1``..``3/7``); the
    controller names a submitted coflow's flows by their index.  ECMP (``baseline``)
    hashes the flow id, so the simulator must use the controller's names to draw the
    same paths as the emulated run.
    """
    from rapier_app.core.model import CoflowSpec, FlowSpec

    out = []
    for c in coflows:
        flows = tuple(FlowSpec(f"{c.coflow_id}/{n}", c.coflow_id, f.src, f.dst, f.size_bytes,
                               f.dst_port) for n, f in enumerate(c.flows))
        out.append(CoflowSpec(c.coflow_id, c.arrival_s, flows, c.weight))
    return out


def simulate_testbed(scheduler: str, scale: float, link_bps: float) -> List[float]:
    """Simulated CCTs (s, coflow order 1..3) of the scaled Table II scenario.

    Same topology (``leaf_spine(3, 3, 3, link_bps)``), sizes and flow ids
    (:func:`controller_named`) as the emulated run.

    Raises:
        rapier_app.scheduling.SchedulerError: unknown scheduler.
    """
    from rapier_app.core.workload import testbed_workload
    from rapier_app.scheduling import load_all, make_scheduler
    from rapier_app.sim import simulate
    from topologies import leaf_spine

    load_all()
    topo = leaf_spine(3, 3, 3, link_bps=link_bps)
    res = simulate(topo, controller_named(testbed_workload(scale)),
                   make_scheduler(scheduler, topo))
    return [float(x) for x in res.ccts]


def improvement(avg_other: float, avg_rapier: float) -> float:
    """RAPIER's improvement over another scheme: ``(other - rapier) / other`` (fraction)."""
    return (avg_other - avg_rapier) / avg_other


def run_scheduler(scheduler: str, scale: float, link_mbps: float, timeout_s: float,
                  controller_opts: Optional[Dict[str, object]] = None,
                  workdir: Optional[str] = None) -> dict:
    """Emulate the scaled testbed scenario under one scheduler.

    Returns:
        ``{"coflows", "avg_cct_s", "ccts_s", "sim_avg_cct_s", "sim_ccts_s", "wall_s",
        "transfer_wall_s", "scale", "link_bps", "workdir"}``; ``wall_s`` covers the whole
        run (network and controller start, transfers, teardown).

    Raises:
        mininet_tests.runner.EmulationError: a component failed or a flow did not finish.
    """
    from rapier_app.core.workload import testbed_workload

    from .runner import Emulation, EmulationError

    t0 = time.time()
    coflows = testbed_workload(scale)
    for attempt in (1, 2):
        em = Emulation("leafspine:3,3,3", scheduler=scheduler, bw_mbps=link_mbps,
                       enforce=(scheduler != "baseline"), workdir=workdir,
                       controller_opts=controller_opts)
        try:
            em.__enter__()
        except EmulationError as exc:  # start-up only: everything was stopped already
            if attempt == 2:
                raise
            LOG.warning("%s: start-up failed (%s); retrying once", scheduler, exc)
            continue
        try:
            res = em.run_coflows(coflows, timeout_s=timeout_s)
        finally:
            em.__exit__(None, None, None)
        break
    wd = em.workdir
    sim = simulate_testbed(scheduler, scale, link_mbps * 1e6)
    ccts = res.ccts
    return {"coflows": len(ccts), "avg_cct_s": sum(ccts) / len(ccts), "ccts_s": ccts,
            "sim_avg_cct_s": sum(sim) / len(sim), "sim_ccts_s": sim,
            "wall_s": time.time() - t0, "transfer_wall_s": res.wall_s,
            "scale": scale, "link_bps": link_mbps * 1e6, "workdir": wd}


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


def format_table(results: Dict[str, dict]) -> str:
    """Human-readable table: per-coflow CCTs (emulated / simulated), averages, improvement."""
    lines = []
    any_r = next(iter(results.values()))
    lines.append(f"RAPIER Table II testbed, scaled: sizes x {any_r['scale']:g}, links "
                 f"{any_r['link_bps'] / 1e6:g} Mbit/s (CCTs in seconds; emulated / simulated)")
    n = max(r["coflows"] for r in results.values())
    head = f"{'scheduler':<14}" + "".join(f"{'coflow ' + str(i + 1):>18}" for i in range(n))
    head += f"{'average':>18}{'wall s':>9}"
    lines.append(head)
    for name, r in results.items():
        cells = "".join(f"{e:>9.2f} / {s:<6.2f}" for e, s in zip(r["ccts_s"], r["sim_ccts_s"]))
        lines.append(f"{name:<14}{cells}{r['avg_cct_s']:>9.2f} / {r['sim_avg_cct_s']:<6.2f}"
                     f"{r['wall_s']:>9.1f}")
    if "rapier" in results:
        ra = results["rapier"]
        for other in ("baseline", "routing-only"):
            if other in results:
                o = results[other]
                lines.append(f"improvement of rapier over {other}: emulated "
                             f"{100 * improvement(o['avg_cct_s'], ra['avg_cct_s']):.1f} %, "
                             f"simulated "
                             f"{100 * improvement(o['sim_avg_cct_s'], ra['sim_avg_cct_s']):.1f} %")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``rapier-emulate``; exit status 0 when every run completed."""
    from rapier_app.cli_common import add_common_arguments, setup_logging
    from rapier_app.progress import bar, note, progress_enabled

    ap = argparse.ArgumentParser(prog="rapier-emulate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", choices=["testbed"], default="testbed",
                    help="RAPIER Table II testbed (the only scenario)")
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS),
                    help="comma-separated schedulers (default %(default)s)")
    ap.add_argument("--scale", type=float, default=DEFAULT_SCALE,
                    help="flow size factor on Table II's volumes (default %(default)g)")
    ap.add_argument("--link-mbps", type=float, default=DEFAULT_LINK_MBPS,
                    help="emulated link speed in Mbit/s (default %(default)g)")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds one scheduler's transfers may take (default %(default)g)")
    ap.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    add_common_arguments(ap, quiet_help="no progress on stderr (-qq: errors only)",
                         verbose_help="INFO log lines of the run (-vv: DEBUG)")
    args = ap.parse_args(argv)
    for field, v in (("scale", args.scale), ("link-mbps", args.link_mbps),
                     ("timeout", args.timeout)):
        if not v > 0:
            ap.error(f"--{field}: must be positive, got {v}")
    names = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    if not names:
        ap.error("--schedulers: empty")
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
    try:
        ovs.start()
        for name in names:
            runs.set_postfix_str(name)
            note(f"[rapier-emulate] {name}: running", tell)
            try:
                results[name] = run_scheduler(name, args.scale, args.link_mbps, args.timeout)
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
    add_improvements(results)
    if args.json:
        print(json.dumps(results, indent=1))
    elif results:
        print(format_table(results))
    if failed:
        print(f"[rapier-emulate] failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
