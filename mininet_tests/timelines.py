"""Per-flow timelines of an emulated run and of the simulator, and their plot.

An emulated flow's timeline is sampled every ``step_s`` (0.1 s) from the run's start
to its finish: the rate the controller had set for it (bit/s, from the schedule the
run polled every 0.1 s: ``RunResult.schedule_timeline``; 0 when it had none) and the
bytes its receiver had (linear between the receiver's own samples, taken at most
every 0.1 s).  The simulator's timeline is the same grid read from its event log
(:class:`rapier_app.sim.EventRecord`: rate in force and bytes sent).  A
deviation then shows where it comes from: a late rate (push latency), a flow below
its rate (TCP ramp-up, headers), or a late finish.

Units: seconds, bytes, bit/s.
"""

from __future__ import annotations

import bisect
import math
from typing import Dict, List, Optional, Sequence

#: Grid step of the timelines, seconds.
STEP_S = 0.1


def _grid(end_s: float, step_s: float) -> List[float]:
    n = max(1, int(math.ceil(end_s / step_s - 1e-9)))
    return [round(i * step_s, 6) for i in range(n + 1)]


def _interp(samples: Sequence[Sequence[float]], t: float) -> float:
    """Linear interpolation of ``[[t, bytes], ...]`` at ``t`` (0 before, last after)."""
    if not samples or t <= samples[0][0]:
        return 0.0 if not samples or t < samples[0][0] else float(samples[0][1])
    ts = [s[0] for s in samples]
    i = bisect.bisect_right(ts, t)
    if i >= len(samples):
        return float(samples[-1][1])
    (t0, b0), (t1, b1) = samples[i - 1], samples[i]
    return float(b0 + (b1 - b0) * (t - t0) / (t1 - t0)) if t1 > t0 else float(b1)


def emulated_timelines(run: dict, step_s: float = STEP_S) -> Dict[str, dict]:
    """Per-flow timelines of an emulated run.

    Args:
        run: ``RunResult.to_dict()`` (``coflows`` with per-flow ``received`` samples,
            ``schedule_timeline`` with per-change ``allocations``).

    Returns:
        ``{flow_id: {"t_s": [...], "rate_bps": [...], "received_bytes": [...],
        "finish_s": float}}``, each list on the grid ``0, step_s, ...`` up to the
        flow's finish.
    """
    sched = run.get("schedule_timeline") or []
    sched_t = [e["t_s"] for e in sched]
    out: Dict[str, dict] = {}
    for c in run["coflows"]:
        for f in c["flows"]:
            fid = f["flow_id"]
            grid = _grid(f["finish_s"], step_s)
            rates = []
            for t in grid:
                i = bisect.bisect_right(sched_t, t) - 1
                a = sched[i]["allocations"].get(fid) if i >= 0 else None
                rates.append(float(a.get("rate_bps") or 0.0) if a else 0.0)
            got = [min(_interp(f.get("received") or [], t), f["size_bytes"]) for t in grid]
            out[fid] = {"t_s": grid, "rate_bps": rates, "received_bytes": got,
                        "finish_s": f["finish_s"]}
    return out


def simulated_timelines(event_log: Sequence, sizes: Dict[str, float],
                        step_s: float = STEP_S) -> Dict[str, dict]:
    """Per-flow timelines of a simulator run from its event log.

    Args:
        event_log: the simulator's EventRecords (``t_s``, ``t_next_s``, ``flow_ids``,
            ``rates_bps``, ``remaining_bytes``, ``finish_s``), in time order.
        sizes: flow id -> size in bytes.

    Returns:
        ``{flow_id: {"t_s", "rate_bps", "sent_bytes", "finish_s"}}`` on the grid
        ``0, step_s, ...`` up to the flow's finish.
    """
    spans: Dict[str, list] = {}
    finish: Dict[str, float] = {}
    for ev in event_log:
        for i, fid in enumerate(ev.flow_ids):
            spans.setdefault(fid, []).append((ev.t_s, ev.t_next_s, float(ev.rates_bps[i]),
                                              float(ev.remaining_bytes[i])))
            if math.isfinite(ev.finish_s[i]):
                finish[fid] = float(ev.finish_s[i])
    out: Dict[str, dict] = {}
    for fid, sp in spans.items():
        size = float(sizes.get(fid, 0.0))
        end = finish.get(fid, sp[-1][1])
        grid = _grid(end if math.isfinite(end) else sp[-1][0], step_s)
        starts = [s[0] for s in sp]
        rates, sent = [], []
        for t in grid:
            i = bisect.bisect_right(starts, t) - 1
            if i < 0:
                rates.append(0.0)
                sent.append(0.0)
                continue
            t0, _t1, r, rem = sp[i]
            done = t >= finish.get(fid, math.inf)
            rates.append(0.0 if done else r)
            sent.append(size if done else min(size, size - rem + r * (t - t0) / 8.0))
        out[fid] = {"t_s": grid, "rate_bps": rates, "sent_bytes": sent,
                    "finish_s": finish.get(fid)}
    return out


def plot_coflow(coflow_id: str, emu: Dict[str, dict], sim: Dict[str, dict], path: str,
                title: str = "", arrival_s: float = 0.0,
                sim_arrival_s: Optional[float] = None) -> str:
    """Draw one coflow's flows, emulated beside simulated, into the PNG ``path``.

    Top panel: per flow, the controller's rate (emulated, solid steps), the receiver's
    goodput over each step (emulated, dots) and the simulator's rate (dashed), in
    Mbit/s.  Bottom panel: bytes received (emulated) and sent (simulated), MB.  Times
    are from the coflow's arrival in each run (``arrival_s``, ``sim_arrival_s``).

    Returns:
        ``path``.

    Raises:
        KeyError: ``coflow_id`` has no flow in ``emu``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fids = sorted((f for f in emu if f.split("/")[0] == coflow_id),
                  key=lambda f: int(f.rsplit("/", 1)[1]))
    if not fids:
        raise KeyError(f"coflow {coflow_id!r}: no flow in the emulated timelines")
    sa = arrival_s if sim_arrival_s is None else sim_arrival_s
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, fid in enumerate(fids):
        col = colors[k % len(colors)]
        e = emu[fid]
        te = [t - arrival_s for t in e["t_s"]]
        ax1.step(te, [r / 1e6 for r in e["rate_bps"]], where="post", color=col,
                 label=f"{fid} controller rate")
        gp = [0.0] + [(b1 - b0) * 8 / (t1 - t0) / 1e6 for t0, t1, b0, b1 in
                      zip(e["t_s"], e["t_s"][1:], e["received_bytes"], e["received_bytes"][1:])]
        ax1.plot(te, gp, ".", color=col, ms=3, label=f"{fid} received (emulated)")
        ax2.plot(te, [b / 1e6 for b in e["received_bytes"]], color=col, label=f"{fid} emulated")
        s = sim.get(fid)
        if s:
            ts = [t - sa for t in s["t_s"]]
            ax1.step(ts, [r / 1e6 for r in s["rate_bps"]], where="post", color=col,
                     ls="--", alpha=0.7, label=f"{fid} simulated rate")
            ax2.plot(ts, [b / 1e6 for b in s["sent_bytes"]], color=col, ls="--",
                     label=f"{fid} simulated")
    ax1.set_ylabel("Mbit/s")
    ax2.set_ylabel("MB")
    ax2.set_xlabel(f"seconds since coflow {coflow_id} arrived")
    ax1.set_xlim(left=0)
    ax1.legend(fontsize=6, ncol=2)
    ax2.legend(fontsize=6, ncol=2)
    fig.suptitle(title or f"coflow {coflow_id}: emulated (solid) vs simulated (dashed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
