"""Hand-off latency in an emulated run (issue 13): how long freed bandwidth waits.

Usage::

    python benchmarks/emulation_handoff.py OUT/run-rapier.json [OUT/run-*.json ...]

``OUT`` is a ``rapier-emulate --out`` folder.  For each run file prints:

* completion -> decision: for every flow completion (the receiver's last byte,
  ``finish_s``), the time (s) until the controller's next decision in the run's
  ``schedule_timeline``; median and 90th percentile.  The run polls the controller's
  schedule every 0.1 s (``runner.SCHEDULE_POLL_S``), so this is an upper bound that
  includes up to 0.1 s of polling;
* decision -> rate: for every decision that raised a flow's rate to at least 1.5x
  its previous one (from 0 included), the time (s) until one of the flow's 100 ms
  ``received`` samples ending after the decision carries at least 80 % of the new
  rate x the run's goodput factor.  The sample may start before the decision, so
  the figure is an upper bound, at 100 ms resolution.  Split by kind: ``start`` (the
  flow's first allocation), ``resume`` (from a rate of 0: a paused flow, held at
  the agent's floor) and ``raise`` (from a positive rate).

When the run's working folder (``workdir`` in ``summary.json``) still holds the
agents' logs, also, from their ``limits now`` lines (millisecond timestamps):

* last byte -> raise in force: for every limit raised (at least 1.5x) at a sender's
  agent with a flow completion, and no coflow arrival, since the previous one, the
  time from that completion's last byte to the agent's ``tc`` change: the
  controller's whole hand-off (report, decision, push, ``tc``);
* raise in force -> rate: from the agent's change to the first 100 ms sample at 80 %
  of the new rate (an upper bound at 100 ms resolution), split into ``resume``
  (from the floor) and ``raise``, and how many never got there before the next
  change: TCP's and HTB's part.

The sum of the two is the time a hand-off (a flow or coflow finishing, its
bandwidth given to the next one) leaves that bandwidth unused; the simulator hands
it over in zero time.  Raises ``SystemExit`` naming the run file when it is
missing, not JSON, or has no coflows or schedule timeline.
"""

import glob
import json
import os
import re
import statistics
import sys
from datetime import datetime, timezone

_LIMITS = re.compile(r"^(\S+ \S+) rapier-agent INFO limits now: (.*)$")


def agent_raises(workdir: str):
    """[(unix time s, flow id, old bit/s or None, new bit/s)] for every limit an
    agent of ``workdir`` set at least 1.5x its previous one (None: a new flow), from
    the ``limits now`` lines of ``agent-*.log`` (UTC timestamps, ms)."""
    ev = []
    for path in glob.glob(os.path.join(workdir, "agent-*.log")):
        prev: dict = {}
        with open(path) as fh:
            for line in fh:
                m = _LIMITS.match(line.strip())
                if not m:
                    continue
                t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(
                    tzinfo=timezone.utc).timestamp()
                cur = {}
                if m.group(2) != "none":
                    for item in m.group(2).split(", "):
                        fid, _, r = item.partition("=")
                        cur[fid] = float(r.replace("Mbit/s", "")) * 1e6
                for fid, r in cur.items():
                    old = prev.get(fid)
                    if old is None or r >= 1.5 * max(old, 1.0):
                        ev.append((t, fid, old, r))
                prev = cur
    return sorted(ev)


def agent_handoff(run: dict, workdir: str, goodput: float) -> dict:
    """The agent-log figures of the module docstring (lists of seconds)."""
    t0 = run["t0_unix_s"]
    flows = {f["flow_id"]: f for c in run["coflows"] for f in c["flows"]}
    fins = sorted(t0 + f["finish_s"] for f in flows.values() if f.get("finish_s") is not None)
    arr = sorted(t0 + c["arrival_s"] for c in run["coflows"])
    out = {"in_force_s": [], "resume_s": [], "raise_s": [], "never_resume": 0,
           "never_raise": 0}
    for t, fid, old, r in agent_raises(workdir):
        if old is None:
            continue
        prior = [x for x in fins if x <= t]
        if prior and not any(prior[-1] < a <= t for a in arr):
            out["in_force_s"].append(t - prior[-1])
        f = flows.get(fid)
        if f is None:
            continue
        kind = "resume" if old < 0.1e6 else "raise"
        rec = f.get("received") or []
        got = None
        for (t1, b1), (t2, b2) in zip(rec, rec[1:]):
            if t0 + t2 <= t:
                continue
            if b2 >= f["size_bytes"]:
                break
            if (b2 - b1) * 8 / (t2 - t1) >= 0.8 * r * goodput:
                got = t0 + t2 - t
                break
        if got is None:
            out[f"never_{kind}"] += 1
        else:
            out[f"{kind}_s"].append(got)
    return out


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
        try:
            with open(os.path.join(os.path.dirname(path), "summary.json")) as fh:
                summ = json.load(fh)["results"][run["scheduler"]]
        except (OSError, ValueError, KeyError):
            continue
        wd = summ.get("workdir")
        if not wd or not glob.glob(os.path.join(wd, "agent-*.log")) or "t0_unix_s" not in run:
            continue
        g = agent_handoff(run, wd, summ.get("goodput") or 1.0)
        v = g["in_force_s"]
        print(f"    agents' logs: last byte -> raise in force at the sender's agent: "
              f"{len(v)} raises, median {statistics.median(v) if v else float('nan'):.3f} s, "
              f"p90 {_q(v, .9):.3f} s")
        for k in ("resume", "raise"):
            v = g[f"{k}_s"]
            print(f"    agents' logs: {k} in force -> 80 % of the rate: {len(v)}, median "
                  f"{statistics.median(v) if v else float('nan'):.3f} s, p90 {_q(v, .9):.3f} s; "
                  f"{g['never_' + k]} never before the next change")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
