"""Link failure on Mininet: take down a link on an active flow's path and measure how
fast the controller moves the flow and when it completes (docs/operations.md).

Workload: one flow h1 -> h5 (``--size-mb``, default 15 MB) on leafspine:3,3,3 with
20 Mbit/s links, RAPIER, enforcing agents.  ``--fail-at S`` seconds after the
submission the cable between the flow's first leaf (l1) and its spine is taken
down with Mininet's ``configLinkStatus`` (both interfaces down: Open vSwitch sends
``OFPPortStatus``); ``--restore-at S`` brings it back.  The reverse direction (ACKs,
on default forwarding) needs the recomputed default forwarding here: l2's ECMP
group towards h1 would otherwise still hash onto the spine whose port to l1 is down.

Prints JSON: ``moved_controller_s`` (from taking the link down to ``GET
/coflows/<id>`` showing a path without that spine), ``moved_switch_s`` (to the
first-hop switch's rule, read with ``ovs-ofctl``, outputting elsewhere), the paths,
``cct_s`` measured by the receiver, and the controller's state.

Usage (root, Open vSwitch running; about 20 s per run)::

    .venv/bin/python benchmarks/controller_link_failure.py               # reference
    .venv/bin/python benchmarks/controller_link_failure.py --fail-at 2
"""

import argparse
import json
import os
import sys
import time
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mininet_tests import ofctl  # noqa: E402
from mininet_tests.runner import Emulation  # noqa: E402
from rapier_app.core.model import CoflowSpec, FlowSpec  # noqa: E402

MB = 1_000_000


def run(fail_at: Optional[float] = None, restore_at: Optional[float] = None,
        size_mb: float = 15.0, bw_mbps: float = 20.0) -> dict:
    """One run (root, Open vSwitch running).

    Args:
        fail_at: seconds after submission to take the flow's l1-spine cable down
            (None: reference run without failure).
        restore_at: seconds after submission to bring it back (None: never).
        size_mb: flow size in MB (10^6 bytes).
        bw_mbps: link speed in Mbit/s.

    Returns:
        dict: ``path_before``, ``link_down`` ([spine, first leaf]), ``failed_s``,
        ``moved_controller_s`` / ``moved_switch_s`` (s after the failure; None when
        not seen), ``path_after``, ``restored_s``, ``returned_controller_s`` (s
        after the restore until the controller's path uses the spine again; the
        scheduler, deterministic, plans on the whole fabric and puts the flow
        back), ``cct_s`` (receiver), ``state``
        (controller), ``links_moved_log`` (controller log lines).

    Raises:
        EmulationError: the flow did not finish within 120 s, or the emulation did
            not start.
    """
    spec = CoflowSpec("lf", 0.0, (FlowSpec("lf/0", "lf", "h1", "h5", size_mb * MB, 5501),))
    ev: dict = {"size_mb": size_mb, "bw_mbps": bw_mbps}
    with Emulation("leafspine:3,3,3", scheduler="rapier", bw_mbps=bw_mbps) as em:
        g = em.definition.graph

        def monitor(t):
            if fail_at is None:
                return
            if "failed_s" not in ev and t >= fail_at:
                f = em.coflow_state("lf")["flows"][0]
                path = f["path"]
                ev["path_before"] = path
                ev["flow"] = (f["src_ip"], f["dst_ip"], f["dst_port"])
                leaf1, spine = path[1], path[2]
                ev["link_down"] = [spine, leaf1]
                ev["old_port"] = g.edges[leaf1, spine]["port"]
                em.net.configLinkStatus(leaf1, spine, "down")
                ev["_t_fail"] = time.time()
                ev["failed_s"] = round(t, 2)
                return
            if "failed_s" in ev:
                dt = time.time() - ev["_t_fail"]
                spine = ev["link_down"][0]
                if "moved_controller_s" not in ev:
                    path = (em.coflow_state("lf") or {}).get("flows", [{}])[0].get("path")
                    if path and spine not in path:
                        ev["moved_controller_s"] = round(dt, 3)
                        ev["path_after"] = path
                if "moved_switch_s" not in ev:
                    leaf1 = ev["path_before"][1]
                    rules = ofctl.flow_rules(ofctl.dump_flows(leaf1), *ev["flow"])
                    ports = [p for r in rules for p in r.output_ports()]
                    if ports and ev["old_port"] not in ports:
                        ev["moved_switch_s"] = round(time.time() - ev["_t_fail"], 3)
                if restore_at is not None and "restored_s" not in ev and t >= restore_at:
                    em.net.configLinkStatus(ev["link_down"][1], spine, "up")
                    ev["restored_s"] = round(t, 2)
                    ev["_t_up"] = time.time()
                elif "restored_s" in ev and "returned_controller_s" not in ev:
                    path = (em.coflow_state("lf") or {}).get("flows", [{}])[0].get("path")
                    if path and spine in path:
                        ev["returned_controller_s"] = round(time.time() - ev["_t_up"], 3)

        res = em.run_coflows([spec], timeout_s=120, monitor=monitor)
        ev["cct_s"] = round(res.coflows[0].cct_s, 2)
        st = em.coflow_state("lf") or {}
        ev["state"] = st.get("state")
        ev.pop("_t_fail", None)
        ev.pop("_t_up", None)
        if fail_at is not None:
            ev.setdefault("moved_controller_s", None)
            ev.setdefault("moved_switch_s", None)
        with open(os.path.join(em.workdir, "ryu.log")) as fh:
            ev["links_moved_log"] = [ln.strip()[-160:] for ln in fh if "moved off" in ln]
    return ev


def main(argv=None) -> int:
    """Run once and print JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fail-at", type=float, default=None, help="s after submission")
    ap.add_argument("--restore-at", type=float, default=None, help="s after submission")
    ap.add_argument("--size-mb", type=float, default=15.0)
    args = ap.parse_args(argv)
    print(json.dumps(run(args.fail_at, args.restore_at, args.size_mb), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
