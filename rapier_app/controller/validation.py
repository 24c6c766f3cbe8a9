"""Validation of the REST requests (``POST /coflows``) against the topology.

:func:`parse_coflow_request` raises :class:`~rapier_app.httpjson.RequestError` (HTTP
status + the offending field, e.g. ``flows[1].size_bytes``) before the core touches
any state, so that bad input changes nothing.  Units: bytes for sizes.

Limits (``docs/operations.md``):

* coflow ids match :data:`COFLOW_ID_PATTERN` (so ``.``, ``..``, ids with ``/`` or
  non-ASCII characters are refused, in bodies and in URLs);
* numbers must lie in a sane range: ``size_bytes`` in [1, :data:`MAX_SIZE_BYTES`],
  ``weight`` in [:data:`MIN_WEIGHT`, :data:`MAX_WEIGHT`], ports in 1..65535;
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
from typing import Any, Callable, Dict, List, NamedTuple, Optional

from topologies import Topology, TopologyError

from ..httpjson import RequestError, short
from .matches import PROTOCOLS, Match, MatchIndex

#: Coflow ids are used in URLs: 1-128 characters of a safe alphabet, starting with a
#: letter or digit (so never ``.`` or ``..``).
COFLOW_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"  # matched whole (fullmatch)
COFLOW_ID_RE = re.compile(COFLOW_ID_PATTERN)
#: Largest flow size accepted, bytes (1 PB).
MAX_SIZE_BYTES = 10 ** 15
#: Range of coflow weights accepted.
MIN_WEIGHT, MAX_WEIGHT = 1e-6, 1e6

FLOW_KEYS = {"src", "dst", "size_bytes", "dst_port", "src_port", "protocol"}
#: Keys every flow must have (besides a port: ``src_port``, ``dst_port`` or both).
FLOW_REQUIRED = ("src", "dst")
COFLOW_KEYS = {"flows", "id", "weight", "name", "open"}
ADD_FLOWS_KEYS = {"flows"}
#: Longest coflow ``name`` (free text), characters.
MAX_NAME_CHARS = 64


class FlowRequest(NamedTuple):
    """One validated flow of a request.

    Attributes:
        src, dst: host names (resolved from names or IPs).
        size_bytes: bytes, or None when unknown (omitted or null).
        dst_port, src_port: 1..65535 or None (any); at least one is given.
        protocol: ``"tcp"`` or ``"udp"``.
    """

    src: str
    dst: str
    size_bytes: Optional[float]
    dst_port: Optional[int]
    src_port: Optional[int] = None
    protocol: str = "tcp"

    @property
    def match(self) -> Match:
        """Its :class:`~.matches.Match`."""
        return Match(self.src, self.dst, self.protocol, self.src_port, self.dst_port)


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


def _port(f: dict, key: str, where: str) -> Optional[int]:
    port = f.get(key)
    if port is None:
        return None
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise RequestError(400, f"{where}.{key}",
                           f"must be an integer port 1..65535, got {short(port)}")
    return port


def parse_flow(f, topo: Topology, where: str) -> FlowRequest:
    """Validate one flow object ``f`` (``where``: its field name, e.g. ``flows[2]``).

    Raises:
        RequestError: 400 naming the field: not an object, unknown key, missing
        ``src``/``dst``, no port at all (named ``<where>.dst_port``), unknown host,
        src == dst, ``protocol`` not tcp/udp, a port outside 1..65535, a size not
        null and not a number of bytes in [1, :data:`MAX_SIZE_BYTES`].
    """
    if not isinstance(f, dict):
        raise RequestError(400, where, "must be an object")
    for k in f:
        if k not in FLOW_KEYS:
            raise RequestError(400, f"{where}.{_key(k)}",
                               f"unknown field (allowed: {', '.join(sorted(FLOW_KEYS))})")
    for k in FLOW_REQUIRED:
        if k not in f:
            raise RequestError(400, f"{where}.{k}", "missing")
    src = resolve_host(topo, f["src"], f"{where}.src")
    dst = resolve_host(topo, f["dst"], f"{where}.dst")
    if src == dst:
        raise RequestError(400, f"{where}.dst", f"must differ from src ({src})")
    proto = f.get("protocol", "tcp")
    if not isinstance(proto, str) or proto not in PROTOCOLS:
        raise RequestError(400, f"{where}.protocol",
                           f"must be one of {', '.join(sorted(PROTOCOLS))}, got {short(proto)}")
    size = f.get("size_bytes")
    if size is not None and not number_in_range(size, 1, MAX_SIZE_BYTES):
        raise RequestError(400, f"{where}.size_bytes",
                           f"must be null (unknown) or a number of bytes in "
                           f"[1, {MAX_SIZE_BYTES:.0e}], got {short(size)}")
    dport = _port(f, "dst_port", where)
    sport = _port(f, "src_port", where)
    if dport is None and sport is None:
        raise RequestError(400, f"{where}.dst_port",
                           "missing: give dst_port, src_port or both")
    return FlowRequest(src, dst, None if size is None else float(size), dport, sport, proto)


#: flows validated between two calls of a request's ``pause`` hook
PAUSE_EVERY = 32


def parse_flow_list(flows, topo: Topology,
                    pause: Optional[Callable[[], None]] = None) -> List[FlowRequest]:
    """Validate ``flows`` (a list of flow objects, :func:`parse_flow`); two flows of
    the list whose matches overlap (:func:`~.matches.overlaps`) are refused.
    ``pause()`` (when given) is called every :data:`PAUSE_EVERY` flows: the REST
    shell lets the event loop run there (validation changes nothing).

    Raises:
        RequestError: 400 naming the field (``flows`` when not a list).
    """
    if not isinstance(flows, list):
        raise RequestError(400, "flows", "must be a list of flows")
    parsed: List[FlowRequest] = []
    seen = MatchIndex(lambda _k: True)
    for i, f in enumerate(flows):
        if pause is not None and i and i % PAUSE_EVERY == 0:
            pause()
        fr = parse_flow(f, topo, f"flows[{i}]")
        j = seen.find(fr.match)
        if j is not None:
            raise RequestError(400, f"flows[{i}]", f"duplicate flow: its match "
                                                   f"{fr.match.describe()} overlaps "
                                                   f"flows[{j}]'s")
        seen.add(i, fr.match)
        parsed.append(fr)
    return parsed


def parse_add_flows_request(body, topo: Topology) -> List[FlowRequest]:
    """Validate a ``POST /coflows/<id>/flows`` body ``{"flows": [FLOW, ...]}``
    (non-empty; flows as :func:`parse_flow`).

    Raises:
        RequestError: 400 naming the field, as :func:`parse_coflow_request`.
    """
    body = decode_json_body(body)
    if not isinstance(body, dict):
        raise RequestError(400, "body", "must be a JSON object")
    for k in body:
        if k not in ADD_FLOWS_KEYS:
            raise RequestError(400, _key(k), "unknown field (allowed: flows)")
    flows = body.get("flows")
    if not isinstance(flows, list) or not flows:
        raise RequestError(400, "flows", "must be a non-empty list of flows")
    return parse_flow_list(flows, topo)


def parse_coflow_request(body, topo: Topology,
                         pause: Optional[Callable[[], None]] = None) -> Dict[str, Any]:
    """Validate a ``POST /coflows`` body against ``topo`` (``pause``: as
    :func:`parse_flow_list`).

    Args:
        body: the raw request body (bytes or str, JSON) or an already decoded dict:
            ``{"flows": [FLOW, ...], "id": optional str/int, "weight": optional
            number > 0, "name": optional str (<= 64 chars), "open": optional bool}``
            with FLOW ``{"src", "dst", "protocol"?: tcp|udp, "src_port"?,
            "dst_port"? (at least one port), "size_bytes"? (omitted or null:
            unknown)}``.

    Returns:
        ``{"id": str or None, "weight": float, "name": str or None, "open": bool,
        "flows": [FlowRequest, ...]}`` with host names resolved
        (:class:`FlowRequest`: ``(src, dst, size_bytes, dst_port, src_port,
        protocol)``, size None when unknown).

    Raises:
        RequestError: 400 naming the field: malformed JSON (``body``, see
        :func:`decode_json_body`), unknown keys, missing ``flows`` or an empty list
        unless ``open`` is true, bad flows (:func:`parse_flow`), two flows of the
        request whose matches overlap, ``id`` not matching
        :data:`COFLOW_ID_PATTERN`, ``weight`` outside [:data:`MIN_WEIGHT`,
        :data:`MAX_WEIGHT`], ``name`` not a short string, ``open`` not a bool.
        Messages quote at most :data:`~rapier_app.httpjson.QUOTE_CHARS`
        characters of the input.
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
    name = body.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME_CHARS):
        raise RequestError(400, "name", f"must be a string of at most {MAX_NAME_CHARS} "
                                        f"characters, got {short(name)}")
    is_open = body.get("open", False)
    if not isinstance(is_open, bool):
        raise RequestError(400, "open", f"must be true or false, got {short(is_open)}")
    flows = body.get("flows")
    if is_open and flows is None:
        flows = []
    if not isinstance(flows, list) or not (flows or is_open):
        raise RequestError(400, "flows", "must be a non-empty list of flows (or give "
                                         "\"open\": true to add flows later)")
    return {"id": cid, "weight": float(weight), "flows": parse_flow_list(flows, topo, pause),
            "name": name, "open": is_open}
