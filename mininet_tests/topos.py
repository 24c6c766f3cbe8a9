"""Mininet topologies generated from the shared definitions in :mod:`topologies`.

A topology is data (Mininet's ``topo.py`` style): :class:`DefinedTopo` only names
hosts, switches and links, with

* the definition's explicit dpids (16 hex digits), host IPs and MACs;
* links added in the definition's order with explicit port numbers on both ends, so
  that OpenFlow port ``p`` of switch ``s`` is the port the controller (which reads the
  same definition) expects;
* optional shaping: with ``bw_mbps`` every *switch-side* interface gets a Mininet
  ``TCLink`` HTB; host-side interfaces are left alone, so that the host agent's own
  HTB root is the only qdisc on a host interface (runs without enforcing agents,
  ``baseline``, shape them in ``runner.Emulation``: ``switchq.host_shaping_lines``).  Every path ends on a
  switch-to-host link, so each flow still sees the link capacity.  ``bw_mbps`` is
  the speed of the host links; a link the definition makes faster is shaped at the
  same multiple (VL2's fabric runs at 10x its server links), so the emulated fabric
  has the capacities the controller and the simulator plan with
  (``build_topology(spec, link_bps)``).

For ``mn --custom`` (run it with the venv's ``mn`` so that networkx is importable)::

    .venv/bin/mn --custom mininet_tests/topos.py --topo leafspine,3,3,3 \\
        --switch ovsuser --controller rapier --test pingall

Topology names (``--topo NAME,ARG,...[,bw=MBPS]``; Mininet splits the string on
commas, so a spec's own commas just continue it):

* ``fattree[,K[,HOSTS_PER_EDGE]]`` (default ``fattree,4``);
* ``vl2[,DA,DI[,SERVERS_PER_TOR]]`` (default ``vl2,4,4,2``);
* ``leafspine[,LEAVES,SPINES,HOSTS]`` (default ``leafspine,3,3,3``);
* ``spec,<build_topology spec>``, e.g. ``spec,leafspine:2,2,2`` or ``spec,fattree:4``;
* ``file,PATH``: a topology file (docs/topology.md), built exactly: its dpids, port
  numbers, IPs, MACs, and every switch-side interface shaped with TCLink at its
  link's capacity (``bw=MBPS`` scales the file so that its slowest host link runs at
  MBPS, every other link in proportion).

``bw=MBPS`` (any of them) shapes every switch-side interface with Mininet's TCLink
(set on those links, so ``--link tc`` is not needed): MBPS Mbit/s on host links,
the definition's multiple of it on faster links (VL2's fabric: 10 x MBPS), e.g.
``--topo spec,leafspine:2,2,2,bw=1``.

Also for ``mn``: ``--switch ovsuser`` (Open vSwitch on the userspace datapath,
OpenFlow 1.3) and ``--controller rapier`` (a remote controller at 127.0.0.1:6653 for
a ``ryu-manager rapier_app.controller`` started by hand).  The controller entry is
called ``rapier``, not ``ryu``: Mininet's own ``--controller ryu`` (which starts
``ryu-manager`` itself) stays available.
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Dict, List, Optional, Tuple

try:  # make the repository importable when mn exec()s this file
    _HERE = os.path.dirname(os.path.abspath(inspect.currentframe().f_code.co_filename))
    _ROOT = os.path.dirname(_HERE)
    if _ROOT not in sys.path:
        sys.path.insert(0, _ROOT)
except Exception:  # noqa: BLE001 - best effort only
    pass

from mininet.link import TCLink  # noqa: E402
from mininet.topo import Topo  # noqa: E402

from topologies import Topology, TopologyError, build_topology  # noqa: E402

#: Prefix length given to every host address (all hosts share one subnet), at most:
#: :func:`host_prefix_len` shortens it until every host of a topology is inside.
HOST_PREFIX_LEN = 8


def host_prefix_len(topo: Topology) -> int:
    """The prefix length of the one subnet all of ``topo``'s hosts share: at most
    :data:`HOST_PREFIX_LEN` (8 for the generated fabrics' 10.x.y.z), shorter when a
    topology file's addresses differ in their first bits (0 at worst: every address
    on link; the controller answers ARP, hosts get static entries)."""
    import ipaddress

    ips = [int(ipaddress.IPv4Address(topo.graph.nodes[h]["ip"])) for h in topo.hosts]
    n = HOST_PREFIX_LEN
    while n > 0 and len({ip >> (32 - n) for ip in ips}) > 1:
        n -= 1
    return n


def link_order(topo: Topology) -> List[Tuple[str, str, int, int]]:
    """The definition's links as ``(u, v, port_u, port_v)`` in an order consistent with
    the order they were added.

    Port numbers on every node count up in link-add order; the links are taken in
    rounds, each round every link whose two ports are the lowest unused ports of
    its two ends (sorted by name).  Links of one round share no node, so their
    relative order cannot change any port number.  Mininet is given the explicit
    ports (OVS ``ofport_request``, interface ``NAME-ethPORT``), so the order only
    matters for readability; a topology file whose port numbers admit no such order
    (a cycle of "lower port first" constraints) gets the rest sorted by name.
    """
    links = {}
    for u, v, d in topo.graph.edges(data=True):
        key = tuple(sorted((u, v)))
        if key not in links:
            links[key] = (u, v, d["port"], d["peer_port"])
    free: Dict[str, List[int]] = {n: [] for n in topo.graph.nodes}
    for (u, v, pu, pv) in links.values():
        free[u].append(pu)
        free[v].append(pv)
    for ports in free.values():
        ports.sort(reverse=True)  # lowest unused port last
    out: List[Tuple[str, str, int, int]] = []
    remaining = set(links.values())
    while remaining:
        ready = sorted(l for l in remaining
                       if free[l[0]][-1] == l[2] and free[l[1]][-1] == l[3])
        if not ready:
            out.extend(sorted(remaining))
            break
        for l in ready:
            if free[l[0]][-1] == l[2] and free[l[1]][-1] == l[3]:
                out.append(l)
                remaining.discard(l)
                free[l[0]].pop()
                free[l[1]].pop()
    return out


def dpid_hex(dpid: int) -> str:
    """Mininet/OVS datapath id string: 16 lower-case hex digits."""
    return "%016x" % dpid


class DefinedTopo(Topo):
    """A Mininet Topo built from a :class:`topologies.Topology` (or a spec string).

    Args:
        definition: a Topology, or a spec for :func:`topologies.build_topology`
            (``"leafspine:3,3,3"``, ``"fattree:4"``, ``"vl2:4,4,2"``).
        bw_mbps: if given, switch-side interfaces are shaped with Mininet's TCLink
            (set as every link's class, whatever the network's default link class):
            host links at this rate (Mbit/s), every other link at its definition
            capacity x bw_mbps / the host links' capacity (a spec is built with
            ``build_topology(spec, bw_mbps * 1e6)``, as the controller and the
            simulator build it).

    Raises:
        TopologyError: bad spec; bw_mbps not positive.
    """

    def build(self, definition="leafspine:3,3,3", bw_mbps: Optional[float] = None) -> None:
        """Add hosts, switches and links (Mininet calls this from ``Topo.__init__``)."""
        if bw_mbps is not None and not bw_mbps > 0:
            raise TopologyError(f"bw_mbps: must be positive, got {bw_mbps!r}")
        topo = definition if isinstance(definition, Topology) else build_topology(
            definition, None if bw_mbps is None else float(bw_mbps) * 1e6)
        self.definition = topo
        self.prefix_len = host_prefix_len(topo)
        g = topo.graph
        for h in topo.hosts:
            d = g.nodes[h]
            self.addHost(h, ip=f"{d['ip']}/{self.prefix_len}", mac=d["mac"])
        for s in topo.switches:
            self.addSwitch(s, dpid=dpid_hex(g.nodes[s]["dpid"]), protocols="OpenFlow13")
        base = min((g.edges[u, v]["capacity_bps"] for u, v in g.edges
                    if topo.is_host(u) or topo.is_host(v)), default=1.0)
        for u, v, pu, pv in link_order(topo):
            for n, p in ((u, pu), (v, pv)):
                if len(f"{n}-eth{p}") > 15:  # Linux IFNAMSIZ - 1
                    raise TopologyError(f"{n}: interface name {n}-eth{p} is longer than "
                                        f"Linux's 15 characters: shorten the node name")
            opts = {}
            if bw_mbps is not None:
                shaped = {"bw": float(bw_mbps) * g.edges[u, v]["capacity_bps"] / base}
                opts["params1"] = {} if topo.is_host(u) else dict(shaped)
                opts["params2"] = {} if topo.is_host(v) else dict(shaped)
                opts["cls"] = TCLink  # shaped also under mn without --link tc
            self.addLink(u, v, port1=pu, port2=pv, **opts)


def _spec(kind: str, *args) -> str:
    return f"{kind}:" + ",".join(str(a) for a in args)


def mn_topo(kind: Optional[str], defaults: Tuple = ()):
    """A constructor for ``mn --topo NAME,ARG,...[,bw=MBPS]``.

    Args:
        kind: topology kind of :func:`topologies.build_topology` (``"fattree"``...);
            None for ``spec``, whose arguments are a whole spec that Mininet split at
            its commas (``spec,leafspine:2,2,2`` arrives as ``("leafspine:2", 2, 2)``).
        defaults: the arguments used when ``mn`` gives none.

    Returns:
        ``f(*args, bw=None) -> DefinedTopo``; ``bw`` in Mbit/s (Mininet's TCLink unit).

    Raises (from the returned function):
        TopologyError: bad or missing topology arguments, ``bw`` not a positive
            number, or an unknown ``key=value`` option (the message names it).
    """
    def make(*args, **options) -> DefinedTopo:
        """The topology of ``mn --topo NAME,*args,**options`` (see :func:`mn_topo`)."""
        unknown = sorted(set(options) - {"bw"})
        if unknown:
            raise TopologyError(f"{unknown[0]}: unknown --topo option (known: bw)")
        bw = options.get("bw")
        if bw is not None and (isinstance(bw, bool) or not isinstance(bw, (int, float))
                               or not bw > 0):
            raise TopologyError(f"bw: must be a positive number of Mbit/s, got {bw!r}")
        args = args or defaults
        if kind == "file":
            if not args:
                raise TopologyError("file: missing its path, e.g. --topo file,ring.yaml")
            spec = "file:" + ",".join(str(a) for a in args)
            if bw is None:  # shaped at the file's own speeds
                from topologies import reference_bps
                bw = reference_bps(build_topology(spec)) / 1e6
            return DefinedTopo(spec, bw_mbps=float(bw))
        if kind is None:
            if not args:
                raise TopologyError("spec: missing, e.g. --topo spec,leafspine:2,2,2")
            spec = ",".join(str(a) for a in args)
        else:
            spec = _spec(kind, *args)
        return DefinedTopo(spec, bw_mbps=None if bw is None else float(bw))

    make.__name__ = kind or "spec"
    return make


#: ``mn --custom mininet_tests/topos.py --topo NAME,ARGS[,bw=MBPS]``.
topos = {
    "fattree": mn_topo("fattree", (4,)),
    "vl2": mn_topo("vl2", (4, 4, 2)),
    "leafspine": mn_topo("leafspine", (3, 3, 3)),
    "spec": mn_topo(None, ("leafspine:3,3,3",)),
    "file": mn_topo("file"),
}

from mininet.node import OVSSwitch, RemoteController  # noqa: E402


class RyuRemote(RemoteController):
    """Remote controller at 127.0.0.1:6653 for ``ryu-manager`` started by hand.

    Skips Mininet's ``telnet`` probe of the OpenFlow port: telnet prints Ryu's binary
    OFPT_HELLO and Mininet 2.3's UTF-8 reader fails on it (UnicodeDecodeError).
    """

    def __init__(self, name: str, ip: str = "127.0.0.1", port: int = 6653, **kw):
        super().__init__(name, ip=ip, port=port, **kw)

    def checkListening(self) -> None:
        """No probe (see the class docstring)."""


class UserOVS(OVSSwitch):
    """Open vSwitch on the userspace datapath speaking OpenFlow 1.3 (these machines
    have no openvswitch kernel module; see shared/ENVIRONMENT.md)."""

    def __init__(self, name: str, **kw):
        kw.setdefault("datapath", "user")
        kw.setdefault("protocols", "OpenFlow13")
        super().__init__(name, **kw)


#: ``mn --custom mininet_tests/topos.py --switch ovsuser --controller rapier``.  Not
#: ``ryu``: that name is Mininet's own controller (it starts ryu-manager itself).
switches = {"ovsuser": UserOVS}
controllers = {"rapier": RyuRemote}

#: The three topologies the emulation tests run (spec strings for build_topology).
TEST_TOPOLOGIES = ("fattree:4", "vl2:4,4,2", "leafspine:3,3,3")
