"""Per-flow rate limits as Linux traffic-control commands, built as data.

The agent owns the root qdisc of one interface and keeps this tree on it::

    qdisc 1: htb default 0            unclassified traffic: HTB's direct queue, not shaped
      class 1:<slot> htb rate R ceil R       one per limited flow
      filter prio <slot> u32 <5-tuple> flowid 1:<slot>

Every limited flow gets a *slot* (an integer in ``SLOT_MIN..SLOT_MAX``): its class is
``1:<slot in hex>`` (tc reads class minors in hexadecimal) and its filter has priority
``<slot>`` (decimal), so that a flow's filter is deleted by its priority alone.
``default 0`` names no class, so packets that match no filter go to HTB's direct queue
and leave at line rate: only the flows asked for are throttled.

Commands are lists of strings (argv for ``tc``), the way Mininet's ``link.py`` builds
its tc commands; :func:`plan` turns (limits in force, limits wanted) into the commands
that go from one to the other, and :class:`TcState` keeps the limits in force.
Nothing here runs a process: :mod:`enforcement.agent` executes the commands.

Units: rates in bit/s.  Source: RAPIER (INFOCOM 2015) Section IV enforces rates at
the end hosts; the HTB + u32 choice follows what this machine's kernel offers
(sch_htb, cls_u32; no flower, fw or prio), see /work/shared/ENVIRONMENT.md.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, replace
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from rapier_app.errors import RapierError
from rapier_app.httpjson import RequestError, short

#: Handle of the agent's root qdisc (``1:``).
ROOT_HANDLE = "1:"
#: Lowest and highest slot numbers (class minor and filter priority).
SLOT_MIN, SLOT_MAX = 16, 0xFFFE
#: Largest number of flows one agent limits at once.
MAX_FLOWS = SLOT_MAX - SLOT_MIN + 1
#: Rates below this (including 0, "pause") are enforced at this rate, bit/s: an HTB
#: class cannot have rate 0, and a trickle keeps a paused TCP flow's ACK clock alive
#: so that it resumes without waiting for a backed-off retransmission timer.
MIN_RATE_BPS = 64_000
#: Highest rate accepted, bit/s (100 Gbit/s).
MAX_RATE_BPS = 100e9
#: HTB quantum in bytes (one Ethernet frame); avoids "quantum is big" warnings.
QUANTUM_BYTES = 1514
PROTOCOLS = {"tcp": 6, "udp": 17}
MAX_FLOW_ID_LEN = 200
#: Flow ids: 1-200 characters, a letter or digit first, then letters, digits and
#: ``_ . : / -`` (the controller's ids are ``<coflow id>/<index>``): nothing that could
#: forge a log line or a path.
FLOW_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,199}$")
FLOW_FIELDS = ("flow_id", "src_ip", "dst_ip", "proto", "dst_port", "src_port", "rate_bps")
REQUIRED_FIELDS = ("flow_id", "src_ip", "dst_ip", "rate_bps")

Command = List[str]


class TcError(RapierError, RuntimeError):
    """A tc command failed (by subprocess or netlink); the message holds the command
    and the tool's or kernel's error text."""


@dataclass(frozen=True)
class FlowLimit:
    """One flow's rate limit and the packet match that selects the flow.

    Attributes:
        flow_id: the controller's flow id (e.g. ``"1/0"``).
        src_ip, dst_ip: IPv4 addresses (dotted quad) of the flow's endpoints.
        proto: ``"tcp"`` or ``"udp"``.
        dst_port: destination port (1..65535) or None to match any.
        src_port: source port (1..65535) or None to match any.
        rate_bps: the limit in bit/s (>= 0; enforced as at least :data:`MIN_RATE_BPS`).
    """

    flow_id: str
    src_ip: str
    dst_ip: str
    proto: str = "tcp"
    dst_port: Optional[int] = None
    src_port: Optional[int] = None
    rate_bps: float = 0.0

    @property
    def match(self) -> Tuple:
        """The packet selector (5-tuple with wildcards as None)."""
        return (self.src_ip, self.dst_ip, self.proto, self.src_port, self.dst_port)

    @property
    def enforced_rate_bps(self) -> int:
        """The integer rate (bit/s) written into the HTB class."""
        return int(max(MIN_RATE_BPS, round(self.rate_bps)))

    def to_dict(self) -> dict:
        """JSON-ready form (the request's fields plus nothing else)."""
        return {"flow_id": self.flow_id, "src_ip": self.src_ip, "dst_ip": self.dst_ip,
                "proto": self.proto, "dst_port": self.dst_port, "src_port": self.src_port,
                "rate_bps": self.rate_bps}


# ---------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------
def _port(value, field: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(400, field, f"must be an integer port 1..65535, got {short(value)}")
    if not 1 <= value <= 65535:
        raise RequestError(400, field, f"must be in 1..65535, got {short(value)}")
    return value


def _ipv4(value, field: str) -> str:
    if not isinstance(value, str):
        raise RequestError(400, field, f"must be an IPv4 address string, got {short(value)}")
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise RequestError(400, field, f"not an IPv4 address: {short(value)}") from None


def parse_limit(obj, where: str = "flow") -> FlowLimit:
    """Validate one flow object of a request and return its :class:`FlowLimit`.

    Args:
        obj: decoded JSON object with ``flow_id``, ``src_ip``, ``dst_ip``,
            ``rate_bps`` (bit/s) and optionally ``proto`` (default ``"tcp"``),
            ``dst_port``, ``src_port``.
        where: prefix for error field names (e.g. ``"flows[3]"``).

    Raises:
        RequestError: not an object, unknown or missing field, wrong type or range;
            the error's ``field`` names it.
    """
    if not isinstance(obj, Mapping):
        raise RequestError(400, where, f"must be a JSON object, got {type(obj).__name__}")
    for key in obj:
        if key not in FLOW_FIELDS:
            raise RequestError(400, f"{where}.{str(key)[:40]}",
                               f"unknown field (known: {', '.join(FLOW_FIELDS)})")
    for key in REQUIRED_FIELDS:
        if key not in obj:
            raise RequestError(400, f"{where}.{key}", "missing")
    fid = obj["flow_id"]
    if not isinstance(fid, str) or not FLOW_ID_RE.fullmatch(fid):
        raise RequestError(400, f"{where}.flow_id",
                           f"must be a non-empty string of at most {MAX_FLOW_ID_LEN} characters "
                           f"matching {FLOW_ID_RE.pattern}, got {short(fid)}")
    proto = obj.get("proto", "tcp")
    if not isinstance(proto, str) or proto not in PROTOCOLS:
        raise RequestError(400, f"{where}.proto",
                           f"must be one of {sorted(PROTOCOLS)}, got {short(proto)}")
    rate = obj["rate_bps"]
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or \
            (isinstance(rate, float) and not math.isfinite(rate)):
        raise RequestError(400, f"{where}.rate_bps",
                           f"must be a finite number (bit/s), got {short(rate)}")
    if not 0 <= rate <= MAX_RATE_BPS:  # exact for ints of any size (no OverflowError)
        raise RequestError(400, f"{where}.rate_bps",
                           f"must be in 0..{MAX_RATE_BPS:.0f} bit/s, got {short(rate)}")
    return FlowLimit(flow_id=fid, src_ip=_ipv4(obj["src_ip"], f"{where}.src_ip"),
                     dst_ip=_ipv4(obj["dst_ip"], f"{where}.dst_ip"), proto=proto,
                     dst_port=_port(obj.get("dst_port"), f"{where}.dst_port"),
                     src_port=_port(obj.get("src_port"), f"{where}.src_port"),
                     rate_bps=float(rate))


def parse_flow_set(body) -> List[FlowLimit]:
    """Validate a ``PUT /v1/flows`` body ``{"flows": [...]}``.

    Raises:
        RequestError: body not an object, unknown top-level field, ``flows`` missing
            or not a list, any invalid flow (see :func:`parse_limit`), a duplicate
            ``flow_id``, two flows with the same packet match, or more than
            :data:`MAX_FLOWS` flows.
    """
    if not isinstance(body, Mapping):
        raise RequestError(400, "body", "must be a JSON object {\"flows\": [...]}")
    for key in body:
        if key != "flows":
            raise RequestError(400, str(key)[:40], "unknown field (expected only 'flows')")
    if "flows" not in body:
        raise RequestError(400, "flows", "missing")
    flows = body["flows"]
    if not isinstance(flows, list):
        raise RequestError(400, "flows", f"must be a list, got {type(flows).__name__}")
    if len(flows) > MAX_FLOWS:
        raise RequestError(400, "flows", f"at most {MAX_FLOWS} flows, got {len(flows)}")
    out: List[FlowLimit] = []
    ids: Dict[str, int] = {}
    matches: Dict[Tuple, str] = {}
    for i, obj in enumerate(flows):
        lim = parse_limit(obj, f"flows[{i}]")
        if lim.flow_id in ids:
            raise RequestError(400, f"flows[{i}].flow_id",
                               f"duplicate flow_id {short(lim.flow_id)} "
                               f"(also flows[{ids[lim.flow_id]}])")
        if lim.match in matches:
            raise RequestError(400, f"flows[{i}]",
                               f"same packet match as flow {short(matches[lim.match])}")
        ids[lim.flow_id] = i
        matches[lim.match] = lim.flow_id
        out.append(lim)
    return out


# ---------------------------------------------------------------------------------
# commands
# ---------------------------------------------------------------------------------
def classid(slot: int) -> str:
    """HTB class id of ``slot``: ``"1:<slot in hex>"``.

    Raises:
        ValueError: slot outside ``SLOT_MIN..SLOT_MAX``.
    """
    if not SLOT_MIN <= slot <= SLOT_MAX:
        raise ValueError(f"slot: must be in {SLOT_MIN}..{SLOT_MAX}, got {slot}")
    return f"1:{slot:x}"


def setup_commands(iface: str) -> List[Command]:
    """Install (or reset) the agent's root HTB qdisc on ``iface``; no classes yet."""
    return [["tc", "qdisc", "replace", "dev", iface, "root", "handle", ROOT_HANDLE,
             "htb", "default", "0"]]


def teardown_commands(iface: str) -> List[Command]:
    """Delete the agent's root qdisc (and with it every class and filter)."""
    return [["tc", "qdisc", "del", "dev", iface, "root"]]


def class_command(iface: str, slot: int, rate_bps: int, verb: str = "add") -> Command:
    """``tc class add|change`` for a flow's HTB class: rate = ceil = ``rate_bps``."""
    rate = f"{int(rate_bps)}bit"
    return ["tc", "class", verb, "dev", iface, "parent", ROOT_HANDLE, "classid", classid(slot),
            "htb", "rate", rate, "ceil", rate, "quantum", str(QUANTUM_BYTES)]


def filter_add_command(iface: str, slot: int, lim: FlowLimit) -> Command:
    """u32 filter steering the flow's packets (its 5-tuple) to class ``slot``."""
    cmd = ["tc", "filter", "add", "dev", iface, "parent", ROOT_HANDLE, "protocol", "ip",
           "prio", str(slot), "u32",
           "match", "ip", "src", f"{lim.src_ip}/32",
           "match", "ip", "dst", f"{lim.dst_ip}/32",
           "match", "ip", "protocol", str(PROTOCOLS[lim.proto]), "0xff"]
    if lim.src_port is not None:
        cmd += ["match", "ip", "sport", str(lim.src_port), "0xffff"]
    if lim.dst_port is not None:
        cmd += ["match", "ip", "dport", str(lim.dst_port), "0xffff"]
    return cmd + ["flowid", classid(slot)]


def filter_del_command(iface: str, slot: int) -> Command:
    """Delete the filter of ``slot`` (by its priority)."""
    return ["tc", "filter", "del", "dev", iface, "parent", ROOT_HANDLE, "protocol", "ip",
            "prio", str(slot)]


def class_del_command(iface: str, slot: int) -> Command:
    """Delete the HTB class of ``slot``."""
    return ["tc", "class", "del", "dev", iface, "classid", classid(slot)]


def add_commands(iface: str, slot: int, lim: FlowLimit) -> List[Command]:
    """Class then filter for a new limited flow."""
    return [class_command(iface, slot, lim.enforced_rate_bps, "add"),
            filter_add_command(iface, slot, lim)]


def remove_commands(iface: str, slot: int) -> List[Command]:
    """Filter then class of a flow no longer limited (packets go back to line rate)."""
    return [filter_del_command(iface, slot), class_del_command(iface, slot)]


# ---------------------------------------------------------------------------------
# planning
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Installed:
    """A limit in force: the flow's limit and the slot holding it."""

    slot: int
    limit: FlowLimit


class TcState:
    """The limits in force on one interface, by flow id (no I/O)."""

    def __init__(self, iface: str):
        self.iface = iface
        self.flows: Dict[str, Installed] = {}

    def copy(self) -> "TcState":
        """An independent copy."""
        s = TcState(self.iface)
        s.flows = dict(self.flows)
        return s

    def free_slots(self) -> List[int]:
        """Unused slots in increasing order (lazily: the first few are enough)."""
        used = {i.slot for i in self.flows.values()}
        return [s for s in range(SLOT_MIN, SLOT_MAX + 1) if s not in used]

    def limits(self) -> List[FlowLimit]:
        """Limits in force, sorted by slot."""
        return [i.limit for i in sorted(self.flows.values(), key=lambda i: i.slot)]


def plan(state: TcState, wanted: Sequence[FlowLimit]) -> Tuple[List[Command], TcState]:
    """Commands that turn the limits in force into exactly ``wanted``.

    * a flow no longer wanted: filter and class deleted (first, so that its slot and
      its match are free for new flows);
    * a flow kept with the same match: ``tc class change`` only if its enforced rate
      changed, nothing otherwise (repeating a request runs no command);
    * a flow kept with a new match: its filter is replaced, its rate changed if needed;
    * a new flow: class and filter in the lowest free slot.

    Args:
        state: limits in force (not modified).
        wanted: validated limits (unique flow ids and matches, see :func:`parse_flow_set`).

    Returns:
        ``(commands, new_state)``; ``commands`` is empty when nothing changes.

    Raises:
        RequestError: more than :data:`MAX_FLOWS` flows wanted.
    """
    if len(wanted) > MAX_FLOWS:
        raise RequestError(400, "flows", f"at most {MAX_FLOWS} flows, got {len(wanted)}")
    iface = state.iface
    new = state.copy()
    cmds: List[Command] = []
    want = {w.flow_id: w for w in wanted}
    for fid in sorted(state.flows, key=lambda f: state.flows[f].slot):
        if fid not in want:
            cmds += remove_commands(iface, state.flows[fid].slot)
            del new.flows[fid]
    free = iter(new.free_slots())
    for w in wanted:
        cur = new.flows.get(w.flow_id)
        if cur is None:
            slot = next(free)
            cmds += add_commands(iface, slot, w)
            new.flows[w.flow_id] = Installed(slot, w)
            continue
        if cur.limit.match != w.match:
            cmds.append(filter_del_command(iface, cur.slot))
        if cur.limit.enforced_rate_bps != w.enforced_rate_bps:
            cmds.append(class_command(iface, cur.slot, w.enforced_rate_bps, "change"))
        if cur.limit.match != w.match:
            cmds.append(filter_add_command(iface, cur.slot, w))
        new.flows[w.flow_id] = replace(cur, limit=w)
    return cmds, new


def rebuild_commands(state: TcState) -> List[Command]:
    """From scratch: reset the root qdisc, then every class and filter of ``state``."""
    cmds = setup_commands(state.iface)
    for inst in sorted(state.flows.values(), key=lambda i: i.slot):
        cmds += add_commands(state.iface, inst.slot, inst.limit)
    return cmds
