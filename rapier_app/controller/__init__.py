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
:class:`RapierController` is (re)declared here, on first use.  Without a stack
installed the pure modules still import (``RapierController`` is then absent).
"""

__all__ = ["RapierController"]


def __getattr__(name):
    """``RapierController``, built on first use (PEP 562): importing this package
    imports no stack and no scheduler, so that ``rapier-controller`` can pick the
    stack and let eventlet patch the standard library before anything else loads.

    Raises:
        AttributeError: another name, or no OpenFlow stack is installed (pure use:
            ``hasattr(rapier_app.controller, "RapierController")`` is False).
    """
    if name != "RapierController":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from . import stack  # noqa: F401 -- the stack, or StackUnavailable
    except ImportError as exc:
        if type(exc).__name__ != "StackUnavailable":
            raise  # a stack that is installed but broken: say so
        raise AttributeError(f"{name}: {exc}") from None
    from .app import RapierController as _RapierController

    cls = type("RapierController", (_RapierController,),
               {"__module__": __name__,
                "__doc__": "The RAPIER application (see :class:`.app.RapierController`)."})
    globals()["RapierController"] = cls
    return cls


def __dir__():
    return sorted(set(globals()) | {"RapierController"})
