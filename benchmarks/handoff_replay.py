"""Replay an emulated run's workload in the simulator with a hand-off delay (issue 13).

Usage::

    python benchmarks/handoff_replay.py OUT/run-rapier.json DELAY_S [DELAY_S ...]

``OUT`` is a ``rapier-emulate --out`` folder (its ``summary.json`` gives the
topology, the planned link rate and the goodput factor).  The workload is the run's
coflows (flow ids, hosts, sizes, destination ports and the arrivals as emulated).
With DELAY_S > 0 the scheduler is wrapped so that every rate *raise* (and every new
flow) takes effect DELAY_S seconds after the decision that made it, while rate
decreases apply at once (so no link is ever above capacity): a model of the time
from a flow's completion to the raised rate being in force on the wire (report,
decision, push to the agent, TCP ramp-up; ``benchmarks/emulation_handoff.py``
measures it).  Prints the simulated average CCT (s) per delay beside the run's
emulated average and the published (zero-delay) simulated one.

The wrapper is :class:`rapier_app.sim.handoff.HandoffDelay`, the model behind
``rapier-sim --handoff-delay`` and ``rapier-emulate --sim-handoff-delay``.  Raises ``SystemExit`` naming the argument on a missing or
unreadable run file, a file that is not a run file, or a delay that is not a
number >= 0.
"""

import json
import os
import sys

from rapier_app.core.model import make_coflow
from rapier_app.sim.handoff import HandoffDelay


def load_run(path: str):
    """``(simulator topology, coflows, summary entry)`` of a ``rapier-emulate`` run
    file: the emulated workload (flow ids, hosts, sizes, destination ports, arrivals)
    on the simulator's fabric at the run's planned rate and goodput.

    Raises:
        SystemExit: a missing or unreadable file, or not a run file (names it).
    """
    from mininet_tests.workloads import sim_topology
    from rapier_app.scheduling import load_all

    try:
        with open(path) as fh:
            run = json.load(fh)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"run file: {path}: {exc}")
    if not isinstance(run, dict) or "coflows" not in run or "scheduler" not in run:
        raise SystemExit(f"{path}: not a rapier-emulate run-*.json")
    try:
        with open(os.path.join(os.path.dirname(path), "summary.json")) as fh:
            summ = json.load(fh)["results"][run["scheduler"]]
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"summary.json beside {path}: {exc}")
    cfs = []
    for c in run["coflows"]:
        fl = sorted(c["flows"], key=lambda f: int(f["flow_id"].split("/")[1]))
        cfs.append(make_coflow(c["coflow_id"], c["arrival_s"],
                               [(f["src"], f["dst"], f["size_bytes"]) for f in fl],
                               dst_ports=[f["dst_port"] for f in fl]))
    cfs.sort(key=lambda c: c.arrival_s)
    load_all()
    topo = sim_topology(summ["topology"], summ["planned_link_bps"], summ["goodput"])
    return topo, cfs, summ


def replay(path: str, delays):
    """[(delay s, simulated average CCT s)], emulated average, published simulated."""
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim.simulator import Simulator

    topo, cfs, summ = load_run(path)
    name = json.load(open(path))["scheduler"]
    out = []
    for d in delays:
        s = make_scheduler(name, topo, seed=0)
        res = Simulator(topo, cfs, HandoffDelay(s, d) if d > 0 else s).run()
        c = [r.cct_s for r in res.coflows]
        out.append((d, sum(c) / len(c)))
    return name, out, summ["avg_cct_s"], summ["sim_avg_cct_s"]


def main(argv) -> int:
    if len(argv) < 2:
        raise SystemExit("usage: handoff_replay.py OUT/run-NAME.json DELAY_S [DELAY_S ...]")
    delays = []
    for x in argv[1:]:
        try:
            d = float(x)
        except ValueError:
            raise SystemExit(f"DELAY_S: not a number: {x!r}")
        if not d >= 0:
            raise SystemExit(f"DELAY_S: must be >= 0 s, got {x!r}")
        delays.append(d)
    name, rows, emu, sim = replay(argv[0], delays)
    cells = ", ".join(f"{d:g} s -> {a:.3f}" for d, a in rows)
    print(f"{name}: emulated {emu:.3f} s, simulated {sim:.3f} s; with a hand-off delay: {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
