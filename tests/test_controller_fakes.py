"""Test doubles for the controller tests (no tests here): fake fabric, scheduler and
Ryu datapath.

:class:`FakeFabric` applies the core's rule data (:class:`FlowRule`,
:class:`GroupRule`) to per-switch tables and forwards a packet hop by hop through the
topology's port map, Faucet style: tests assert "this packet reaches h5 via l1, s2,
l2", not message bytes.  :class:`FakeDatapath` stands in for a Ryu datapath in the
tests of the Ryu shell (rapier_app.controller.app).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Dict, List, Optional, Sequence, Tuple

from rapier_app.controller.rules import FlowRule, GroupRule
from rapier_app.core.model import Allocation, Schedule
from rapier_app.controller.stack import ofproto_v1_3, ofproto_v1_3_parser


class FakeFabric:
    """Per-switch flow tables and groups built from rule data, plus forwarding."""

    def __init__(self, topo):
        self.topo = topo
        g = topo.graph
        self.name_of = {g.nodes[s]["dpid"]: s for s in topo.switches}
        self.tables: Dict[int, Dict[tuple, FlowRule]] = {d: {} for d in self.name_of}
        self.groups: Dict[int, Dict[int, Tuple[int, ...]]] = {d: {} for d in self.name_of}
        self.peer: Dict[Tuple[str, int], str] = {(u, d["port"]): v
                                                 for u, v, d in g.edges(data=True)}

    def apply(self, items: Sequence) -> None:
        """Apply rules like a switch: add (replace), modify (must exist), delete."""
        for it in items:
            if isinstance(it, GroupRule):
                if it.command == "delete":
                    self.groups[it.dpid].pop(it.group_id, None)
                else:
                    self.groups[it.dpid][it.group_id] = it.ports
                continue
            key = (it.priority, it.match)
            table = self.tables[it.dpid]
            if it.command == "add":
                table[key] = it
            elif it.command == "modify":
                assert key in table, f"MODIFY_STRICT of a missing rule {it}"
                table[key] = it
            elif it.command == "delete":
                assert key in table, f"DELETE_STRICT of a missing rule {it}"
                del table[key]

    def lookup(self, dpid: int, pkt: dict) -> Optional[FlowRule]:
        """Highest-priority rule of ``dpid`` matching ``pkt`` (a dict of fields)."""
        best = None
        for rule in self.tables[dpid].values():
            if all(pkt.get(k) == v for k, v in rule.match):
                if best is None or rule.priority > best.priority:
                    best = rule
        return best

    def out_ports(self, dpid: int, rule: FlowRule) -> List[int]:
        ports = []
        for kind, arg in rule.actions:
            if kind == "output":
                ports.append(arg)
            elif kind == "group":
                ports.extend(self.groups[dpid][arg])
        return ports

    def walks(self, src: str, pkt: dict, max_hops: int = 16) -> List[Tuple[str, ...]]:
        """Every node sequence ``pkt`` can take from host ``src`` (all ECMP buckets).

        Raises AssertionError on a loop, a drop (no rule), or a controller action.
        """
        g = self.topo.graph
        first = [v for v in g.successors(src)]
        out = []
        stack = [(src, v) for v in first[:1]]
        while stack:
            walk = stack.pop()
            node = walk[-1]
            if self.topo.is_host(node):
                out.append(walk)
                continue
            assert len(walk) <= max_hops, f"loop: {walk}"
            dpid = g.nodes[node]["dpid"]
            rule = self.lookup(dpid, pkt)
            assert rule is not None, f"dropped at {node}: {pkt}"
            ports = self.out_ports(dpid, rule)
            assert ports, f"no output at {node}: {rule}"
            for p in ports:
                stack.append(walk + (self.peer[(node, p)],))
        return out

    def coflow_rules(self) -> Dict[int, List[FlowRule]]:
        """Rules carrying a flow id, per dpid."""
        return {d: [r for r in t.values() if r.flow_id] for d, t in self.tables.items()}


def tcp_pkt(topo, src: str, dst: str, dst_port: int) -> dict:
    """Header fields of a TCP packet from ``src`` to ``dst``:``dst_port``."""
    g = topo.graph
    return {"eth_type": 0x0800, "ip_proto": 6, "ipv4_src": g.nodes[src]["ip"],
            "ipv4_dst": g.nodes[dst]["ip"], "tcp_dst": dst_port}


class PinnedScheduler:
    """Scheduler double: gives each flow the path and rate set in ``plan``.

    ``plan`` maps flow_id -> (path, rate_bps); ``fallback`` maps coflow id -> reason;
    ``fail`` makes :meth:`schedule` raise.  Records every call's (now, coflow ids).
    """

    name = "pinned"
    clairvoyant = True

    def __init__(self):
        self.plan: Dict[str, tuple] = {}
        self.fallback: Dict[str, str] = {}
        self.fail: Optional[Exception] = None
        self.calls: List[Tuple[float, List[str]]] = []
        self.wakeup: Optional[float] = None

    def schedule(self, now, coflows):
        self.calls.append((now, [c.coflow_id for c in coflows]))
        if self.fail is not None:
            raise self.fail
        allocs = {}
        for c in coflows:
            for f in c.active_flows():
                if f.flow_id in self.plan:
                    path, rate = self.plan[f.flow_id]
                    allocs[f.flow_id] = Allocation(tuple(path), rate)
        return Schedule(allocations=allocs,
                        fallback={k: v for k, v in self.fallback.items()
                                  if k in {c.coflow_id for c in coflows}})

    def next_wakeup(self, now):
        return self.wakeup


class FakeDatapath:
    """A Ryu Datapath stand-in: OpenFlow 1.3 parser, records sent messages.

    Args:
        dpid: the datapath id.
        ports: port numbers; when given, ``ports`` holds OFPPort-like descriptions
            (port_no, curr_speed 10 Gbit/s in kbit/s, state 0, config 0), as Ryu's
            datapath has after the port-description reply; when None, no ``ports``.
    """

    ofproto = ofproto_v1_3
    ofproto_parser = ofproto_v1_3_parser

    def __init__(self, dpid, ports=None):
        self.id = dpid
        self.sent = []
        self.xid = 0
        if ports is not None:
            self.ports = {p: SimpleNamespace(port_no=p, curr_speed=10_000_000, state=0,
                                             config=0)
                          for p in ports}

    def set_xid(self, msg):
        self.xid += 1
        msg.set_xid(self.xid)
        return self.xid

    def send_msg(self, msg):
        msg.serialize()  # every message must encode
        self.sent.append(msg)
