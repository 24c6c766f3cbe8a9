"""Topology files: a fabric described by its user, read, validated and written.

A topology file is YAML in the spirit of Faucet's ``dps:`` / ``interfaces:``: switches
with their datapath ids, hosts with their addresses and the switch port each hangs
on, and the links between switches with both port numbers and a capacity in bit/s.
``build_topology("file:PATH")`` reads one, ``rapier-topology export SPEC -o FILE``
writes any generated fabric as one, ``rapier-topology check FILE`` validates one
(docs/topology.md)::

    name: two-speeds                 # optional (default: file:PATH)
    switches:                        # name: {dpid, role}
      s1: {dpid: 1}                  # role optional: switch (or edge, core, leaf, ...)
      s2: {dpid: 0x2}
    hosts:                           # name: {ip, mac, switch, port, capacity_bps}
      h1: {ip: 10.0.0.1, mac: "00:00:00:00:00:01", switch: s1, port: 1, capacity_bps: 10e6}
      h2:
        ip: 10.0.0.2
        mac: "00:00:00:00:00:02"
        interfaces:                  # several interfaces: one entry each, in port order
          - {switch: s2, port: 1, capacity_bps: 10M}
    links:                           # switch-to-switch, full duplex
      - {a: s1, a_port: 2, b: s2, b_port: 2, capacity_bps: 20e6}

Top-level keys: ``switches``, ``hosts``, ``links`` (required; ``links`` may be
empty), ``name``, ``version`` (1), ``default_capacity_bps`` (the capacity of a link
or host interface that gives none) and ``path_slack`` (candidate paths up to that
many hops longer than the shortest, :meth:`topologies.base.Topology.set_path_slack`;
default 0: the ECMP set).  Capacities are bit/s: a number (``10e6`` and ``1e9`` are
numbers here, unlike YAML 1.1) or a string with a k/M/G/T suffix (``10M``,
``"2.5G"``, ``10 Mbit/s``).  The loader reads ``00:00:00:00:00:01`` as a string
(YAML 1.1's base-60 integers are off), so MACs need no quotes.

Checked, each error a :class:`TopologyError` naming the file, the line, the element
and the field: YAML that does not parse, an unknown or missing key, a duplicate key
or name, a duplicate dpid, IP or MAC, a bad IP (IPv4 dotted quad) or MAC, a link or
host naming an unknown switch, a port used twice on a switch, a port that is not an
integer in 1..0xffffff00 (OpenFlow 1.3's physical ports), a capacity that is not a
positive number, a host with no switch, parallel links between one pair of switches,
and a fabric whose hosts cannot reach each other over switches.

Pure: PyYAML and :mod:`topologies.base` only.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from typing import Any, Dict, List, Optional, Tuple

import yaml

from .base import HOST, SWITCH_ROLES, Topology, TopologyError

__all__ = ["FORMAT_VERSION", "load_topology", "loads_topology", "dump_topology",
           "save_topology", "parse_capacity"]

FORMAT_VERSION = 1
#: Largest OpenFlow 1.3 physical port number (OFPP_MAX).
OFPP_MAX = 0xFFFFFF00
#: Largest datapath id (64 bits).
DPID_MAX = (1 << 64) - 1
_TOP_KEYS = ("name", "version", "default_capacity_bps", "path_slack", "switches", "hosts",
             "links")
_SWITCH_KEYS = ("dpid", "role")
_HOST_KEYS = ("ip", "mac", "switch", "port", "capacity_bps", "interfaces")
_INTF_KEYS = ("switch", "port", "capacity_bps")
_LINK_KEYS = ("a", "a_port", "b", "b_port", "capacity_bps")
_MAC_RE = re.compile(r"^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2}){4}$")
_CAP_RE = re.compile(r"^\s*([0-9.eE+-]+)\s*([kKMGT]?)\s*(bit/s|bps|b/s)?\s*$")
_SUFFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


# ---------------------------------------------------------------------------------
# YAML with line numbers, duplicate keys refused, no base-60 integers
# ---------------------------------------------------------------------------------
class _Map(dict):
    """A YAML mapping that remembers its line and each key's line (1-based)."""

    line = 0

    def __init__(self):
        super().__init__()
        self.lines: Dict[Any, int] = {}

    def line_of(self, key) -> int:
        return self.lines.get(key, self.line)


class _Seq(list):
    """A YAML sequence that remembers its line and each item's line (1-based)."""

    line = 0

    def __init__(self):
        super().__init__()
        self.lines: List[int] = []


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader with YAML 1.2-like numbers (``10e6`` is a float; ``00:00:01`` is a
    string, not a base-60 integer) and line-aware, duplicate-refusing mappings."""

    source = "<string>"


_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag not in (_INT, _FLOAT)]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}  # (C loader: same table)
_Loader.add_implicit_resolver(
    _INT, re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)"
                     r"|[-+]?0x[0-9a-fA-F_]+)$"), list("-+0123456789"))
_Loader.add_implicit_resolver(
    _FLOAT, re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789."))


def _construct_int(loader, node):
    text = loader.construct_scalar(node).replace("_", "")
    if re.match(r"^[-+]?0o", text):
        return int(text.replace("0o", ""), 8)
    if re.match(r"^[-+]?0[0-7]+$", text):
        return int(text, 8)
    return int(text, 0)


def _construct_map(loader, node):
    loader.flatten_mapping(node)
    m = _Map()
    m.line = node.start_mark.line + 1
    for knode, vnode in node.value:
        key = loader.construct_object(knode, deep=True)
        line = knode.start_mark.line + 1
        try:
            dup = key in m
        except TypeError:
            raise TopologyError(f"{loader.source}:{line}: key: a mapping key must be a "
                                f"name, got {key!r}") from None
        if dup:
            raise TopologyError(f"{loader.source}:{line}: {key}: name: duplicate key "
                                f"{key!r} (also on line {m.lines[key]})")
        m[key] = loader.construct_object(vnode, deep=True)
        m.lines[key] = line
    return m


def _construct_seq(loader, node):
    s = _Seq()
    s.line = node.start_mark.line + 1
    for item in node.value:
        s.append(loader.construct_object(item, deep=True))
        s.lines.append(item.start_mark.line + 1)
    return s


_Loader.add_constructor(_INT, _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def _parse_yaml(text: str, source: str):
    loader = _Loader(text)
    loader.source = source
    try:
        return loader.get_single_data()
    except TopologyError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise TopologyError(f"{where}: yaml: does not parse: {problem}") from None
    finally:
        loader.dispose()


# ---------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------
class _Ctx:
    """Error formatting: ``FILE:LINE: ELEMENT: FIELD: problem``."""

    def __init__(self, source: str):
        self.source = source

    def error(self, line: int, element: str, field: str, problem: str) -> TopologyError:
        exc = TopologyError(f"{self.source}:{line}: {element}: {field}: {problem}")
        exc.file, exc.line, exc.element, exc.field = self.source, line, element, field
        return exc


def parse_capacity(value) -> float:
    """A capacity in bit/s from a number or a string with an optional k/M/G/T suffix
    and unit (``10e6``, ``"10M"``, ``"2.5 Gbit/s"``).

    Raises:
        ValueError: not a positive finite number (bools are refused too).
    """
    if isinstance(value, bool):
        raise ValueError(f"must be a positive number of bit/s, got {value!r}")
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str):
        m = _CAP_RE.match(value)
        try:
            if m is None:
                raise ValueError
            v = float(m.group(1)) * _SUFFIX[m.group(2)]
        except ValueError:
            raise ValueError(f"must be a positive number of bit/s (e.g. 10e6, 10M), got "
                             f"{value!r}") from None
    else:
        raise ValueError(f"must be a positive number of bit/s, got {value!r}")
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"must be a positive number of bit/s, got {value!r}")
    return v


def _keys(ctx: _Ctx, m, allowed, required, element: str, line: int) -> None:
    if not isinstance(m, dict):
        raise ctx.error(line, element, "-", f"must be a mapping of {', '.join(allowed)}, "
                                             f"got {m!r}")
    for k in m:
        if k not in allowed:
            raise ctx.error(m.line_of(k), element, str(k),
                            f"unknown key (known: {', '.join(allowed)})")
    for k in required:
        if k not in m:
            raise ctx.error(m.line, element, k, "missing (required)")


def _name(ctx: _Ctx, key, line: int, section: str) -> str:
    if not isinstance(key, str) or not key:
        raise ctx.error(line, f"{section} {key!r}", "name",
                        "must be a non-empty string (quote names YAML reads as numbers "
                        "or booleans)")
    if any(c.isspace() for c in key):
        raise ctx.error(line, f"{section} {key!r}", "name", "must not contain spaces")
    return key


def _port(ctx: _Ctx, m, key: str, element: str) -> int:
    v = m[key]
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= OFPP_MAX:
        raise ctx.error(m.line_of(key), element, key,
                        f"must be an integer port number in 1..{OFPP_MAX:#x}, got {v!r}")
    return v


def _capacity(ctx: _Ctx, m, default: Optional[float], element: str) -> float:
    if "capacity_bps" not in m:
        if default is None:
            raise ctx.error(m.line, element, "capacity_bps",
                            "missing (required, or give default_capacity_bps)")
        return default
    try:
        return parse_capacity(m["capacity_bps"])
    except ValueError as exc:
        raise ctx.error(m.line_of("capacity_bps"), element, "capacity_bps", str(exc)) from None


def _from_doc(doc, source: str) -> Topology:
    ctx = _Ctx(source)
    if not isinstance(doc, dict):
        raise ctx.error(getattr(doc, "line", 1), "file", "-",
                        f"must be a mapping with switches, hosts and links, got "
                        f"{type(doc).__name__}")
    _keys(ctx, doc, _TOP_KEYS, ("switches", "hosts", "links"), "file", doc.line)
    version = doc.get("version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise ctx.error(doc.line_of("version"), "file", "version",
                        f"unsupported format version {version!r} (this reader: "
                        f"{FORMAT_VERSION})")
    name = doc.get("name", f"file:{source}")
    if not isinstance(name, str) or not name:
        raise ctx.error(doc.line_of("name"), "file", "name",
                        f"must be a non-empty string, got {name!r}")
    default = None
    if "default_capacity_bps" in doc:
        try:
            default = parse_capacity(doc["default_capacity_bps"])
        except ValueError as exc:
            raise ctx.error(doc.line_of("default_capacity_bps"), "file",
                            "default_capacity_bps", str(exc)) from None
    slack = doc.get("path_slack", 0)
    if isinstance(slack, bool) or not isinstance(slack, int) or slack < 0:
        raise ctx.error(doc.line_of("path_slack"), "file", "path_slack",
                        f"must be an integer number of hops >= 0, got {slack!r}")

    t = Topology(name)
    # -- switches
    sws = doc["switches"]
    if not isinstance(sws, dict) or not sws:
        raise ctx.error(doc.line_of("switches"), "file", "switches",
                        "must be a non-empty mapping of switch name -> {dpid, role}")
    dpids: Dict[int, str] = {}
    for key, sw in sws.items():
        line = sws.line_of(key)
        name_ = _name(ctx, key, line, "switch")
        el = f"switch {name_}"
        _keys(ctx, sw, _SWITCH_KEYS, ("dpid",), el, line)
        dpid = sw["dpid"]
        if isinstance(dpid, str):
            try:
                dpid = int(dpid.replace(":", ""), 16)
            except ValueError:
                pass
        if isinstance(dpid, bool) or not isinstance(dpid, int) or not 1 <= dpid <= DPID_MAX:
            raise ctx.error(sw.line_of("dpid"), el, "dpid",
                            f"must be an integer in 1..2^64-1, got {sw['dpid']!r}")
        if dpid in dpids:
            raise ctx.error(sw.line_of("dpid"), el, "dpid",
                            f"duplicate dpid {dpid} (also switch {dpids[dpid]})")
        dpids[dpid] = name_
        role = sw.get("role", "switch")
        if role not in SWITCH_ROLES:
            raise ctx.error(sw.line_of("role"), el, "role",
                            f"unknown role {role!r} (known: {', '.join(SWITCH_ROLES)})")
        t.add_switch(name_, role, dpid)
    used: Dict[Tuple[str, int], str] = {}  # (switch, port) -> what uses it

    def take(sw: str, port: int, what: str, m, key: str, element: str) -> None:
        if (sw, port) in used:
            raise ctx.error(m.line_of(key), element, key,
                            f"port {port} of switch {sw} is used twice (also by "
                            f"{used[(sw, port)]})")
        used[(sw, port)] = what

    def switch_ref(m, key: str, element: str) -> str:
        s = m[key]
        if not isinstance(s, str) or s not in sws:
            kind = "a host, not a switch" if isinstance(s, str) and s in hosts else \
                "unknown switch"
            raise ctx.error(m.line_of(key), element, key, f"{kind} {s!r}")
        return s

    # -- hosts
    hosts = doc["hosts"]
    if not isinstance(hosts, dict) or not hosts:
        raise ctx.error(doc.line_of("hosts"), "file", "hosts",
                        "must be a non-empty mapping of host name -> {ip, mac, switch, port}")
    ips: Dict[str, str] = {}
    macs: Dict[str, str] = {}
    host_links = []
    for key, h in hosts.items():
        line = hosts.line_of(key)
        name_ = _name(ctx, key, line, "host")
        el = f"host {name_}"
        if name_ in sws:
            raise ctx.error(line, el, "name", f"duplicate name: {name_} is also a switch "
                                              f"(line {sws.line_of(name_)})")
        _keys(ctx, h, _HOST_KEYS, ("ip", "mac"), el, line)
        try:
            ip = str(ipaddress.IPv4Address(h["ip"])) if isinstance(h["ip"], str) else None
        except ValueError:
            ip = None
        if ip is None:
            raise ctx.error(h.line_of("ip"), el, "ip",
                            f"must be an IPv4 address (dotted quad), got {h['ip']!r}")
        if ip in ips:
            raise ctx.error(h.line_of("ip"), el, "ip", f"duplicate IP {ip} (also host "
                                                       f"{ips[ip]})")
        ips[ip] = name_
        mac = h["mac"]
        if not isinstance(mac, str) or not _MAC_RE.match(mac):
            raise ctx.error(h.line_of("mac"), el, "mac",
                            f"must be a MAC address like 00:00:00:00:00:01, got {mac!r}")
        mac = mac.lower().replace("-", ":")
        if mac in macs:
            raise ctx.error(h.line_of("mac"), el, "mac", f"duplicate MAC {mac} (also host "
                                                         f"{macs[mac]})")
        macs[mac] = name_
        if "interfaces" in h:
            for k in ("switch", "port", "capacity_bps"):
                if k in h:
                    raise ctx.error(h.line_of(k), el, k,
                                    "give either switch/port/capacity_bps or interfaces, "
                                    "not both")
            intfs = h["interfaces"]
            if not isinstance(intfs, list) or not intfs:
                raise ctx.error(h.line_of("interfaces"), el, "interfaces",
                                "must be a non-empty list of {switch, port, capacity_bps}")
            items = list(zip(intfs, intfs.lines))
        else:
            if "switch" not in h:
                raise ctx.error(h.line, el, "switch",
                                "missing: a host hangs on a switch (give switch and port, "
                                "or interfaces)")
            items = [(h, h.line)]
        t.add_host(name_, ip=ip, mac=mac)
        for n, (intf, iline) in enumerate(items):
            iel = el if intf is h else f"host {name_} interface {n + 1}"
            _keys(ctx, intf, _INTF_KEYS if intf is not h else _HOST_KEYS,
                  ("switch", "port"), iel, iline)
            sw = switch_ref(intf, "switch", iel)
            port = _port(ctx, intf, "port", iel)
            take(sw, port, f"host {name_} on line {intf.line_of('port')}", intf, "port", iel)
            cap = _capacity(ctx, intf, default, iel)
            host_links.append((name_, sw, cap, n + 1, port, intf, iel))
    # -- links
    links = doc["links"]
    if links is None:
        links = _Seq()
    if not isinstance(links, list):
        raise ctx.error(doc.line_of("links"), "file", "links",
                        "must be a list of {a, a_port, b, b_port, capacity_bps}")
    pairs: Dict[frozenset, int] = {}
    sw_links = []
    for i, (ln, line) in enumerate(zip(links, links.lines)):
        el = f"link {i + 1}"
        if isinstance(ln, dict) and isinstance(ln.get("a"), str) and \
                isinstance(ln.get("b"), str):
            el = f"link {i + 1} ({ln['a']}-{ln['b']})"
        _keys(ctx, ln, _LINK_KEYS, ("a", "a_port", "b", "b_port"), el, line)
        a, b = switch_ref(ln, "a", el), switch_ref(ln, "b", el)
        if a == b:
            raise ctx.error(ln.line_of("b"), el, "b", f"a link from {a} to itself")
        pa, pb = _port(ctx, ln, "a_port", el), _port(ctx, ln, "b_port", el)
        pair = frozenset((a, b))
        if pair in pairs:
            raise ctx.error(line, el, "b", f"parallel link between {a} and {b} (also on "
                                           f"line {pairs[pair]}; not supported)")
        pairs[pair] = line
        take(a, pa, f"link {a}-{b} on line {line}", ln, "a_port", el)
        take(b, pb, f"link {a}-{b} on line {line}", ln, "b_port", el)
        sw_links.append((a, b, _capacity(ctx, ln, default, el), pa, pb))
    # -- reachability: every host's switches in one component of the switch graph
    comp: Dict[str, int] = {}
    adj: Dict[str, List[str]] = {s: [] for s in sws}
    for a, b, *_ in sw_links:
        adj[a].append(b)
        adj[b].append(a)
    for s in sws:
        if s in comp:
            continue
        comp[s] = s_id = len(set(comp.values()))
        stack = [s]
        while stack:
            u = stack.pop()
            for v in adj[u]:
                if v not in comp:
                    comp[v] = s_id
                    stack.append(v)
    reach: Dict[str, set] = {}  # host -> components of the switches it hangs on
    for hname, sw, *_ in host_links:
        reach.setdefault(hname, set()).add(comp[sw])
    if not set.intersection(*reach.values()):
        names = list(reach)
        for i, h1 in enumerate(names):
            for h2 in names[i + 1:]:
                if not reach[h1] & reach[h2]:
                    raise ctx.error(doc.line_of("links"), "fabric", "links",
                                    f"hosts {h1} and {h2} cannot reach each other (no path "
                                    f"of links between their switches)")
    for hname, sw, cap, hport, port, *_ in host_links:
        t.add_link(hname, sw, cap, port_u=hport, port_v=port)
    for a, b, cap, pa, pb in sw_links:
        t.add_link(a, b, cap, port_u=pa, port_v=pb)
    t.freeze()
    if slack:
        t.set_path_slack(slack)
    return t


# ---------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------
def loads_topology(text: str, source: str = "<string>") -> Topology:
    """Read a topology file's text (module docstring) into a frozen :class:`Topology`.

    Hosts are indexed in file order (h's ``index``, the controller's group ids), a
    host's interfaces get host-side ports 1, 2, ... in their order, switch ports are
    the file's.

    Args:
        text: the YAML text.  source: the file name errors name.

    Raises:
        TopologyError: the text does not parse or does not validate; the message is
            ``SOURCE:LINE: ELEMENT: FIELD: problem`` and the exception carries
            ``file``, ``line``, ``element`` and ``field`` attributes (YAML errors:
            ``SOURCE:LINE: yaml: does not parse: ...``).
    """
    return _from_doc(_parse_yaml(text, source), source)


def load_topology(path: str) -> Topology:
    """Read the topology file at ``path`` (:func:`loads_topology`).

    Raises:
        TopologyError: the file cannot be read (naming it), does not parse or does not
            validate.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{path}: file: cannot read: {exc}") from None
    return loads_topology(text, path)


def _num(v: float):
    """Integral floats as ints (``1000000000`` rather than ``1000000000.0``)."""
    return int(v) if float(v).is_integer() and abs(v) < 2 ** 53 else float(v)


def to_document(topo: Topology) -> dict:
    """``topo`` as the plain dict a topology file holds (module docstring): switches
    by dpid, hosts by index (interfaces in host-port order), switch-to-switch links
    sorted by their ends' names.

    Raises:
        TopologyError: a host-to-host link, or host ports not numbered 1..n (the file
            numbers a host's interfaces by their order).
    """
    g = topo.graph
    doc: Dict[str, Any] = {"version": FORMAT_VERSION, "name": topo.name}
    slack = getattr(topo, "path_slack", 0)
    if slack:
        doc["path_slack"] = slack
    doc["switches"] = {s: {"dpid": g.nodes[s]["dpid"], "role": g.nodes[s]["role"]}
                       for s in topo.switches}
    hosts: Dict[str, Any] = {}
    for h in topo.hosts:
        d = g.nodes[h]
        intfs = []
        for nb in g.successors(h):
            e = g.edges[h, nb]
            if g.nodes[nb]["role"] == HOST:
                raise TopologyError(f"link: {h}-{nb} joins two hosts; a topology file "
                                    f"hangs hosts on switches")
            intfs.append((e["port"], {"switch": nb, "port": e["peer_port"],
                                      "capacity_bps": _num(e["capacity_bps"])}))
        intfs.sort(key=lambda x: x[0])
        if [p for p, _ in intfs] != list(range(1, len(intfs) + 1)):
            raise TopologyError(f"port: host {h}'s ports are {[p for p, _ in intfs]}, not "
                                f"1..{len(intfs)}; a topology file numbers them in order")
        entry: Dict[str, Any] = {"ip": d["ip"], "mac": d["mac"]}
        if len(intfs) == 1:
            entry.update(intfs[0][1])
        else:
            entry["interfaces"] = [i for _, i in intfs]
        hosts[h] = entry
    doc["hosts"] = hosts
    links = []
    for u, v, e in sorted(g.edges(data=True)):
        if u < v and g.nodes[u]["role"] != HOST and g.nodes[v]["role"] != HOST:
            links.append({"a": u, "a_port": e["port"], "b": v, "b_port": e["peer_port"],
                          "capacity_bps": _num(e["capacity_bps"])})
    doc["links"] = links
    return doc


def dump_topology(topo: Topology, header: str = "") -> str:
    """``topo`` as topology-file text (YAML, one line per switch, host and link).

    Args:
        header: comment lines put first (each gets ``# ``).

    Raises:
        TopologyError: as :func:`to_document`.
    """
    doc = to_document(topo)
    head = "".join(f"# {line}\n" for line in header.splitlines())
    parts = []
    for key in doc:
        flow = None if isinstance(doc[key], (dict, list)) else False
        parts.append(yaml.safe_dump({key: doc[key]}, default_flow_style=flow,
                                    sort_keys=False, width=10 ** 6))
    return head + "".join(parts)


def save_topology(topo: Topology, path: str, header: str = "") -> None:
    """Write ``topo`` to ``path`` as a topology file (:func:`dump_topology`), through a
    temporary file renamed into place.

    Raises:
        TopologyError: as :func:`to_document`.  OSError: ``path`` not writable.
    """
    text = dump_topology(topo, header)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
