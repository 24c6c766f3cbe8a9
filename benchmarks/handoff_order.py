"""How often a random hand-off delay alone reorders two schedulers (issue 13).

Usage::

    PYTHONPATH=. python benchmarks/handoff_order.py OUT SCHED_A SCHED_B \\
        [--delay 0.07] [--jitter 0.16] [--seeds 40]

``OUT`` is a ``rapier-emulate --out`` folder holding ``run-SCHED_A.json`` and
``run-SCHED_B.json`` (the emulated workload and fabric, as in
``benchmarks/handoff_replay.py``).  Each scheduler is simulated ``--seeds`` times
with every rate raise held back ``delay + U(0, jitter)`` seconds
(:class:`rapier_app.sim.handoff.HandoffDelay`, one seed per run), a model of a
controller whose hand-off varies from raise to raise as the emulation's does
(``benchmarks/emulation_handoff.py``: about 0.07-0.23 s).  Prints each scheduler's
average CCT (mean, standard deviation, min, max over the seeds; seconds), the
simulator's zero-delay figure, and the share of (A run, B run) pairs, all
``seeds x seeds`` of them, in which A's average CCT is below B's: the chance that
one emulated run of each puts A first if the hand-off were the only noise, and its
cube, the chance of "3 runs out of 3".  Also prints, per scheduler without a delay,
the largest utilisation of any fabric link (a link with no host at either end):
when it stays well below 1 only the host links bind and routing cannot separate
the two schedulers.

Raises ``SystemExit`` naming the argument on a missing run file or a bad number.
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from handoff_replay import load_run  # noqa: E402


def fabric_utilisation(topo, cfs, name: str) -> float:
    """Largest load / capacity over the simulated run of ``name`` (no delay) on any
    link with no host at either end, over every decision's rates."""
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim.simulator import Simulator

    log: list = []
    Simulator(topo, cfs, make_scheduler(name, topo, seed=0), event_log=log).run()
    hosts = set(topo.hosts)
    cap = {(u, v): d["capacity_bps"] for u, v, d in topo.graph.edges(data=True)}
    top = 0.0
    for ev in log:
        load: dict = {}
        for path, rate in zip(ev.paths, ev.rates_bps):
            if path is None or rate <= 0:
                continue
            for e in zip(path[:-1], path[1:]):
                if e[0] not in hosts and e[1] not in hosts:
                    load[e] = load.get(e, 0.0) + float(rate)
        for e, v in load.items():
            top = max(top, v / cap[e])
    return top


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="handoff_order.py")
    ap.add_argument("out")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--delay", type=float, default=0.07)
    ap.add_argument("--jitter", type=float, default=0.16)
    ap.add_argument("--seeds", type=int, default=40)
    args = ap.parse_args(argv)
    if not (args.delay >= 0 and args.jitter >= 0):
        raise SystemExit("--delay, --jitter: must be >= 0 s")
    if args.seeds < 1:
        raise SystemExit(f"--seeds: must be >= 1, got {args.seeds}")
    from rapier_app.scheduling import make_scheduler
    from rapier_app.sim.handoff import HandoffDelay
    from rapier_app.sim.simulator import Simulator

    avgs = {}
    for name in (args.a, args.b):
        topo, cfs, summ = load_run(os.path.join(args.out, f"run-{name}.json"))
        print(f"{name}: largest fabric-link utilisation without a delay "
              f"{fabric_utilisation(topo, cfs, name):.3f}")
        got = []
        for seed in range(args.seeds):
            s = HandoffDelay(make_scheduler(name, topo, seed=0), args.delay, args.jitter, seed)
            c = [r.cct_s for r in Simulator(topo, cfs, s).run().coflows]
            got.append(sum(c) / len(c))
        avgs[name] = got
        sd = statistics.stdev(got) if len(got) > 1 else 0.0
        print(f"{name}: hand-off {args.delay:g} + U(0, {args.jitter:g}) s over {args.seeds} "
              f"seeds: mean {statistics.mean(got):.3f} s, sd {sd:.3f} s "
              f"({100 * sd / statistics.mean(got):.1f} %), min {min(got):.3f}, max "
              f"{max(got):.3f}; no delay {summ['sim_avg_cct_s']:.3f} s; emulated "
              f"{summ['avg_cct_s']:.3f} s")
    a, b = avgs[args.a], avgs[args.b]
    p = sum(x < y for x in a for y in b) / (len(a) * len(b))
    print(f"P({args.a} < {args.b}) over {len(a) * len(b)} pairs: {p:.2f}; "
          f"3 runs out of 3: {p ** 3:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
