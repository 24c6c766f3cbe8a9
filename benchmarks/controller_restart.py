"""Controller restart on Mininet: kill ``ryu-manager`` (SIGKILL) mid-transfer, start it
again on the same database, and measure the recovery (docs/operations.md).

Workloads on leafspine:3,3,3 with 20 Mbit/s links and enforcing agents:
``three`` (default), three coflows (7 flows, 45 MB) that share no link;
``queued``, two coflows from one sender (h1 -> h4 6 MB, then h1 -> h5 12 MB): the
second waits at the trickle rate behind the first, which finishes while the
controller is down (killed at 1.5 s, the first flow's last byte about 2.6 s), so
the second's finish shows how soon the restarted controller learns it.  Prints
JSON: when the controller was killed, how long until its REST API and every switch
were back, when the receivers had every byte (``last_byte_s``: the last flow's last
byte), ``held_s`` (how long the last flow stayed held at the trickle after the first
coflow's last byte: what a restart costs it), ``downtime_s`` (seconds from the
SIGKILL to each phase of the new process's start, to the report of the first
coflow accepted and to the held flow's release at its agent), when the controller
recorded every coflow done, the CCTs measured by the receivers and by the
controller, and the controller's "restored ..." log line.

Usage (root, Open vSwitch running; about 30 s per run)::

    .venv/bin/python benchmarks/controller_restart.py          # reference run
    .venv/bin/python benchmarks/controller_restart.py --kill-at 1.5
    .venv/bin/python benchmarks/controller_restart.py --workload queued --kill-at 1.5
"""

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from enforcement import client  # noqa: E402
from mininet_tests.runner import REST_PREFIX, Emulation  # noqa: E402
from rapier_app.core.model import CoflowSpec, FlowSpec  # noqa: E402

MB = 1_000_000

#: A rate below this (bit/s) is the trickle of a flow held behind another.
HELD_BPS = 1e6

_LIMITS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) .* limits now: (.*)$")


def agent_limits(path: str) -> List[Tuple[float, Dict[str, float]]]:
    """The limits an agent put in force, from its log (``limits now: a/0=20.000Mbit/s,
    ...`` lines, local time to the millisecond): ``[(unix s, {flow id: bit/s})]``."""
    out = []
    with open(path) as fh:
        for ln in fh:
            m = _LIMITS.match(ln.strip())
            if m:
                t = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + \
                    int(m.group(2)) / 1000
                rates = {}
                for item in m.group(3).split(", "):
                    if "=" in item:
                        fid, rate = item.split("=")
                        rates[fid] = float(rate[:-len("Mbit/s")]) * 1e6
                out.append((t, rates))
    return out


def released_at(limits: List[Tuple[float, Dict[str, float]]], flow_id: str) -> Optional[float]:
    """When (unix s) ``flow_id``'s limit last went from below :data:`HELD_BPS` (held
    behind another flow) to at least that; None if it never was held.

    The last such change, not the first: the site broker may lend a held flow some
    bandwidth for a while (its estimate of other traffic moved), and a restarted
    controller, whose estimate starts afresh, holds it again until the flow ahead is
    known to be done."""
    held, out = False, None
    for t, rates in limits:
        r = rates.get(flow_id)
        if r is not None and r < HELD_BPS:
            held = True
        elif held and r is not None:
            held, out = False, t
    return out


def workload(name: str = "three"):
    """The coflows of workload ``name`` (``three`` or ``queued``; sizes in bytes,
    all arriving at 0).  Raises ValueError for another name."""
    if name == "queued":
        return [CoflowSpec("a", 0.0, (FlowSpec("a/0", "a", "h1", "h4", 6 * MB, 5401),)),
                CoflowSpec("b", 0.0, (FlowSpec("b/0", "b", "h1", "h5", 12 * MB, 5402),))]
    if name != "three":
        raise ValueError(f"workload: must be three or queued, got {name!r}")
    return [CoflowSpec("a", 0.0, (FlowSpec("a/0", "a", "h1", "h4", 8 * MB, 5401),
                                  FlowSpec("a/1", "a", "h2", "h5", 6 * MB, 5402),
                                  FlowSpec("a/2", "a", "h3", "h6", 4 * MB, 5403))),
            CoflowSpec("b", 0.0, (FlowSpec("b/0", "b", "h4", "h7", 6 * MB, 5404),
                                  FlowSpec("b/1", "b", "h5", "h8", 6 * MB, 5405))),
            CoflowSpec("c", 0.0, (FlowSpec("c/0", "c", "h7", "h1", 5 * MB, 5406),
                                  FlowSpec("c/1", "c", "h8", "h2", 10 * MB, 5407)))]


def run(kill_at: Optional[float] = None, workload_name: str = "three") -> dict:
    """One run of :func:`workload` ``workload_name`` (root, Open vSwitch running); with ``kill_at``
    (s after submission) ``ryu-manager`` is killed (SIGKILL) and started again on
    the same database.

    Returns:
        dict: ``killed_s``, ``rest_back_after_s``, ``switches_back_after_s`` (with
        ``kill_at``), ``transfers_done_s``, ``last_byte_s`` (the last flow's last
        byte at its receiver), ``held_s`` and ``downtime_s`` (:func:`phases`),
        ``controller_done_s`` (s from submission), ``states`` (coflow id -> state
        from ``GET /coflows``), ``cct_receivers_s``, ``cct_controller_s``,
        ``restored`` (log lines).

    Raises:
        EmulationError: a transfer did not finish within 150 s, or the emulation
            did not start.
    """
    specs = workload(workload_name)
    ev = {}
    with Emulation("leafspine:3,3,3", scheduler="rapier", bw_mbps=20.0) as em:
        def restart():
            t1 = time.time()
            em._start_ryu()
            ev["rest_back_after_s"] = round(time.time() - t1, 2)
            em._wait_switches_connected()
            ev["switches_back_after_s"] = round(time.time() - t1, 2)

        def monitor(t):
            # the restart runs beside the transfers: receivers that finish while the
            # controller is down find it gone, as they would without this script
            if kill_at is not None and "killed_s" not in ev and t >= kill_at:
                os.kill(em.ryu.pid, signal.SIGKILL)
                ev["killed_unix"] = time.time()
                em.ryu.wait()
                ev["killed_s"] = round(t, 2)
                restarter.start()

        restarter = threading.Thread(target=restart, daemon=True)

        t0 = time.time()
        res = em.run_coflows(specs, timeout_s=150, monitor=monitor)
        ev["transfers_done_s"] = round(time.time() - t0, 2)
        if restarter.is_alive() or restarter.ident is not None:
            restarter.join(60)
        ev["last_byte_s"] = round(max(f.finish_s for c in res.coflows for f in c.flows), 2)
        deadline = time.time() + 60
        while time.time() < deadline:
            _, body = client.request(em.rest, "GET", REST_PREFIX + "/coflows", timeout=2)
            states = {c["id"]: c["state"] for c in body["coflows"]}
            if all(states.get(s.coflow_id) == "done" for s in specs):
                break
            time.sleep(0.5)
        ev["controller_done_s"] = round(time.time() - t0, 2)
        ev.update(phases(em, res, ev.pop("killed_unix", None)))
        ev["states"] = states
        ev["cct_receivers_s"] = {c.coflow_id: round(c.cct_s, 2) for c in res.coflows}
        ev["cct_controller_s"] = {c["id"]: c["cct_s"] and round(c["cct_s"], 2)
                                  for c in body["coflows"] if c["id"] != "warmup"}
        with open(os.path.join(em.workdir, "ryu.log")) as fh:
            ev["restored"] = [ln.strip() for ln in fh if "coflows from" in ln]
    return ev


def phases(em, res, killed_unix: Optional[float]) -> dict:
    """Where the time went: ``held`` (the flow that finished last: from the first
    coflow's last byte to its source agent putting its full rate in force, s; None
    when it was never held behind another), and with a kill ``downtime_s``: seconds
    from the SIGKILL to each phase of the new process's start (``exec``, then the
    phases of ``GET /health``'s ``startup``, rapier_app/controller/startup.py), to
    ``reported`` (the runner's report of the first coflow's flows accepted) and to
    ``released`` (the held flow's full rate in force at its agent); and
    ``startup_cpu_s``: the CPU seconds the new process had used at each phase."""
    last = max((f for c in res.coflows for f in c.flows), key=lambda f: f.finish_s)
    first = min(res.coflows, key=lambda c: c.finish_s)
    rel = released_at(agent_limits(os.path.join(em.workdir, f"agent-{last.src}.log")),
                      last.flow_id)
    out = {"held_s": None if rel is None else round(rel - res.t0_unix_s - first.finish_s, 2)}
    if killed_unix is None:
        return out
    _, health = client.request(em.rest, "GET", REST_PREFIX + "/health", timeout=5)
    st = health["startup"]
    down = {"exec": st["process_start_unix"] - killed_unix}
    down.update({k: st["process_start_unix"] + v - killed_unix
                 for k, v in st["phases_s"].items()})
    down["first_done_last_byte"] = res.t0_unix_s + first.finish_s - killed_unix
    rep = [f.reported_s for f in first.flows if f.reported_s is not None]
    if rep:
        down["reported"] = res.t0_unix_s + max(rep) - killed_unix
    if rel is not None:
        down["released"] = rel - killed_unix
    out["downtime_s"] = {k: round(v, 3) for k, v in sorted(down.items(), key=lambda kv: kv[1])}
    out["startup_cpu_s"] = st["cpu_s"]
    return out


def main(argv=None) -> int:
    """Run once and print JSON; ``--kill-at S`` kills and restarts the controller S
    seconds after the coflows were submitted."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kill-at", type=float, default=None, help="seconds after submission")
    ap.add_argument("--workload", choices=("three", "queued"), default="three",
                    help="three coflows sharing no link (default), or one queued "
                         "behind another on the same sender")
    args = ap.parse_args(argv)
    print(json.dumps(run(args.kill_at, args.workload), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
