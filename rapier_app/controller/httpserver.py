"""Per-connection limits of Ryu's REST (WSGI) server (responsiveness).

Ryu serves REST with ``eventlet.wsgi.server(sock, app, logger)``
(``ryu.lib.hub.WSGIServer.serve_forever``), i.e. with eventlet's defaults: no socket
timeout (an idle keep-alive connection holds its green thread for ever), at most
1024 connections served at once (``max_size``: the 1025th waits, so 1,076 idle
sockets made ``/health`` time out), and ``debug=True`` (a traceback in a 500 reply).
Ryu offers no option for them, so :func:`configure_wsgi_server` replaces the
``serve_forever`` of ``ryu.app.wsgi.WSGIServer`` -- the class ryu-manager builds
*after* every app's ``__init__`` -- with one that passes:

* ``socket_timeout = rest_socket_timeout_s``: a connection idle (no complete request
  read, or a response not taken) for that long is closed;
* ``max_size = rest_max_connections``;
* ``debug = False``: no traceback in replies.
"""

from __future__ import annotations

from typing import Any, Dict

from .settings import Settings
from .startup import STARTUP


def wsgi_server_kwargs(settings: Settings) -> Dict[str, Any]:
    """The keyword arguments given to ``eventlet.wsgi.server``: ``socket_timeout``
    (s), ``max_size`` (connections), ``keepalive`` (True) and ``debug`` (False)."""
    return {"socket_timeout": float(settings.rest_socket_timeout_s),
            "max_size": int(settings.rest_max_connections), "keepalive": True,
            "debug": False}


def configure_wsgi_server(settings: Settings) -> Dict[str, Any]:
    """Make Ryu's REST server use :func:`wsgi_server_kwargs` (patches
    ``ryu.app.wsgi.WSGIServer.serve_forever``; idempotent, the last call wins).
    Returns the keyword arguments."""
    import eventlet.wsgi
    from ryu.app import wsgi as ryu_wsgi
    from ryu.lib import hub

    kwargs = wsgi_server_kwargs(settings)

    def serve_forever(self):
        """eventlet.wsgi.server with the controller's per-connection limits."""
        self.logger = hub.LoggingWrapper()
        STARTUP.mark("rest")  # the socket listens since the server was built
        eventlet.wsgi.server(self.server, self.handle, self.logger, **kwargs)

    ryu_wsgi.WSGIServer.serve_forever = serve_forever
    return kwargs
