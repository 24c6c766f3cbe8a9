"""Mutation score of the unit tests: plant deliberate bugs, see which tests notice.

A curated list of hand-written mutants over ``rapier_app/scheduling``,
``rapier_app/sim`` and ``rapier_app/controller/core.py`` (issue 17), each a
one-line change chosen to be a bug that matters (a capacity check widened, a
scheduler's order reversed, work conservation switched off, an empty schedule, ...).
For each mutant the committed tree (``git archive HEAD``) is unpacked into a
temporary directory, the mutant applied there (the working tree is never touched),
and the mutant's targeted test subset run with ``pytest -x``; the mutant is *killed*
when a test fails, *survives* when all pass.  The unmutated subsets run first and
must pass.

Usage (not part of CI; about 4-6 min of CPU for the whole list on this machine)::

    .venv/bin/python benchmarks/mutants.py                 # every mutant
    .venv/bin/python benchmarks/mutants.py --only sim-slack,varys-no-wc
    .venv/bin/python benchmarks/mutants.py --list
    .venv/bin/python benchmarks/mutants.py --json out.json

Why not mutmut / cosmic-ray over the whole packages: they generate hundreds of
mechanical mutants (every operator and constant) in ~5,000 lines, each needing a test
run of tens of seconds: hours of CPU on a 2-core machine shared with other work.  The
curated list measures the bugs issue 17 names and the ones like them; see
docs/testing.md for the score and the survivors.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, ".venv", "bin", "python")

SIM = ["tests/test_checker.py", "tests/test_invariants.py", "tests/test_work_conservation.py",
       "tests/test_hand_schedules.py", "tests/test_fig1.py"]
SCHED = ["tests/test_hand_schedules.py", "tests/test_work_conservation.py",
         "tests/test_fig1.py", "tests/test_invariants.py", "tests/test_properties.py"]
SEEDS = ["tests/test_seeds.py", "tests/test_invariants.py", "tests/test_properties.py"]
CTRL = ["tests/test_controller_core.py"]


@dataclass
class Mutant:
    """One planted bug: replace ``old`` by ``new`` in ``path`` (``count`` times, -1:
    every occurrence; the text must occur), then run ``tests``."""

    name: str
    package: str
    path: str
    old: str
    new: str
    what: str
    tests: List[str]
    count: int = 1


MUTANTS = [
    # -- rapier_app/sim ------------------------------------------------------------
    Mutant("sim-slack", "sim", "rapier_app/sim/simulator.py",
           "CAPACITY_SLACK = 1e-6", "CAPACITY_SLACK = 1.01",
           "simulator accepts links up to 201 % of capacity", SIM),
    Mutant("sim-slack-10pc", "sim", "rapier_app/sim/simulator.py",
           "CAPACITY_SLACK = 1e-6", "CAPACITY_SLACK = 0.10",
           "simulator accepts links up to 110 % of capacity", SIM),
    Mutant("sim-no-capacity-check", "sim", "rapier_app/sim/simulator.py",
           "if load[worst] > cap_limit[worst]:", "if False:",
           "capacity check switched off", SIM),
    Mutant("sim-no-endpoint-check", "sim", "rapier_app/sim/simulator.py",
           "if p[0] != f.src or p[-1] != f.dst:", "if False:",
           "paths not checked to join the flow's endpoints", SIM),
    Mutant("sim-early-finish", "sim", "rapier_app/sim/simulator.py",
           "finished = ttf <= dt * (1 + 1e-9) + 1e-12",
           "finished = ttf <= dt * 1.01 + 1e-12",
           "flows up to 1 % short of their bytes count as finished", SIM),
    Mutant("sim-coflow-first-flow", "sim", "rapier_app/sim/simulator.py",
           "c.finish_s = max(f.finish_s for f in c.flows)",
           "c.finish_s = min(f.finish_s for f in c.flows)",
           "a coflow ends with its first flow instead of its last", SIM),
    Mutant("sim-coflow-events-only", "sim", "rapier_app/sim/simulator.py",
           'by_coflow = self.reschedule_on == "coflow"', "by_coflow = True",
           "decisions only at coflow events (the pre-issue-12 idle capacity)", SIM),
    # -- rapier_app/scheduling -----------------------------------------------------
    Mutant("maxmin-overfill", "scheduling", "rapier_app/scheduling/base.py",
           "residual -= inc * wl", "residual -= 0.5 * inc * wl",
           "max-min fair filling counts half the bandwidth it hands out", SCHED),
    Mutant("baseline-empty", "scheduling", "rapier_app/scheduling/classic.py",
           "rates = max_min_fair_flat(lens, lidx, self.topology.capacity)\n"
           "        return Schedule.from_vectors(",
           "rates = max_min_fair_flat(lens, lidx, self.topology.capacity)\n"
           "        return Schedule()\n        return Schedule.from_vectors(",
           "baseline returns an empty schedule", CTRL + ["tests/test_fig1.py"]),
    Mutant("routing-only-worst-path", "scheduling", "rapier_app/scheduling/classic.py",
           "if costs[r] < best_cost - 1e-12:", "if costs[r] > best_cost + 1e-12:",
           "routing-only places a flow on the most loaded candidate", SCHED),
    Mutant("varys-sebf-reversed", "scheduling", "rapier_app/scheduling/classic.py",
           "keyed.sort(key=lambda x: x[:3])\n        order_k",
           "keyed.sort(key=lambda x: (-x[0],) + x[1:3])\n        order_k",
           "Varys serves the largest bottleneck first", SCHED),
    Mutant("varys-madd-min", "scheduling", "rapier_app/scheduling/classic.py",
           "gamma = (load[used] / ru).max()", "gamma = (load[used] / ru).min()",
           "MADD uses the least loaded link (rates over capacity)", SCHED),
    Mutant("varys-no-wc", "scheduling", "rapier_app/scheduling/classic.py",
           "for i in (np.flatnonzero(room[f0:f1]) + f0).tolist():", "for i in []:",
           "Varys full pass without work conservation", SCHED),
    Mutant("alg1-max-cct", "scheduling", "rapier_app/scheduling/rapier.py",
           "if best_key is None or k < best_key:", "if best_key is None or k > best_key:",
           "Algorithm 1 picks the maximum CCT", SCHED, count=-1),
    Mutant("alg1-half-rate", "scheduling", "rapier_app/scheduling/rapier.py",
           "r = (plan.alpha * plan.rem_bytes) * BITS",
           "r = (plan.alpha * plan.rem_bytes) * BITS * 0.5",
           "Algorithm 1 gives half the model-(2) rates", SCHED),
    Mutant("alg1-no-starvation-guard", "scheduling", "rapier_app/scheduling/rapier.py",
           "guard = wait(pending[0]) > self.delta_s", "guard = False",
           "Algorithm 1 without the waitTime guard (lines 7-10)",
           SCHED + ["tests/test_reschedule_policy.py", "tests/test_rapier_experiments.py"]),
    Mutant("wc-stops-early", "scheduling", "rapier_app/scheduling/conserve.py",
           "if left == 0:", "if left <= 1:",
           "flow-event work conservation stops one link early", SCHED),
    Mutant("wc-last-candidate", "scheduling", "rapier_app/scheduling/conserve.py",
           "if bw > best_bw:", "if bw >= best_bw:",
           "AssignBandwidth takes the last of the tied best paths", SCHED),
    Mutant("greedy-half", "scheduling", "rapier_app/scheduling/seedbase.py",
           "r = float(m[pos[0]])", "r = 0.5 * float(m[pos[0]])",
           "Sincronia's greedy rates take half the residual", SEEDS),
    Mutant("fifo-lifo", "scheduling", "rapier_app/scheduling/fifo.py",
           "order = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id))",
           "order = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id), reverse=True)",
           "FIFO serves the newest coflow first", SEEDS),
    Mutant("aalo-queue-late", "scheduling", "rapier_app/scheduling/aalo.py",
           "sent_bytes >= t * (1 - CROSS_TOL)", "sent_bytes >= t * 2",
           "Aalo demotes a coflow at twice the queue threshold", SEEDS),
    Mutant("bssi-tie-min", "scheduling", "rapier_app/scheduling/sincronia.py",
           "s = int(tied[np.argmax(ck[tied])])", "s = int(tied[np.argmin(ck[tied])])",
           "BSSI places the earliest tied coflow last", SEEDS),
    # -- rapier_app/controller/core.py ---------------------------------------------
    Mutant("ctrl-any-path", "controller", "rapier_app/controller/core.py",
           "return path[1] in self._dpid", "return True",
           "controller installs a path whose first hop is not a switch", CTRL),
    Mutant("ctrl-floor-rate", "controller", "rapier_app/controller/core.py",
           "rate = f.rate_bps if f.rate_bps > 0 else self.settings.min_rate_bps",
           "rate = self.settings.min_rate_bps",
           "agents get the floor rate instead of the scheduler's", CTRL),
    Mutant("ctrl-rate-dropped", "controller", "rapier_app/controller/core.py",
           "                    f.path = path\n                    f.rate_bps = float(a.rate_bps)",
           "                    f.path = path\n                    f.rate_bps = 0.0",
           "a routed flow's rate is not recorded", CTRL),
]


def unpack(dest: str) -> None:
    """The committed tree (HEAD) into ``dest``."""
    arch = subprocess.run(["git", "-C", ROOT, "archive", "HEAD"], check=True,
                          capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=arch, check=True)


def apply(dest: str, m: Mutant) -> None:
    """Plant ``m`` in the tree at ``dest``.

    Raises:
        ValueError: the text to replace is not in the file (the mutant is stale).
    """
    p = os.path.join(dest, m.path)
    with open(p) as fh:
        src = fh.read()
    if m.old not in src:
        raise ValueError(f"{m.name}: text not found in {m.path}: {m.old!r}")
    with open(p, "w") as fh:
        fh.write(src.replace(m.old, m.new, m.count))


def run_tests(dest: str, tests: List[str], stop: bool = True) -> Tuple[bool, str, float]:
    """(all passed, summary, seconds) of pytest on ``tests`` in ``dest``; the summary
    is pytest's last line, plus the first failing test's id when one failed."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    cmd = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *(["-x"] if stop else []),
           *tests]
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=dest, env=env, capture_output=True, text=True)
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    last = lines[-1] if lines else r.stderr[-200:]
    failed = [l.split(" - ")[0] for l in lines if l.startswith(("FAILED ", "ERROR "))]
    if failed:
        last = f"{last} [{failed[0]}]"
    return r.returncode == 0, last, time.perf_counter() - t


def main(argv=None) -> int:
    """Run the mutants; print one line each and the score per package."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated mutant names")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the unmutated run of the test subsets")
    args = ap.parse_args(argv)
    todo = MUTANTS
    if args.only:
        want = args.only.split(",")
        unknown = set(want) - {m.name for m in MUTANTS}
        if unknown:
            print(f"mutants.py: unknown mutant(s) {sorted(unknown)}", file=sys.stderr)
            return 2
        todo = [m for m in MUTANTS if m.name in want]
    if args.list:
        for m in todo:
            print(f"{m.name:26} {m.package:11} {m.what}")
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="rapier-mut-") as tmp:
        base = os.path.join(tmp, "base")
        os.mkdir(base)
        unpack(base)
        if not args.no_baseline:
            subsets = sorted({tuple(m.tests) for m in todo})
            for s in subsets:
                ok, last, sec = run_tests(base, list(s), stop=False)
                print(f"baseline {' '.join(os.path.basename(x) for x in s)}: {last} "
                      f"({sec:.0f} s)", flush=True)
                if not ok:
                    print("mutants.py: the unmutated tests fail; fix them first",
                          file=sys.stderr)
                    return 1
        for m in todo:
            d = os.path.join(tmp, m.name)
            os.mkdir(d)
            unpack(d)
            apply(d, m)
            ok, last, sec = run_tests(d, m.tests)
            status = "SURVIVED" if ok else "killed"
            print(f"{m.name:26} {m.package:11} {status:9} {sec:5.0f} s  {last}", flush=True)
            results.append({"name": m.name, "package": m.package, "what": m.what,
                            "killed": not ok, "seconds": round(sec, 1), "last": last})
            subprocess.run(["rm", "-rf", d])
    pk: dict = {}
    for r in results:
        k = pk.setdefault(r["package"], [0, 0])
        k[0] += r["killed"]
        k[1] += 1
    for p, (k, n) in sorted(pk.items()):
        print(f"score {p}: {k}/{n} killed ({100 * k / n:.0f} %)")
    tot_k = sum(k for k, _ in pk.values())
    tot_n = sum(n for _, n in pk.values())
    if tot_n:
        print(f"score all: {tot_k}/{tot_n} killed ({100 * tot_k / tot_n:.0f} %)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
