"""Helpers shared by the benchmark scripts of this folder (``event_core.py``,
``mutants.py``; the trace slices: ``weighted_pass.py``, ``window_split.py``; the
namespace helpers: ``htb_gso_stall.py``, ``htb_ramp.py``): the scripts run as ``python benchmarks/NAME.py``, so this folder is on ``sys.path`` and
they import it as ``_common``."""

from __future__ import annotations

import json
import subprocess
from typing import Any, Optional, Sequence


def write_json(path: Optional[str], rows: Any, indent: int = 1) -> None:
    """Write ``rows`` (anything :func:`json.dump` takes) to ``path`` as JSON, indented
    by ``indent`` spaces, without a trailing newline; nothing when ``path`` is empty or
    None (the scripts' ``--json`` not given).

    Raises:
        OSError: the file cannot be written.
        TypeError: ``rows`` holds something JSON cannot represent.
    """
    if not path:
        return
    with open(path, "w") as fh:
        json.dump(rows, fh, indent=indent)


def sh(*cmd: str, ns: str = "") -> str:
    """Run a command (in network namespace ``ns``) and return its stdout.

    Raises:
        subprocess.CalledProcessError: the command failed (it names the command).
    """
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, check=True, capture_output=True, text=True).stdout


def netns_delete(names: Sequence[str]) -> None:
    """Delete the network namespaces ``names``, ignoring those that do not exist."""
    for ns in names:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def veth_pair(ns_tx: str, ns_rx: str, dev_tx: str, dev_rx: str, subnet: str,
              gso_max_segs: int = 0) -> None:
    """Two fresh namespaces joined by a veth pair, as the emulation's hosts are set up:
    ``dev_tx`` in ``ns_tx`` gets ``<subnet>.1/24``, ``dev_rx`` in ``ns_rx`` gets
    ``<subnet>.2/24`` (``subnet``: three octets, e.g. ``"10.98.0"``), both up with
    checksum and segmentation offloads off, and ``dev_tx`` with ``gso_max_segs``
    when it is not 0; then an HTB root qdisc ``1:`` (``default 0``) on ``dev_tx``.
    Namespaces of those names left by an earlier run are deleted first.

    Raises:
        subprocess.CalledProcessError: a command failed (not root, no veth, ...).
    """
    netns_delete((ns_tx, ns_rx))
    for ns in (ns_tx, ns_rx):
        sh("ip", "netns", "add", ns)
    sh("ip", "link", "add", dev_tx, "type", "veth", "peer", "name", dev_rx)
    sh("ip", "link", "set", dev_tx, "netns", ns_tx)
    sh("ip", "link", "set", dev_rx, "netns", ns_rx)
    for ns, dev, host in ((ns_tx, dev_tx, 1), (ns_rx, dev_rx, 2)):
        sh("ip", "addr", "add", f"{subnet}.{host}/24", "dev", dev, ns=ns)
        sh("ip", "link", "set", dev, "up", ns=ns)
        sh("ethtool", "-K", dev, "tx", "off", "rx", "off", "tso", "off", "gso", "off",
           "gro", "off", ns=ns)
    if gso_max_segs:
        sh("ip", "link", "set", "dev", dev_tx, "gso_max_segs", str(gso_max_segs), ns=ns_tx)
    sh("tc", "qdisc", "add", "dev", dev_tx, "root", "handle", "1:", "htb", "default", "0",
       ns=ns_tx)


def htb_class(verb: str, dev: str, ns: str, classid: str, mbps: float) -> None:
    """``tc class add|change`` of an agent-style class on ``dev``: rate = ceil =
    ``mbps`` Mbit/s, quantum one frame (as ``enforcement/tc.py`` builds it)."""
    rate = f"{int(mbps * 1e6)}bit"
    sh("tc", "class", verb, "dev", dev, "parent", "1:", "classid", classid, "htb",
       "rate", rate, "ceil", rate, "quantum", "1514", ns=ns)


def parse_slice(text: str, flag: str = "--coflows") -> tuple:
    """``"A:B"`` -> (A, B), two ints (a slice of the trace's coflows).

    Raises:
        SystemExit: not two colon-separated integers (the message names ``flag``).
    """
    try:
        first, stop = (int(x) for x in text.split(":"))
    except ValueError:
        raise SystemExit(f"{flag}: expected A:B, got {text!r}") from None
    return first, stop


def trace_slice(topo, trace: str, first: int, stop: int, at0: bool = False,
                flag: str = "--coflows") -> list:
    """Coflow specs of trace coflows ``first:stop`` on ``topo`` (the trace's ports
    mapped by :func:`rapier_app.core.workload.port_mapping`), arrivals shifted so
    that coflow ``first`` arrives at 0 s, or every arrival 0 with ``at0``.

    Raises:
        SystemExit: the slice holds no coflow (the message names ``flag``).
    """
    import dataclasses

    from rapier_app.core.workload import port_mapping, read_trace, trace_to_coflows

    tr = read_trace(trace)
    cfs = trace_to_coflows(tr, port_mapping(tr.ports, topo))[first:stop]
    if not cfs:
        raise SystemExit(f"{flag}: no coflow in {first}:{stop}")
    t0 = cfs[0].arrival_s
    return [dataclasses.replace(c, arrival_s=0.0 if at0 else c.arrival_s - t0) for c in cfs]
