"""Which OpenFlow stack the controller runs on (Ryu or os-ken), decided without
importing either: :mod:`.stack` imports the one chosen here, ``rapier-doctor`` asks
without importing it.

Rules (:func:`choose`): the stack already running (``ryu-manager`` imported
``ryu.cmd.manager``; an os-ken launcher ``os_ken.base.app_manager``); else
``RAPIER_OF_STACK`` (``ryu`` or ``os-ken``) when set; else os-ken when installed, else
Ryu.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Callable, Dict, Optional

from ..errors import RapierError

#: The stacks, by the name ``RAPIER_OF_STACK`` takes.
STACKS = {"os-ken": "os_ken", "ryu": "ryu"}
#: The distribution (PyPI) name of each stack, for its version.
DISTRIBUTIONS = {"os-ken": "os-ken", "ryu": "ryu"}
#: The environment variable that selects the stack.
ENV = "RAPIER_OF_STACK"


class StackUnavailable(RapierError, ImportError):
    """No usable OpenFlow stack (the message names ``RAPIER_OF_STACK`` and what to
    install)."""


def normalise(name: str) -> str:
    """``os-ken`` for ``os_ken``/``osken``/``OS-Ken``, ``ryu`` for ``ryu``; other
    names come back lower-cased (and are refused by :func:`choose`)."""
    n = name.strip().lower().replace("_", "-")
    return "os-ken" if n in ("osken", "os-ken") else n


def choose(environ: Optional[Dict[str, str]] = None,
           modules: Optional[Dict[str, Any]] = None,
           installed: Optional[Callable[[str], bool]] = None) -> str:
    """The stack to use: ``"ryu"`` or ``"os-ken"`` (rules in the module docstring).
    Imports neither.

    Args:
        environ: the environment (default ``os.environ``).
        modules: the imported modules (default ``sys.modules``).
        installed: ``installed(package) -> bool`` (default: importable).

    Raises:
        StackUnavailable: ``RAPIER_OF_STACK`` is not ``ryu``/``os-ken``, names a stack
            that is not installed, or none is installed.
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    installed = installed or (lambda pkg: importlib.util.find_spec(pkg) is not None)
    if "ryu.cmd.manager" in modules or "ryu.base.app_manager" in modules:
        return "ryu"
    if "os_ken.base.app_manager" in modules:
        return "os-ken"
    raw = environ.get(ENV, "").strip()
    want = normalise(raw) if raw else ""
    if want and want not in STACKS:
        raise StackUnavailable(f"{ENV}: {raw!r} is not a stack (ryu or os-ken)")
    for name in ([want] if want else ["os-ken", "ryu"]):
        if installed(STACKS[name]):
            return name
    if want:
        raise StackUnavailable(f"{ENV}: {want} is not installed (scripts/install.sh with "
                               f"{ENV}={want})")
    raise StackUnavailable("no OpenFlow stack: install os-ken or Ryu (scripts/install.sh)")


__all__ = ["DISTRIBUTIONS", "ENV", "STACKS", "StackUnavailable", "choose", "normalise"]
