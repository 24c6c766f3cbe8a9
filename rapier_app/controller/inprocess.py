"""Serve an in-process controller's REST API over real HTTP on loopback.

Tests and benchmarks build :class:`~rapier_app.controller.RapierController` in the
test process (no stack manager, no switches) and need real sockets in front of it --
the Python client speaks HTTP:

* :class:`InProcessServer`: the app's WSGI application on the native-thread server
  (:class:`.httpserver.ThreadedServer`), decisions made before the reply;
* :class:`GreenServer`: the app served as the controller serves it on the stack in
  use (:mod:`.stack`): the REST server and the decision worker on eventlet green
  threads (Ryu), or on native threads (os-ken), so that a POST answers once the
  coflow is stored and the scheduler decides after the reply.
"""

from __future__ import annotations

import threading

from .httpserver import ThreadedServer

__all__ = ["GreenServer", "InProcessServer"]


class InProcessServer(ThreadedServer):
    """``app.wsgi`` (any WSGI callable) served on ``http://127.0.0.1:<port>`` by native
    threads, HTTP/1.1 keep-alive on; a context manager (stops the server on exit).

    Attributes:
        url: ``http://127.0.0.1:PORT``.
        port: the port the kernel gave.
    """

    def __init__(self, wsgi_app, host: str = "127.0.0.1", port: int = 0):
        super().__init__(wsgi_app, host, port)


class GreenServer:
    """An in-process :class:`~rapier_app.controller.RapierController` served as the
    controller serves it on the stack in use: on eventlet (Ryu),
    ``eventlet.wsgi.server`` with the controller's per-connection settings
    (:func:`.httpserver.wsgi_server_kwargs`) and the decision worker (:mod:`.worker`)
    as green threads, all in one OS thread of their own; on native threads (os-ken),
    :class:`.httpserver.ThreadedServer` with the same settings and the worker as a
    thread.  A POST answers once the coflow is stored and the scheduler decides after
    the reply.  A context manager.

    Args:
        app: the controller built in-process (``app.wsgi``, ``app.worker``,
            ``app.settings``), never started.
        worker: run the decision worker (False: decisions before the reply, as
            :class:`InProcessServer`).

    Attributes:
        url: ``http://127.0.0.1:PORT``.
    """

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, worker: bool = True):
        self.app, self.host, self.port, self.worker = app, host, port, worker
        self.url = ""
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: list = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._profile = None  # (profiler or None,) to switch, set by profile()

    def profile(self, profiler) -> None:
        """Run ``profiler`` (a :class:`cProfile.Profile`) over the server's thread from
        now on; ``None`` stops it.  Returns once the server's thread switched."""
        done = threading.Event()
        self._profile = (profiler, done)
        done.wait(5)

    def _run(self) -> None:
        from . import stack

        if not stack.GREEN:
            return self._run_native()
        import logging

        import eventlet
        import eventlet.wsgi

        from .httpserver import wsgi_server_kwargs

        try:
            sock = eventlet.listen((self.host, self.port))
            self.port = sock.getsockname()[1]
            self.url = f"http://{self.host}:{self.port}"
            quiet = logging.getLogger("rapier.inprocess.wsgi")
            quiet.addHandler(logging.NullHandler())
            quiet.propagate = False
            kwargs = wsgi_server_kwargs(self.app.settings)
            if self.worker and hasattr(self.app, "_start_loop"):
                from eventlet.semaphore import Semaphore

                # ryu-manager monkey-patches threading, so the decision gate (a
                # threading.Lock) is green there: a request waiting on it yields to
                # the hub, which delivers the offloaded decision's result (tpool).
                self.app._gate = Semaphore(1)
                from eventlet.green import threading as green_threading

                # ditto the app's lock: a POST yields to the hub holding it (a
                # native RLock would let other green threads of this OS thread in)
                self.app._lock = green_threading.RLock()
                self.app._start_loop()  # what app.start() does before the worker runs
            greens = [eventlet.spawn(eventlet.wsgi.server, sock, self.app.wsgi, log=quiet,
                                     log_output=False, **kwargs)]
            if self.worker:
                greens.append(eventlet.spawn(self.app.worker.loop))
        except BaseException as exc:  # noqa: BLE001 -- reported by start()
            self._error.append(exc)
            self._ready.set()
            return
        self._ready.set()
        running = None
        while not self._stop.is_set():
            eventlet.sleep(0.02)
            if self._profile is not None:
                (want, done), self._profile = self._profile, None
                if running is not None:
                    running.disable()
                running = want
                if running is not None:
                    running.enable()
                done.set()
        if running is not None:
            running.disable()
        for g in greens:
            g.kill()
        sock.close()
        from eventlet import tpool

        tpool.killall()  # the decisions' native threads, from the hub's own thread

    def _run_native(self) -> None:
        """Native threads: the REST server's threads and the worker's thread."""
        try:
            srv = ThreadedServer(self.app.wsgi, self.host, self.port, self.app.settings)
        except BaseException as exc:  # noqa: BLE001 -- reported by start()
            self._error.append(exc)
            self._ready.set()
            return
        self.port, self.url = srv.port, srv.url
        if self.worker and hasattr(self.app, "_start_loop"):
            self.app._start_loop()
        srv.start()
        if self.worker:
            threading.Thread(target=self.app.worker.loop, daemon=True,
                             name="rapier-worker").start()
        self._ready.set()
        running = None
        while not self._stop.wait(0.02):
            if self._profile is not None:  # profile the worker's decisions: not here
                (want, done), self._profile = self._profile, None
                running = want
                done.set()
        srv.stop()

    def start(self) -> "GreenServer":
        """Start serving; returns once the port is bound.

        Raises:
            OSError: the address could not be bound.
        """
        self._thread.start()
        self._ready.wait(30)
        if self._error:
            raise self._error[0]
        return self

    def stop(self) -> None:
        """Stop the server and the worker (idempotent)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def __enter__(self) -> "GreenServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
