"""The blocking client: :class:`Controller` and :class:`Coflow` (threads welcome)."""

from __future__ import annotations

import http.client
import socket
import threading
import time
import weakref
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _common as c
from .errors import ControllerUnavailable, RequestRefused

__all__ = ["Controller", "Coflow"]


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a Unix stream socket."""

    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except OSError:
            s.close()
            raise
        self.sock = s


class Controller:
    """A handle on the RAPIER controller's REST API (blocking; safe to share between
    threads: each thread keeps its own keep-alive connection).

    Args:
        address: ``http://HOST:PORT`` (default port 8080), ``HOST:PORT`` or
            ``unix:/path.sock``.
        token: the controller's ``rest_token`` (sent as ``Authorization: Bearer``).
        timeout: seconds for one attempt.
        retries: attempts after the first on connection errors, timeouts and 5xx.
        backoff: seconds before the first retry, doubled for each next one.
        total_timeout: bound on one call, all attempts included (s).
        retry_after: after the controller was found unreachable, coflow calls skip
            the network for that many seconds.

    When the controller cannot be reached within the bound, coflow calls do not
    raise: the flow goes unshaped (``Flow.registered`` is False) and the logger
    ``rapier_client`` says so once per :class:`Controller`.  Refusals (4xx) raise
    :class:`~rapier_client.errors.RequestRefused` subclasses.

    Example::

        ctl = Controller("http://127.0.0.1:8080", token=os.environ.get("RAPIER_TOKEN"))
        with ctl.coflow(name="shuffle-0") as cf:
            sock = cf.connect(("10.0.0.5", 7000), size_bytes=64 << 20)
            sock.sendall(data)
            sock.close()
            cf.done(sock)
    """

    def __init__(self, address: str, token: Optional[str] = None, timeout: float = 2.0,
                 retries: int = 2, backoff: float = 0.05, total_timeout: float = 5.0,
                 retry_after: float = 10.0):
        self.endpoint = c.parse_address(address)
        self.token = token
        self.policy = c.Policy(timeout, retries, backoff, total_timeout, retry_after)
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"Controller({str(self.endpoint)!r})"

    # -- transport ---------------------------------------------------------------------
    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            ep = self.endpoint
            if ep.scheme == "unix":
                conn = _UnixHTTPConnection(ep.path, timeout)
            elif ep.scheme == "https":
                conn = http.client.HTTPSConnection(ep.host, ep.port, timeout=timeout)
            else:
                conn = http.client.HTTPConnection(ep.host, ep.port, timeout=timeout)
            self._local.conn = conn
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def _once(self, method: str, path: str, payload: Optional[bytes], timeout: float):
        conn = self._connection(timeout)
        reused = conn.sock is not None
        try:
            conn.request(method, path, body=payload, headers=c.headers_for(self.token, payload))
            resp = conn.getresponse()
            data = resp.read()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self._drop_connection()
            if not reused:
                raise
            # the server closed an idle keep-alive connection: once more on a new one
            conn = self._connection(timeout)
            conn.request(method, path, body=payload, headers=c.headers_for(self.token, payload))
            resp = conn.getresponse()
            data = resp.read()
        except BaseException:
            self._drop_connection()
            raise
        if resp.will_close:
            self._drop_connection()
        return resp.status, data

    def request(self, method: str, path: str, body: Any = None):
        """One REST call with retries: ``path`` under ``/rapier/v1`` (``"/coflows"``)
        or absolute; returns the decoded JSON of a 2xx.

        Raises:
            RequestRefused: (subclasses) the controller answered 4xx.
            ControllerUnavailable: no answer within the bound, or 5xx every time.
        """
        if not path.startswith(c.PREFIX) and not path.startswith("/metrics"):
            path = c.PREFIX + path
        payload = c.encode(body)
        deadline = time.monotonic() + self.policy.total_timeout
        sleeps = self.policy.sleeps()
        last: BaseException = ControllerUnavailable("no attempt made")
        for attempt in range(len(sleeps) + 1):
            left = c.remaining(deadline)
            if left <= 0:
                break
            c.ATTEMPTS.set(attempt + 1)
            try:
                status, data = self._once(method, path, payload,
                                          min(self.policy.timeout, left))
                return c.interpret(status, data, method, path)
            except RequestRefused:
                raise
            except c.RETRYABLE as exc:
                last = exc
            if attempt < len(sleeps):
                time.sleep(max(0.0, min(sleeps[attempt], c.remaining(deadline))))
        raise ControllerUnavailable(f"{method} {self.endpoint}{path}: {last}") from (
            last if isinstance(last, BaseException) else None)

    def _call(self, method: str, path: str, body: Any = None):
        """:meth:`request` for the coflow calls: ``None`` (and one warning) when the
        controller is unreachable, instead of raising."""
        if self.policy.skip_network():
            return None
        try:
            out = self.request(method, path, body)
        except ControllerUnavailable as exc:
            self.policy.mark_down(self.endpoint, exc)
            return None
        self.policy.mark_up()
        return out

    # -- coflows -----------------------------------------------------------------------
    def coflow(self, name: Optional[str] = None, weight: float = 1.0,
               id: Optional[str] = None) -> "Coflow":  # noqa: A002 -- the REST field
        """A new coflow handle (registered open on ``with`` entry or :meth:`Coflow.open`,
        closed on exit or :meth:`Coflow.close`).

        Args:
            name: free text (at most 64 characters), shown in the controller's views.
            weight: the coflow's weight (> 0).
            id: the coflow id to register (default: a fresh ``c-<16 hex>``); other
                processes :meth:`attach` to it by this id.
        """
        return Coflow(self, name, weight, id)

    def attach(self, id: str) -> "Coflow":  # noqa: A002
        """A handle on a coflow another process registered (open): add flows to it;
        leaving ``with`` does not close it (its owner does)."""
        return Coflow(self, None, 1.0, str(id), owner=False)

    def health(self) -> Dict[str, Any]:
        """``GET /rapier/v1/health`` (raises like :meth:`request`)."""
        return self.request("GET", "/health")

    def close(self) -> None:
        """Close this thread's keep-alive connection (others close when collected)."""
        self._drop_connection()


class Coflow:
    """One coflow: flows are added as they appear and reported done; see
    :meth:`Controller.coflow`.

    Attributes:
        id: the coflow id.
        registered: True once the controller accepted the coflow (False while it is
            unreachable: flows then go unshaped).
        closed: True after :meth:`close`.
    """

    def __init__(self, ctl: Controller, name: Optional[str], weight: float,
                 id: Optional[str], owner: bool = True):  # noqa: A002
        self.ctl, self.name, self.weight = ctl, name, weight
        self.id = str(id) if id is not None else c.new_coflow_id()
        self.owner = owner
        self.registered = not owner  # an attached coflow exists already
        self.closed = False
        self._lock = threading.Lock()
        self._sockets: "weakref.WeakKeyDictionary[socket.socket, c.Flow]" = \
            weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"Coflow({self.id!r}, registered={self.registered})"

    def __enter__(self) -> "Coflow":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        if self.owner:
            self.close()

    def open(self, flows: Iterable[Dict[str, Any]] = ()) -> List[c.Flow]:
        """Register the coflow, open (more flows may come), with optional first
        ``flows`` (FLOW dicts as for :func:`add_flows`).  Idempotent.

        Raises:
            RequestRefused: bad input (e.g. ``weight``), the id taken (400 on ``id``).
        """
        specs = list(flows)
        with self._lock:
            if self.registered:
                return self.add_flows(specs) if specs else []
            path_body = c.coflow_body(self.id, self.name, self.weight, specs)
            try:
                reply = self.ctl._call("POST", "/coflows", path_body)
            except RequestRefused as err:
                if not (c.taken_by_us(err) and self._exists()):
                    raise  # (a retried create whose first reply was lost finds it)
                reply = {"id": self.id}
            if reply is None:
                self.ctl.policy.unshaped += len(specs)
                return [c.Flow(self.id, None, s, registered=False) for s in specs]
            self.id = c.id_of(reply, self.id)
            self.registered = True
        return c.flows_of(reply, specs, self.id)

    def _exists(self) -> bool:
        try:
            self.ctl.request("GET", f"/coflows/{self.id}")
            return True
        except Exception:  # noqa: BLE001
            return False

    def _ensure(self) -> bool:
        if not self.registered and not self.ctl.policy.skip_network():
            self.open()
        return self.registered

    def add_flows(self, specs: Iterable[Dict[str, Any]]) -> List[c.Flow]:
        """Register several flows in one request (all or none); each spec is a dict
        with the arguments of :meth:`add_flow`.  Returns their :class:`Flow` objects
        (``registered=False`` when the controller is unreachable)."""
        specs = [c.flow_spec(**s) for s in specs]
        if not specs:
            return []
        if not self._ensure():
            self.ctl.policy.unshaped += len(specs)
            return [c.Flow(self.id, None, s, registered=False) for s in specs]
        reply = self.ctl._call("POST", f"/coflows/{self.id}/flows", {"flows": specs})
        if reply is None:
            self.ctl.policy.unshaped += len(specs)
            return [c.Flow(self.id, None, s, registered=False) for s in specs]
        return c.flows_of(reply, specs, self.id)

    def add_flow(self, src: str, dst: str, src_port: Optional[int] = None,
                 dst_port: Optional[int] = None, protocol: str = "tcp",
                 size_bytes: Optional[int] = None) -> c.Flow:
        """Register one flow: ``src``/``dst`` are host names or IPv4 addresses; at
        least one of ``src_port``/``dst_port``; ``size_bytes`` ``None`` = unknown.

        Raises:
            BadRequest: a bad field (``err.field`` names it, e.g. ``flows[0].src_port``).
            Conflict: the coflow is closed, or the match overlaps a live flow's
                (``err.flows`` names both).
            NotFound: the coflow is unknown to the controller.
        """
        return self.add_flows([c.flow_spec(src, dst, src_port, dst_port, protocol,
                                           size_bytes)])[0]

    def register_socket(self, sock: socket.socket, size_bytes: Optional[int] = None,
                        receive: bool = False) -> c.Flow:
        """Register the flow of a connected or accepted socket with its real 5-tuple
        (``getsockname()``/``getpeername()``), before it sends: the bytes it sends, or
        with ``receive=True`` the bytes it receives.  :meth:`done` then accepts the
        socket.

        Raises:
            ValueError: the socket is not a connected IPv4 TCP/UDP socket.
            RequestRefused: as :meth:`add_flow`.
        """
        flow = self.add_flows([c.socket_flow(sock, size_bytes, receive)])[0]
        self._sockets[sock] = flow
        return flow

    def connect(self, address, size_bytes: Optional[int] = None, receive: bool = False,
                timeout: Optional[float] = None, source_address=None) -> socket.socket:
        """``socket.create_connection(address, timeout, source_address)``, then the
        flow registered with the connection's real 5-tuple before the socket is
        returned (so before its first byte is sent).  ``receive=True`` registers the
        bytes the peer sends instead.

        The connection is made first and registered second: the kernel picks the
        source address and port, the handshake's three packets go unshaped, and a
        refused connection leaves nothing registered.

        Raises:
            OSError: the connection failed (nothing registered).
            RequestRefused: the controller refused the flow (the socket is closed).
        """
        sock = socket.create_connection(c.split_hostport(address),
                                        timeout=timeout, source_address=source_address)
        try:
            self.register_socket(sock, size_bytes, receive)
        except BaseException:
            sock.close()
            raise
        return sock

    def flow_of(self, sock: socket.socket) -> Optional[c.Flow]:
        """The flow registered for ``sock`` by :meth:`connect` or :meth:`register_socket`."""
        return self._sockets.get(sock)

    def done(self, flow: Union[c.Flow, socket.socket]) -> bool:
        """Report that the receiver has every byte of ``flow`` (a :class:`Flow` or a
        socket registered here).  Returns True when this call marked the flow done
        (False: it was done already, the coflow is no longer active, or the flow went
        unregistered because the controller was unreachable).

        Raises:
            NotFound: unknown coflow or flow index.
            KeyError: a socket this coflow did not register.
        """
        if isinstance(flow, socket.socket):
            if sock_flow := self._sockets.get(flow):
                flow = sock_flow
            else:
                raise KeyError("done: this socket was not registered with this coflow")
        if not flow.registered or flow.index is None:
            return False
        reply = self.ctl._call("POST", f"/coflows/{flow.coflow}/flows/{flow.index}/done")
        return bool(reply.get("finished")) if isinstance(reply, dict) else False

    def close(self) -> None:
        """No more flows will come (the coflow completes when its flows are done).
        Idempotent; a no-op while the coflow is unregistered."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self.registered:
                self.ctl._call("POST", f"/coflows/{self.id}/close", {})

    def view(self) -> Dict[str, Any]:
        """``GET /rapier/v1/coflows/<id>`` (raises like :meth:`Controller.request`)."""
        return self.ctl.request("GET", f"/coflows/{self.id}")
