"""The project's one JSON-over-HTTP client, over TCP or a Unix socket.

Standard library only (:mod:`http.client`), so the host agent, the emulation runner,
the tests and the controller share it without another dependency.  Two users:

* the controller's agent pushes (:mod:`rapier_app.controller.agent_client`, which adds
  its error policy on top of :func:`connection_for`);
* the emulation runner and the tests (:func:`request`: the controller's REST API and
  the agents).

Addresses: ``http://HOST:PORT[/prefix]`` or ``unix:/path/to.sock`` (``unix:///path``
also works).  Agents inside Mininet hosts listen on Unix sockets: the hosts live in
network namespaces that the root namespace cannot reach over IP, but they share the
filesystem.  Under ``ryu-manager`` eventlet has monkey-patched :mod:`socket`, so these
calls are green there.

``requests-unixsocket`` would do the same, but is neither installed nor pinned here;
this is the only copy of the Unix-socket connection in the project.
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import Optional, Tuple
from urllib.parse import urlsplit


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over an ``AF_UNIX`` stream socket at ``socket_path``.

    Args:
        socket_path: filesystem path of the socket.
        timeout: socket timeout in seconds.
    """

    def __init__(self, socket_path: str, timeout: float = 1.0):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        """Connect to the Unix socket.

        Raises:
            OSError: the socket file is missing or refuses (the socket is closed then).
        """
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def connection_for(base: str, timeout: float) -> Tuple[http.client.HTTPConnection, str]:
    """A (not yet connected) connection and the path prefix for a base address.

    Args:
        base: ``http://HOST:PORT[/prefix]`` or ``unix:/path/to.sock``.
        timeout: socket timeout in seconds.

    Returns:
        ``(connection, prefix)``; the prefix (``""`` or ``"/api"``, no trailing slash)
        goes before every request path.

    Raises:
        ValueError: neither form (the message names ``base``).
    """
    if base.startswith("unix:"):
        path = base[len("unix:"):]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise ValueError(f"base: unix: needs a socket path, got {base!r}")
        return UnixHTTPConnection(path, timeout), ""
    parts = urlsplit(base)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"base: expected http://HOST:PORT or unix:PATH, got {base!r}")
    return (http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout),
            parts.path.rstrip("/"))


def request(base: str, method: str, path: str, body: Optional[object] = None,
            timeout: float = 10.0, token: str = "") -> Tuple[int, object]:
    """Send one JSON request and return ``(status, decoded JSON or raw text)``.

    Any status is returned (errors too): the caller decides.

    Args:
        base: ``http://HOST:PORT[/prefix]`` or ``unix:/path/to.sock``.
        method: HTTP method.  path: URL path, e.g. ``/v1/flows``.
        body: object to send as JSON, or None.  timeout: seconds.
        token: bearer token, sent as ``Authorization: Bearer <token>`` when non-empty
            (the controller's ``rest_token``, an agent's token).

    Raises:
        OSError: connection refused, socket missing, timeout.
        http.client.HTTPException: a malformed answer.
        ValueError: ``base`` has neither form.
    """
    conn, prefix = connection_for(base, timeout)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request(method, prefix + path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read().decode("utf-8", "replace")
        try:
            return resp.status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return resp.status, raw
    finally:
        conn.close()
