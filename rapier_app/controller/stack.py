"""The OpenFlow stack under the controller: Ryu 4.34 or os-ken, behind one module.

This is the only module of the project that imports ``ryu`` or ``os_ken``; the
controller (:mod:`.app`, :mod:`.flowstats`, :mod:`.ryuconf`, ...) and the tests take
every stack name from here.  Both stacks have the same API under different package
names (os-ken is OpenStack's maintained continuation of Ryu: ``RyuApp`` became
``OSKenApp``), so the names below are the same whichever is in use.

Which stack:

1. the one already running: ``ryu-manager`` (``ryu.cmd.manager`` imported) is Ryu,
   an os-ken launcher is os-ken;
2. else ``RAPIER_OF_STACK`` (``ryu`` or ``os-ken``) when set;
3. else os-ken when installed, else Ryu.

Thread model (:data:`THREADS`): Ryu runs on eventlet green threads (``ryu-manager``
monkey-patches the standard library); os-ken runs on native threads by default
(``OSKEN_HUB_TYPE=eventlet`` selects eventlet).  On native threads nothing here
imports eventlet.

Raises (at import):
    :class:`.stackchoice.StackUnavailable`: neither stack is installed, or ``RAPIER_OF_STACK`` names one
        that is not (an :class:`ImportError`: the pure modules import without a
        stack).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
from typing import Any, Callable, Optional

from .stackchoice import DISTRIBUTIONS, STACKS, choose

NAME = choose()
_PKG = STACKS[NAME]


def _mod(path: str):
    return importlib.import_module(f"{_PKG}.{path}")


# The stack's own modules, under the same names on both stacks.
if NAME == "ryu":
    from ryu import cfg, utils
    from ryu.base import app_manager
    from ryu.controller import handler, ofp_event
    from ryu.lib import hub
    from ryu.ofproto import ofproto_parser, ofproto_v1_3, ofproto_v1_3_parser
    from ryu.topology import event as topo_event
else:
    from os_ken import cfg, utils
    from os_ken.base import app_manager
    from os_ken.controller import handler, ofp_event
    from os_ken.lib import hub
    from os_ken.ofproto import ofproto_parser, ofproto_v1_3, ofproto_v1_3_parser
    from os_ken.topology import event as topo_event
CONF = cfg.CONF

#: The application base class (``RyuApp`` / ``OSKenApp``).
BaseApp = app_manager.RyuApp if NAME == "ryu" else app_manager.OSKenApp
AppManager = app_manager.AppManager
set_ev_cls = handler.set_ev_cls
CONFIG_DISPATCHER = handler.CONFIG_DISPATCHER
MAIN_DISPATCHER = handler.MAIN_DISPATCHER
DEAD_DISPATCHER = handler.DEAD_DISPATCHER

#: True on eventlet green threads (Ryu; os-ken with ``OSKEN_HUB_TYPE=eventlet``).
GREEN = getattr(hub, "HUB_TYPE", "eventlet") == "eventlet"
#: ``"eventlet"`` or ``"native"``.
THREADS = "eventlet" if GREEN else "native"
#: The stack's version (its distribution's metadata; ``"unknown"`` without it).
try:
    VERSION = importlib.metadata.version(DISTRIBUTIONS[NAME])
except importlib.metadata.PackageNotFoundError:  # pragma: no cover -- a source tree
    VERSION = "unknown"


def eventlet_version() -> Optional[str]:
    """eventlet's version when the stack runs on it, else None (not imported)."""
    if not GREEN:
        return None
    try:
        return importlib.metadata.version("eventlet")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover
        return None


def describe() -> str:
    """One line: stack, version, thread model and Python, e.g.
    ``os-ken 4.2.2, native threads, Python 3.13.5``."""
    model = f"eventlet {eventlet_version()}" if GREEN else "native threads"
    return f"{NAME} {VERSION}, {model}, Python {platform.python_version()}"


def offload() -> Optional[Callable[..., Any]]:
    """``offload(fn, *args)``: run ``fn`` off the event loop, in a native thread, and
    return its result (``eventlet.tpool.execute``) on green threads; None on native
    threads (the caller already is a native thread: call in place)."""
    if not GREEN:
        return None
    from eventlet import tpool

    return tpool.execute


def option_modules() -> None:
    """Import the stack modules that register the command-line and config options
    ``ryu-manager`` has (OpenFlow listener, LLDP discovery, logging, flags)."""
    for path in ("controller.controller", "topology.switches", "flags", "log"):
        _mod(path)


def init_log() -> None:
    """The stack's logging set-up from its options (``--verbose``, ``--log-file``,
    ``--default-log-level``), as its manager does."""
    _mod("log").init_log()


# Registered before anything parses a command line (as the stack's manager imports
# them at its start): a module registering CLI options after the parse would fail.
option_modules()


def serialise_discovery() -> bool:
    """On native threads, put one lock around the LLDP discovery's shared state.

    The stack's link discovery (``topology.switches``) runs in three threads on native
    threads: the app's event thread (LLDP packet-ins: ``PortDataState.move_front``,
    ``LinkState.update_link``), the LLDP loop (``ports.items()``, ``lldp_sent``) and
    the link-timeout loop (``links.items()``, ``link_down``).  ``PortDataState`` is a
    hand-made linked list and ``LinkState`` a dict, both written without a lock: a
    ``move_front`` during the loop's walk can unlink a port from the LLDP rotation, and
    that direction of its link is then never discovered (seen: discover-mode
    emulations on os-ken waiting for their last directed link, in 2 of about 25 starts).
    On eventlet nothing preempts there.  Every method of both classes the app's
    threads call then holds one re-entrant lock, and ``items()`` returns a copy made
    under it.  Returns True when it patched (native threads), False on eventlet.
    """
    if GREEN:
        return False
    import functools
    import threading

    switches = importlib.import_module(f"{_PKG}.topology.switches")
    if getattr(switches, "_rapier_serialised", False):
        return True
    lock = threading.RLock()

    def locked(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with lock:
                return fn(*args, **kwargs)
        return wrapper

    for cls, names in ((switches.PortDataState, ("add_port", "lldp_sent", "lldp_received",
                                                 "move_front", "set_down", "get_port",
                                                 "del_port", "clear", "items")),
                       (switches.LinkState, ("get_peers", "update_link", "link_down",
                                             "rev_link_set_timestamp", "port_deleted"))):
        for name in names:
            setattr(cls, name, locked(getattr(cls, name)))
    switches.LinkState.get_peers = locked(lambda self, src: list(self._map[src].keys()))
    switches.LinkState.items = locked(lambda self: list(dict.items(self)))
    switches._rapier_serialised = True
    return True


serialise_discovery()


def fix_event_timeout() -> bool:
    """On native threads, make ``hub.Event.wait(timeout)`` time out.

    os-ken's native ``hub.Event.wait(timeout)`` waits on a ``threading.Event`` with no
    timeout inside a ``Timeout`` that can only raise once that wait returned: it
    blocks until someone sets the event.  The LLDP loop of its link discovery waits
    that way for the next port's send time, so an LLDP frame lost once (sent before
    the peer switch had its LLDP rule) is never sent again and that direction of the
    link is never discovered (seen: 1 emulation start of about 20 on ``LinearTopo(4,
    2)``, the LLDP rules matching 1-2 frames in 30 s); its link-timeout loop never
    runs either.  Replaced by a wait that honours the timeout.  Returns True when it
    patched (native threads), False on eventlet.
    """
    if GREEN:
        return False
    import time

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._cond:
            ev = self._ev  # set() wakes this one, then replaces it
            if deadline is None:
                ev.wait()
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ev.wait(left)
        return self._cond

    hub.Event.wait = wait
    return True


fix_event_timeout()

#: The REST listener's options, as Ryu's ``ryu.app.wsgi`` declares them (``ryu-manager``
#: registers them; :func:`register_rest_options` does where nothing did).
REST_OPTIONS = (("wsapi-host", str, "0.0.0.0", "REST listen host"),
                ("wsapi-port", int, 8080, "REST listen port"))


def register_rest_options(conf=None) -> None:
    """Register ``--wsapi-host`` and ``--wsapi-port`` on ``conf`` (default
    :data:`CONF`) unless registered already (``ryu-manager`` registers them); once the
    command line is parsed (an app built in-process), as plain options with their
    defaults."""
    from oslo_config import cfg as oslo_cfg

    conf = CONF if conf is None else conf
    kinds = {str: oslo_cfg.StrOpt, int: oslo_cfg.IntOpt}
    for name, kind, default, text in REST_OPTIONS:
        if name.replace("-", "_") in conf:
            continue
        opt = kinds[kind](name, default=default, help=text)
        try:
            conf.register_cli_opt(opt)
        except oslo_cfg.ArgsAlreadyParsedError:
            conf.register_opt(opt)


register_rest_options()  # before any parse, as option_modules()


__all__ = ["AppManager", "BaseApp", "CONF", "CONFIG_DISPATCHER", "DEAD_DISPATCHER", "GREEN",
           "MAIN_DISPATCHER", "NAME", "THREADS", "VERSION", "app_manager", "cfg", "describe",
           "eventlet_version", "handler", "hub", "init_log",
           "ofp_event", "ofproto_parser", "ofproto_v1_3", "ofproto_v1_3_parser", "offload",
           "option_modules", "register_rest_options", "serialise_discovery", "fix_event_timeout", "set_ev_cls", "topo_event", "utils"]
