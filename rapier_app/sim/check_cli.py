"""``rapier-check``: run the independent schedule checker on an event file.

Examples::

    rapier-sim --topology fattree:4 --synthetic 10,8,0.1 --schedulers rapier,baseline \\
        --no-plot --no-bound --trace-events events.jsonl
    rapier-check events.jsonl                 # workload rebuilt from the headers
    rapier-check events.jsonl --json --level path

(A Facebook trace needs 150 hosts: ``--topology fattree:4,19`` or ``bigswitch:150``.)

The event file holds one or more runs (``rapier-sim --trace-events``: a header, one
line per decision point, the reported CCTs).  Each run's workload is rebuilt from the
options recorded in its header (the same code path as ``rapier-sim``: trace reader,
port placement with the run's seed, synthetic generator), unless workload options are
given here, and checked by :func:`rapier_app.sim.checker.check_schedule` at the
scheduler's declared work-conservation level (``--level`` overrides it).

Exit codes: 0 no violation, 1 violations found, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from types import SimpleNamespace
from typing import List, Optional

from topologies import TopologyError

from ..core.model import WorkloadError
from ..workload_options import (UsageError, add_workload_options, fill_workload_defaults,
                                workload_from_args)
from .checker import CheckError, check_schedule, read_runs

WORKLOAD_KEYS = ("scenario", "trace", "synthetic", "topology", "link_gbps", "sizes",
                 "placement", "limit", "scale")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rapier-check``."""
    p = argparse.ArgumentParser(prog="rapier-check",
                                description="Check simulated schedules in an event file "
                                            "(rapier-sim --trace-events) independently.")
    p.add_argument("events", metavar="EVENTS.jsonl", help="event file of rapier-sim")
    add_workload_options(
        p.add_argument_group("workload (default: the options recorded in each run's header)"),
        *WORKLOAD_KEYS, "seed", bare=True, scenario=dict(choices=None),
        seed=dict(help="workload seed (default: the run's)"))
    p.add_argument("--level", choices=["auto", "none", "path", "candidates"], default="auto",
                   help="work-conservation level to check (auto: the scheduler's declared "
                        "one, recorded in the header)")
    p.add_argument("--show", type=int, default=5, help="violations printed per run")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    from ..cli_common import add_common_arguments  # --version, -v/-q (every console script)
    add_common_arguments(p)
    return p


def _workload(header: dict, args):
    rec = dict(header.get("workload") or {})
    given = {k: getattr(args, k) for k in WORKLOAD_KEYS if getattr(args, k) is not None}
    if any(k in given for k in ("scenario", "trace", "synthetic")):
        for k in ("scenario", "trace", "synthetic"):
            rec[k] = None
    rec.update(given)
    ns = SimpleNamespace(**{k: rec.get(k) for k in WORKLOAD_KEYS})
    fill_workload_defaults(ns)
    seed = args.seed if args.seed is not None else int(header.get("seed", 1))
    try:
        topo, coflows, desc = workload_from_args(ns, seed)
    except UsageError as exc:
        raise CheckError(f"workload: {exc}") from None
    return topo, coflows, desc


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``rapier-check``; returns the exit code (module docstring)."""
    args = build_parser().parse_args(argv)
    out = []
    try:
        runs = read_runs(args.events)
        if not runs:
            raise CheckError(f"{args.events}: no run in the file")
        for header, events, ccts in runs:
            where = f"{args.events}:{header.get('_line')}: run of {header.get('scheduler')!r}"
            if ccts is None:
                raise CheckError(f"{where}: no result line (the file is truncated, or "
                                 f"rapier-sim was stopped during this run)")
            if args.level == "auto" and "work_conserving" not in header:
                raise CheckError(f"{where}: the header records no work_conserving level; "
                                 f"give --level")
            topo, coflows, desc = _workload(header, args)
            if header.get("path_slack"):  # the candidate paths the run had
                topo.set_path_slack(int(header["path_slack"]))
            level = header.get("work_conserving") if args.level == "auto" else (
                None if args.level == "none" else args.level)
            try:
                rep = check_schedule(topo, coflows, events, level=level,
                                     max_paths=header.get("max_paths"), ccts=ccts,
                                     decision_interval=float(
                                         header.get("decision_interval_s") or 0.0))
            except CheckError as exc:
                raise CheckError(f"{args.events}: {exc}") from None
            out.append({"scheduler": header.get("scheduler"), "try": header.get("try"),
                        "workload": desc, "topology": topo.name, "level": level,
                        "records": rep.records, "ok": rep.ok, "counts": rep.counts,
                        "idle_s": rep.idle_s, "max_utilisation": rep.max_utilisation,
                        "violations": [str(v) for v in rep.violations[:args.show]],
                        "_summary": rep.summary(args.show)})
    except (CheckError, WorkloadError, TopologyError, OSError) as exc:
        print(f"rapier-check: error: {exc}", file=sys.stderr)
        return 2
    for r in out:
        line = (f"{r['scheduler']} try {r['try']} ({r['workload']} on {r['topology']}, "
                f"level {r['level']}): {r.pop('_summary')}")
        print(line, file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(out))
    return 0 if all(r["ok"] for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
