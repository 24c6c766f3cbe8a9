"""Validation of the REST requests (``POST /coflows``) against the topology.

:func:`parse_coflow_request` raises :class:`RequestError` (HTTP status + the
offending field, e.g. ``flows[1].size_bytes``) before the core touches any state, so
that bad input changes nothing.  Units: bytes for sizes.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, Tuple

from topologies import Topology, TopologyError

#: Coflow ids are used in URLs: keep them to a safe alphabet.
COFLOW_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


class RequestError(ValueError):
    """Bad REST input.  ``status`` is the HTTP status (400 or 404), ``field`` the
    offending field (``flows[1].size_bytes``), ``message`` the explanation."""

    def __init__(self, status: int, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.status = status
        self.field = field_name
        self.message = message

    def to_json(self) -> Dict[str, Any]:
        """The JSON error body: ``{"error": "field: message", "field": field}``."""
        return {"error": str(self), "field": self.field}


FLOW_KEYS = {"src", "dst", "size_bytes", "dst_port"}
COFLOW_KEYS = {"flows", "id", "weight"}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def resolve_host(topo: Topology, value, field_name: str) -> str:
    """Host name for ``value`` (a host name or a host's IPv4 address).

    Raises:
        RequestError: 400 naming ``field_name`` for anything else.
    """
    if not isinstance(value, str) or not value:
        raise RequestError(400, field_name, f"must be a host name or IP, got {value!r}")
    if value in topo.graph and topo.is_host(value):
        return value
    try:
        return topo.host_by_ip(value)
    except TopologyError:
        raise RequestError(400, field_name, f"unknown host {value!r} in topology "
                                            f"{topo.name}") from None


def parse_coflow_request(body, topo: Topology) -> Dict[str, Any]:
    """Validate a ``POST /coflows`` body against ``topo``.

    Args:
        body: the raw request body (bytes or str, JSON) or an already decoded dict:
            ``{"flows": [{"src", "dst", "size_bytes", "dst_port"}, ...],
            "id": optional str/int, "weight": optional number > 0}``.

    Returns:
        ``{"id": str or None, "weight": float, "flows": [(src, dst, size_bytes,
        dst_port), ...]}`` with host names resolved.

    Raises:
        RequestError: 400 naming the field: malformed JSON (``body``), unknown keys,
        missing/empty ``flows``, unknown host, src == dst, size not a positive finite
        number, dst_port not an int in 1..65535, a flow repeated in the request
        (same src, dst, dst_port), bad ``id`` or ``weight``.
    """
    if isinstance(body, (bytes, bytearray)):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            raise RequestError(400, "body", "not UTF-8") from None
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError as exc:
            raise RequestError(400, "body", f"malformed JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RequestError(400, "body", "must be a JSON object")
    for k in body:
        if k not in COFLOW_KEYS:
            raise RequestError(400, k, f"unknown field (allowed: {', '.join(sorted(COFLOW_KEYS))})")
    cid = body.get("id")
    if cid is not None:
        if isinstance(cid, bool) or not isinstance(cid, (str, int)):
            raise RequestError(400, "id", f"must be a string or integer, got {cid!r}")
        cid = str(cid)
        if not COFLOW_ID_RE.match(cid):
            raise RequestError(400, "id", f"must be 1-64 characters of A-Z a-z 0-9 _ . : -, "
                                          f"got {cid!r}")
    weight = body.get("weight", 1.0)
    if not _number(weight) or not math.isfinite(weight) or weight <= 0:
        raise RequestError(400, "weight", f"must be a positive number, got {weight!r}")
    flows = body.get("flows")
    if not isinstance(flows, list) or not flows:
        raise RequestError(400, "flows", "must be a non-empty list of flows")
    parsed = []
    seen: Dict[Tuple[str, str, int], int] = {}
    for i, f in enumerate(flows):
        where = f"flows[{i}]"
        if not isinstance(f, dict):
            raise RequestError(400, where, "must be an object")
        for k in f:
            if k not in FLOW_KEYS:
                raise RequestError(400, f"{where}.{k}",
                                   f"unknown field (allowed: {', '.join(sorted(FLOW_KEYS))})")
        for k in sorted(FLOW_KEYS):
            if k not in f:
                raise RequestError(400, f"{where}.{k}", "missing")
        src = resolve_host(topo, f["src"], f"{where}.src")
        dst = resolve_host(topo, f["dst"], f"{where}.dst")
        if src == dst:
            raise RequestError(400, f"{where}.dst", f"must differ from src ({src})")
        size = f["size_bytes"]
        if not _number(size) or not math.isfinite(size) or size <= 0:
            raise RequestError(400, f"{where}.size_bytes",
                               f"must be a positive number of bytes, got {size!r}")
        port = f["dst_port"]
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise RequestError(400, f"{where}.dst_port",
                               f"must be an integer TCP port 1..65535, got {port!r}")
        key = (src, dst, port)
        if key in seen:
            raise RequestError(400, where, f"duplicate flow: same src, dst and dst_port as "
                                           f"flows[{seen[key]}]")
        seen[key] = i
        parsed.append((src, dst, float(size), port))
    return {"id": cid, "weight": float(weight), "flows": parsed}
