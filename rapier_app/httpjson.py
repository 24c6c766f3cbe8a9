"""What the controller's REST API and the host agent's HTTP API share: short quotes of
bad input, the request error, and bearer tokens.

* :func:`short` quotes at most :data:`QUOTE_CHARS` characters of a value in error
  messages and logs, whatever its size or nesting;
* :class:`RequestError` is bad input to either API: the HTTP status, the offending
  field (``flows[1].size_bytes``) and a message; answered as ``{"error": "field:
  message", "field": field}`` (:meth:`RequestError.to_json`);
* :data:`TOKEN_RE` is the form of a bearer token (RFC 6750 ``b64token`` characters, at
  least 16 of them) and :func:`bearer_ok` checks an ``Authorization`` header against
  the configured token in constant time (:func:`hmac.compare_digest`);
  :func:`require_bearer` raises the 401 :class:`RequestError` when it does not match.

Pure: no sockets, no framework (``rapier_app.controller.rest`` on Ryu's WSGI server and
``enforcement.agent`` on :mod:`http.server` both use it).
"""

from __future__ import annotations

import hmac
import re
import reprlib
from typing import Any, Dict

from .errors import RapierError

__all__ = ["QUOTE_CHARS", "TOKEN_RE", "RequestError", "bearer_ok", "require_bearer", "short"]

#: Error messages quote at most this many characters of the input.
QUOTE_CHARS = 64
#: Bearer tokens (the controller's ``rest_token`` and ``agent_token``, an agent's
#: ``--token-file``): RFC 6750 ``b64token`` characters, at least 16 of them.
TOKEN_RE = re.compile(r"^[A-Za-z0-9\-._~+/]{16,}=*$")

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 2, QUOTE_CHARS, QUOTE_CHARS, 24
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 4


def short(value, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` cut to at most ``limit`` characters (plus ``...``), for error
    messages and logs: never the whole input, whatever its size or nesting depth
    (containers show at most 4 items and 2 levels, integers at most 24 digits).
    Never raises: a value whose ``repr`` fails is shown as ``<type name>``."""
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 -- a repr must never fail an error path
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


class RequestError(RapierError, ValueError):
    """Bad input to an HTTP/JSON API.

    Args:
        status: the HTTP status to answer (400 bad input, 401 no or wrong token, 404
            unknown id, 413 too large, 503 the database refused the write).
        field_name: the offending field, e.g. ``flows[1].size_bytes``.
        message: the explanation (quoting input through :func:`short`).

    ``str(exc)`` is ``"field: message"``; the attributes ``status``, ``field`` and
    ``message`` keep the parts.
    """

    def __init__(self, status: int, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.status = status
        self.field = field_name
        self.message = message

    def to_json(self) -> Dict[str, Any]:
        """The JSON error body: ``{"error": "field: message", "field": field}``."""
        return {"error": str(self), "field": self.field}


def bearer_ok(authorization: str, token: str) -> bool:
    """True when the ``Authorization`` header value is ``Bearer <token>`` (scheme
    case-insensitive, white space around the credential ignored; the credential is
    compared with :func:`hmac.compare_digest`).  ``authorization`` may be ``""``
    (header absent); any character is accepted (encoded as latin-1, unknown ones
    replaced), so a hostile header gives False, never an exception."""
    scheme, _, cred = (authorization or "").partition(" ")
    ok = hmac.compare_digest(cred.strip().encode("latin-1", "replace"),
                             token.encode("latin-1", "replace"))
    return ok and scheme.lower() == "bearer"


def require_bearer(authorization: str, token: str) -> None:
    """Check a request's ``Authorization`` header value against ``token``
    (:func:`bearer_ok`).

    Raises:
        RequestError: 401 naming ``authorization`` (the caller adds
        ``WWW-Authenticate: Bearer`` to the reply).
    """
    if not bearer_ok(authorization, token):
        raise RequestError(401, "authorization",
                           "missing or wrong bearer token (Authorization: Bearer <token>)")
