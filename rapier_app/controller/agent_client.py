"""Client side of the host agent's HTTP/JSON API (``enforcement/agent.py``).

The agent listens either on TCP (``http://IP:PORT``, a real deployment) or on a Unix
socket (``unix:/tmp/rapier-agents/h1.sock``, Mininet: hosts live in network
namespaces that the root namespace cannot reach over IP but share the filesystem).
The transport is the project's one HTTP client, :mod:`enforcement.client`
(:mod:`http.client`, with a Unix-socket connection); this module adds the
controller's error policy (:class:`AgentError` for every failure) on top.

API used (the agent's contract):

* ``PUT /v1/flows`` with ``{"flows": [...]}`` replaces the host's full set of rate
  limits (an empty list removes all);
* ``GET /v1/flows`` lists them; ``GET /v1/health`` answers ``{"ok": true}``.

Under ``ryu-manager`` the socket module is monkey-patched by eventlet, so these calls
are green (they yield to other handlers); every call has a short timeout.  This
module imports nothing from Ryu.
"""

from __future__ import annotations

import http.client
import json
from typing import Any, Optional, Tuple

from enforcement.client import connection_for as _connection_for

from ..errors import RapierError


class AgentError(RapierError, RuntimeError):
    """The agent could not be reached, timed out, or answered an error status."""


def connection_for(base_url: str, timeout: float) -> Tuple[http.client.HTTPConnection, str]:
    """A connection and the path prefix for an agent base URL
    (:func:`enforcement.client.connection_for`).

    Args:
        base_url: ``http://HOST:PORT[/prefix]`` or ``unix:/path/to.sock``.
        timeout: socket timeout in seconds.

    Raises:
        AgentError: unsupported URL scheme (message names ``agent_url``).
    """
    try:
        return _connection_for(base_url, timeout)
    except ValueError:
        raise AgentError(f"agent_url: unsupported agent URL {base_url!r}") from None


def request(base_url: str, method: str, path: str, body: Optional[bytes] = None,
            timeout: float = 1.0, token: str = "") -> Tuple[int, Any]:
    """One HTTP request to an agent.

    ``token`` (non-empty) is sent as ``Authorization: Bearer <token>`` (the agent's
    ``--token-file``; required by agents on TCP).

    Returns:
        (status, decoded JSON body or None).

    Raises:
        AgentError: connection failure, timeout, non-JSON body, or status >= 400 (the
        message includes the agent's ``error`` text).
    """
    conn, prefix = connection_for(base_url, timeout)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request(method, prefix + path, body=body, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        status = resp.status
    except (OSError, http.client.HTTPException) as exc:
        raise AgentError(f"{method} {base_url}{path}: {exc!r}") from None
    finally:
        conn.close()
    try:
        data = json.loads(raw.decode()) if raw else None
    except ValueError:
        raise AgentError(f"{method} {base_url}{path}: answered {status} with a non-JSON "
                         f"body") from None
    if status >= 400:
        err = data.get("error") if isinstance(data, dict) else data
        raise AgentError(f"{method} {base_url}{path}: {status} {err}")
    return status, data


def put_flows(base_url: str, body: bytes, timeout: float = 1.0, token: str = "") -> Any:
    """``PUT /v1/flows`` (the full rate-limit set of one host); returns the reply."""
    return request(base_url, "PUT", "/v1/flows", body, timeout, token)[1]


def health(base_url: str, timeout: float = 1.0) -> bool:
    """True when ``GET /v1/health`` answers 200 ``{"ok": true}``; False otherwise."""
    try:
        status, data = request(base_url, "GET", "/v1/health", None, timeout)
    except AgentError:
        return False
    return status == 200 and isinstance(data, dict) and data.get("ok") is True


__all__ = ["AgentError", "connection_for", "health", "put_flows", "request"]
