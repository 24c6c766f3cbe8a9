"""Minimal JSON-over-HTTP client for agents and the controller (TCP or Unix socket).

Standard library only, so the emulation runner and the tests need nothing else.
"""

from __future__ import annotations

import http.client
import json
import socket
from typing import Optional, Tuple


class _UnixConnection(http.client.HTTPConnection):
    """HTTPConnection over a Unix stream socket at ``path``."""

    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        """Connect to the Unix socket (OSError if it is missing or refuses)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def request(base: str, method: str, path: str, body: Optional[object] = None,
            timeout: float = 10.0) -> Tuple[int, object]:
    """Send one JSON request and return ``(status, decoded JSON or raw text)``.

    Args:
        base: ``http://HOST:PORT`` or ``unix:/path/to.sock``.
        method: HTTP method.  path: URL path, e.g. ``/v1/flows``.
        body: object to send as JSON, or None.  timeout: seconds.

    Raises:
        OSError: connection refused, socket missing, timeout.
        ValueError: ``base`` has neither form.
    """
    if base.startswith("unix:"):
        conn = _UnixConnection(base[5:], timeout)
    elif base.startswith("http://"):
        hostport = base[len("http://"):].rstrip("/")
        prefix = ""
        if "/" in hostport:
            hostport, prefix = hostport.split("/", 1)
            prefix = "/" + prefix
        path = prefix + path
        conn = http.client.HTTPConnection(hostport, timeout=timeout)
    else:
        raise ValueError(f"base: expected http://HOST:PORT or unix:PATH, got {base!r}")
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read().decode("utf-8", "replace")
        try:
            return resp.status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return resp.status, raw
    finally:
        conn.close()
