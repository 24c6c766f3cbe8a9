"""Hand-off latency in an emulated run (issue 13): how long freed bandwidth waits.

Usage::

    python benchmarks/emulation_handoff.py OUT/run-rapier.json [OUT/run-*.json ...]

``OUT`` is a ``rapier-emulate --out`` folder.  For each run file prints:

* completion -> decision: for every flow completion (the receiver's last byte,
  ``finish_s``), the time (s) until the controller's next decision in the run's
  ``schedule_timeline``; median and 90th percentile;
* decision -> rate: for every decision that raised a flow's rate to at least 1.5x
  its previous one (from 0 included), the time (s) until one of the flow's 100 ms
  ``received`` samples ending after the decision carries at least 80 % of the new
  rate x the run's goodput factor.  The sample may start before the decision, so
  the figure is an upper bound, at 100 ms resolution.  Split by kind: ``start`` (the
  flow's first allocation), ``resume`` (from a rate of 0: a paused flow, held at
  the agent's floor) and ``raise`` (from a positive rate).

The sum of the two is the time a hand-off (a flow or coflow finishing, its
bandwidth given to the next one) leaves that bandwidth unused; the simulator hands
it over in zero time.  Raises ``SystemExit`` naming the run file when it is
missing, not JSON, or has no coflows or schedule timeline.
"""

import json
import statistics
import sys


def handoff(run: dict) -> dict:
    """The two latency lists (s) of the module docstring for one run dict."""
    flows = {f["flow_id"]: f for c in run["coflows"] for f in c["flows"]}
    tl = run.get("schedule_timeline")
    if not tl:
        raise SystemExit("schedule_timeline: missing (not a rapier-emulate run-*.json)")
    dts = sorted(d["t_s"] for d in tl)
    to_decision = []
    for x in sorted(f["finish_s"] for f in flows.values() if f.get("finish_s") is not None):
        nxt = next((t for t in dts if t >= x), None)
        if nxt is not None:
            to_decision.append(nxt - x)
    good = run.get("goodput") or 1.0
    prev: dict = {}
    to_rate = []
    kinds = {"start": [], "resume": [], "raise": []}
    for d in tl:
        t = d["t_s"]
        for fid, a in d["allocations"].items():
            new, old = a["rate_bps"], prev.get(fid, 0.0)
            kind = "start" if fid not in prev else ("resume" if old <= 0 else "raise")
            prev[fid] = new
            f = flows.get(fid)
            if f is None or new <= 0 or new < 1.5 * max(old, 1.0):
                continue
            rec = f.get("received") or []
            for (t1, b1), (t2, b2) in zip(rec, rec[1:]):
                if t2 <= t:
                    continue
                if b2 >= f["size_bytes"]:
                    break
                if (b2 - b1) * 8 / (t2 - t1) >= 0.8 * new * good:
                    to_rate.append(t2 - t)
                    kinds[kind].append(t2 - t)
                    break
    return {"to_decision_s": to_decision, "to_rate_s": to_rate,
            **{f"to_rate_{k}_s": v for k, v in kinds.items()}}


def _q(v, p):
    return sorted(v)[min(len(v) - 1, int(p * len(v)))] if v else float("nan")


def main(argv) -> int:
    if not argv:
        raise SystemExit("usage: emulation_handoff.py OUT/run-NAME.json [...]")
    for path in argv:
        try:
            with open(path) as fh:
                run = json.load(fh)
        except (OSError, ValueError) as exc:
            raise SystemExit(f"run file: {path}: {exc}")
        if not isinstance(run, dict) or "coflows" not in run:
            raise SystemExit(f"run file: {path}: not a rapier-emulate run-*.json (no coflows)")
        h = handoff(run)
        a, b = h["to_decision_s"], h["to_rate_s"]
        print(f"{run.get('scheduler', path)}: {len(a)} completions, completion -> decision "
              f"median {statistics.median(a) if a else float('nan'):.3f} s, p90 {_q(a, .9):.3f} s; "
              f"{len(b)} rate raises, decision -> 80 % of the rate median "
              f"{statistics.median(b) if b else float('nan'):.3f} s, p90 {_q(b, .9):.3f} s")
        for k in ("start", "resume", "raise"):
            v = h[f"to_rate_{k}_s"]
            print(f"    {k:7s} {len(v):4d} raises, median "
                  f"{statistics.median(v) if v else float('nan'):.3f} s, p90 {_q(v, .9):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
