"""``rapier-doctor``: preflight of a controller host and of an agent host.

::

    rapier-doctor                          # every check (--role all)
    rapier-doctor --role agent --agent-listen unix:/tmp/rapier-agents/h1.sock
    rapier-doctor --role controller --json

Each check prints ``OK``, ``WARN`` or ``FAIL``, what it found and, when it is not OK,
what to do.  The checks, by role:

* both: ``python`` (3.10 or newer: os-ken's floor; tested on 3.11 and 3.13);
* controller: ``stack`` (the OpenFlow stack the controller runs on, chosen as
  :mod:`rapier_app.controller.stackchoice` does: os-ken or Ryu, at the version of
  ``requirements-os-ken.txt`` / ``requirements-ryu.txt``, and its thread model),
  ``eventlet`` (on Ryu, or os-ken with ``OSKEN_HUB_TYPE=eventlet``: the eventlet and
  dnspython versions that run with Ryu 4.34 on this Python, 0.33.3 on 3.11 and 0.38 or
  later from 3.12; on os-ken's native threads, not used), ``controller-import``
  (``import rapier_app.controller`` in a fresh interpreter defines the app on that
  stack), ``kernels`` (numba's on-disk cache
  holds the compiled kernels of :mod:`rapier_app.kernels`, so that the first decision
  compiles nothing: :mod:`rapier_app.warmup`), ``ovs`` (ovsdb-server and
  ovs-vswitchd answer) and ``ovs-datapath`` (the kernel datapath needs the
  ``openvswitch`` module; without it only the userspace ``netdev`` datapath works, and
  a bridge of the kernel type drops every packet), ``ovs-reconnect`` (every bridge
  retries a lost controller at least once a second: ``max_backoff`` <= 1000 ms on its
  Controller record; Open vSwitch's default, 8 s, leaves a restarted controller
  without its switches for up to 8 s);
* agent: ``tc-htb`` and ``tc-u32`` (the agent's own commands,
  :mod:`enforcement.tc`, run by ``tc -batch`` on the loopback of a throwaway network
  namespace, ``unshare --net``, which the kernel removes with the process: nothing to
  clean up), ``agent-socket`` (the agent's ``--listen`` address: a Unix socket of
  mode 0600, and an agent answering ``GET /v1/health`` there).

Every check is a pure function of injectable runners (a command runner, a package
version lookup, ``lstat``, an HTTP health probe, a kernel-cache probe), so the tests
feed it broken environments; :func:`run_checks` with the defaults looks at this
machine.  Exit status: 0 when no check FAILs, 1 otherwise, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import subprocess
import sys
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from .cli_common import add_common_arguments

__all__ = ["Check", "Result", "PINS", "ROLES", "check_agent_socket", "check_controller_import",
           "check_eventlet", "check_kernels", "check_ovs", "check_ovs_reconnect", "check_python",
           "check_stack", "check_tc", "kernel_cache_state", "main", "read_pins", "run_checks",
           "run_command", "stack_pins"]

OK, WARN, FAIL = "OK", "WARN", "FAIL"
#: Roles of ``--role`` and the checks each runs (``all``: every check).
ROLES = {
    "controller": ("python", "stack", "eventlet", "controller-import", "kernels",
                   "ovs", "ovs-datapath", "ovs-reconnect"),
    "agent": ("python", "tc-htb", "tc-u32", "agent-socket"),
}
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Each stack's pins on Python 3.11 and from 3.12 (``requirements-<stack>.txt``; read
#: from there when this runs from a checkout, ``tests/test_doctor.py`` keeps this copy
#: equal to them).
PINS = {("os-ken", "3.11"): {"os-ken": "==4.2.2"},
        ("os-ken", "3.13"): {"os-ken": "==4.2.2"},
        ("ryu", "3.11"): {"eventlet": "==0.33.3", "dnspython": ">=2"},
        ("ryu", "3.13"): {"eventlet": "==0.40.3", "dnspython": ">=2"}}
#: Versions that run, where the pin is one choice among several (eventlet from 3.12:
#: 0.38 and later import; shared/ENVIRONMENT.md).
ACCEPT = {("ryu", "3.13"): {"eventlet": ">=0.38"}}
#: The stacks' own versions (Ryu is built from its 4.34 sdist by scripts/install.sh).
STACK_VERSIONS = {"os-ken": "==4.2.2", "ryu": "==4.34"}
OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"


@dataclass(frozen=True)
class Check:
    """The outcome of one check.

    Attributes:
        name: the check (``ovs``, ``tc-htb``, ... see the module docstring).
        status: ``OK``, ``WARN`` or ``FAIL``.
        detail: what was found (versions, paths, the tool's error text).
        fix: what to do when the status is not OK (``""`` when OK).
    """

    name: str
    status: str
    detail: str
    fix: str = ""


class Result(NamedTuple):
    """What a command gave: exit status (127: not found) and its output."""

    rc: int
    out: str
    err: str


def run_command(argv: Sequence[str], input: Optional[str] = None,
                timeout: float = 20.0) -> Result:
    """Run ``argv`` and return its :class:`Result` (never raises: a missing program is
    ``rc`` 127, a time-out ``rc`` 124, with the reason in ``err``)."""
    try:
        p = subprocess.run(list(argv), input=input, capture_output=True, text=True,
                           timeout=timeout)
    except FileNotFoundError:
        return Result(127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return Result(124, "", f"{argv[0]}: no answer within {timeout:g} s")
    except OSError as exc:
        return Result(126, "", f"{argv[0]}: {exc}")
    return Result(p.returncode, p.stdout, p.stderr)


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


# -- python and packages ------------------------------------------------------------------
def check_python(version_info: Tuple[int, ...] = tuple(sys.version_info[:3]),
                 implementation: str = sys.implementation.name) -> Check:
    """``python``: 3.10 or newer (os-ken's floor; the controller is tested on 3.11 with
    Ryu or os-ken and on 3.13 with os-ken)."""
    v = ".".join(map(str, version_info[:3]))
    found = f"{implementation} {v} ({sys.executable})"
    if tuple(version_info[:2]) < (3, 10):
        return Check("python", FAIL, found, "use Python 3.10 or newer (Debian 12: python3 "
                     "3.11, Debian 13: 3.13) and re-run scripts/install.sh")
    return Check("python", OK, found)


def _pyband(version_info: Tuple[int, ...]) -> str:
    """The pin band of a Python version: ``"3.11"`` (before 3.12) or ``"3.13"``."""
    return "3.11" if tuple(version_info[:2]) < (3, 12) else "3.13"


def read_pins(path: str, python: str = "3.11") -> Dict[str, str]:
    """``{distribution: specifier}`` from a requirements file for Python ``python``
    (``name==X``/``name>=X`` lines; a ``; python_version ...`` marker evaluated;
    comments ignored); ``{}`` when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return {}
    pins = {}
    for ln in lines:
        ln = ln.split("#", 1)[0].strip()
        req, _, marker = ln.partition(";")
        if marker.strip():
            from packaging.markers import Marker

            if not Marker(marker.strip()).evaluate({"python_version": python}):
                continue
        for op in ("==", ">="):
            if op in req:
                name, ver = req.split(op, 1)
                pins[name.strip().lower()] = op + ver.split(",")[0].strip()
                break
    return pins


def stack_pins(stack: str, version_info: Tuple[int, ...] = tuple(sys.version_info[:3])
               ) -> Dict[str, str]:
    """What ``stack`` needs on this Python: ``{distribution: specifier}`` from its
    requirements file in this checkout (:data:`PINS` when absent), with the versions
    that run (:data:`ACCEPT`) in place of a pin that is one choice among several."""
    band = _pyband(version_info)
    pins = read_pins(os.path.join(_REPO, f"requirements-{stack}.txt"), band) \
        or dict(PINS[(stack, band)])
    pins.pop("setuptools", None)
    pins.update(ACCEPT.get((stack, band), {}))
    return pins


def _satisfies(got: str, spec: str) -> bool:
    op, want = spec[:2], spec[2:]
    return _vtuple(got) == _vtuple(want) if op == "==" else _vtuple(got) >= _vtuple(want)


def _vtuple(v: str) -> Tuple[int, ...]:
    out = []
    for part in v.split("."):
        digits = "".join(ch for ch in part if ch.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def _dist_version(name: str) -> Optional[str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def check_stack(version: Callable[[str], Optional[str]] = _dist_version,
                environ: Optional[Dict[str, str]] = None) -> Check:
    """``stack``: the OpenFlow stack the controller will run on (chosen as
    :func:`rapier_app.controller.stackchoice.choose` does, from what is installed and
    ``RAPIER_OF_STACK``), at its pinned version, and its thread model.

    Args:
        version: distribution name -> installed version or None.
        environ: the environment (default ``os.environ``).
    """
    from .controller.stackchoice import DISTRIBUTIONS, StackUnavailable

    environ = os.environ if environ is None else environ
    fix = "bash scripts/install.sh (RAPIER_OF_STACK=os-ken, the default, or ryu)"
    try:
        name = _chosen_stack(version, environ)
    except StackUnavailable as exc:
        return Check("stack", FAIL, str(exc), fix)
    got, spec = version(DISTRIBUTIONS[name]), STACK_VERSIONS[name]
    model = _thread_model(name, environ)
    if not _satisfies(got, spec):
        return Check("stack", FAIL, f"{name} {got} installed, want {spec}", fix)
    both = all(version(d) is not None for d in DISTRIBUTIONS.values())
    note = "; Ryu and os-ken both installed (RAPIER_OF_STACK picks)" if both else ""
    return Check("stack", OK, f"{name} {got} ({model}){note}")


def _chosen_stack(version: Callable[[str], Optional[str]], environ: Dict[str, str]) -> str:
    """The stack :func:`~rapier_app.controller.stackchoice.choose` picks from the
    installed distributions (``version``) and ``environ``; imports none.

    Raises:
        StackUnavailable: as ``choose``.
    """
    from .controller.stackchoice import DISTRIBUTIONS, STACKS, choose

    dist_of = {pkg: DISTRIBUTIONS[name] for name, pkg in STACKS.items()}
    return choose(environ, {}, lambda pkg: version(dist_of[pkg]) is not None)


def _thread_model(name: str, environ: Dict[str, str]) -> str:
    if name == "ryu":
        return "eventlet"
    return "eventlet" if environ.get("OSKEN_HUB_TYPE", "native") == "eventlet" \
        else "native threads"


def check_eventlet(version: Callable[[str], Optional[str]] = _dist_version,
                   version_info: Tuple[int, ...] = tuple(sys.version_info[:3]),
                   environ: Optional[Dict[str, str]] = None) -> Check:
    """``eventlet``: where the stack runs on eventlet (Ryu; os-ken with
    ``OSKEN_HUB_TYPE=eventlet``), the eventlet and dnspython versions that run with it
    on this Python (:func:`stack_pins`); not used on os-ken's native threads.

    Args:
        version: distribution name -> installed version or None.
        version_info: the Python version.
        environ: the environment (default ``os.environ``).
    """
    from .controller.stackchoice import StackUnavailable

    environ = os.environ if environ is None else environ
    try:
        name = _chosen_stack(version, environ)
    except StackUnavailable:
        return Check("eventlet", WARN, "no stack installed (see the stack check)",
                     "bash scripts/install.sh")
    if _thread_model(name, environ) != "eventlet":
        return Check("eventlet", OK, f"not used ({name} on native threads)")
    pins = stack_pins(name, version_info) if name == "ryu" else {"eventlet": ">=0.38"
                                                                  if _pyband(version_info) == "3.13"
                                                                  else ">=0.33"}
    found, bad = [], []
    for dist in ("eventlet", "dnspython"):
        spec = pins.get(dist)
        if spec is None:
            continue
        got = version(dist)
        found.append(f"{dist} {got or 'missing'} (want {spec})")
        if got is None or not _satisfies(got, spec):
            bad.append(f"pip install '{dist}{spec}'")
    py = ".".join(map(str, version_info[:2]))
    if bad:
        return Check("eventlet", FAIL, f"{', '.join(found)} on Python {py}",
                     f"bash scripts/install.sh, or {'; '.join(bad)}: other eventlet versions "
                     f"fail with Ryu 4.34 here (0.30: TypeError at import; 0.33 on 3.12+: "
                     f"no distutils; 0.34-0.37 on 3.13: start_joinable_thread)")
    return Check("eventlet", OK, f"{', '.join(found)} on Python {py}")


def check_controller_import(run: Callable[..., Result] = run_command,
                            python: str = sys.executable) -> Check:
    """``controller-import``: a fresh interpreter imports ``rapier_app.controller`` and
    finds the app (``RapierController``) on its stack; says the stack, its thread
    model, and whether eventlet got imported."""
    code = ("import sys, rapier_app.controller as c; "
            "assert hasattr(c, 'RapierController'), 'no OpenFlow stack is importable'; "
            "print(c.RapierController.__module__, '|', c.stack.describe(), '|', "
            "'eventlet imported' if 'eventlet' in sys.modules else 'eventlet not imported')")
    env_path = os.environ.get("PYTHONPATH", "")
    res = run([python, "-c", code], None, 120.0)  # cold: about 3 s (Ryu, ortools, numba)
    if res.rc == 0:
        mod, _, rest = _first_line(res.out).partition(" | ")
        return Check("controller-import", OK, f"a fresh {os.path.basename(python)} imports "
                     f"{mod}.RapierController ({rest.replace(' | ', '; ')})")
    err = [ln for ln in res.err.splitlines() if ln.strip()]
    return Check("controller-import", FAIL, f"import rapier_app.controller failed: "
                 f"{err[-1].strip() if err else 'exit ' + str(res.rc)}"
                 + (f" (PYTHONPATH={env_path})" if env_path else ""),
                 "bash scripts/install.sh (installs the stack, os-ken or Ryu, with its pins)")


# -- compiled kernels -------------------------------------------------------------------------
class KernelCache(NamedTuple):
    """numba's on-disk cache of :mod:`rapier_app.kernels`: kernels with a usable entry
    (compiled for this source), all kernels, the cache directory, whether it can be
    written, and whether the kernels are used at all (``RAPIER_KERNELS``)."""

    cached: int
    total: int
    cache_dir: str
    writable: bool
    enabled: bool


def kernel_cache_state() -> KernelCache:
    """Look at numba's cache index of every ``cache=True`` kernel of
    :mod:`rapier_app.kernels` (an index written for another version of the source
    counts as cold, as numba then recompiles).  Compiles nothing."""
    import importlib
    import pkgutil

    from . import kernels

    if not kernels.ENABLED:
        return KernelCache(0, 0, "", False, False)
    from numba.core.registry import CPUDispatcher

    cached = total = 0
    cache_dir = ""
    for mod in pkgutil.iter_modules(kernels.__path__):
        m = importlib.import_module(f"{kernels.__name__}.{mod.name}")
        for obj in vars(m).values():
            if not isinstance(obj, CPUDispatcher) or obj.__module__ != m.__name__:
                continue
            cache = getattr(obj, "_cache", None)
            cache_file = getattr(cache, "_cache_file", None)
            if cache_file is None:
                continue
            total += 1
            cache_dir = cache._cache_path
            # numba keeps no public listing of cached overloads: its index, as
            # Cache.load_overload reads it ({} when missing or written for other source)
            if cache_file._load_index():
                cached += 1
    writable = bool(cache_dir) and os.access(cache_dir if os.path.isdir(cache_dir)
                                             else os.path.dirname(cache_dir), os.W_OK)
    return KernelCache(cached, total, cache_dir, writable, True)


def check_kernels(probe: Callable[[], KernelCache] = kernel_cache_state) -> Check:
    """``kernels``: numba's cache holds the compiled kernels (FAIL when none is cached:
    the first decisions would compile for seconds, past ``decision_budget_s``)."""
    st = probe()
    warm = "python -m rapier_app.warmup (about 20 s; scripts/install.sh runs it)"
    if not st.enabled:
        return Check("kernels", WARN, "compiled kernels off (RAPIER_KERNELS=numpy or numba "
                     "missing): the numpy code runs, slower", "unset RAPIER_KERNELS and "
                     "pip install numba, then " + warm)
    where = f"cache {st.cache_dir}" + ("" if st.writable else " (not writable)")
    nd = " (NUMBA_CACHE_DIR)" if os.environ.get("NUMBA_CACHE_DIR") else ""
    found = f"{st.cached} of {st.total} kernels compiled in {where}{nd}"
    fix = warm if st.writable else (f"set NUMBA_CACHE_DIR to a directory this user can "
                                    f"write, then {warm}")
    if st.total == 0 or st.cached == 0:
        return Check("kernels", FAIL, found + ": cold cache, the first decisions compile "
                     "for seconds", fix)
    if 2 * st.cached < st.total:
        return Check("kernels", WARN, found + ": most are cold (source changed since the "
                     "warm-up?)", fix)
    return Check("kernels", OK, found + " (the rest serve paths the warm-up workload "
                 "does not take)" if st.cached < st.total else found)


# -- Open vSwitch --------------------------------------------------------------------------
def check_ovs(run: Callable[..., Result] = run_command,
              module_loaded: Callable[[], bool] = lambda: os.path.isdir(
                  "/sys/module/openvswitch")) -> List[Check]:
    """``ovs`` (ovsdb-server and ovs-vswitchd answer) and ``ovs-datapath`` (which
    datapath types work, and that no bridge uses one that does not)."""
    fix_start = (f"start it: {OVS_CTL} start (no kernel module needed; Debian: apt-get "
                 f"install openvswitch-switch)")
    db = run(["ovs-vsctl", "--timeout=3", "get", "Open_vSwitch", ".", "ovs_version"])
    if db.rc == 127:
        return [Check("ovs", FAIL, "ovs-vsctl not found: Open vSwitch is not installed",
                      "apt-get install openvswitch-switch"),
                Check("ovs-datapath", WARN, "not checked: Open vSwitch does not answer",
                      fix_start)]
    if db.rc != 0:
        return [Check("ovs", FAIL, f"ovsdb-server does not answer: {_first_line(db.err)}",
                      fix_start),
                Check("ovs-datapath", WARN, "not checked: Open vSwitch does not answer",
                      fix_start)]
    sw = run(["ovs-appctl", "--timeout=3", "-t", "ovs-vswitchd", "version"])
    if sw.rc != 0:
        return [Check("ovs", FAIL, f"ovsdb-server answers but ovs-vswitchd does not: "
                      f"{_first_line(sw.err)}", fix_start),
                Check("ovs-datapath", WARN, "not checked: ovs-vswitchd does not answer",
                      fix_start)]
    version = db.out.strip().strip('"')
    checks = [Check("ovs", OK, f"ovsdb-server and ovs-vswitchd answer (Open vSwitch "
                    f"{version})")]
    types = run(["ovs-vsctl", "--timeout=3", "get", "Open_vSwitch", ".", "datapath_types"])
    listed = {t.strip() for t in types.out.strip().strip("[]").split(",") if t.strip()}
    kernel = module_loaded()
    usable = {t for t in listed if t != "system" or kernel}
    br = run(["ovs-vsctl", "--timeout=3", "--format=csv", "--no-headings", "--data=bare",
              "--columns=name,datapath_type", "list", "Bridge"])
    bridges = [ln.split(",", 1) for ln in br.out.splitlines() if "," in ln]
    broken = sorted(name for name, dp in bridges if (dp.strip() or "system") not in usable)
    user_fix = ("Mininet: --switch ovsuser or OVSSwitch(datapath='user') (rapier-emulate "
                "does); turn offloads off on every interface (ethtool -K IFACE tx off rx off "
                "tso off gso off gro off) or TCP stalls")
    if broken:
        checks.append(Check("ovs-datapath", FAIL, f"bridge(s) {', '.join(broken)} use a "
                            f"datapath this host lacks (usable: "
                            f"{', '.join(sorted(usable)) or 'none'}): they drop every packet",
                            f"delete them (ovs-vsctl del-br NAME, or mn -c under the "
                            f"emulation lock); {user_fix}"))
    elif "system" in usable:
        checks.append(Check("ovs-datapath", OK, f"kernel (system) datapath available; types "
                            f"{', '.join(sorted(listed))}"))
    elif "netdev" in usable:
        checks.append(Check("ovs-datapath", OK, f"userspace (netdev) datapath only: no "
                            f"openvswitch kernel module; {len(bridges)} bridge(s), none of "
                            f"the kernel type. {user_fix}"))
    else:
        checks.append(Check("ovs-datapath", FAIL, f"no usable datapath (types "
                            f"{', '.join(sorted(listed)) or 'none'}; kernel module "
                            f"{'loaded' if kernel else 'absent'})",
                            "install openvswitch-switch 3.x (its netdev datapath needs no "
                            "kernel module)"))
    return checks


#: Largest ``max_backoff`` (ms) advised on a Controller record (Open vSwitch's least).
RECONNECT_MAX_MS = 1000
#: Open vSwitch's ``max_backoff`` when the record sets none (ms).
OVS_DEFAULT_BACKOFF_MS = 8000


def check_ovs_reconnect(run: Callable[..., Result] = run_command) -> Check:
    """``ovs-reconnect``: every bridge's Controller record has ``max_backoff`` <=
    :data:`RECONNECT_MAX_MS` ms (unset: Open vSwitch's 8,000 ms).  A switch that lost
    its controller retries after 1, 2, 4, ... s up to ``max_backoff``; only when it
    is back does a restarted controller read the counters of the flows that finished
    meanwhile and repair the switch's rules (docs/operations.md, "What survives a
    restart").  WARN naming the bridges otherwise; OK when no bridge has a
    controller; WARN when Open vSwitch does not answer (the ``ovs`` check says why)."""
    q = ["ovs-vsctl", "--timeout=3", "--format=csv", "--no-headings", "--data=bare"]
    ctl = run(q + ["--columns=_uuid,max_backoff", "list", "Controller"])
    br = run(q + ["--columns=name,controller", "list", "Bridge"])
    if ctl.rc != 0 or br.rc != 0:
        return Check("ovs-reconnect", WARN, "not checked: Open vSwitch does not answer",
                     f"start it: {OVS_CTL} start")
    backoff = {}
    for ln in ctl.out.splitlines():
        uuid, _, ms = ln.partition(",")
        backoff[uuid.strip()] = int(ms) if ms.strip().isdigit() else OVS_DEFAULT_BACKOFF_MS
    slow, n = {}, 0
    for ln in br.out.splitlines():
        name, _, uuids = ln.partition(",")
        for u in uuids.split():
            n += 1
            if backoff.get(u, OVS_DEFAULT_BACKOFF_MS) > RECONNECT_MAX_MS:
                slow[name] = max(slow.get(name, 0), backoff.get(u, OVS_DEFAULT_BACKOFF_MS))
    if not n:
        return Check("ovs-reconnect", OK, "no bridge has a controller (nothing to check)")
    if not slow:
        return Check("ovs-reconnect", OK, f"{n} controller connection(s) retried at least "
                                          f"every {RECONNECT_MAX_MS} ms (max_backoff)")
    worst = max(slow.values())
    return Check("ovs-reconnect", WARN,
                 f"bridge(s) {', '.join(sorted(slow))} retry a lost controller only every "
                 f"{worst / 1000:g} s (max_backoff): after a controller restart their "
                 f"counters and rules wait that long",
                 f"ovs-vsctl set controller BRIDGE max_backoff={RECONNECT_MAX_MS} for each "
                 f"(Mininet's OVSSwitch sets it by default: reconnectms=1000)")


# -- traffic control ----------------------------------------------------------------------------
def _batch(cmds) -> str:
    return "".join(" ".join(c[1:]) + "\n" for c in cmds)


def check_tc(run: Callable[..., Result] = run_command,
             is_root: Optional[bool] = None) -> List[Check]:
    """``tc-htb`` and ``tc-u32``: the agent's own commands (:mod:`enforcement.tc`: root
    HTB qdisc, one class, one u32 5-tuple filter) in a throwaway network namespace
    (``unshare --net tc -batch -`` on its loopback; the namespace goes with the
    process)."""
    from enforcement import tc

    root = os.geteuid() == 0 if is_root is None else is_root
    if not root:
        why = "not checked: needs root (CAP_NET_ADMIN), as the agent does"
        return [Check("tc-htb", WARN, why, "run rapier-doctor as root"),
                Check("tc-u32", WARN, why, "run rapier-doctor as root")]
    lim = tc.FlowLimit("doctor", "10.0.0.1", "10.0.0.2", "tcp", 5001, None, 10e6)
    htb = tc.setup_commands("lo") + [tc.class_command("lo", tc.SLOT_MIN, lim.enforced_rate_bps)]
    u32 = [tc.filter_add_command("lo", tc.SLOT_MIN, lim)]
    argv = ["unshare", "--net", "tc", "-batch", "-"]
    r1 = run(argv, _batch(htb))
    if r1.rc == 127 or "failed to execute" in r1.err:
        tool = "unshare (util-linux)" if r1.err.startswith("unshare: command not found") \
            else "tc (iproute2)"
        return [Check("tc-htb", FAIL, f"cannot run {tool}: {_first_line(r1.err)}",
                      "apt-get install iproute2 util-linux"),
                Check("tc-u32", WARN, "not checked (no tc)", "apt-get install iproute2")]
    if "unshare failed" in r1.err:  # no CAP_SYS_ADMIN (e.g. a container)
        why = f"not checked: cannot make a network namespace ({_first_line(r1.err)})"
        return [Check("tc-htb", WARN, why, "run rapier-doctor as root on the host"),
                Check("tc-u32", WARN, why, "run rapier-doctor as root on the host")]
    if r1.rc != 0:
        return [Check("tc-htb", FAIL, f"HTB qdisc/class refused: {_first_line(r1.err)}",
                      "the kernel needs sch_htb (CONFIG_NET_SCH_HTB; modprobe sch_htb): the "
                      "agent shapes each flow with an HTB class"),
                Check("tc-u32", WARN, "not checked (needs an HTB qdisc)",
                      "make sch_htb available first")]
    checks = [Check("tc-htb", OK, "HTB qdisc and class accepted (the agent's setup and "
                    "class commands, in a throwaway network namespace)")]
    r2 = run(argv, _batch(htb + u32))
    if r2.rc != 0:
        checks.append(Check("tc-u32", FAIL, f"u32 filter refused: {_first_line(r2.err)}",
                            "the kernel needs cls_u32 (CONFIG_NET_CLS_U32; modprobe "
                            "cls_u32): the agent matches each flow's 5-tuple with u32 "
                            "(cls_flower and cls_fw are not built here either)"))
    else:
        checks.append(Check("tc-u32", OK, "u32 5-tuple filter accepted"))
    return checks


# -- the agent's socket ---------------------------------------------------------------------------
def _health(base: str) -> Tuple[int, object]:
    from enforcement.client import request

    return request(base, "GET", "/v1/health", timeout=2.0)


def check_agent_socket(listen: Optional[str] = None,
                       lstat: Callable[[str], os.stat_result] = os.lstat,
                       health: Callable[[str], Tuple[int, object]] = _health) -> Check:
    """``agent-socket``: the agent's ``--listen`` address (default
    ``unix:/run/rapier-agent/agent.sock``): a Unix socket of mode 0600 (only its owner,
    the controller's user, may set rates) with an agent answering ``GET /v1/health``;
    on TCP, an agent answering there."""
    from enforcement.listen import DEFAULT_LISTEN, parse_listen

    listen = listen or DEFAULT_LISTEN
    try:
        kind, addr = parse_listen(listen)
    except ValueError as exc:
        return Check("agent-socket", FAIL, str(exc), "pass --agent-listen unix:PATH or "
                     "HOST:PORT, as given to rapier-agent --listen")
    start = f"start the agent: rapier-agent --listen {listen}"
    if kind == "unix":
        try:
            st = lstat(addr)
        except FileNotFoundError:
            return Check("agent-socket", FAIL, f"no agent socket at {addr}",
                         f"{start} (or pass --agent-listen with the address it uses)")
        except OSError as exc:
            return Check("agent-socket", FAIL, f"{addr}: {exc.strerror}", start)
        if not stat.S_ISSOCK(st.st_mode):
            return Check("agent-socket", FAIL, f"{addr} exists but is not a socket",
                         f"remove it, then {start}")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            return Check("agent-socket", FAIL, f"{addr} has mode {mode:04o}: other users "
                         f"can connect and set rates (no token on a Unix socket)",
                         f"chmod 600 {addr}; the agent creates it 0600, so something "
                         f"changed it: restart rapier-agent")
        base, where = f"unix:{addr}", f"{addr} (mode {mode:04o}, uid {st.st_uid})"
    else:
        host, port = addr
        base, where = f"http://{host}:{port}", f"{host}:{port} (TCP: token required)"
    try:
        status, body = health(base)
    except OSError as exc:
        stale = kind == "unix"
        return Check("agent-socket", FAIL, f"{where}: no agent answers ({exc})"
                     + (": a socket left by a stopped agent" if stale else ""),
                     start + (" (it replaces the stale socket)" if stale else ""))
    if status != 200 or not isinstance(body, dict) or not body.get("ok"):
        return Check("agent-socket", FAIL, f"{where}: GET /v1/health answered {status} "
                     f"{str(body)[:80]}", "check that rapier-agent, not another program, "
                     "listens there")
    return Check("agent-socket", OK, f"{where}: agent answers (iface {body.get('iface')}, "
                 f"{body.get('flows')} flows, enforce {body.get('enforce')})")


# -- all of them ---------------------------------------------------------------------------
def run_checks(role: str = "all", agent_listen: Optional[str] = None,
               run: Callable[..., Result] = run_command) -> List[Check]:
    """The checks of ``role`` (``controller``, ``agent`` or ``all``) on this machine, in
    the order of :data:`ROLES`.

    Raises:
        ValueError: unknown role.
    """
    if role not in ("all",) + tuple(ROLES):
        raise ValueError(f"role: must be controller, agent or all, got {role!r}")
    names = ROLES["controller"] + ROLES["agent"] if role == "all" else ROLES[role]
    out: Dict[str, Check] = {}

    def want(*n):
        return any(x in names for x in n)

    if want("python"):
        out["python"] = check_python()
    if want("stack"):
        out["stack"] = check_stack()
    if want("eventlet"):
        out["eventlet"] = check_eventlet()
    if want("controller-import"):
        out["controller-import"] = check_controller_import(run)
    if want("kernels"):
        out["kernels"] = check_kernels()
    if want("ovs", "ovs-datapath"):
        for c in check_ovs(run):
            out[c.name] = c
    if want("ovs-reconnect"):
        out["ovs-reconnect"] = check_ovs_reconnect(run)
    if want("tc-htb", "tc-u32"):
        for c in check_tc(run):
            out[c.name] = c
    if want("agent-socket"):
        out["agent-socket"] = check_agent_socket(agent_listen)
    return [out[n] for n in dict.fromkeys(names) if n in out]


def format_checks(checks: Sequence[Check]) -> str:
    """The text report: one line per check (status, name, detail), the fix indented
    under a check that is not OK, and a count line."""
    lines = []
    for c in checks:
        lines.append(f"{c.status:<4}  {c.name:<17} {c.detail}")
        if c.status != OK and c.fix:
            lines.append(f"{'':<6}{'':<17} fix: {c.fix}")
    counts = {s: sum(c.status == s for c in checks) for s in (OK, WARN, FAIL)}
    lines.append(f"{counts[OK]} OK, {counts[WARN]} WARN, {counts[FAIL]} FAIL")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The ``rapier-doctor`` argument parser."""
    ap = argparse.ArgumentParser(prog="rapier-doctor", description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=("controller", "agent", "all"), default="all",
                    help="which host to check (default all)")
    ap.add_argument("--agent-listen", default=None, metavar="ADDR",
                    help="the agent's --listen address, unix:PATH or HOST:PORT (default "
                         "unix:/run/rapier-agent/agent.sock)")
    ap.add_argument("--json", action="store_true",
                    help="print {role, ok, checks: [{name, status, detail, fix}]}")
    add_common_arguments(ap, quiet_help="only checks that are not OK (-qq: nothing, the "
                                        "exit status says)")
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``rapier-doctor``: exit 0 when no check FAILs, 1 otherwise."""
    args = build_parser().parse_args(argv)
    checks = run_checks(args.role, args.agent_listen)
    failed = any(c.status == FAIL for c in checks)
    if args.json:
        print(json.dumps({"role": args.role, "ok": not failed,
                          "checks": [asdict(c) for c in checks]}, indent=1))
    elif args.quiet < 2:
        shown = [c for c in checks if args.quiet < 1 or c.status != OK]
        print(format_checks(shown) if args.quiet < 1 else
              "\n".join(format_checks(shown).splitlines()[:-1] or ["all OK"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
