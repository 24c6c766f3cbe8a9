"""RAPIER coflow-aware SDN controller: ``ryu-manager rapier_app.controller``.

Layout (Faucet style, see ``shared/STYLE.md``):

* :mod:`.core` -- pure: coflow registry, request validation, schedule -> rule diffs,
  default forwarding, proxy ARP, progress from byte counters (no Ryu import); split
  by concern into :mod:`.settings`, :mod:`.validation`, :mod:`.registry`,
  :mod:`.rules`, :mod:`.pushes`, :mod:`.progress`, :mod:`.views` and :mod:`.arp`
  (each name imported from the module that defines it);
* :mod:`.agent_client` -- HTTP/JSON client of the host agents (TCP or Unix socket);
* :mod:`.ofmsgs` -- rule data -> OpenFlow 1.3 messages;
* :mod:`.rest` -- the REST API on Ryu's WSGI server (``/rapier/v1``);
* :mod:`.app` -- the thin Ryu application;
* :mod:`.compat` -- restores ``eventlet.wsgi.ALREADY_HANDLED`` for Ryu 4.34.

``ryu-manager`` loads the RyuApp subclass whose ``__module__`` is this module, so
:class:`RapierController` is (re)declared here.  Without Ryu installed the pure
modules still import (``RapierController`` is then absent).
"""

from .compat import ensure_eventlet_compat

try:
    import ryu  # noqa: F401
except ImportError:  # pure use (simulator machines, core tests without Ryu)
    ryu = None

if ryu is not None:
    ensure_eventlet_compat()
    from .app import RapierController as _RapierController

    class RapierController(_RapierController):
        """The RAPIER Ryu application (see :class:`.app.RapierController`)."""

    __all__ = ["RapierController"]
