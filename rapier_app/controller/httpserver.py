"""The REST server: the controller's WSGI application on a TCP listener, in the
thread model of the OpenFlow stack (:mod:`.stack`).

* Native threads (os-ken's default): :class:`ThreadedServer`, the standard
  library's :mod:`wsgiref` server with one thread per connection, HTTP/1.1
  keep-alive, a socket timeout and a cap on connections served at once.
* eventlet green threads (Ryu): ``eventlet.wsgi.server``, the server Ryu's
  ``ryu.app.wsgi`` runs, with the limits Ryu gives no option for.

The same limits on both (:func:`wsgi_server_kwargs`, from the ``[rapier]`` options):

* ``socket_timeout = rest_socket_timeout_s``: a connection idle (no complete request
  read, or a response not taken) for that long is closed (eventlet's default is no
  timeout: an idle keep-alive connection would hold its thread for ever);
* ``max_size = rest_max_connections``: connections served at once (the next one
  waits to be accepted);
* no traceback in a 500 reply.
"""

from __future__ import annotations

import logging
import socketserver
import threading
from typing import Any, Callable, Dict, Optional
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

from .settings import Settings

__all__ = ["ThreadedServer", "serve_green", "serve_rest", "wsgi_server_kwargs"]

LOG = logging.getLogger("rapier.rest")


def wsgi_server_kwargs(settings: Settings) -> Dict[str, Any]:
    """The server limits: ``socket_timeout`` (s), ``max_size`` (connections),
    ``keepalive`` (True) and ``debug`` (False), as ``eventlet.wsgi.server`` takes them."""
    return {"socket_timeout": float(settings.rest_socket_timeout_s),
            "max_size": int(settings.rest_max_connections), "keepalive": True,
            "debug": False}


class _Handler(WSGIRequestHandler):
    """wsgiref's handler, quiet, speaking HTTP/1.1 with keep-alive."""

    protocol_version = "HTTP/1.1"
    timeout = 30.0  # an idle keep-alive connection is closed after that (s)

    def log_message(self, *args):  # access lines at DEBUG, not on stderr
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("%s - %s", self.address_string(), args[0] % args[1:])

    def handle(self):
        # wsgiref handles one request per connection; loop while the client keeps it
        self.close_connection = False
        while not self.close_connection:
            try:
                self.raw_requestline = self.rfile.readline(65537)
                if not self.raw_requestline or not self.parse_request():
                    return
            except (OSError, ValueError):  # timed out or closed while idle
                return
            handler = ServerHandler(self.rfile, self.wfile, self.get_stderr(),
                                    self.get_environ(), multithread=True)
            handler.request_handler = self
            handler.http_version = "1.1"
            handler.run(self.server.get_app())
            if self.headers.get("Connection", "").lower() == "close":
                self.close_connection = True


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = False
    #: the listen backlog (socketserver's default, 5, drops a burst of connections:
    #: each dropped one waits for the client's SYN retry, 1 s and more)
    request_queue_size = 1024
    #: connections served at once (set per server), see :meth:`process_request`
    slots: Optional[threading.BoundedSemaphore] = None

    def handle_error(self, request, client_address):
        """A connection that failed (reset, timed out): one DEBUG line, no traceback
        on stderr (the application's own errors are answered 500 by the REST layer)."""
        LOG.debug("REST connection from %s failed", client_address, exc_info=True)

    def process_request(self, request, client_address):
        if self.slots is not None:
            self.slots.acquire()  # the next connection waits for a free slot
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            if self.slots is not None:
                self.slots.release()


class ThreadedServer:
    """A WSGI application served on ``http://HOST:PORT`` by native threads (one per
    connection, daemon threads); a context manager (stops on exit).

    Args:
        wsgi_app: the WSGI callable.
        host, port: where to listen (port 0: a free port).
        settings: the limits (:func:`wsgi_server_kwargs`); None: 30 s idle timeout,
            no cap on connections.

    Attributes:
        url: ``http://HOST:PORT``; port: the port bound.

    Raises:
        OSError: the address cannot be bound (at construction).
    """

    def __init__(self, wsgi_app, host: str = "127.0.0.1", port: int = 0,
                 settings: Optional[Settings] = None):
        handler = _Handler
        if settings is not None:
            limits = wsgi_server_kwargs(settings)
            handler = type("_LimitedHandler", (_Handler,),
                           {"timeout": limits["socket_timeout"]})
        self._srv = _ThreadingServer((host, port), handler)
        self._srv.set_app(wsgi_app)
        if settings is not None:
            self._srv.slots = threading.BoundedSemaphore(limits["max_size"])
        self.port = self._srv.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self._srv.serve_forever, name="rapier-rest",
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> "ThreadedServer":
        """Serve in a daemon thread; returns at once."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket (idempotent)."""
        if self._thread.is_alive():
            self._srv.shutdown()
            self._thread.join(timeout=5)
        self._srv.server_close()

    def __enter__(self) -> "ThreadedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _AccessLog:
    """eventlet.wsgi's ``log`` (a file-like object): access lines at DEBUG."""

    def write(self, message: str) -> None:
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug("%s", message.rstrip("\n"))


def serve_green(wsgi_app, host: str, port: int, settings: Settings,
                spawn: Callable[..., Any]):
    """Bind ``host:port`` now and serve ``wsgi_app`` with ``eventlet.wsgi.server`` in a
    green thread made by ``spawn(fn, *args, **kwargs)``; returns ``(socket, thread)``.

    Raises:
        OSError: the address cannot be bound.
    """
    import eventlet
    import eventlet.wsgi

    sock = eventlet.listen((host, port))
    thread = spawn(eventlet.wsgi.server, sock, wsgi_app, log=_AccessLog(),
                   **wsgi_server_kwargs(settings))
    return sock, thread


def serve_rest(wsgi_app, host: str, port: int, settings: Settings, green: bool,
               spawn: Callable[..., Any], threads: list) -> Optional[ThreadedServer]:
    """The controller's REST server: :func:`serve_green` on eventlet (its green thread
    appended to ``threads``; returns None), else a started :class:`ThreadedServer`.

    Raises:
        OSError: the address cannot be bound.
    """
    if green:
        threads.append(serve_green(wsgi_app, host, port, settings, spawn)[1])
        return None
    return ThreadedServer(wsgi_app, host, port, settings).start()
