"""What the blocking and the asyncio clients share: addresses, request bodies, the
answer's interpretation, the retry schedule, socket 5-tuples and the one warning.

No I/O here except reading a socket's addresses.
"""

from __future__ import annotations

import contextvars
import ipaddress
import json
import logging
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from .errors import ControllerUnavailable, RapierClientError, refusal

LOG = logging.getLogger("rapier_client")
PREFIX = "/rapier/v1"
USER_AGENT = "rapier-client/0.1"


@dataclass(frozen=True)
class Endpoint:
    """Where the controller's REST API is: ``scheme`` (``http``, ``https`` or
    ``unix``), ``host``, ``port`` and, for ``unix``, the socket ``path``."""

    scheme: str
    host: str
    port: int
    path: str = ""

    def __str__(self) -> str:
        if self.scheme == "unix":
            return f"unix:{self.path}"
        return f"{self.scheme}://{self.host}:{self.port}"


def parse_address(address: str) -> Endpoint:
    """The :class:`Endpoint` of ``address``: ``http://HOST:PORT``, ``https://HOST:PORT``,
    ``HOST:PORT`` (http), ``HOST`` (http, port 8080, Ryu's default) or
    ``unix:/path/to.sock`` (HTTP over a Unix socket, e.g. from inside a Mininet host
    through a relay).

    Raises:
        ValueError: an empty address, an unknown scheme or a bad port.
    """
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"address: expected 'http://HOST:PORT', got {address!r}")
    a = address.strip()
    if a.startswith("unix:"):
        path = a[len("unix:"):]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ValueError(f"address: no socket path in {address!r}")
        return Endpoint("unix", "localhost", 0, path)
    if "://" not in a:
        a = "http://" + a
    parts = urlsplit(a)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"address: expected 'http://HOST:PORT', got {address!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"address: bad port in {address!r}") from exc
    return Endpoint(parts.scheme, parts.hostname, port or (443 if parts.scheme == "https"
                                                           else 8080))


def headers_for(token: Optional[str], payload: Optional[bytes]) -> Dict[str, str]:
    """Request headers: JSON, keep-alive, and ``Authorization: Bearer`` when a token
    is configured."""
    h = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if payload is not None:
        h["Content-Type"] = "application/json"
    if token:
        h["Authorization"] = f"Bearer {token}"
    return h


def encode(body) -> Optional[bytes]:
    """The JSON bytes of ``body`` (``None`` for no body)."""
    return None if body is None else json.dumps(body, separators=(",", ":")).encode()


def decode(data: bytes):
    """The JSON value of a reply body (the raw text when it is not JSON)."""
    if not data:
        return {}
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


def interpret(status: int, data: bytes, method: str, path: str):
    """The decoded reply of a 2xx; raises the client exception of a 4xx.

    Raises:
        RequestRefused: (its subclasses) for 4xx.
        _Retryable: for 5xx (the caller retries, then gives up unavailable).
    """
    body = decode(data)
    if 200 <= status < 300:
        return body
    if 400 <= status < 500:
        raise refusal(status, body, method, path)
    raise _Retryable(f"{method} {path}: {status} {str(body)[:120]}")


class _Retryable(RapierClientError):
    """A 5xx answer (internal): retried like a connection error."""


#: Attempts the last request of this thread or task took (1: no retry).
ATTEMPTS: "contextvars.ContextVar[int]" = contextvars.ContextVar("rapier_client_attempts",
                                                                 default=0)


def taken_by_us(err) -> bool:
    """True when ``err`` refuses a create because the id exists (400 on ``id`` or 409)
    and the create was retried: the first attempt's reply was lost, not the coflow."""
    return ATTEMPTS.get() > 1 and (err.status == 409 or (err.status == 400
                                                         and err.field == "id"))


#: Exceptions of one attempt that are retried (then reported unavailable).
RETRYABLE = (OSError, _Retryable, EOFError)


class Policy:
    """Timeouts, retries and the warn-once state of one controller handle.

    Args:
        timeout: seconds for one attempt (connect + request + reply), > 0.
        retries: attempts after the first on a connection error, timeout or 5xx, >= 0.
        backoff: seconds slept before the first retry; doubled for each further one.
        total_timeout: bound on one call, all attempts and sleeps included (s).
        retry_after: once the controller was found unreachable, calls for that many
            seconds skip the network (the transfer goes ahead unshaped at once);
            then the next call tries again.

    Raises:
        ValueError: a negative or non-finite value (names the argument).
    """

    def __init__(self, timeout: float = 2.0, retries: int = 2, backoff: float = 0.05,
                 total_timeout: float = 5.0, retry_after: float = 10.0):
        for name, v, lo in (("timeout", timeout, 1e-6), ("backoff", backoff, 0.0),
                            ("total_timeout", total_timeout, 1e-6),
                            ("retry_after", retry_after, 0.0)):
            if not isinstance(v, (int, float)) or not lo <= float(v) < float("inf"):
                raise ValueError(f"{name}: expected a finite number >= {lo}, got {v!r}")
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError(f"retries: expected an integer >= 0, got {retries!r}")
        self.timeout, self.retries, self.backoff = float(timeout), retries, float(backoff)
        self.total_timeout, self.retry_after = float(total_timeout), float(retry_after)
        self._lock = threading.Lock()
        self._down_until = 0.0
        self.warned = False
        self.unshaped = 0  # flows let through unregistered since this handle was made

    def sleeps(self):
        """The pause before each retry (s): backoff, 2 backoff, 4 backoff, ..."""
        return [self.backoff * (2 ** k) for k in range(self.retries)]

    def skip_network(self) -> bool:
        """True while the controller is considered down (see ``retry_after``)."""
        return time.monotonic() < self._down_until

    def mark_down(self, endpoint: Endpoint, exc: BaseException) -> None:
        """Remember that the controller is unreachable; log one warning per handle."""
        with self._lock:
            self._down_until = time.monotonic() + self.retry_after
            first, self.warned = not self.warned, True
        if first:
            LOG.warning("rapier_client: controller %s unreachable (%s); transfers go ahead "
                        "unshaped (this warning is given once)", endpoint, exc)

    def mark_up(self) -> None:
        self._down_until = 0.0


def new_coflow_id() -> str:
    """A fresh coflow id chosen by the client (so that a create retried after a lost
    reply cannot make a second coflow)."""
    return "c-" + uuid.uuid4().hex[:16]


def coflow_body(cid: str, name: Optional[str], weight: float, flows=None) -> Dict[str, Any]:
    """The body of ``POST /rapier/v1/coflows`` for an open coflow."""
    body: Dict[str, Any] = {"id": cid, "open": True, "weight": weight}
    if name is not None:
        body["name"] = name
    if flows:
        body["flows"] = flows
    return body


def flow_spec(src, dst, src_port=None, dst_port=None, protocol="tcp",
              size_bytes=None) -> Dict[str, Any]:
    """One FLOW of the REST body: only the fields given (the controller validates)."""
    f: Dict[str, Any] = {"src": src, "dst": dst, "protocol": protocol}
    if src_port is not None:
        f["src_port"] = src_port
    if dst_port is not None:
        f["dst_port"] = dst_port
    if size_bytes is not None:
        f["size_bytes"] = size_bytes
    return f


def _ipv4(addr: str) -> str:
    ip = ipaddress.ip_address(addr.split("%")[0])
    if ip.version == 6:
        if ip.ipv4_mapped is None:
            raise ValueError(f"socket: the controller knows IPv4 hosts only, got {addr}")
        ip = ip.ipv4_mapped
    return str(ip)


def socket_flow(sock, size_bytes=None, receive: bool = False) -> Dict[str, Any]:
    """The FLOW of a connected socket: the bytes it sends (``src`` = its own address
    and port, ``dst`` = the peer's), or with ``receive=True`` the bytes it receives.

    Raises:
        ValueError: the socket is not connected, or not IPv4 (IPv4-mapped IPv6 is
            accepted), or neither TCP nor UDP.
    """
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        raise ValueError(f"socket: expected an IPv4 TCP or UDP socket, got {sock.family!r}")
    kind = sock.type & 0xF  # drop SOCK_NONBLOCK / SOCK_CLOEXEC bits
    protocol = {socket.SOCK_STREAM: "tcp", socket.SOCK_DGRAM: "udp"}.get(kind)
    if protocol is None:
        raise ValueError(f"socket: expected a TCP or UDP socket, got type {sock.type!r}")
    try:
        peer = sock.getpeername()
    except OSError as exc:
        raise ValueError("socket: not connected (register it after connect/accept)") from exc
    local = sock.getsockname()
    me, them = (_ipv4(local[0]), int(local[1])), (_ipv4(peer[0]), int(peer[1]))
    (s, sp), (d, dp) = (them, me) if receive else (me, them)
    return flow_spec(s, d, sp, dp, protocol, size_bytes)


@dataclass
class Flow:
    """A flow of a coflow as the controller registered it.

    Attributes:
        coflow: the coflow id.
        index: the flow's index in the coflow (``None`` when it went unregistered
            because the controller was unreachable).
        spec: the FLOW sent (``src``, ``dst``, ``protocol``, ports, ``size_bytes``).
        registered: False when the flow goes unshaped (controller unreachable).
    """

    coflow: Optional[str]
    index: Optional[int]
    spec: Dict[str, Any] = field(default_factory=dict)
    registered: bool = True

    def __str__(self) -> str:
        return f"{self.coflow}/{self.index}"


def flows_of(reply, specs: List[Dict[str, Any]], cid: str) -> List[Flow]:
    """The :class:`Flow` objects of a 201 reply (``{"flows": [{"index": i, ...}]}``,
    or the coflow view under ``"coflow"``) for the ``specs`` sent, in order."""
    rows = reply.get("flows") if isinstance(reply, dict) else None
    if rows is None and isinstance(reply, dict) and isinstance(reply.get("coflow"), dict):
        rows = reply["coflow"].get("flows")
    rows = list(rows or [])[-len(specs):] if specs else []
    out = []
    for k, spec in enumerate(specs):
        idx = rows[k].get("index", k) if k < len(rows) and isinstance(rows[k], dict) else k
        out.append(Flow(cid, int(idx), spec))
    return out


def id_of(reply, fallback: str) -> str:
    """The coflow id in a reply (``"id"``), else ``fallback``."""
    if isinstance(reply, dict) and reply.get("id") is not None:
        return str(reply["id"])
    return fallback


def remaining(deadline: float) -> float:
    return deadline - time.monotonic()


def split_hostport(address) -> Tuple[str, int]:
    """``(host, port)`` from a tuple or a ``"host:port"`` string."""
    if isinstance(address, tuple):
        return address[0], int(address[1])
    host, _, port = str(address).rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address: expected (host, port) or 'host:port', got {address!r}")
    return host.strip("[]"), int(port)
