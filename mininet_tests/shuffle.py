"""The distributed sort of ``examples/sort/`` on an emulated fabric: job time and
each shuffle's CCT under several schedulers, with and without flow sizes.

    sudo .venv/bin/python -m mininet_tests.shuffle --runs 3
    sudo .venv/bin/python -m mininet_tests.shuffle --schedulers rapier --runs 1 \\
        --records 2000,4000 --sizes on --json

For each scheduler one :class:`~mininet_tests.runner.Emulation` (leaf-spine, real
``ryu-manager``, real agents; ``baseline`` unenforced) runs ``--runs`` rounds of each
size mode.  A round runs ``--jobs`` sort jobs at once (``--records`` per mapper, one
value per job: a small job beside a large one), job ``k``'s mappers on the hosts of
leaf ``k+1`` and every job's reducers on the last leaf's hosts, so that the shuffles
compete for the reducers' links.  The driver (this module, in the root namespace)
opens one coflow per job with the client (``Controller.coflow(id=...)``), the mappers
attach to it and register each connection they accept before sending (with its size
under ``--sizes on``), report it done on the reducer's acknowledgement, and the
driver closes the coflow when its mappers exit.  Processes in Mininet hosts reach
the controller's loopback REST address through :class:`UnixRelay` (a Unix socket in
the run's folder; the hosts share the file system, not the root namespace's
loopback).

Measured per job, from the moment every reducer is launched (mappers have made their
data and listen): the shuffle's CCT (until the job's last reducer has every byte)
and the job's completion time (until its last reducer has merged and checked the
order).  Every reducer must report its output sorted, with every record.

Units: bytes, Mbit/s for links (as Mininet), seconds.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import selectors
import socket
import socketserver
import statistics
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional

from .runner import REPO, EmulationError, stop_pid

LOG = logging.getLogger("rapier-shuffle")
SORT = os.path.join(REPO, "examples", "sort", "sort.py")
CLIENT_DIR = os.path.join(REPO, "client")
SCHEDULERS = ("rapier", "scheduling-only", "aalo", "baseline")
BASE_PORT = 7000


class UnixRelay:
    """A Unix-socket listener at ``path`` whose every connection is piped to the TCP
    address ``target`` (a thread per connection; a context manager)."""

    def __init__(self, path: str, target):
        self.path, self.target = path, target
        relay = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                try:
                    up = socket.create_connection(relay.target, timeout=10)
                except OSError:
                    return
                up.settimeout(None)
                pipe(self.request, up)

        if os.path.exists(path):
            os.unlink(path)
        self.server = socketserver.ThreadingUnixStreamServer(path, Handler)
        self.server.daemon_threads = True
        os.chmod(path, 0o666)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "UnixRelay":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        if os.path.exists(self.path):
            os.unlink(self.path)


def pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways between ``a`` and ``b`` until either side closes."""
    sel = selectors.DefaultSelector()
    sel.register(a, selectors.EVENT_READ, b)
    sel.register(b, selectors.EVENT_READ, a)
    try:
        while True:
            for key, _ in sel.select():
                data = key.fileobj.recv(65536)
                if not data:
                    return
                key.data.sendall(data)
    except OSError:
        return
    finally:
        sel.close()
        b.close()


def _json_line(proc: subprocess.Popen, what: str, timeout_s: float) -> dict:
    """The next JSON line of ``proc``'s stdout (raises EmulationError on timeout/exit)."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout_s):
            raise EmulationError(f"{what}: no output within {timeout_s:.0f} s")
        line = proc.stdout.readline()
    finally:
        sel.close()
    if not line:
        err = proc.stderr.read().decode(errors="replace")[-600:] if proc.stderr else ""
        raise EmulationError(f"{what}: exited with {proc.wait()} without output: {err}")
    return json.loads(line)


def jobs_layout(hosts_by_leaf: List[List[str]], jobs: int) -> List[Dict[str, list]]:
    """Job ``k``: mappers on leaf ``k``'s hosts, reducers on the last leaf's hosts.

    Raises:
        ValueError: fewer than ``jobs + 1`` leaves.
    """
    if len(hosts_by_leaf) < jobs + 1:
        raise ValueError(f"jobs: {jobs} jobs need {jobs + 1} leaves, the fabric has "
                         f"{len(hosts_by_leaf)}")
    return [{"mappers": hosts_by_leaf[k], "reducers": hosts_by_leaf[-1]} for k in range(jobs)]


def hosts_by_leaf(definition) -> List[List[str]]:
    """The fabric's hosts grouped by the switch they hang on, in switch order."""
    g = definition.graph
    groups: Dict[str, List[str]] = {}
    for h in sorted(definition.hosts, key=lambda n: (len(n), n)):
        groups.setdefault(next(iter(g.neighbors(h))), []).append(h)
    return [groups[s] for s in sorted(groups, key=lambda n: (len(n), n))]


def run_round(emu, ctl, relay: str, tag: str, records: List[int], sizes: bool,
              timeout_s: float = 120.0) -> List[dict]:
    """One round: ``len(records)`` sort jobs at once; returns per job ``{"job",
    "coflow", "records", "bytes", "cct_s", "jct_s", "sorted"}``.

    Raises:
        EmulationError: a process failed, timed out or a reducer's output is wrong.
    """
    layout = jobs_layout(hosts_by_leaf(emu.definition), len(records))
    ip = {h: emu.definition.graph.nodes[h]["ip"] for h in emu.definition.hosts}
    env = dict(os.environ, PYTHONPATH=CLIENT_DIR)
    procs: List[subprocess.Popen] = []
    coflows = []
    try:
        maps = []
        for k, (job, n) in enumerate(zip(layout, records)):
            cf = ctl.coflow(id=f"{tag}-j{k}", name=f"sort job {k} ({tag})")
            cf.open()
            coflows.append(cf)
            for i, h in enumerate(job["mappers"]):
                cmd = [sys.executable, SORT, "map", "--index", str(i), "--reducers",
                       str(len(job["reducers"])), "--records", str(n), "--port",
                       str(BASE_PORT + k), "--seed", f"{k}{i}", "--rapier", f"unix:{relay}",
                       "--coflow", cf.id] + (["--sizes"] if sizes else [])
                p = emu.node(h).popen(cmd, env=env, cwd=REPO)
                procs.append(p)
                maps.append((k, h, p))
        for k, h, p in maps:
            _json_line(p, f"mapper of job {k} on {h}", timeout_s)
        t0 = time.time()
        reds = []
        for k, job in enumerate(layout):
            peers = ",".join(f"{ip[h]}:{BASE_PORT + k}" for h in job["mappers"])
            for j, h in enumerate(job["reducers"]):
                p = emu.node(h).popen([sys.executable, SORT, "reduce", "--index", str(j),
                                       "--mappers", peers], env=env, cwd=REPO)
                procs.append(p)
                reds.append((k, h, p))
        out = [{"job": k, "coflow": coflows[k].id, "records": n * len(layout[k]["mappers"]),
                "bytes": 0, "fetched": [], "ends": [], "sorted": True, "count": 0}
               for k, n in enumerate(records)]
        for k, h, p in reds:
            r = _json_line(p, f"reducer of job {k} on {h}", timeout_s)
            o = out[k]
            o["bytes"] += r["bytes"]
            o["count"] += r["records"]
            o["sorted"] = o["sorted"] and r["sorted"] and p.wait(10) == 0
            o["fetched"].append(r["t_fetched"])
            o["ends"].append(r["t_end"])
        for k, h, p in maps:
            _json_line(p, f"mapper of job {k} on {h}", timeout_s)
            p.wait(10)
    finally:
        for p in procs:
            if p.poll() is None:
                stop_pid(p, "sort process")
        for cf in coflows:
            cf.close()
    res = []
    for o, cf, job in zip(out, coflows, layout):
        if not o["sorted"] or o["count"] != o["records"]:
            raise EmulationError(f"job {o['job']}: reducers returned {o['count']} of "
                                 f"{o['records']} records, sorted={o['sorted']}")
        view = cf.view()
        want = len(job["mappers"]) * len(job["reducers"])
        if len(view["flows"]) != want:
            raise EmulationError(f"job {o['job']}: the controller has {len(view['flows'])} "
                                 f"flows of coflow {cf.id}, the mappers served {want}")
        res.append({"job": o["job"], "coflow": o["coflow"], "records": o["records"],
                    "bytes": o["bytes"], "cct_s": max(o["fetched"]) - t0,
                    "jct_s": max(o["ends"]) - t0, "sorted": True, "flows": want,
                    "state": view.get("state")})
    return res


def run_scheduler(scheduler: str, topology: str, link_mbps: float, records: List[int],
                  runs: int, size_modes, headroom: float = 0.9) -> List[dict]:
    """Every round of one scheduler on one fresh emulation; returns one dict per round
    ``{"scheduler", "sizes", "run", "jobs": [...], "avg_jct_s"}``."""
    from rapier_client import Controller

    from .runner import Emulation

    enforce = scheduler != "baseline"
    opts = {"link_bps": link_mbps * 1e6 * (headroom if enforce else 1.0),
            "stats_interval_s": 0.1, "stats_completion": "false"}
    rounds = []
    for attempt in (1, 2):  # start-up only, as rapier-emulate does
        emu = Emulation(topology, scheduler=scheduler, bw_mbps=link_mbps, enforce=enforce,
                        controller_opts=opts)
        try:
            emu.__enter__()
            break
        except EmulationError as exc:
            if attempt == 2:
                raise
            LOG.warning("%s: start-up failed (%s); retrying once", scheduler, exc)
    try:
        relay = os.path.join(emu.workdir, "rest.sock")
        with UnixRelay(relay, ("127.0.0.1", emu.rest_port)):
            ctl = Controller(emu.rest, timeout=10, total_timeout=20)
            for sizes in size_modes:
                for run in range(runs):
                    tag = f"{'s' if sizes else 'u'}{run}"
                    jobs = run_round(emu, ctl, relay, tag, records, sizes)
                    rounds.append({"scheduler": scheduler, "sizes": sizes, "run": run,
                                   "jobs": jobs,
                                   "avg_jct_s": statistics.mean(j["jct_s"] for j in jobs)})
                    LOG.info("%s sizes=%s run %d: %s", scheduler, sizes, run,
                             " ".join(f"job{j['job']} cct {j['cct_s']:.2f} jct "
                                      f"{j['jct_s']:.2f}" for j in jobs))
            if ctl.policy.warned:
                raise EmulationError(f"{scheduler}: the controller was unreachable from the "
                                     f"driver during the run")
    finally:
        emu.__exit__(None, None, None)
    return rounds


def table(rounds: List[dict]) -> str:
    """Markdown: per scheduler and size mode, mean over the runs of each job's CCT and
    JCT and of the average JCT (s), and ``ok/runs``."""
    keys = []
    for r in rounds:
        if (r["scheduler"], r["sizes"]) not in keys:
            keys.append((r["scheduler"], r["sizes"]))
    njobs = max(len(r["jobs"]) for r in rounds)
    head = ("| scheduler | sizes | " + " | ".join(
        f"job {k} CCT | job {k} JCT" for k in range(njobs)) + " | avg JCT | runs |")
    lines = [head, "|" + "---|" * (njobs * 2 + 4)]
    for sched, sizes in keys:
        rs = [r for r in rounds if (r["scheduler"], r["sizes"]) == (sched, sizes)]
        cells = []
        for k in range(njobs):
            cells.append(f"{statistics.mean(r['jobs'][k]['cct_s'] for r in rs):.2f}")
            cells.append(f"{statistics.mean(r['jobs'][k]['jct_s'] for r in rs):.2f}")
        lines.append(f"| {sched} | {'yes' if sizes else 'no'} | " + " | ".join(cells) +
                     f" | {statistics.mean(r['avg_jct_s'] for r in rs):.2f} | "
                     f"{len(rs)}/{len(rs)} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    """The command line (see the module docstring); 0 when every job of every round
    completed sorted, 1 otherwise."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default="leafspine:3,2,3",
                    help="leafspine:LEAVES,SPINES,HOSTS with at least jobs+1 leaves "
                         "(default leafspine:3,2,3)")
    ap.add_argument("--link-mbps", type=float, default=20.0)
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--records", default="10000,40000",
                    help="records per mapper, one value per job (default 10000,40000: "
                         "1 MB and 4 MB per mapper)")
    ap.add_argument("--sizes", choices=("on", "off", "both"), default="both",
                    help="register flow sizes (on), not (off), or both in turn")
    ap.add_argument("--json", action="store_true", help="print every round as JSON")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    records = [int(x) for x in args.records.split(",")]
    modes = {"on": (True,), "off": (False,), "both": (True, False)}[args.sizes]
    if os.path.join(REPO, "client") not in sys.path:
        sys.path.insert(0, CLIENT_DIR)
    rounds, failed = [], []
    t0 = time.time()
    for sched in args.schedulers.split(","):
        try:
            rounds += run_scheduler(sched, args.topology, args.link_mbps, records, args.runs,
                                    modes)
        except EmulationError as exc:
            failed.append(sched)
            print(f"{sched}: {exc}", file=sys.stderr)
    if args.json:
        print(json.dumps(rounds, indent=1))
    if rounds:
        print(table(rounds))
    print(f"wall {time.time() - t0:.0f} s; failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
