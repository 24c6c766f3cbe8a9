"""``rapier-controller``: the controller on the OpenFlow stack in use (Ryu or os-ken).

    rapier-controller --config-file FILE [--observe-links] [--wsapi-port P]
                      [--wsapi-host H] [--ofp-tcp-listen-port P] [--ofp-listen-host H]
                      [--verbose] [--log-file F] ...
    rapier-controller --version

The options are the stack's own (oslo.config, as ``ryu-manager`` takes them) plus
the ``[rapier]`` group of the configuration file (``configs/rapier.conf``), on
either stack.  It loads ``rapier_app.controller`` with the stack's app manager
(``AppManager.run_apps``): the OpenFlow listener, LLDP discovery when asked, the
REST server and the decision worker.  os-ken (4.x) has no manager command of its
own; on Ryu, ``ryu-manager rapier_app.controller`` runs the same app.

Exit status: 2 with one line ``rapier-controller: <field>: <message>`` when the
stack is missing, an option is unknown or the controller refuses its configuration
(``rapier: ...``, :func:`.ryuconf.refuse_to_start`); 0 on SIGTERM or SIGINT (the
database is written at every change, so stopping loses nothing accepted).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import List, Optional

APP = "rapier_app.controller"
PROG = "rapier-controller"


def version_line() -> str:
    """``rapier-controller X.Y.Z (git C) (os-ken 4.2.2, native threads, Python
    3.13.5)``: the project version (and commit in a checkout), the stack and its
    version, the thread model, Python."""
    from ..cli_common import version_string
    from . import stack

    return f"{version_string(PROG)} ({stack.describe()})"


def _stop(signum, _frame) -> None:
    """SIGTERM/SIGINT: leave at once (native threads cannot be killed; the database
    holds every accepted change)."""
    logging.getLogger("rapier.controller").info("stopping (signal %d)", signum)
    logging.shutdown()
    os._exit(0)


def main(argv: Optional[List[str]] = None) -> int:
    """Run the controller until a signal stops it (see the module docstring).

    Raises:
        SystemExit: status 2 on a missing stack, a bad option or a refused start.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    from .stackchoice import StackUnavailable, choose

    if "--version" in argv:  # nothing started, nothing patched
        try:
            print(version_line())
        except StackUnavailable as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 2
        raise SystemExit(0)
    try:
        green = choose() == "ryu" or os.environ.get("OSKEN_HUB_TYPE") == "eventlet"
        if green and "eventlet" not in sys.modules:
            # as ryu-manager: eventlet patches the standard library before the stack,
            # the scheduler and their threads load (later, eventlet >= 0.40 warns
            # with a traceback)
            import eventlet

            eventlet.monkey_patch()
        from . import stack
    except StackUnavailable as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    from oslo_config import cfg as oslo_cfg

    try:
        stack.CONF(args=argv, prog=PROG, project="rapier", default_config_files=[])
    except oslo_cfg.Error as exc:  # unknown option, missing file, bad value
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    stack.init_log()
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    logging.getLogger("rapier.controller").info("%s", version_line())
    stack.AppManager.run_apps([APP])
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
