"""RAPIER coflow-aware SDN controller: ``rapier-controller --config-file FILE`` (or
``ryu-manager rapier_app.controller`` where Ryu is installed).

Layout (Faucet style, see ``shared/STYLE.md``):

* :mod:`.core` -- pure: coflow registry, request validation, schedule -> rule diffs,
  default forwarding, proxy ARP, progress from byte counters (no stack import); split
  by concern into :mod:`.settings`, :mod:`.validation`, :mod:`.registry`,
  :mod:`.rules`, :mod:`.pushes`, :mod:`.progress`, :mod:`.views` and :mod:`.arp`
  (each name imported from the module that defines it);
* :mod:`.stack` -- the OpenFlow stack (Ryu 4.34 or os-ken): the only module that
  imports ``ryu`` or ``os_ken``;
* :mod:`.agent_client` -- HTTP/JSON client of the host agents (TCP or Unix socket);
* :mod:`.ofmsgs` -- rule data -> OpenFlow 1.3 messages;
* :mod:`.rest` -- the REST API (``/rapier/v1``), a WSGI application
  (:mod:`.wsgiapp`) served by :mod:`.httpserver`;
* :mod:`.app` -- the thin application of the stack;
* :mod:`.launcher` -- ``rapier-controller``: the stack's app manager, on either stack.

The stack's app manager loads the app class whose ``__module__`` is this module, so
:class:`RapierController` is (re)declared here.  Without a stack installed the pure
modules still import (``RapierController`` is then absent).
"""

try:
    from . import stack
except ImportError as _exc:  # pure use (simulator machines, core tests without a stack)
    if type(_exc).__name__ != "StackUnavailable":
        raise  # a stack that is installed but broken: say so
    stack = None

if stack is not None:
    from .app import RapierController as _RapierController

    class RapierController(_RapierController):
        """The RAPIER application (see :class:`.app.RapierController`)."""

    __all__ = ["RapierController"]
