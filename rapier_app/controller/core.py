"""The controller's pure core: no Ryu import, no sockets, no clock.

Faucet-style (see ``shared/STYLE.md``): the Ryu shell (:mod:`.app`) translates
events into calls on :class:`ControllerCore` and sends what they return.  The core
returns OpenFlow rules and agent rate pushes *as data* (:class:`FlowRule`,
:class:`GroupRule`, :class:`AgentPush`), so everything here is tested without a
switch, a host agent or a running Ryu.  Time is passed in (``now`` in seconds since
the controller started).

Units everywhere: sizes and byte counters in bytes, rates in bit/s, times in
seconds.

What the core does (the controller part of the issue):

* validates REST requests (:func:`parse_coflow_request`), raising
  :class:`RequestError` (HTTP status + the offending field) before touching any
  state, so that bad input changes nothing;
* keeps the registry of coflows (``active`` / ``done`` / ``cancelled``) as
  :class:`~rapier_app.core.model.CoflowState` objects shared with the scheduler, as
  the simulator does (one :class:`~rapier_app.core.model.InfoPolicy`);
* calls the scheduler on every arrival, completion and cancel (and when the
  scheduler's :meth:`next_wakeup` is due), and diffs the new schedule against the
  rules already installed: rules to add, to modify (path moved: ``MODIFY_STRICT``
  keeps the byte counters) and to delete, plus the new per-host rate sets for the
  agents;
* computes default forwarding for traffic that is not a scheduled coflow
  (:func:`default_forwarding`: per-destination shortest paths, ECMP over OpenFlow
  ``SELECT`` groups) and answers ARP (:func:`parse_arp_request`,
  :func:`build_arp_reply`);
* tracks progress from flow-stats byte counters of each flow's first-hop rule
  (:meth:`ControllerCore.apply_flow_stats`) and detects completion.

Completion detection (documented here because the emulation relies on it): a flow
is identified on the wire by (src IP, dst IP, TCP, dst port).  Its first-hop rule
on the source host's switch counts every data packet of the flow's direction.  The
payload estimate is ``byte_count - packet_count * header_bytes`` with
``header_bytes = 66`` (Ethernet 14 + IPv4 20 + TCP 20 + timestamp option 12; valid
with the segmentation offloads off, as the emulation runs).  A flow is done when the
estimate reaches ``size_bytes - finish_slack_bytes``; its finish time is
interpolated linearly between the two polls that bracket that crossing.  As a second
signal, a flow whose counters have not moved for ``idle_finish_s`` seconds while its
estimate is at least ``(1 - idle_fraction) * size_bytes`` is done at the time of its
last counter change (covers sends without TCP timestamps, i.e. 12 bytes less
header per packet, and retransmission accounting).  Counter resets (a switch that
reconnected and got its rules re-added) are detected and accumulated.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import socket
import struct
from collections import OrderedDict, deque
from dataclasses import dataclass, field, fields
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from topologies import Topology, TopologyError, build_topology

from ..core.model import CoflowState, FlowState, InfoPolicy, Schedule, WorkloadError, make_coflow

BITS = 8.0
ETH_TYPE_IP = 0x0800
ETH_TYPE_ARP = 0x0806
IP_PROTO_TCP = 6
#: OpenFlow 1.3 reserved port numbers used in rule data.
OFPP_CONTROLLER = 0xFFFFFFFD
#: Priorities: coflow 5-tuple rules above ARP-to-controller above default forwarding.
PRIORITY_COFLOW = 100
PRIORITY_ARP = 20
PRIORITY_DEFAULT = 10
#: Cookies: the top 16 bits tag our rules (0x5241 = "RA"); coflow rules carry a
#: per-flow number in the low bits so that flow-stats replies map back to flows.
COOKIE_TAG = 0x5241 << 48
COOKIE_TAG_MASK = 0xFFFF << 48
COOKIE_DEFAULT = COOKIE_TAG | 1
#: Coflow ids are used in URLs: keep them to a safe alphabet.
COFLOW_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

ACTIVE, DONE, CANCELLED = "active", "done", "cancelled"


# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------
class SettingsError(ValueError):
    """A controller option has a bad value; the message starts with its name."""


@dataclass
class Settings:
    """Controller options (the ``[rapier]`` section of the oslo.config file).

    Attributes:
        scheduler: scheduler registry name (``rapier``, ``baseline``, ...).
        topology: topology spec for :func:`topologies.build_topology`
            (``leafspine:3,3,3``, ``fattree:4``, ``vl2:4,4,2``, ...).
        link_bps: link speed override in bit/s (None: the builder's default,
            1 Gbit/s); must match the emulated link speed for rates to be right.
        rest_host, rest_port: REST listen address; None means Ryu's own
            ``--wsapi-host`` / ``--wsapi-port`` (0.0.0.0:8080).
        agent_url: URL template of the host agents, with ``{host}``, ``{ip}`` and
            ``{port}`` placeholders; ``http://{ip}:{port}`` or
            ``unix:/tmp/rapier-agents/{host}.sock``.  Empty: no agents (rates are
            computed and shown, not enforced).
        agent_port: TCP port of the agents (``{port}``).
        agent_timeout_s: timeout of one agent HTTP call in seconds.
        lp_time_limit_s: time limit of one LP solve in seconds (RAPIER).
        delta_s: RAPIER's starvation threshold delta in seconds.
        stats_interval_s: flow-stats polling period in seconds.
        min_rate_bps: rate pushed to agents for a flow the schedule makes wait
            (rate 0): a trickle that keeps its TCP connection alive, in bit/s.
        header_bytes: per-packet header bytes subtracted from rule byte counters
            to estimate payload bytes.
        finish_slack_bytes: a flow is done when its payload estimate reaches
            ``size_bytes - finish_slack_bytes``.
        idle_finish_s, idle_fraction: the idle completion rule (module docstring).
        seed: scheduler seed (ECMP hashing).
        max_paths: cap on candidate paths per host pair (0: the whole ECMP set).
        reschedule_on: when a flow finishes without ending its coflow, ``"flow"``
            calls the scheduler again (RAPIER and Varys then run only their
            work-conservation pass, which hands the finished flow's bandwidth to
            the surviving flows, and the new rates are pushed); ``"coflow"`` keeps
            the last decision for the remaining flows (only the finished flow's
            rules and rate go); ``"auto"`` (default) follows the scheduler's own
            ``reschedule_on`` (``flow`` for RAPIER and Varys: Algorithm 1 / SEBF +
            MADD run in full when a coflow arrives or finishes, RAPIER Section
            IV-C, work conservation alone at the other flow completions).
    """

    scheduler: str = "rapier"
    topology: str = "leafspine:3,3,3"
    link_bps: Optional[float] = None
    rest_host: Optional[str] = None
    rest_port: Optional[int] = None
    agent_url: str = "http://{ip}:{port}"
    agent_port: int = 7070
    agent_timeout_s: float = 1.0
    lp_time_limit_s: float = 5.0
    delta_s: float = 10.0
    stats_interval_s: float = 0.5
    min_rate_bps: float = 100e3
    header_bytes: int = 66
    finish_slack_bytes: int = 1448
    idle_finish_s: float = 2.0
    idle_fraction: float = 0.05
    seed: int = 0
    max_paths: int = 0
    reschedule_on: str = "auto"

    def validate(self) -> "Settings":
        """Check every option; return self.

        Raises:
            SettingsError: the first bad option, named (e.g. ``rest_port: ...``).
        """
        def positive(name: str, v, allow_none: bool = False) -> None:
            if v is None and allow_none:
                return
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0) \
                    or not math.isfinite(v):
                raise SettingsError(f"{name}: must be a positive number, got {v!r}")

        if not isinstance(self.scheduler, str) or not self.scheduler:
            raise SettingsError(f"scheduler: must be a scheduler name, got {self.scheduler!r}")
        if not isinstance(self.topology, str) or not self.topology:
            raise SettingsError(f"topology: must be a topology spec, got {self.topology!r}")
        positive("link_bps", self.link_bps, allow_none=True)
        if self.rest_port is not None and not (isinstance(self.rest_port, int)
                                               and 0 < self.rest_port < 65536):
            raise SettingsError(f"rest_port: must be a TCP port 1..65535, got {self.rest_port!r}")
        if not (isinstance(self.agent_port, int) and 0 < self.agent_port < 65536):
            raise SettingsError(f"agent_port: must be a TCP port 1..65535, got {self.agent_port!r}")
        if self.agent_url:
            if not (self.agent_url.startswith("http://") or self.agent_url.startswith("unix:")):
                raise SettingsError(f"agent_url: must start with http:// or unix:, got "
                                    f"{self.agent_url!r}")
            try:
                self.agent_url.format(host="h1", ip="10.0.0.1", port=1)
            except (KeyError, IndexError, ValueError) as exc:
                raise SettingsError(f"agent_url: bad placeholder {exc} in {self.agent_url!r} "
                                    f"(allowed: {{host}}, {{ip}}, {{port}})") from None
        for name in ("agent_timeout_s", "lp_time_limit_s", "stats_interval_s",
                     "idle_finish_s"):
            positive(name, getattr(self, name))
        if isinstance(self.delta_s, bool) or not isinstance(self.delta_s, (int, float)) \
                or not self.delta_s >= 0:
            raise SettingsError(f"delta_s: must be >= 0 seconds, got {self.delta_s!r}")
        if not isinstance(self.min_rate_bps, (int, float)) or not self.min_rate_bps >= 0:
            raise SettingsError(f"min_rate_bps: must be >= 0, got {self.min_rate_bps!r}")
        for name in ("header_bytes", "finish_slack_bytes", "seed", "max_paths"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise SettingsError(f"{name}: must be an integer >= 0, got {v!r}")
        if self.reschedule_on not in ("auto", "flow", "coflow"):
            raise SettingsError(f"reschedule_on: must be auto, flow or coflow, got "
                                f"{self.reschedule_on!r}")
        if not isinstance(self.idle_fraction, (int, float)) or not 0 <= self.idle_fraction < 1:
            raise SettingsError(f"idle_fraction: must be in [0, 1), got {self.idle_fraction!r}")
        return self

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Settings":
        """Build from a mapping of option name -> value (unknown names rejected).

        Raises:
            SettingsError: unknown option name, or a bad value (see :meth:`validate`).
        """
        known = {f.name for f in fields(cls)}
        for k in values:
            if k not in known:
                raise SettingsError(f"{k}: unknown option (known: {', '.join(sorted(known))})")
        return cls(**dict(values)).validate()


def build_scheduler(settings: Settings, topology: Topology):
    """Instantiate ``settings.scheduler`` for ``topology``.

    Passes ``delta_s`` and ``lp_time_limit_s`` (and ``max_paths`` when non-zero) only
    to schedulers whose constructor takes them (RAPIER does; the baselines do not).

    Raises:
        rapier_app.scheduling.SchedulerError: unknown scheduler name.
    """
    from ..scheduling import REGISTRY, load_all, make_scheduler

    load_all()
    cls = REGISTRY.get(settings.scheduler)
    params: Dict[str, Any] = {}
    if cls is not None:
        wanted = {"delta_s": settings.delta_s, "lp_time_limit_s": settings.lp_time_limit_s}
        if settings.max_paths:
            wanted["max_paths"] = settings.max_paths
        accepted = set()
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            sig = inspect.signature(init)
            accepted |= {n for n, p in sig.parameters.items()
                         if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            if not any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
                break
        params = {k: v for k, v in wanted.items() if k in accepted}
    return make_scheduler(settings.scheduler, topology, seed=settings.seed, **params)


# ---------------------------------------------------------------------------
# Rules and pushes as data
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FlowRule:
    """One OpenFlow 1.3 flow entry in table 0, as data.

    Attributes:
        dpid: datapath id of the switch.
        priority: flow priority.
        match: ((field, value), ...) in Ryu ``OFPMatch`` keyword names
            (``eth_type``, ``ip_proto``, ``ipv4_src``, ``ipv4_dst``, ``tcp_dst``).
        actions: (("output", port) | ("group", group_id) | ("controller", 0), ...).
        cookie: 64-bit cookie (see :data:`COOKIE_TAG`).
        command: ``"add"``, ``"modify"`` (MODIFY_STRICT: keeps counters) or
            ``"delete"`` (DELETE_STRICT).
        flow_id: the coflow flow this rule serves, or None for default rules.
    """

    dpid: int
    priority: int
    match: Tuple[Tuple[str, Any], ...]
    actions: Tuple[Tuple[str, int], ...]
    cookie: int = COOKIE_DEFAULT
    command: str = "add"
    flow_id: Optional[str] = None

    def match_dict(self) -> Dict[str, Any]:
        """The match as a dict (Ryu ``OFPMatch(**match_dict)``)."""
        return dict(self.match)

    def with_command(self, command: str) -> "FlowRule":
        """A copy with another command."""
        return FlowRule(self.dpid, self.priority, self.match, self.actions, self.cookie,
                        command, self.flow_id)


@dataclass(frozen=True)
class GroupRule:
    """One OpenFlow 1.3 group, as data: ``select`` over output ports (ECMP).

    Attributes:
        dpid: datapath id.
        group_id: group number (the destination host's index).
        ports: output ports of the buckets, one bucket each (weight 1).
        command: ``"add"`` or ``"delete"``.
    """

    dpid: int
    group_id: int
    ports: Tuple[int, ...]
    command: str = "add"


@dataclass
class AgentPush:
    """A ``PUT /v1/flows`` to one host agent: the full set of its rate limits.

    Attributes:
        host: host name.
        url: agent base URL (``http://IP:PORT`` or ``unix:/path.sock``).
        flows: list of dicts ``{flow_id, src_ip, dst_ip, proto, dst_port, rate_bps}``
            (rate in bit/s, int); an empty list removes every limit on the host.
    """

    host: str
    url: str
    flows: List[Dict[str, Any]]

    def body(self) -> bytes:
        """The JSON request body."""
        return json.dumps({"flows": self.flows}).encode()


@dataclass
class Actions:
    """What the Ryu shell must do after a core call.

    Attributes:
        rules: flow and group rules in the order to send them.
        pushes: agent pushes.
        finished: flow ids that completed in this call.
    """

    rules: List[Any] = field(default_factory=list)
    pushes: List[AgentPush] = field(default_factory=list)
    finished: List[str] = field(default_factory=list)

    def extend(self, other: "Actions") -> "Actions":
        """Append ``other``'s rules, pushes and finished flows; return self."""
        self.rules.extend(other.rules)
        self.pushes.extend(other.pushes)
        self.finished.extend(other.finished)
        return self


def tcp_match(src_ip: str, dst_ip: str, dst_port: int) -> Tuple[Tuple[str, Any], ...]:
    """The match of a coflow flow: IPv4, TCP, src IP, dst IP, TCP dst port."""
    return (("eth_type", ETH_TYPE_IP), ("ip_proto", IP_PROTO_TCP), ("ipv4_src", src_ip),
            ("ipv4_dst", dst_ip), ("tcp_dst", int(dst_port)))


# ---------------------------------------------------------------------------
# Default forwarding and topology checks
# ---------------------------------------------------------------------------
def _switch_neighbours(topo: Topology, s: str) -> List[str]:
    return [n for n in topo.graph.successors(s) if not topo.is_host(n)]


def default_forwarding(topo: Topology) -> Dict[int, Tuple[List[GroupRule], List[FlowRule]]]:
    """Default forwarding for all traffic that is not a scheduled coflow flow.

    For every destination host h and every switch s: the output ports of s on the
    shortest paths (in switch hops) to the switches h is attached to.  One port gives
    an ``output`` action; several give a ``select`` group (ECMP, OVS hashes the
    5-tuple) with ``group_id`` = the host's index.  Plus one rule per switch sending
    ARP to the controller (proxy ARP: ARP is never flooded, so loops do not storm).

    Returns:
        dpid -> (groups, rules); rules match ``eth_type=0x0800, ipv4_dst=IP(h)``.
    """
    out: Dict[int, Tuple[List[GroupRule], List[FlowRule]]] = {}
    g = topo.graph
    switches = topo.switches
    for s in switches:
        dpid = g.nodes[s]["dpid"]
        out[dpid] = ([], [FlowRule(dpid, PRIORITY_ARP, (("eth_type", ETH_TYPE_ARP),),
                                   (("controller", 0),))])
    for h in topo.hosts:
        attach = sorted(n for n in g.successors(h) if not topo.is_host(n))
        dist = {a: 0 for a in attach}
        frontier = deque(attach)
        while frontier:
            s = frontier.popleft()
            for n in _switch_neighbours(topo, s):
                if n not in dist:
                    dist[n] = dist[s] + 1
                    frontier.append(n)
        ip = g.nodes[h]["ip"]
        gid = g.nodes[h]["index"]
        for s in switches:
            if s not in dist:
                continue
            dpid = g.nodes[s]["dpid"]
            if dist[s] == 0:
                ports = [g.edges[s, h]["port"]]
            else:
                ports = sorted({g.edges[s, n]["port"] for n in _switch_neighbours(topo, s)
                                if dist.get(n, math.inf) == dist[s] - 1})
            groups, rules = out[dpid]
            match = (("eth_type", ETH_TYPE_IP), ("ipv4_dst", ip))
            if len(ports) == 1:
                rules.append(FlowRule(dpid, PRIORITY_DEFAULT, match, (("output", ports[0]),)))
            else:
                groups.append(GroupRule(dpid, gid, tuple(ports)))
                rules.append(FlowRule(dpid, PRIORITY_DEFAULT, match, (("group", gid),)))
    return out


def check_observed(topo: Topology, switch_ports: Mapping[int, Optional[Iterable[int]]],
                   links: Iterable[Tuple[int, int, int, int]] = ()) -> List[str]:
    """Compare what Ryu discovered with the configured topology.

    Args:
        switch_ports: dpid -> port numbers the switch reported (None: not known).
        links: discovered links as (src_dpid, src_port, dst_dpid, dst_port)
            (Ryu's ``--observe-links`` LLDP discovery).

    Returns:
        Human-readable mismatch messages, empty when everything observed is in the
        configured topology (switches not yet connected are not mismatches: see
        :func:`missing_switches`).
    """
    g = topo.graph
    by_dpid = {g.nodes[s]["dpid"]: s for s in topo.switches}
    msgs: List[str] = []
    for dpid in sorted(switch_ports):
        name = by_dpid.get(dpid)
        if name is None:
            msgs.append(f"switch dpid={dpid:#x} is not in topology {topo.name}")
            continue
        ports = switch_ports[dpid]
        if ports is None:
            continue
        have = set(int(p) for p in ports)
        for n in sorted(g.successors(name)):
            p = g.edges[name, n]["port"]
            if p not in have:
                msgs.append(f"switch {name} (dpid={dpid:#x}): port {p} towards {n} is missing")
    for sd, sp, dd, dp in links:
        s, d = by_dpid.get(sd), by_dpid.get(dd)
        if s is None or d is None:
            msgs.append(f"link dpid={sd:#x}:{sp} -> dpid={dd:#x}:{dp}: unknown switch")
            continue
        if not g.has_edge(s, d):
            msgs.append(f"link {s}:{sp} -> {d}:{dp} is not in topology {topo.name}")
            continue
        e = g.edges[s, d]
        if (e["port"], e["peer_port"]) != (sp, dp):
            msgs.append(f"link {s} -> {d}: observed ports {sp}->{dp}, configured "
                        f"{e['port']}->{e['peer_port']}")
    return msgs


def missing_switches(topo: Topology, connected: Iterable[int]) -> List[str]:
    """Names of configured switches whose dpid is not in ``connected``."""
    have = set(connected)
    return [s for s in topo.switches if topo.graph.nodes[s]["dpid"] not in have]


# ---------------------------------------------------------------------------
# Proxy ARP (pure bytes)
# ---------------------------------------------------------------------------
def _mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def _mac_str(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def parse_arp_request(frame: bytes) -> Optional[Tuple[str, str, str]]:
    """Parse an Ethernet ARP request (IPv4 over Ethernet, no VLAN).

    Returns:
        (sender MAC, sender IP, target IP), or None for anything else (ARP replies,
        non-ARP frames, truncated frames).
    """
    if len(frame) < 42:
        return None
    eth_type, = struct.unpack("!H", frame[12:14])
    if eth_type != ETH_TYPE_ARP:
        return None
    htype, ptype, hlen, plen, oper = struct.unpack("!HHBBH", frame[14:22])
    if (htype, ptype, hlen, plen, oper) != (1, ETH_TYPE_IP, 6, 4, 1):
        return None
    sha, spa, tpa = frame[22:28], frame[28:32], frame[38:42]
    return _mac_str(sha), socket.inet_ntoa(spa), socket.inet_ntoa(tpa)


def build_arp_reply(requester_mac: str, requester_ip: str, target_mac: str,
                    target_ip: str) -> bytes:
    """An ARP reply frame (42 bytes) telling ``requester`` that ``target_ip`` is at
    ``target_mac`` (RFC 826)."""
    eth = _mac_bytes(requester_mac) + _mac_bytes(target_mac) + struct.pack("!H", ETH_TYPE_ARP)
    arp = struct.pack("!HHBBH", 1, ETH_TYPE_IP, 6, 4, 2) + _mac_bytes(target_mac) + \
        socket.inet_aton(target_ip) + _mac_bytes(requester_mac) + socket.inet_aton(requester_ip)
    return eth + arp


# ---------------------------------------------------------------------------
# Request validation
# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Progress tracking
# ---------------------------------------------------------------------------
@dataclass
class FlowTrack:
    """Controller-side bookkeeping of one flow.

    Attributes:
        cookie: the cookie of every rule of the flow.
        first_dpid: dpid of the flow's first-hop switch (whose counters count).
        last_bytes, last_packets: last raw counters of the first-hop rule.
        offset_bytes: payload bytes accumulated before a counter reset.
        last_payload: last payload estimate (bytes).
        last_poll_s: time of the last counter sample (s).
        last_change_s: time the payload estimate last grew (s).
    """

    cookie: int
    first_dpid: int
    last_bytes: int = 0
    last_packets: int = 0
    offset_bytes: float = 0.0
    last_payload: float = 0.0
    last_poll_s: Optional[float] = None
    last_change_s: Optional[float] = None


def _jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if hasattr(v, "item"):
        return _jsonable(v.item())
    return str(v)


# ---------------------------------------------------------------------------
# The core
# ---------------------------------------------------------------------------
class ControllerCore:
    """Coflow registry, scheduling, rule diffs, agent pushes and progress.

    Args:
        topology: the configured fabric (from ``topologies/``).
        scheduler: a scheduler for that topology (see :func:`build_scheduler`).
        settings: the controller options.
        log: optional ``logging.Logger``-like object (``info``/``warning``/``error``).

    Every mutating method takes ``now`` (seconds since the controller started) and
    returns :class:`Actions` for the shell to carry out.
    """

    def __init__(self, topology: Topology, scheduler, settings: Optional[Settings] = None,
                 log=None):
        self.topology = topology
        self.scheduler = scheduler
        self.settings = (settings or Settings()).validate()
        self.log = log
        self.policy = InfoPolicy(scheduler.clairvoyant)
        self.coflows: "OrderedDict[str, CoflowState]" = OrderedDict()
        self.state: Dict[str, str] = {}
        self.ended_s: Dict[str, float] = {}
        self.fallback: Dict[str, str] = {}
        self.tracks: Dict[str, FlowTrack] = {}
        self.flow_by_cookie: Dict[int, FlowState] = {}
        self.installed: Dict[Tuple[int, str], FlowRule] = {}
        self.pushed: Dict[str, Tuple] = {}
        self.last_schedule: Optional[Schedule] = None
        self.last_schedule_s: Optional[float] = None
        self.last_solve_s = 0.0
        self.schedule_count = 0
        self.errors: List[str] = []
        self._next_cookie = 1
        self._next_auto = 1
        self.wall_clock = None  # optional () -> s, to time scheduler calls
        self._limits: Dict[str, List[Dict[str, Any]]] = {}
        self._defaults = default_forwarding(topology)
        g = topology.graph
        self._dpid = {s: g.nodes[s]["dpid"] for s in topology.switches}

    # -- helpers ----------------------------------------------------------------
    def _log(self, level: str, msg: str, *args) -> None:
        if self.log is not None:
            getattr(self.log, level)(msg, *args)

    def ip(self, host: str) -> str:
        """IPv4 address of ``host``."""
        return self.topology.graph.nodes[host]["ip"]

    def agent_url(self, host: str) -> str:
        """Agent base URL of ``host`` from the ``agent_url`` template."""
        return self.settings.agent_url.format(host=host, ip=self.ip(host),
                                              port=self.settings.agent_port)

    def default_rules(self, dpid: int) -> List[Any]:
        """Groups then flow rules of default forwarding and ARP for switch ``dpid``
        (empty for a dpid that is not in the topology)."""
        groups, rules = self._defaults.get(dpid, ([], []))
        return list(groups) + list(rules)

    def switch_rules(self, dpid: int) -> List[Any]:
        """Everything switch ``dpid`` must hold: defaults plus current coflow rules
        (sent after a switch (re)connects and its tables were cleared)."""
        mine = [r for (d, _), r in sorted(self.installed.items()) if d == dpid]
        return self.default_rules(dpid) + [r.with_command("add") for r in mine]

    def is_known_dpid(self, dpid: int) -> bool:
        """True when ``dpid`` belongs to a switch of the configured topology."""
        return dpid in self._defaults

    def check_observed(self, switch_ports, links=()) -> List[str]:
        """:func:`check_observed` on this core's topology."""
        return check_observed(self.topology, switch_ports, links)

    # -- REST operations ------------------------------------------------------------
    def submit(self, body, now: float) -> Tuple[CoflowState, Actions]:
        """Accept a new coflow (``POST /coflows``) and reschedule.

        Args:
            body: request body (see :func:`parse_coflow_request`).
            now: current time in seconds; becomes the coflow's arrival time.

        Returns:
            (the coflow's state, the actions of the reschedule).

        Raises:
            RequestError: 400 for bad input, duplicate coflow id, or a flow whose
            (src, dst, dst_port) is already used by an active flow (the rules would
            collide).  Nothing is changed then.
        """
        req = parse_coflow_request(body, self.topology)
        cid = req["id"]
        if cid is None:
            while f"c{self._next_auto}" in self.coflows:
                self._next_auto += 1
            cid = f"c{self._next_auto}"
            self._next_auto += 1
        elif cid in self.coflows:
            raise RequestError(400, "id", f"coflow {cid!r} already exists "
                                          f"(state {self.state[cid]})")
        busy = {(f.src, f.dst, f.dst_port): f.flow_id for c in self.active()
                for f in c.active_flows()}
        for i, (s, d, _, p) in enumerate(req["flows"]):
            other = busy.get((s, d, p))
            if other is not None:
                raise RequestError(400, f"flows[{i}]", f"duplicate flow: {s}->{d} port {p} "
                                                       f"is already used by active flow {other}")
        try:
            spec = make_coflow(cid, max(float(now), 0.0),
                               [(s, d, v) for s, d, v, _ in req["flows"]], req["weight"],
                               dst_ports=[p for *_, p in req["flows"]])
        except WorkloadError as exc:  # defensive: validated above
            raise RequestError(400, "flows", str(exc)) from None
        c = CoflowState(spec, self.policy)
        self.coflows[cid] = c
        self.state[cid] = ACTIVE
        for f in c.flows:
            cookie = cookie_for(self._next_cookie)
            self._next_cookie += 1
            first = self.topology.attachment(f.src)[0]
            self.tracks[f.flow_id] = FlowTrack(cookie, self._dpid[first])
            self.flow_by_cookie[cookie] = f
        self._log("info", "coflow %s arrived at %.3f s: %d flows, %.0f bytes", cid, now,
                  len(c.flows), spec.total_bytes)
        return c, self.reschedule(now)

    def get(self, cid: str) -> CoflowState:
        """The coflow ``cid``.  Raises RequestError 404 naming ``id``."""
        c = self.coflows.get(cid)
        if c is None:
            raise RequestError(404, "id", f"no coflow {cid!r}")
        return c

    def cancel(self, cid: str, now: float) -> Actions:
        """Cancel coflow ``cid`` (``DELETE /coflows/<id>``): its rules and rate limits
        go, the others are rescheduled.

        Raises:
            RequestError: 404 for an unknown id; 400 when it is already done or
            cancelled.
        """
        c = self.get(cid)
        if self.state[cid] != ACTIVE:
            raise RequestError(400, "id", f"coflow {cid!r} is already {self.state[cid]}")
        self.state[cid] = CANCELLED
        self.ended_s[cid] = now
        for f in c.flows:
            f.rate_bps = 0.0
        self._log("info", "coflow %s cancelled at %.3f s", cid, now)
        return self.reschedule(now)

    def active(self) -> List[CoflowState]:
        """Active coflows in arrival order."""
        return [c for cid, c in self.coflows.items() if self.state[cid] == ACTIVE]

    # -- scheduling -----------------------------------------------------------------
    def reschedule(self, now: float) -> Actions:
        """Call the scheduler and turn its decision into rule and agent changes.

        A scheduler exception (e.g. an LP failure) does not propagate: every active
        coflow falls back to default forwarding and the event is logged.  Coflows the
        scheduler itself reports in ``Schedule.fallback`` (RAPIER's LP time-out) get
        default forwarding too, with a counting rule on their first hop only.

        Args:
            now: current time (s).  ``self.wall_clock`` (optional ``() -> s``) only
                times the call for ``GET /schedule``.

        Returns:
            :class:`Actions` (rules to add/modify/delete, agent pushes).
        """
        active = self.active()
        wall_clock = self.wall_clock
        t0 = wall_clock() if wall_clock else 0.0
        if active:
            try:
                sched = self.scheduler.schedule(now, active)
            except Exception as exc:  # noqa: BLE001 -- any solver failure falls back
                msg = f"scheduler {self.settings.scheduler} failed: {exc!r}"
                self._log("error", "%s; all active coflows use default forwarding", msg)
                self.errors.append(f"{now:.3f}: {msg}")
                sched = Schedule(fallback={c.coflow_id: msg for c in active})
        else:
            sched = Schedule()
        self.last_solve_s = (wall_clock() - t0) if wall_clock else 0.0
        for cid, reason in sched.fallback.items():
            if self.fallback.get(cid) != reason:
                self._log("warning", "coflow %s falls back to default forwarding: %s",
                          cid, reason)
            self.fallback[cid] = reason
        self.last_schedule = sched
        self.last_schedule_s = now
        self.schedule_count += 1
        return self._apply(sched, active)

    def _path_rules(self, f: FlowState, path: Sequence[str]) -> List[FlowRule]:
        g = self.topology.graph
        match = tcp_match(self.ip(f.src), self.ip(f.dst), f.dst_port)
        cookie = self.tracks[f.flow_id].cookie
        rules = []
        for i in range(1, len(path) - 1):
            s = path[i]
            port = g.edges[s, path[i + 1]]["port"]
            rules.append(FlowRule(self._dpid[s], PRIORITY_COFLOW, match, (("output", port),),
                                  cookie, "add", f.flow_id))
        return rules

    def _counting_rule(self, f: FlowState) -> FlowRule:
        """First-hop rule with the default-forwarding action (keeps counters for a
        flow on default forwarding)."""
        track = self.tracks[f.flow_id]
        ip = self.ip(f.dst)
        action = None
        for r in self._defaults[track.first_dpid][1]:
            if r.match_dict().get("ipv4_dst") == ip:
                action = r.actions
        match = tcp_match(self.ip(f.src), ip, f.dst_port)
        return FlowRule(track.first_dpid, PRIORITY_COFLOW, match, action, track.cookie,
                        "add", f.flow_id)

    def _valid_path(self, f: FlowState, path) -> bool:
        if not path or len(path) < 3 or path[0] != f.src or path[-1] != f.dst:
            return False
        try:
            self.topology.path_links(path)
        except TopologyError:
            return False
        return path[1] in self._dpid

    def _apply(self, sched: Schedule, active: Sequence[CoflowState]) -> Actions:
        acts = Actions()
        desired: Dict[Tuple[int, str], FlowRule] = {}
        limits: Dict[str, List[Dict[str, Any]]] = {}
        for c in active:
            fb = c.coflow_id in sched.fallback
            for f in c.active_flows():
                a = sched.allocations.get(f.flow_id)
                path = tuple(a.path) if a is not None else None
                if fb or path is None or not self._valid_path(f, path):
                    if path is not None and not fb and not self._valid_path(f, path):
                        self._log("error", "flow %s: scheduler gave unusable path %s; "
                                  "default forwarding", f.flow_id, "-".join(path))
                    rules = [self._counting_rule(f)]
                    f.path = None
                    f.rate_bps = float(a.rate_bps) if (a is not None and not fb) else 0.0
                else:
                    rules = self._path_rules(f, path)
                    self.tracks[f.flow_id].first_dpid = self._dpid[path[1]]
                    f.path = path
                    f.rate_bps = float(a.rate_bps)
                for r in rules:
                    desired[(r.dpid, f.flow_id)] = r
                if not fb:
                    rate = f.rate_bps if f.rate_bps > 0 else self.settings.min_rate_bps
                    limits.setdefault(f.src, []).append({
                        "flow_id": f.flow_id, "src_ip": self.ip(f.src), "dst_ip": self.ip(f.dst),
                        "proto": "tcp", "dst_port": f.dst_port,
                        "rate_bps": int(round(max(rate, 1.0)))})
        # Rule diff: adds/modifies first (new path ready), deletes last.
        deletes = []
        for key, r in desired.items():
            old = self.installed.get(key)
            if old is None:
                acts.rules.append(r)
            elif old.actions != r.actions:
                acts.rules.append(r.with_command("modify"))
        for key, old in self.installed.items():
            if key not in desired:
                deletes.append(old.with_command("delete"))
        acts.rules.extend(deletes)
        self.installed = desired
        self._limits = limits
        # Agent pushes: every host whose set changed (hosts that lost all flows get []).
        if self.settings.agent_url:
            for host in sorted(set(limits) | set(self.pushed)):
                flows = sorted(limits.get(host, []), key=lambda d: d["flow_id"])
                key = tuple(tuple(sorted(d.items())) for d in flows)
                if self.pushed.get(host) != key:
                    acts.pushes.append(AgentPush(host, self.agent_url(host), flows))
                    if flows:
                        self.pushed[host] = key
                    else:
                        self.pushed.pop(host, None)
        return acts

    def push_failed(self, host: str) -> None:
        """Mark ``host``'s pushed set as unknown so the next reschedule pushes again."""
        self.pushed[host] = ("<failed>",)

    def retry_pushes(self) -> Actions:
        """Pushes for the hosts whose last push failed (their current rate set)."""
        acts = Actions()
        for host in sorted(h for h, k in self.pushed.items() if k == ("<failed>",)):
            flows = sorted(self._limits.get(host, []), key=lambda d: d["flow_id"])
            acts.pushes.append(AgentPush(host, self.agent_url(host), flows))
            if flows:
                self.pushed[host] = tuple(tuple(sorted(d.items())) for d in flows)
            else:
                self.pushed.pop(host, None)
        return acts

    def arp_answer(self, frame: bytes) -> Optional[bytes]:
        """Proxy ARP: the reply frame to an ARP request for a host of the topology,
        or None (not an ARP request, or the target IP is no host of ours)."""
        req = parse_arp_request(frame)
        if req is None:
            return None
        mac, ip, target = req
        try:
            host = self.topology.host_by_ip(target)
        except TopologyError:
            return None
        return build_arp_reply(mac, ip, self.topology.graph.nodes[host]["mac"], target)

    def wakeup_due(self, now: float) -> bool:
        """True when the scheduler asked for a decision at or before ``now``."""
        if not self.active():
            return False
        try:
            t = self.scheduler.next_wakeup(self.last_schedule_s or 0.0)
        except Exception:  # noqa: BLE001
            return False
        return t is not None and t <= now

    # -- progress -------------------------------------------------------------------
    def stats_dpids(self) -> List[int]:
        """dpids of the first-hop switches of active flows (to poll for flow stats)."""
        return sorted({self.tracks[f.flow_id].first_dpid for c in self.active()
                       for f in c.active_flows()})

    def apply_flow_stats(self, dpid: int, entries: Iterable[Tuple[int, int, int]],
                         now: float) -> Actions:
        """Update bytes sent from a flow-stats reply and detect completions.

        Args:
            dpid: the replying switch.
            entries: (cookie, byte_count, packet_count) per flow entry; entries that
                are not the first-hop rule of an active flow are ignored.
            now: time of the reply (s).

        Returns:
            The reschedule's :class:`Actions` when a flow finished (``finished``
            lists them), else empty actions.
        """
        finished: List[str] = []
        hdr = self.settings.header_bytes
        for cookie, nbytes, npkts in entries:
            f = self.flow_by_cookie.get(cookie)
            if f is None or f.done or self.state.get(f.coflow_id) != ACTIVE:
                continue
            tr = self.tracks[f.flow_id]
            if tr.first_dpid != dpid:
                continue
            if nbytes < tr.last_bytes or npkts < tr.last_packets:  # counters were reset
                tr.offset_bytes += max(tr.last_bytes - tr.last_packets * hdr, 0)
            tr.last_bytes, tr.last_packets = int(nbytes), int(npkts)
            payload = tr.offset_bytes + max(nbytes - npkts * hdr, 0)
            prev, t_prev = tr.last_payload, tr.last_poll_s
            size = f.spec.size_bytes
            if payload > prev:
                tr.last_change_s = now
            if payload >= size - self.settings.finish_slack_bytes:
                if t_prev is None or payload <= prev:
                    t_fin = now
                else:
                    frac = min(max((size - self.settings.finish_slack_bytes - prev)
                                   / (payload - prev), 0.0), 1.0)
                    t_fin = t_prev + frac * (now - t_prev)
                self._finish(f, max(t_fin, f.start_s))
                finished.append(f.flow_id)
            else:
                f.bytes_sent = max(f.bytes_sent, min(payload, size))
            tr.last_payload = max(prev, payload)
            tr.last_poll_s = now
        return self._after_finish(finished, now)

    def check_idle(self, now: float) -> Actions:
        """The idle completion rule: a flow whose counters stood still for
        ``idle_finish_s`` with at least ``(1 - idle_fraction)`` of its bytes sent is
        done at its last counter change."""
        finished = []
        s = self.settings
        for c in self.active():
            for f in list(c.active_flows()):
                tr = self.tracks[f.flow_id]
                if tr.last_change_s is None or now - tr.last_change_s < s.idle_finish_s:
                    continue
                if tr.last_payload >= (1 - s.idle_fraction) * f.spec.size_bytes:
                    self._finish(f, tr.last_change_s)
                    finished.append(f.flow_id)
        return self._after_finish(finished, now)

    def _finish(self, f: FlowState, t: float) -> None:
        f.bytes_sent = f.spec.size_bytes
        f.finish_s = t
        f.rate_bps = 0.0
        # The scheduler's hook (RAPIER and Varys note the flow for their next
        # work-conservation pass).  Optional: any object with schedule() is a
        # scheduler here.  A failing hook must not abort the flow-stats reply half
        # way (the flow is already marked done, its coflow would never be closed):
        # it is logged, and the next decision still sees the flow finished.
        hook = getattr(self.scheduler, "flows_finished", None)
        if hook is not None:
            try:
                hook([f])
            except Exception as exc:  # noqa: BLE001 -- same policy as reschedule()
                msg = f"scheduler {self.settings.scheduler} flows_finished failed: {exc!r}"
                self._log("error", "%s", msg)
                self.errors.append(f"{t:.3f}: {msg}")
        self._log("info", "flow %s done at %.3f s", f.flow_id, t)

    def reschedule_mode(self) -> str:
        """``"flow"`` or ``"coflow"``: the decision points in use (the
        ``reschedule_on`` setting, ``auto`` resolved from the scheduler)."""
        mode = self.settings.reschedule_on
        if mode == "auto":
            mode = getattr(self.scheduler, "reschedule_on", "flow")
        return mode

    def _after_finish(self, finished: List[str], now: float) -> Actions:
        """Close finished coflows, then either call the scheduler again or, in
        ``coflow`` mode when no coflow ended, re-apply the last decision to the
        remaining flows (the finished flows' rules and agent rates are removed)."""
        if not finished:
            return Actions()
        coflow_done = False
        for c in self.active():
            c._invalidate()
            if not c.active_flows():
                c.finish_s = max(f.finish_s for f in c.flows)
                self.state[c.coflow_id] = DONE
                self.ended_s[c.coflow_id] = now
                coflow_done = True
                self._log("info", "coflow %s done: CCT %.3f s", c.coflow_id, c.cct_s)
        if (self.reschedule_mode() == "coflow" and not coflow_done
                and self.last_schedule is not None):
            acts = self._apply(self.last_schedule, self.active())
        else:
            acts = self.reschedule(now)
        acts.finished = finished
        return acts

    # -- views (JSON-ready) -------------------------------------------------------
    def flow_view(self, f: FlowState) -> Dict[str, Any]:
        """One flow for the REST API (bytes, bit/s, seconds)."""
        return {"flow_id": f.flow_id, "src": f.src, "dst": f.dst, "src_ip": self.ip(f.src),
                "dst_ip": self.ip(f.dst), "proto": "tcp", "dst_port": f.dst_port,
                "size_bytes": f.spec.size_bytes, "bytes_sent": f.bytes_sent,
                "rate_bps": f.rate_bps, "path": list(f.path) if f.path else None,
                "state": "done" if f.done else self.state[f.coflow_id],
                "finish_s": f.finish_s,
                "fct_s": None if f.finish_s is None else f.finish_s - f.start_s}

    def coflow_view(self, cid: str) -> Dict[str, Any]:
        """One coflow for ``GET /coflows/<id>``.  Raises RequestError 404."""
        c = self.get(cid)
        return _jsonable({"id": cid, "state": self.state[cid], "arrival_s": c.arrival_s,
                          "weight": c.weight, "width": c.width,
                          "total_bytes": c.spec.total_bytes, "bytes_sent": c.bytes_sent,
                          "finish_s": c.finish_s, "cct_s": c.cct_s,
                          "ended_s": self.ended_s.get(cid),
                          "fallback": self.fallback.get(cid),
                          "flows": [self.flow_view(f) for f in c.flows]})

    def coflows_view(self) -> List[Dict[str, Any]]:
        """Every coflow (all states) in arrival order."""
        return [self.coflow_view(cid) for cid in self.coflows]

    def schedule_view(self) -> Dict[str, Any]:
        """The schedule in force, for ``GET /schedule``: allocations of unfinished
        flows only (in ``coflow`` mode the last decision outlives flows that finished
        since), and ``reschedule_on``, the decision points in use."""
        s = self.last_schedule or Schedule()
        live = {f.flow_id for c in self.active() for f in c.active_flows()}
        return _jsonable({
            "scheduler": self.settings.scheduler, "computed_at_s": self.last_schedule_s,
            "count": self.schedule_count, "solve_s": self.last_solve_s,
            "reschedule_on": self.reschedule_mode(),
            "order": list(s.order), "fallback": dict(s.fallback),
            "allocations": {fid: {"path": list(a.path), "rate_bps": a.rate_bps}
                            for fid, a in sorted(s.allocations.items()) if fid in live},
            "installed_rules": len(self.installed), "info": s.info, "errors": self.errors[-20:]})

    def topology_view(self, observed: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """The configured topology, its hosts' attachment points, and what was
        observed (``observed`` as given by the shell)."""
        topo = self.topology
        hosts = []
        for h in topo.hosts:
            sw, port = topo.attachment(h)
            d = topo.graph.nodes[h]
            hosts.append({"name": h, "ip": d["ip"], "mac": d["mac"], "switch": sw,
                          "dpid": self._dpid[sw], "port": port})
        return _jsonable({"spec": self.settings.topology, **topo.to_dict(), "hosts": hosts,
                          "observed": observed or {}})


def make_core(settings: Settings, log=None) -> ControllerCore:
    """Build topology, scheduler and core from ``settings``.

    Raises:
        SettingsError: bad topology spec or scheduler name (naming the option).
    """
    settings.validate()
    try:
        topo = build_topology(settings.topology, settings.link_bps)
    except TopologyError as exc:
        raise SettingsError(f"topology: {exc}") from None
    from ..scheduling import SchedulerError

    try:
        sched = build_scheduler(settings, topo)
    except SchedulerError as exc:
        raise SettingsError(f"scheduler: {exc}") from None
    return ControllerCore(topo, sched, settings, log)


def cookie_for(flow_number: int) -> int:
    """The cookie of the ``flow_number``-th flow registered (1, 2, ...): the tag in
    the top 16 bits, ``flow_number + 1`` below (1 is the default rules' cookie)."""
    return COOKIE_TAG | (flow_number + 1)


__all__ = ["Actions", "AgentPush", "ControllerCore", "FlowRule", "GroupRule", "RequestError",
           "Settings", "SettingsError", "build_arp_reply", "build_scheduler", "check_observed",
           "default_forwarding", "make_core", "missing_switches", "parse_arp_request",
           "parse_coflow_request", "tcp_match"]
