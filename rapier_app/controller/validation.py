"""Validation of the REST requests (``POST /coflows``) against the topology.

:func:`parse_coflow_request` raises :class:`~rapier_app.httpjson.RequestError` (HTTP
status + the offending field, e.g. ``flows[1].size_bytes``) before the core touches
any state, so that bad input changes nothing.  Units: bytes for sizes.

Limits (issue 14; ``docs/operations.md``):

* coflow ids match :data:`COFLOW_ID_PATTERN` (so ``.``, ``..``, ids with ``/`` or
  non-ASCII characters are refused, in bodies and in URLs);
* numbers must lie in a sane range: ``size_bytes`` in [1, :data:`MAX_SIZE_BYTES`],
  ``weight`` in [:data:`MIN_WEIGHT`, :data:`MAX_WEIGHT`], ``dst_port`` in 1..65535;
  integers of any size are compared exactly (no ``OverflowError`` above 1e308);
* bodies: UTF-8 JSON (no ``NaN``/``Infinity``), nested too deep is 400, more bytes
  than the cap or more flows than the cap is 413 (:func:`decode_json_body`,
  :func:`check_flow_count`);
* error messages quote at most :data:`~rapier_app.httpjson.QUOTE_CHARS` characters
  of the input (:func:`~rapier_app.httpjson.short`).

:class:`~rapier_app.httpjson.RequestError` and :func:`~rapier_app.httpjson.short` are
shared with the host agent (:mod:`rapier_app.httpjson`).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Optional, Tuple

from topologies import Topology, TopologyError

from ..httpjson import RequestError, short

#: Coflow ids are used in URLs: 1-128 characters of a safe alphabet, starting with a
#: letter or digit (so never ``.`` or ``..``).
COFLOW_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"  # matched whole (fullmatch)
COFLOW_ID_RE = re.compile(COFLOW_ID_PATTERN)
#: Largest flow size accepted, bytes (1 PB).
MAX_SIZE_BYTES = 10 ** 15
#: Range of coflow weights accepted.
MIN_WEIGHT, MAX_WEIGHT = 1e-6, 1e6

FLOW_KEYS = {"src", "dst", "size_bytes", "dst_port"}
COFLOW_KEYS = {"flows", "id", "weight"}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def number_in_range(v, lo: float, hi: float) -> bool:
    """True when ``v`` is an int or float (not bool) with ``lo <= v <= hi``.

    Comparisons are exact for ints of any size (``10**400 <= 1e15`` is False, no
    ``OverflowError``); NaN fails every comparison, so it is out of range too.
    """
    return _number(v) and lo <= v <= hi


def check_coflow_id(value, field_name: str = "id") -> str:
    """``value`` if it is a valid coflow id (:data:`COFLOW_ID_PATTERN`).

    Raises:
        RequestError: 400 naming ``field_name``; the message quotes a short prefix.
    """
    if not isinstance(value, str) or not COFLOW_ID_RE.fullmatch(value):
        raise RequestError(400, field_name, f"must match {COFLOW_ID_PATTERN} "
                                            f"(1-128 characters), got {short(value)}")
    return value


def _key(k: str) -> str:
    """A JSON key for a field name: at most 40 characters."""
    return k if len(k) <= 40 else k[:40] + "..."


def _no_constant(name: str):
    raise RequestError(400, "body", f"malformed JSON: {name} is not JSON")


def decode_json_body(body, max_bytes: Optional[int] = None):
    """Decode a request body (bytes or str) as standard JSON.

    Args:
        body: raw body.  max_bytes: size cap (None: none).

    Returns:
        The decoded object (a dict, list, ... as sent; already decoded objects pass).

    Raises:
        RequestError: 413 ``body`` above ``max_bytes``; 400 ``body`` for bytes that
        are not UTF-8, malformed JSON, ``NaN``/``Infinity``, an integer of more than
        4300 digits, or nesting too deep for the parser (``RecursionError``).
    """
    if isinstance(body, (bytes, bytearray, str)):
        if max_bytes is not None and len(body) > max_bytes:
            raise RequestError(413, "body", f"larger than {max_bytes} bytes")
    if isinstance(body, (bytes, bytearray)):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            raise RequestError(400, "body", "not UTF-8") from None
    if isinstance(body, str):
        try:
            return json.loads(body, parse_constant=_no_constant)
        except RecursionError:
            raise RequestError(400, "body", "JSON nested too deeply") from None
        except RequestError:
            raise
        except ValueError as exc:  # JSONDecodeError, too many digits
            raise RequestError(400, "body", f"malformed JSON: {short(str(exc), 120)}") from None
    return body


def check_flow_count(body, max_flows: int) -> None:
    """413 when ``body["flows"]`` is a list of more than ``max_flows`` flows.

    Raises:
        RequestError: 413 naming ``flows``.
    """
    flows = body.get("flows") if isinstance(body, dict) else None
    if isinstance(flows, list) and len(flows) > max_flows:
        raise RequestError(413, "flows", f"at most {max_flows} flows per coflow, got "
                                         f"{len(flows)}")


#: Name of the topology the controller builds with ``topology = discover``.
DISCOVERED = "discovered"


def resolve_host(topo: Topology, value, field_name: str) -> str:
    """Host name for ``value`` (a host name or a host's IPv4 address).

    Raises:
        RequestError: 400 naming ``field_name`` for anything else.
    """
    if not isinstance(value, str) or not value:
        raise RequestError(400, field_name, f"must be a host name or IP, got {short(value)}")
    if value in topo.graph and topo.is_host(value):
        return value
    try:
        return topo.host_by_ip(value)
    except (TopologyError, ValueError, TypeError):
        if topo.name == DISCOVERED:
            raise RequestError(400, field_name, f"unknown host {short(value)}: not seen yet "
                                                f"on the discovered fabric (a host is "
                                                f"learnt from the first packet it sends, "
                                                f"ARP or IPv4; ping it first)") from None
        raise RequestError(400, field_name, f"unknown host {short(value)} in topology "
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
        RequestError: 400 naming the field: malformed JSON (``body``, see
        :func:`decode_json_body`), unknown keys, missing/empty ``flows``, unknown
        host, src == dst, size not a number of bytes in [1, :data:`MAX_SIZE_BYTES`],
        dst_port not an int in 1..65535, a flow repeated in the request (same src,
        dst, dst_port), ``id`` not matching :data:`COFLOW_ID_PATTERN`, ``weight``
        outside [:data:`MIN_WEIGHT`, :data:`MAX_WEIGHT`].  Messages quote at most
        :data:`~rapier_app.httpjson.QUOTE_CHARS` characters of the input.
    """
    body = decode_json_body(body)
    if not isinstance(body, dict):
        raise RequestError(400, "body", "must be a JSON object")
    for k in body:
        if k not in COFLOW_KEYS:
            raise RequestError(400, _key(k), f"unknown field (allowed: "
                                                  f"{', '.join(sorted(COFLOW_KEYS))})")
    cid = body.get("id")
    if cid is not None:
        if isinstance(cid, bool) or not isinstance(cid, (str, int)):
            raise RequestError(400, "id", f"must be a string or integer, got {short(cid)}")
        if isinstance(cid, int) and not 0 <= cid < 10 ** 128:
            raise RequestError(400, "id", f"must match {COFLOW_ID_PATTERN}, got {short(cid)}")
        cid = check_coflow_id(str(cid))
    weight = body.get("weight", 1.0)
    if not number_in_range(weight, MIN_WEIGHT, MAX_WEIGHT):
        raise RequestError(400, "weight", f"must be a number in [{MIN_WEIGHT:g}, "
                                          f"{MAX_WEIGHT:g}], got {short(weight)}")
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
                raise RequestError(400, f"{where}.{_key(k)}",
                                   f"unknown field (allowed: {', '.join(sorted(FLOW_KEYS))})")
        for k in sorted(FLOW_KEYS):
            if k not in f:
                raise RequestError(400, f"{where}.{k}", "missing")
        src = resolve_host(topo, f["src"], f"{where}.src")
        dst = resolve_host(topo, f["dst"], f"{where}.dst")
        if src == dst:
            raise RequestError(400, f"{where}.dst", f"must differ from src ({src})")
        size = f["size_bytes"]
        if not number_in_range(size, 1, MAX_SIZE_BYTES):
            raise RequestError(400, f"{where}.size_bytes",
                               f"must be a number of bytes in [1, {MAX_SIZE_BYTES:.0e}], "
                               f"got {short(size)}")
        port = f["dst_port"]
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise RequestError(400, f"{where}.dst_port",
                               f"must be an integer TCP port 1..65535, got {short(port)}")
        key = (src, dst, port)
        if key in seen:
            raise RequestError(400, where, f"duplicate flow: same src, dst and dst_port as "
                                           f"flows[{seen[key]}]")
        seen[key] = i
        parsed.append((src, dst, float(size), port))
    return {"id": cid, "weight": float(weight), "flows": parsed}
