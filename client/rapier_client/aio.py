"""The asyncio client: :class:`AsyncController` and :class:`AsyncCoflow`.

HTTP/1.1 over :mod:`asyncio` streams (standard library only), with a small pool of
keep-alive connections; the same retry, timeout and warn-once rules as the blocking
:class:`~rapier_client.Controller`.
"""

from __future__ import annotations

import asyncio
import socket
import time
import weakref
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from . import _common as c
from .errors import ControllerUnavailable, RequestRefused

__all__ = ["AsyncController", "AsyncCoflow"]


class AsyncController:
    """Asyncio twin of :class:`~rapier_client.Controller` (same arguments).

    Example::

        ctl = AsyncController("http://127.0.0.1:8080")
        async with ctl.coflow(name="fetch") as cf:
            reader, writer = await cf.open_connection("10.0.0.5", 7000, receive=True)
            data = await reader.read()
            await cf.done(writer)
        await ctl.aclose()
    """

    def __init__(self, address: str, token: Optional[str] = None, timeout: float = 2.0,
                 retries: int = 2, backoff: float = 0.05, total_timeout: float = 5.0,
                 retry_after: float = 10.0, pool_size: int = 4):
        self.endpoint = c.parse_address(address)
        self.token = token
        self.policy = c.Policy(timeout, retries, backoff, total_timeout, retry_after)
        self.pool_size = int(pool_size)
        self._idle: List[Tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    def __repr__(self) -> str:
        return f"AsyncController({str(self.endpoint)!r})"

    async def _open(self):
        ep = self.endpoint
        if ep.scheme == "unix":
            return await asyncio.open_unix_connection(ep.path)
        return await asyncio.open_connection(ep.host, ep.port,
                                             ssl=True if ep.scheme == "https" else None)

    async def _exchange(self, rw, method, path, payload):
        reader, writer = rw
        host = "localhost" if self.endpoint.scheme == "unix" else self.endpoint.host
        head = [f"{method} {path} HTTP/1.1", f"Host: {host}",
                f"Content-Length: {len(payload or b'')}"]
        head += [f"{k}: {v}" for k, v in c.headers_for(self.token, payload).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (payload or b""))
        await writer.drain()
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionResetError("connection closed before the reply")
        parts = status_line.decode("latin-1").split(None, 2)
        status = int(parts[1])
        length, close = None, parts[0] == "HTTP/1.0"
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            k, v = k.strip().lower(), v.strip()
            if k == "content-length":
                length = int(v)
            elif k == "connection":
                close = v.lower() == "close"
            elif k == "transfer-encoding" and v.lower() == "chunked":
                raise OSError("chunked replies are not supported")
        if length is None:
            data, close = await reader.read(), True
        else:
            data = await reader.readexactly(length)
        return status, data, close

    async def _once(self, method, path, payload):
        reused = bool(self._idle)
        rw = self._idle.pop() if reused else await self._open()
        try:
            try:
                status, data, close = await self._exchange(rw, method, path, payload)
            except (ConnectionResetError, BrokenPipeError, asyncio.IncompleteReadError):
                rw[1].close()
                if not reused:
                    raise
                rw = await self._open()  # an idle keep-alive connection was closed
                status, data, close = await self._exchange(rw, method, path, payload)
        except BaseException:
            rw[1].close()
            raise
        if close or len(self._idle) >= self.pool_size:
            rw[1].close()
        else:
            self._idle.append(rw)
        return status, data

    async def request(self, method: str, path: str, body: Any = None):
        """One REST call with retries (as :meth:`rapier_client.Controller.request`).

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
                status, data = await asyncio.wait_for(
                    self._once(method, path, payload), min(self.policy.timeout, left))
                return c.interpret(status, data, method, path)
            except RequestRefused:
                raise
            except (asyncio.TimeoutError, *c.RETRYABLE) as exc:
                last = exc
            if attempt < len(sleeps):
                await asyncio.sleep(max(0.0, min(sleeps[attempt], c.remaining(deadline))))
        raise ControllerUnavailable(f"{method} {self.endpoint}{path}: {last!r}")

    async def _call(self, method: str, path: str, body: Any = None):
        if self.policy.skip_network():
            return None
        try:
            out = await self.request(method, path, body)
        except ControllerUnavailable as exc:
            self.policy.mark_down(self.endpoint, exc)
            return None
        self.policy.mark_up()
        return out

    def coflow(self, name: Optional[str] = None, weight: float = 1.0,
               id: Optional[str] = None) -> "AsyncCoflow":  # noqa: A002
        """A new coflow handle (``async with``); see :meth:`Controller.coflow`."""
        return AsyncCoflow(self, name, weight, id)

    def attach(self, id: str) -> "AsyncCoflow":  # noqa: A002
        """A handle on a coflow registered elsewhere (not closed on exit)."""
        return AsyncCoflow(self, None, 1.0, str(id), owner=False)

    async def health(self) -> Dict[str, Any]:
        return await self.request("GET", "/health")

    async def aclose(self) -> None:
        """Close the pooled connections."""
        while self._idle:
            self._idle.pop()[1].close()


class AsyncCoflow:
    """Asyncio twin of :class:`~rapier_client.Coflow` (coroutines instead of calls)."""

    def __init__(self, ctl: AsyncController, name, weight, id, owner=True):  # noqa: A002
        self.ctl, self.name, self.weight = ctl, name, weight
        self.id = str(id) if id is not None else c.new_coflow_id()
        self.owner = owner
        self.registered = not owner
        self.closed = False
        self._lock = asyncio.Lock()
        self._sockets: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"AsyncCoflow({self.id!r}, registered={self.registered})"

    async def __aenter__(self) -> "AsyncCoflow":
        await self.open()
        return self

    async def __aexit__(self, *exc) -> None:
        if self.owner:
            await self.close()

    async def open(self, flows: Iterable[Dict[str, Any]] = ()) -> List[c.Flow]:
        """Register the coflow open (see :meth:`rapier_client.Coflow.open`)."""
        specs = [c.flow_spec(**s) for s in flows]
        async with self._lock:
            if self.registered:
                return await self.add_flows(specs) if specs else []
            body = c.coflow_body(self.id, self.name, self.weight, specs)
            try:
                reply = await self.ctl._call("POST", "/coflows", body)
            except RequestRefused as err:
                if not (c.taken_by_us(err) and await self._exists()):
                    raise  # (a retried create whose first reply was lost finds it)
                reply = {"id": self.id}
            if reply is None:
                self.ctl.policy.unshaped += len(specs)
                return [c.Flow(self.id, None, s, registered=False) for s in specs]
            self.id = c.id_of(reply, self.id)
            self.registered = True
        return c.flows_of(reply, specs, self.id)

    async def _exists(self) -> bool:
        try:
            await self.ctl.request("GET", f"/coflows/{self.id}")
            return True
        except Exception:  # noqa: BLE001
            return False

    async def add_flows(self, specs: Iterable[Dict[str, Any]]) -> List[c.Flow]:
        """Several flows in one request (see :meth:`rapier_client.Coflow.add_flows`)."""
        specs = [c.flow_spec(**s) for s in specs]
        if not specs:
            return []
        if not self.registered and not self.ctl.policy.skip_network():
            await self.open()
        reply = None
        if self.registered:
            reply = await self.ctl._call("POST", f"/coflows/{self.id}/flows", {"flows": specs})
        if reply is None:
            self.ctl.policy.unshaped += len(specs)
            return [c.Flow(self.id, None, s, registered=False) for s in specs]
        return c.flows_of(reply, specs, self.id)

    async def add_flow(self, src, dst, src_port=None, dst_port=None, protocol="tcp",
                       size_bytes=None) -> c.Flow:
        """One flow (see :meth:`rapier_client.Coflow.add_flow`)."""
        return (await self.add_flows([dict(src=src, dst=dst, src_port=src_port,
                                           dst_port=dst_port, protocol=protocol,
                                           size_bytes=size_bytes)]))[0]

    @staticmethod
    def _sock(obj) -> socket.socket:
        if isinstance(obj, asyncio.StreamWriter):
            return obj.get_extra_info("socket")
        return obj

    async def register_socket(self, sock_or_writer, size_bytes=None,
                              receive: bool = False) -> c.Flow:
        """Register a connected socket (or an ``asyncio.StreamWriter``'s) with its
        5-tuple before it sends (see :meth:`rapier_client.Coflow.register_socket`)."""
        sock = self._sock(sock_or_writer)
        flow = (await self.add_flows([c.socket_flow(sock, size_bytes, receive)]))[0]
        self._sockets[sock_or_writer] = flow
        return flow

    async def open_connection(self, host: str, port: int, size_bytes=None,
                              receive: bool = False, **kwargs):
        """``asyncio.open_connection(host, port, **kwargs)``, then the flow registered
        with the connection's 5-tuple; returns ``(reader, writer)``.

        Raises:
            OSError: the connection failed (nothing registered).
            RequestRefused: the controller refused the flow (the writer is closed).
        """
        reader, writer = await asyncio.open_connection(host, port, **kwargs)
        try:
            await self.register_socket(writer, size_bytes, receive)
        except BaseException:
            writer.close()
            raise
        return reader, writer

    async def done(self, flow: Union[c.Flow, socket.socket, asyncio.StreamWriter]) -> bool:
        """Report ``flow`` done (a :class:`Flow`, or a socket/writer registered here);
        True when this call marked it done (see :meth:`rapier_client.Coflow.done`)."""
        if not isinstance(flow, c.Flow):
            got = self._sockets.get(flow)
            if got is None:
                raise KeyError("done: this socket was not registered with this coflow")
            flow = got
        if not flow.registered or flow.index is None:
            return False
        reply = await self.ctl._call("POST", f"/coflows/{flow.coflow}/flows/{flow.index}/done")
        return bool(reply.get("finished")) if isinstance(reply, dict) else False

    async def close(self) -> None:
        """No more flows will come (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self.registered:
            await self.ctl._call("POST", f"/coflows/{self.id}/close", {})

    async def view(self) -> Dict[str, Any]:
        return await self.ctl.request("GET", f"/coflows/{self.id}")
