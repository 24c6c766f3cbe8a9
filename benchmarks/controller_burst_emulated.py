"""A burst of coflows from concurrent clients against ``ryu-manager`` and Open vSwitch:
latency of POST, DELETE and ``/health``, coflows left on default forwarding once the
burst is decided, and the switches' rules against the controller's view.

Mininet fat-tree (default ``fattree:4``: 16 hosts, 20 userspace-datapath switches)
with ``ryu-manager rapier_app.controller`` (:class:`mininet_tests.runner.Emulation`,
no agents, no shaping, no traffic).  ``--clients`` threads POST ``--coflows``
coflows in all (``--flows`` flows each between random hosts, distinct TCP ports;
1,000 single-flow coflows by default) as fast as the controller answers; every
fourth POST of a client is followed by the DELETE of its previous coflow (as
``controller_concurrent_rules.py`` and ``controller_decision_latency.py --mode
burst`` do).  ``/health`` is asked every 50 ms throughout.

Once the last client is done, the run waits until the burst is *decided*
(``GET /schedule``: ``queued`` 0, no coflow ``queued``) and its rules confirmed by
the switches (``/metrics``: ``rapier_rules_pending`` 0), then reads back:

* coflows left on default forwarding: active coflows whose ``decision`` is
  ``fallback`` or ``queued`` (``GET /coflows?state=active``), and
  ``rapier_coflows_fallback_total`` by reason;
* every switch's coflow rules (``ovs-ofctl dump-flows``, priority 100) against the
  active flows' paths (missing, wrong port, stale), and the rules of the DELETEd
  coflows still on a switch (must be 0);
* the controller's own reconciliation totals (``GET /schedule``'s ``reconcile``:
  repairs must be 0) after ``--settle`` more seconds (a reconciliation round of
  every switch, ``reconcile_interval_s`` 10 s by default);
* the CPU seconds ``ryu-manager`` used during the burst (``/proc``), and the
  OpenFlow messages the switches received meanwhile (Open vSwitch's
  ``ofproto_recv_openflow`` coverage counter: flow mods, barriers, statistics
  requests, echoes).

Prints JSON (``--json FILE`` writes it too).  Usage (root; under the emulation lock,
and the timing lock for figures)::

    flock /tmp/rapier-mininet.lock flock -x /tmp/rapier-timing.lock \\
        .venv/bin/python benchmarks/controller_burst_emulated.py --clients 4 --coflows 1000

Exit status 1 when a request failed, a coflow was left on default forwarding, or a
switch differs from the controller's view.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from enforcement import client  # noqa: E402
from mininet_tests import ofctl  # noqa: E402
from mininet_tests.runner import REST_PREFIX, Emulation  # noqa: E402
from rapier_app.workload_options import add_workload_options  # noqa: E402


#: Seconds between two reads of ``GET /schedule`` (and ``/metrics``) while waiting for
#: the burst to be decided: each costs the controller time in proportion to its
#: flows, so they are not asked more often (the times decided/installed are known to
#: this much).
POLL_S = 0.5


def pct(xs: List[float], q: float) -> Optional[float]:
    """The ``q`` quantile (0..1) of ``xs`` (nearest rank, s), None when empty."""
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))], 4)


def _lat(xs: List[float]) -> Dict[str, Optional[float]]:
    return {"n": len(xs), "p50_s": pct(xs, .5), "p99_s": pct(xs, .99),
            "max_s": round(max(xs), 4) if xs else None}


def metrics(rest: str) -> Dict[str, float]:
    """``/metrics`` as ``{"name{label=value}": value}`` (``prometheus_client``'s parser)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(rest + "/metrics", timeout=60) as resp:
        text = resp.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[s.name + (f"{{{labels}}}" if labels else "")] = s.value
    return out


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def openflow_received() -> Optional[int]:
    """OpenFlow messages every switch of this Open vSwitch received since it started
    (``ovs-appctl coverage/read-counter ofproto_recv_openflow``; None if unreadable)."""
    import subprocess

    r = subprocess.run(["ovs-appctl", "coverage/read-counter", "ofproto_recv_openflow"],
                       capture_output=True, text=True)
    try:
        return int(r.stdout.strip())
    except ValueError:
        return None


def active_coflows(rest: str) -> List[dict]:
    """Every active coflow with its flows (every page of ``GET /coflows``)."""
    out, offset = [], 0
    while offset is not None:
        st, page = client.request(rest, "GET", f"{REST_PREFIX}/coflows?state=active&flows=1"
                                  f"&limit=500&offset={offset}", timeout=60)
        if st != 200:
            raise RuntimeError(f"GET /coflows: {st} {page}")
        out.extend(page["coflows"])
        offset = page.get("next_offset")
    return out


def compare_switches(em, coflows: List[dict], deleted: List[tuple]) -> dict:
    """The switches' coflow rules (priority 100) against the active flows' paths in
    ``coflows`` (missing, wrong output port, stale), and how many rules of the
    ``deleted`` flows ((src IP, dst IP, TCP dst port)) are still on a switch."""
    g = em.definition.graph
    expected, pending = {}, 0
    for c in coflows:
        for f in c["flows"]:
            pending += f.get("rules", {}).get("pending", 0)
            path = f["path"]
            for i, sw in enumerate((path or [])[1:-1], start=1):
                expected[(sw, f["src_ip"], f["dst_ip"], str(f["dst_port"]))] = \
                    g.edges[sw, path[i + 1]]["port"]
    have = {}
    for sw in em.definition.switches:
        for r in ofctl.dump_flows(sw):
            if r.priority == 100:
                ports = r.output_ports()
                have[(sw, r.field("nw_src"), r.field("nw_dst"), r.field("tp_dst"))] = \
                    ports[0] if ports else None
    gone = {(s, d, str(p)) for s, d, p in deleted}
    return {"rules_expected": len(expected), "rules_on_switches": len(have),
            "missing": sum(1 for k in expected if k not in have),
            "wrong_port": sum(1 for k, p in expected.items() if k in have and have[k] != p),
            "stale": sum(1 for k in have if k not in expected),
            "deleted_rules_on_switches": sum(1 for k in have if k[1:] in gone),
            "pending_in_controller_view": pending}


def run(topology: str = "fattree:4", scheduler: str = "rapier", clients: int = 4,
        coflows: int = 1000, flows: int = 1, settle_s: float = 0.0,
        timeout_s: float = 300.0, controller_opts: Optional[dict] = None,
        seed: int = 0, cancel_after: int = 0) -> dict:
    """One burst (root, Open vSwitch; see the module docstring).

    Args:
        clients: concurrent client threads; each POSTs ``coflows // clients``
            coflows of ``flows`` flows (``size_bytes`` 1 GB each) and DELETEs its
            previous coflow after every fourth POST.
        settle_s: seconds to wait after the rules are confirmed before reading the
            controller's reconciliation totals (0: read them at once); the CPU
            ``ryu-manager`` uses meanwhile, with nothing asked of it but the poller's
            rounds, is ``ryu_cpu_settle_per_s`` (CPU seconds per second), and
            ``/health``'s latency then (asked every 50 ms) ``health_settle``.
        timeout_s: longest wait (s) for the burst to be decided and its rules confirmed.
        controller_opts: extra ``[rapier]`` options of the controller.
        cancel_after: then each client DELETEs this many of its coflows still
            active, decided and with their rules on the switches
            (:func:`cancel_decided`; 0: none).

    Returns:
        dict: ``post``, ``delete``, ``health`` (``n``, ``p50_s``, ``p99_s``,
        ``max_s``), ``errors`` (first 5 non-2xx answers), ``submit_wall_s`` (first
        POST to the last client's end), ``decided_after_s`` and ``installed_after_s``
        (from the first POST), ``active_coflows``, ``left_on_default_forwarding``
        (active coflows ``fallback`` or ``queued``), ``fallback_total`` (by reason),
        the switch comparison of :func:`compare_switches`, ``reconcile`` (the
        controller's totals), ``decisions``, ``budget_exceeded``,
        ``ryu_cpu_s`` (CPU seconds of ``ryu-manager`` from the first POST to the rules
        confirmed), ``openflow_msgs`` (OpenFlow messages the switches received
        meanwhile: flow mods, barriers, statistics requests; :func:`openflow_received`);
        with ``cancel_after``, ``cancel_after`` (:func:`cancel_decided`).

    Raises:
        EmulationError: Mininet, Open vSwitch or the controller did not start.
        RuntimeError: not decided and confirmed within ``timeout_s``.
    """
    per = coflows // clients
    out: dict = {"topology": topology, "scheduler": scheduler, "clients": clients,
                 "coflows": per * clients, "flows_per_coflow": flows}
    with Emulation(topology, scheduler=scheduler, bw_mbps=None, enforce=False,
                   controller_opts=controller_opts) as em:
        hosts = list(em.definition.hosts)
        ip = {h: em.definition.graph.nodes[h]["ip"] for h in hosts}
        post_lat, del_lat, health_lat, errors = [], [], [], []
        bodies: Dict[str, dict] = {}
        deleted: List[tuple] = []
        done = threading.Event()

        def health(lat=health_lat, stop=done):
            while not stop.is_set():
                t = time.perf_counter()
                try:
                    st, _ = client.request(em.rest, "GET", REST_PREFIX + "/health", timeout=30)
                except OSError as exc:
                    st = repr(exc)
                lat.append(time.perf_counter() - t)
                if st != 200:
                    errors.append(("health", st))
                stop.wait(0.05)

        def worker(k):
            rnd = random.Random(seed * 1000 + k)
            for i in range(per):
                fl = []
                for j in range(flows):
                    s, d = rnd.sample(hosts, 2)
                    fl.append({"src": s, "dst": d, "size_bytes": 10 ** 9,
                               "dst_port": 10000 + (k * per + i) * flows + j})
                cid = f"k{k}-{i}"
                bodies[cid] = {"id": cid, "flows": fl}
                t = time.perf_counter()
                st, obj = client.request(em.rest, "POST", REST_PREFIX + "/coflows",
                                         bodies[cid], timeout=120)
                post_lat.append(time.perf_counter() - t)
                if st != 201:
                    errors.append(("POST", st, obj))
                if i % 4 == 3:
                    prev = f"k{k}-{i - 1}"
                    t = time.perf_counter()
                    st, obj = client.request(em.rest, "DELETE", f"{REST_PREFIX}/coflows/{prev}",
                                             timeout=120)
                    del_lat.append(time.perf_counter() - t)
                    if st != 200:
                        errors.append(("DELETE", st, obj))
                    deleted.extend((ip[f["src"]], ip[f["dst"]], f["dst_port"])
                                   for f in bodies[prev]["flows"])

        h = threading.Thread(target=health)
        h.start()
        cpu0, of0 = _cpu_s(em.ryu.pid), openflow_received()
        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            out["submit_wall_s"] = round(time.perf_counter() - t0, 2)
            deadline = time.perf_counter() + timeout_s
            decided = installed = None
            while time.perf_counter() < deadline:
                _, sch = client.request(em.rest, "GET", REST_PREFIX + "/schedule", timeout=60)
                if decided is None and not sch.get("queued"):
                    decided = time.perf_counter() - t0
                if decided is not None:
                    m = metrics(em.rest)
                    if m.get("rapier_rules_pending", 1) == 0:
                        installed = time.perf_counter() - t0
                        break
                time.sleep(POLL_S)
            if installed is None:
                raise RuntimeError(f"burst not decided with its rules confirmed within "
                                   f"{timeout_s} s (decided: {decided})")
            out["decided_after_s"] = round(decided, 2)
            out["installed_after_s"] = round(installed, 2)
            out["ryu_cpu_s"] = round(_cpu_s(em.ryu.pid) - cpu0, 1)
            of1 = openflow_received()
            out["openflow_msgs"] = None if None in (of0, of1) else of1 - of0
        finally:
            done.set()
            h.join()
        out["post"], out["delete"], out["health"] = _lat(post_lat), _lat(del_lat), \
            _lat(health_lat)
        out["errors"] = [list(map(str, e)) for e in errors[:5]]
        out["n_errors"] = len(errors)
        act = active_coflows(em.rest)
        out["active_coflows"] = len(act)
        out["left_on_default_forwarding"] = sum(
            1 for c in act if c.get("decision") in ("fallback", "queued"))
        out.update(compare_switches(em, act, deleted))
        if cancel_after > 0:
            out["cancel_after"] = cancel_decided(em, act, clients, cancel_after, ip)
        if settle_s > 0:
            settle_lat: List[float] = []
            stop = threading.Event()
            h = threading.Thread(target=health, args=(settle_lat, stop))
            c0 = _cpu_s(em.ryu.pid)
            h.start()
            time.sleep(settle_s)
            stop.set()
            h.join()
            out["ryu_cpu_settle_per_s"] = round((_cpu_s(em.ryu.pid) - c0) / settle_s, 3)
            out["health_settle"] = _lat(settle_lat)
            out["n_errors"] = len(errors)
        _, sch = client.request(em.rest, "GET", REST_PREFIX + "/schedule", timeout=60)
        out["reconcile"] = dict(sch.get("reconcile") or {})
        out["decisions"] = sch.get("count")
        out["budget_exceeded"] = sch.get("budget_exceeded")
        m = metrics(em.rest)
        out["fallback_total"] = {k.split("reason=")[1].rstrip("}"): v for k, v in m.items()
                                 if k.startswith("rapier_coflows_fallback_total{")}
        out["rules_installed_metric"] = m.get("rapier_rules_installed")
    return out


def cancel_decided(em, act: List[dict], clients: int, per_client: int,
                   ip: Dict[str, str], timeout_s: float = 10.0) -> dict:
    """After the burst: ``clients`` threads each DELETE ``per_client`` of their
    coflows still active in ``act`` (decided, their rules on the switches), then the
    switches are read back (:func:`compare_switches`) until none of their rules is
    left and the switches equal the controller's view again (the DELETEs trigger new
    decisions that may move other coflows' rules), for at most ``timeout_s`` seconds.

    Returns:
        dict: ``delete`` (latency of these DELETEs), ``cancelled``,
        ``deleted_rules_before`` (their rules on the switches before the DELETEs),
        ``gone_after_s`` (when the cancelled coflows' rules were first all gone; None:
        still there after ``timeout_s``), ``errors``, and the last comparison's keys.
    """
    mine: Dict[int, List[dict]] = {k: [] for k in range(clients)}
    for c in act:
        k = int(c["id"][1:].split("-")[0])
        if len(mine[k]) < per_client:
            mine[k].append(c)
    victims = [c for k in mine for c in mine[k]]
    flows = [(f["src_ip"], f["dst_ip"], f["dst_port"]) for c in victims for f in c["flows"]]
    before = compare_switches(em, act, flows)["deleted_rules_on_switches"]
    lat, errors = [], []

    def canceller(k):
        for c in mine[k]:
            t = time.perf_counter()
            st, obj = client.request(em.rest, "DELETE", f"{REST_PREFIX}/coflows/{c['id']}",
                                     timeout=60)
            lat.append(time.perf_counter() - t)
            if st != 200:
                errors.append(("DELETE", st, obj))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=canceller, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gone, cmp = None, {}
    while time.perf_counter() - t0 < timeout_s:
        # the DELETEs end coflows, so the controller decides again and may move other
        # coflows' rules: a read of its view and one of the switches can straddle that
        # move, so the switches are read until they equal the view (or timeout_s)
        cmp = compare_switches(em, active_coflows(em.rest), flows)
        if gone is None and cmp["deleted_rules_on_switches"] == 0:
            gone = round(time.perf_counter() - t0, 2)
        if gone is not None and cmp["pending_in_controller_view"] == 0 and \
                cmp["missing"] == cmp["wrong_port"] == cmp["stale"] == 0:
            break
        time.sleep(0.2)
    return dict(cmp, delete=_lat(lat), cancelled=len(victims), deleted_rules_before=before,
                gone_after_s=gone, errors=[list(map(str, e)) for e in errors[:5]],
                n_errors=len(errors))


def failed(out: dict) -> bool:
    """True when the run broke the burst's criteria (a request failed, a coflow left
    on default forwarding, a switch not equal to the controller's view)."""
    after = out.get("cancel_after") or {}
    return bool(out["n_errors"] or out["left_on_default_forwarding"] or out["missing"]
                or out["wrong_port"] or out["stale"] or out["deleted_rules_on_switches"]
                or after.get("n_errors") or (after and after["gone_after_s"] is None))


def main(argv=None) -> int:
    """Run once, print the figures as JSON; 1 when :func:`failed`."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_options(ap, "topology", topology=dict(default="fattree:4"))
    ap.add_argument("--scheduler", default="rapier")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--coflows", type=int, default=1000, help="coflows in all (default 1000)")
    ap.add_argument("--flows", type=int, default=1, help="flows per coflow (default 1)")
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds before reading the reconciliation totals (default 0)")
    ap.add_argument("--cancel-after", type=int, default=0, metavar="N",
                    help="then each client cancels N of its decided coflows (default 0)")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--json", default="", help="also write the JSON to this file")
    args = ap.parse_args(argv)
    out = run(args.topology, args.scheduler, args.clients, args.coflows, args.flows,
              args.settle, args.timeout, cancel_after=args.cancel_after)
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 1 if failed(out) else 0


if __name__ == "__main__":
    sys.exit(main())
