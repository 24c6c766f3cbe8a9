"""Exceptions of the RAPIER client.

The client is installed on its own (no ``rapier_app``), so its errors derive from
:class:`RapierClientError` -- this package's base -- plus the builtin they mean, the
way the controller's own errors pair ``RapierError`` with a builtin.

Refusals by the controller (4xx) are raised: they are bugs or misconfiguration in
the application (bad input, a wrong token, an overlapping flow).  An unreachable
controller is *not* raised by the coflow calls: the transfer goes ahead unshaped
(:class:`ControllerUnavailable` is what the low-level :meth:`Controller.request`
raises, and what the coflow calls catch).
"""

from __future__ import annotations

import re
from typing import List, Optional

__all__ = ["RapierClientError", "RequestRefused", "BadRequest", "Unauthorized",
           "NotFound", "Conflict", "ControllerUnavailable", "refusal"]

#: How the controller names a flow in a 409: ``<coflow id>/<flow index>``.
FLOW_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}/\d+")


class RapierClientError(Exception):
    """Base class of every exception the client raises on purpose."""


class RequestRefused(RapierClientError, ValueError):
    """The controller answered 4xx.

    Attributes:
        status: the HTTP status (400, 401, 404, 409, 413, ...).
        field: the offending field named by the controller (``flows[0].src_port``),
            or ``None``.
        message: the controller's ``error`` text (``"field: message"``).
        method, path: the request refused.
    """

    def __init__(self, status: int, message: str, field: Optional[str] = None,
                 method: str = "", path: str = ""):
        self.status, self.message, self.field = int(status), str(message), field
        self.method, self.path = method, path
        super().__init__(f"{method} {path}: {status} {message}".strip())


class BadRequest(RequestRefused):
    """400 (or 413): bad input; :attr:`field` names the field."""


class Unauthorized(RequestRefused, PermissionError):
    """401: no bearer token, or the wrong one (``Controller(token=...)``)."""


class NotFound(RequestRefused, LookupError):
    """404: unknown coflow (or flow index)."""


class Conflict(RequestRefused):
    """409: the coflow is closed or finished, or a flow's match overlaps a live
    flow's.

    Attributes:
        flows: the flows the controller named, as ``"<coflow>/<index>"`` strings, in
            the order of the message (for an overlap: the refused flow and the live
            flow it overlaps).
    """

    @property
    def flows(self) -> List[str]:
        return FLOW_NAME_RE.findall(self.message)


class ControllerUnavailable(RapierClientError, ConnectionError):
    """The controller could not be reached (connection refused or reset, timeout) or
    kept answering 5xx within the retry budget."""


def refusal(status: int, body, method: str = "", path: str = "") -> RequestRefused:
    """The exception for a 4xx answer ``status`` with the decoded JSON ``body``
    (``{"error": "field: message", "field": field}``; anything else is quoted)."""
    if isinstance(body, dict):
        message = str(body.get("error", body))
        field = body.get("field")
    else:
        message, field = str(body)[:200], None
    cls = {400: BadRequest, 413: BadRequest, 401: Unauthorized, 404: NotFound,
           409: Conflict}.get(int(status), RequestRefused)
    return cls(status, message, field, method, path)
