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
byte), when the controller recorded every coflow done, the CCTs measured by the
receivers and by the controller, and the controller's "restored ..." log line.

Usage (root, Open vSwitch running; about 30 s per run)::

    .venv/bin/python benchmarks/controller_restart.py          # reference run
    .venv/bin/python benchmarks/controller_restart.py --kill-at 1.5
    .venv/bin/python benchmarks/controller_restart.py --workload queued --kill-at 1.5
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from enforcement import client  # noqa: E402
from mininet_tests.runner import REST_PREFIX, Emulation  # noqa: E402
from rapier_app.core.model import CoflowSpec, FlowSpec  # noqa: E402

MB = 1_000_000


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
        byte at its receiver), ``controller_done_s`` (s from submission), ``states`` (coflow id -> state from ``GET /coflows``),
        ``cct_receivers_s``, ``cct_controller_s``, ``restored`` (log lines).

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
        ev["states"] = states
        ev["cct_receivers_s"] = {c.coflow_id: round(c.cct_s, 2) for c in res.coflows}
        ev["cct_controller_s"] = {c["id"]: c["cct_s"] and round(c["cct_s"], 2)
                                  for c in body["coflows"] if c["id"] != "warmup"}
        with open(os.path.join(em.workdir, "ryu.log")) as fh:
            ev["restored"] = [ln.strip() for ln in fh if "coflows from" in ln]
    return ev


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
