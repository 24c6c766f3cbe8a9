"""Mutation score of the unit tests: plant deliberate bugs, see which tests notice.

A curated list of hand-written mutants over ``rapier_app/scheduling``,
``rapier_app/sim`` and ``rapier_app/controller/core.py``, each a
one-line change chosen to be a bug that matters (a capacity check widened, a
scheduler's order reversed, work conservation switched off, an empty schedule, ...).
For each mutant the committed tree (``git archive HEAD``) is unpacked into a
temporary directory, the mutant applied there (the working tree is never touched),
and the mutant's targeted test subset run with ``pytest -x``; the mutant is *killed*
when a test fails, *survives* when all pass.  The unmutated subsets run first and
must pass.

Usage (not part of CI; about 4-6 min of CPU for the whole list on this machine)::

    .venv/bin/python tools/mutants.py                 # every mutant
    .venv/bin/python tools/mutants.py --only sim-slack,varys-no-wc
    .venv/bin/python tools/mutants.py --list
    .venv/bin/python tools/mutants.py --json out.json

Why not mutmut / cosmic-ray over the whole packages: they generate hundreds of
mechanical mutants (every operator and constant) in ~5,000 lines, each needing a test
run of tens of seconds: hours of CPU on a 2-core machine shared with other work.  The
curated list measures the bugs that matter and the ones like them; see
docs/testing.md for the score and the survivors.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from typing import List, Tuple

import json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, ".venv", "bin", "python")

MUTANTS_FILE = os.path.join(ROOT, "tools", "mutants.toml")


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


def load_mutants(path: str = MUTANTS_FILE) -> List[Mutant]:
    """The mutants of ``path`` (TOML: ``[groups]`` of test files, then one
    ``[[mutant]]`` table each with name, package, path, old, new, what, tests and
    an optional count); a name in ``tests`` that is a group stands for its files.

    Raises:
        ValueError: a mutant lacks a field, naming the mutant and the field.
    """
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    groups = data.get("groups", {})
    out = []
    for i, m in enumerate(data.get("mutant", [])):
        try:
            tests = [t for name in m["tests"] for t in groups.get(name, [name])]
            out.append(Mutant(m["name"], m["package"], m["path"], m["old"], m["new"],
                              m["what"], tests, int(m.get("count", 1))))
        except KeyError as exc:
            raise ValueError(f"{path}: mutant {m.get('name', i)}: missing field "
                             f"{exc.args[0]}") from None
    return out


MUTANTS = load_mutants()


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
