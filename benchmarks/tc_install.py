"""Time the host agent installing N per-flow HTB classes + u32 filters, three ways.

Backends, all fed the same command list from :mod:`enforcement.tc` (through
``Enforcer.replace_all``, the agent's real path):

* ``each``: one ``tc`` process per class and per filter (:func:`enforcement.agent.run_tc`,
  ``rapier-agent --tc-each``);
* ``batch``: one ``tc -batch -`` process per change (:func:`enforcement.agent.run_tc_batch`,
  the agent's default);
* ``pyroute2``: netlink requests on one socket through pyroute2's ``IPRoute.tc``
  (:class:`NetlinkRunner` below, which translates the same argv lists).  pyroute2 is
  not a dependency of the project; the backend is skipped when it is not installed.

For each backend: a fresh root qdisc, then one ``PUT`` of N flows (N classes + N
filters), then one ``PUT`` of [] (N filters + N classes deleted); wall-clock seconds of
each.  After each install, ``tc class show`` must print exactly what the first
backend's install printed, and ``tc filter show`` the same filters testing the same
bytes (see :func:`canonical`).

Usage (root; makes and removes a network namespace with a veth pair: this machine's
kernel has no dummy interface driver)::

    python benchmarks/tc_install.py [--flows 1000] [--netns rapier-tcbench]

Results on this machine: ``enforcement/README.md``.

Raises:
    SystemExit: not root, or ``ip``/``tc`` missing, or two installs differ.
"""

from __future__ import annotations

import argparse
import importlib.util
import ipaddress
import json
import os
import subprocess
import sys
import threading
import time
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from enforcement import agent, tc  # noqa: E402
from enforcement.tc import ROOT_HANDLE, Command, TcError  # noqa: E402

IFACE = "d0"


def limits(n: int):
    """``n`` distinct TCP flow limits 10.0.0.1 -> 10.0.x.y port 5001, 1..n Mbit/s."""
    return [tc.FlowLimit(f"{i}/0", "10.0.0.1", f"10.1.{i // 250}.{i % 250 + 1}", "tcp",
                         5001 + i % 1000, None, 1e6 * (i + 1)) for i in range(n)]


def show() -> str:
    """``tc class show`` + ``tc filter show`` of the interface (the installed tree)."""
    out = []
    for what in ("class", "filter"):
        out.append(subprocess.run(["tc", what, "show", "dev", IFACE], check=True,
                                  capture_output=True, text=True).stdout)
    return "\n".join(out)


def canonical(tree: str) -> str:
    """``tree`` with each filter's ``match VALUE/MASK at OFFSET`` lines replaced by the
    bytes they test (offset: value/mask per byte, sorted), and the kernel's own filter
    handles dropped.  ``tc`` writes keys at 4-byte aligned offsets, pyroute2 starts a
    key at its first masked byte: different keys, same bytes tested, same packets
    matched."""
    out, pending = [], {}

    def flush():
        if pending:
            out.append("  bytes " + " ".join(f"{o}:{v:02x}/{m:02x}"
                                              for o, (v, m) in sorted(pending.items())))
            pending.clear()

    for line in tree.splitlines():
        parts = line.split()
        if parts[:1] == ["match"] and len(parts) == 4 and parts[2] == "at":
            val, mask = (int(x, 16) for x in parts[1].split("/"))
            off = int(parts[3])
            for k in range(4):
                m = (mask >> (24 - 8 * k)) & 0xFF
                if m:
                    pending[off + k] = ((val >> (24 - 8 * k)) & 0xFF, m)
            continue
        flush()
        if parts[:1] == ["filter"]:  # drop the handles the kernel numbered
            for word, n in (("fh", 1), ("order", 1), ("key", 4)):
                while word in parts:
                    i = parts.index(word)
                    del parts[i:i + n + 1]
            line = " ".join(parts)
        out.append(line)
    flush()
    return "\n".join(out)


def measure(backend: str, n: int) -> dict:
    """Install then remove ``n`` limits with ``backend``; seconds of each step."""
    if backend == "pyroute2":
        enf = agent.Enforcer(IFACE, runner=NetlinkRunner())
    elif backend == "each":
        enf = agent.Enforcer(IFACE, runner=agent.run_tc)
    elif backend == "batch":
        enf = agent.Enforcer(IFACE)
    else:
        raise SystemExit(f"backends: unknown backend {backend!r} (each, batch, pyroute2)")
    enf.start()
    want = limits(n)
    t0 = time.perf_counter()
    ncmd = enf.replace_all(want)
    t_add = time.perf_counter() - t0
    tree = show()
    t0 = time.perf_counter()
    nrm = enf.replace_all([])
    t_del = time.perf_counter() - t0
    left = show()
    enf.stop()
    return {"backend": backend, "flows": n, "install_commands": ncmd, "install_s": t_add,
            "remove_commands": nrm, "remove_s": t_del, "tree": tree, "left": left}


# ---------------------------------------------------------------------------------
# the pyroute2 backend: argv lists of enforcement.tc -> netlink requests
# ---------------------------------------------------------------------------------
#: ETH_P_IP, the filters' protocol (``protocol ip``).
ETH_P_IP = 0x0800
_ROOT = 0x10000  # handle "1:"
TC_H_ROOT = 0xFFFFFFFF  # parent of a root qdisc


def _handle(text: str) -> int:
    """``"1:1f"`` -> 0x1001f (tc handles: major:minor in hexadecimal)."""
    major, _, minor = text.partition(":")
    return (int(major or "0", 16) << 16) | int(minor or "0", 16)


def _opts(argv: Command, start: int) -> Dict[str, str]:
    """``key value`` pairs of ``argv[start:]`` up to ``u32`` (the shapes
    :mod:`enforcement.tc` builds); a lone kind word (``htb``) is skipped."""
    out: Dict[str, str] = {}
    i = start
    while i < len(argv) - 1 and argv[i] != "u32":
        if argv[i] in ("htb", "root"):
            i += 1
            continue
        out[argv[i]] = argv[i + 1]
        i += 2
    return out


def _u32_keys(argv: Command) -> List[str]:
    """pyroute2 u32 keys (``value/mask+offset``) of the ``match ip ...`` clauses.

    Raises:
        TcError: a match this module does not translate.
    """
    keys = []
    i = argv.index("u32") + 1
    while i < len(argv) and argv[i] == "match":
        what, arg = argv[i + 2], argv[i + 3]
        if what in ("src", "dst"):
            net = ipaddress.IPv4Network(arg)
            off = 12 if what == "src" else 16
            keys.append(f"{int(net.network_address):#x}/{int(net.netmask):#x}+{off}")
            i += 4
        elif what == "protocol":
            keys.append(f"{int(arg) << 16:#010x}/{int(argv[i + 4], 0) << 16:#010x}+8")
            i += 5
        elif what in ("sport", "dport"):
            val, mask = int(arg), int(argv[i + 4], 0)
            if what == "sport":
                keys.append(f"{val << 16:#010x}/{mask << 16:#010x}+20")
            else:
                keys.append(f"{val:#010x}/{mask:#010x}+20")
            i += 5
        else:
            raise TcError(f"{' '.join(argv)}: netlink runner cannot translate "
                          f"'match ip {what}'")
    return keys


class NetlinkRunner:
    """Callable runner executing :mod:`enforcement.tc` commands over netlink (pyroute2).

    Args:
        ipr: an open ``pyroute2.IPRoute`` (tests); default: one opened here in the
            calling process's network namespace (the agent runs inside the host's).

    Raises:
        ImportError: pyroute2 is not installed (it is not a dependency of the project).

    Thread-safe: one lock around the netlink socket.
    """

    def __init__(self, ipr=None):
        if ipr is None:
            from pyroute2 import IPRoute

            ipr = IPRoute()
        self.ipr = ipr
        self._index: Dict[str, int] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the netlink socket."""
        self.ipr.close()

    def index(self, iface: str) -> int:
        """Interface index of ``iface`` (cached).

        Raises:
            TcError: no such interface.
        """
        idx = self._index.get(iface)
        if idx is None:
            found = self.ipr.link_lookup(ifname=iface)
            if not found:
                raise TcError(f"dev {iface}: no such interface")
            idx = self._index[iface] = int(found[0])
        return idx

    def __call__(self, argv: Command) -> None:
        """Run one command (argv list as built by :mod:`enforcement.tc`).

        Raises:
            TcError: the kernel refused it, or the command has a shape not built by
                :mod:`enforcement.tc`.
        """
        if len(argv) < 5 or argv[0] != "tc" or argv[3] != "dev":
            raise TcError(f"{' '.join(argv)}: not a tc command of enforcement.tc")
        obj, verb, iface = argv[1], argv[2], argv[4]
        with self._lock:
            try:
                self._send(obj, verb, self.index(iface), argv)
            except TcError:
                raise
            except Exception as exc:  # pyroute2's NetlinkError and friends
                raise TcError(f"{' '.join(argv)}: netlink: {exc}") from None

    def _send(self, obj: str, verb: str, idx: int, argv: Command) -> None:
        tcf = self.ipr.tc
        if obj == "qdisc" and verb == "replace":
            o = _opts(argv, 5)
            if argv[5:9] != ["root", "handle", ROOT_HANDLE, "htb"]:
                raise TcError(f"{' '.join(argv)}: unsupported qdisc command")
            tcf("replace", "htb", idx, _ROOT, default=int(o.get("default", "0"), 16))
        elif obj == "qdisc" and verb == "del":
            tcf("del", index=idx, handle=_ROOT, parent=TC_H_ROOT)
        elif obj == "class" and verb in ("add", "change"):
            o = _opts(argv, 5)
            tcf(f"{verb}-class", "htb", idx, _handle(o["classid"]), parent=_handle(o["parent"]),
                rate=o["rate"], ceil=o["ceil"], quantum=int(o["quantum"]))
        elif obj == "class" and verb == "del":
            o = _opts(argv, 5)
            tcf("del-class", index=idx, handle=_handle(o["classid"]))
        elif obj == "filter" and verb == "add":
            o = _opts(argv, 5)
            tcf("add-filter", "u32", idx, parent=_handle(o["parent"]), prio=int(o["prio"]),
                protocol=ETH_P_IP, target=_handle(argv[argv.index("flowid") + 1]),
                keys=_u32_keys(argv))
        elif obj == "filter" and verb == "del":
            o = _opts(argv, 5)
            tcf("del-filter", index=idx, parent=_handle(o["parent"]), prio=int(o["prio"]),
                protocol=ETH_P_IP)
        else:
            raise TcError(f"{' '.join(argv)}: unsupported tc command")


def inner(n: int, backends) -> int:
    """Run inside the namespace; print one JSON line per backend."""
    ref = None
    for b in backends:
        if b == "pyroute2" and importlib.util.find_spec("pyroute2") is None:
            print(json.dumps({"backend": b, "skipped": "pyroute2 is not installed"}))
            continue
        r = measure(b, n)
        if r["left"].strip():
            print(f"tc_install: {b}: classes or filters left after removal", file=sys.stderr)
            return 1
        if ref is None:
            ref = r["tree"]
        elif canonical(r["tree"]) != canonical(ref):
            print(f"tc_install: {b}: installed tree differs from {backends[0]}'s",
                  file=sys.stderr)
            return 1
        print(json.dumps({k: v for k, v in r.items() if k not in ("tree", "left")}))
    return 0


def main(argv=None) -> int:
    """Entry point; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", type=int, default=1000)
    ap.add_argument("--netns", default="rapier-tcbench")
    ap.add_argument("--backends", default="each,batch,pyroute2")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    backends = args.backends.split(",")
    if args.inner:
        return inner(args.flows, backends)
    if os.geteuid() != 0:
        raise SystemExit("tc_install: needs root (network namespace, tc)")
    ns = args.netns
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        # the kernel here has no dummy driver: a veth pair serves (tc acts on d0)
        subprocess.run(["ip", "-n", ns, "link", "add", IFACE, "type", "veth", "peer", "name",
                        "d1"], check=True)
        for dev in (IFACE, "d1"):
            subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
        return subprocess.run(["ip", "netns", "exec", ns, sys.executable, os.path.abspath(__file__),
                               "--inner", "--flows", str(args.flows), "--backends",
                               args.backends]).returncode
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


if __name__ == "__main__":
    sys.exit(main())
