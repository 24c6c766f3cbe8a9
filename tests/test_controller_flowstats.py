"""Flow-statistics replies parsed lazily (rapier_app/controller/flowstats.py): what
every consumer reads equals what Ryu's own parser gives, and reading the counters
(what progress reads every poll) parses no match and no instruction."""

import struct

from rapier_app.controller.stack import ofproto_parser
from rapier_app.controller.stack import ofproto_v1_3 as ofp
from rapier_app.controller.stack import ofproto_v1_3_parser as p

from rapier_app.controller import flowstats
from rapier_app.controller.reconcile import entry_from_stats


def _entry(i, match, insts, cookie):
    mb = bytearray()
    match.serialize(mb, 0)
    ib = bytearray()
    for inst in insts:
        inst.serialize(ib, len(ib))
    head = bytearray(ofp.OFP_FLOW_STATS_0_SIZE)
    struct.pack_into(ofp.OFP_FLOW_STATS_0_PACK_STR, head, 0,
                     ofp.OFP_FLOW_STATS_0_SIZE + len(mb) + len(ib), 0, 10 + i, 500 + i,
                     100 - i, 30 * (i % 2), 0, 1, cookie, 7 * i, 1000 * i + 3)
    return bytes(head + mb + ib)


def _reply():
    """An OFPMP_FLOW multipart reply of 4 entries: a TCP coflow rule, a group
    (default forwarding), ARP to the controller, a drop (no instruction)."""
    out = p.OFPActionOutput
    apply_ = ofp.OFPIT_APPLY_ACTIONS
    body = b"".join([
        _entry(1, p.OFPMatch(eth_type=0x800, ip_proto=6, ipv4_src="10.0.0.1",
                             ipv4_dst="10.0.0.4", tcp_dst=20001),
               [p.OFPInstructionActions(apply_, [out(3, 0)])], (0x5241 << 48) | 9),
        _entry(2, p.OFPMatch(eth_type=0x800, ipv4_dst="10.0.0.4"),
               [p.OFPInstructionActions(apply_, [p.OFPActionGroup(4)])], (0x5241 << 48) | 1),
        _entry(3, p.OFPMatch(eth_type=0x806),
               [p.OFPInstructionActions(apply_, [out(ofp.OFPP_CONTROLLER, 0xffff)])],
               (0x5241 << 48) | 1),
        _entry(4, p.OFPMatch(in_port=2), [], 0x5241 << 48),
    ])
    head = bytearray(ofp.OFP_MULTIPART_REPLY_SIZE)
    length = ofp.OFP_MULTIPART_REPLY_SIZE + len(body)
    struct.pack_into(ofp.OFP_HEADER_PACK_STR, head, 0, ofp.OFP_VERSION,
                     ofp.OFPT_MULTIPART_REPLY, length, 77)
    struct.pack_into(ofp.OFP_MULTIPART_REPLY_PACK_STR, head, ofp.OFP_HEADER_SIZE,
                     ofp.OFPMP_FLOW, 0)
    return bytes(head) + body


class _DP:
    ofproto = ofp
    ofproto_parser = p
    id = 1


def _parse(buf):
    return ofproto_parser.msg(_DP(), ofp.OFP_VERSION, ofp.OFPT_MULTIPART_REPLY,
                              len(buf), 77, bytearray(buf))


def test_lazy_entries_equal_ryus():
    buf = _reply()
    saved = p.OFPFlowStatsReply.cls_stats_body_cls
    try:
        p.OFPFlowStatsReply.cls_stats_body_cls = p.OFPFlowStats
        ryus = _parse(buf)
        flowstats.install()
        lazy = _parse(buf)
    finally:
        p.OFPFlowStatsReply.cls_stats_body_cls = saved
    assert len(ryus.body) == len(lazy.body) == 4
    assert all(type(e) is flowstats.LazyFlowStats for e in lazy.body)
    assert all(isinstance(e, p.OFPFlowStats) for e in lazy.body)
    for a, b in zip(ryus.body, lazy.body):
        for k in ("length", "table_id", "duration_sec", "duration_nsec", "priority",
                  "idle_timeout", "hard_timeout", "flags", "cookie", "packet_count",
                  "byte_count"):
            assert getattr(a, k) == getattr(b, k), k
        # the same fields and values under the subclass's name
        assert b.to_jsondict()["LazyFlowStats"] == a.to_jsondict()["OFPFlowStats"]
        assert str(b) == str(a).replace("OFPFlowStats", "LazyFlowStats", 1)
        assert entry_from_stats(b) == entry_from_stats(a)
    assert [len(e.instructions) for e in lazy.body] == [1, 1, 1, 0]
    assert lazy.body[0].match["ipv4_dst"] == "10.0.0.4"
    assert lazy.body[3].byte_count == 4003 and lazy.body[3].cookie == 0x5241 << 48


def test_counters_parse_no_match(monkeypatch):
    calls = {"match": 0, "inst": 0}
    match_parser, inst_parser = p.OFPMatch.parser, p.OFPInstruction.parser

    def counted_match(buf, offset):
        calls["match"] += 1
        return match_parser(buf, offset)

    def counted_inst(buf, offset):
        calls["inst"] += 1
        return inst_parser(buf, offset)

    monkeypatch.setattr(p.OFPMatch, "parser", staticmethod(counted_match))
    monkeypatch.setattr(p.OFPInstruction, "parser", staticmethod(counted_inst))
    monkeypatch.setattr(p.OFPFlowStatsReply, "cls_stats_body_cls", p.OFPFlowStats)
    _parse(_reply())
    assert calls == {"match": 4, "inst": 3}  # Ryu's parser: every match, every instruction
    flowstats.install()
    calls.update(match=0, inst=0)
    msg = _parse(_reply())
    got = [(e.cookie, e.byte_count, e.packet_count) for e in msg.body]
    assert got == [((0x5241 << 48) | 9, 1003, 7), ((0x5241 << 48) | 1, 2003, 14),
                   ((0x5241 << 48) | 1, 3003, 21), (0x5241 << 48, 4003, 28)]
    assert calls == {"match": 0, "inst": 0}
    assert msg.body[1].match["ipv4_dst"] == "10.0.0.4"   # parsed when read
    assert msg.body[1].instructions[0].actions[0].group_id == 4
    assert calls == {"match": 1, "inst": 1}
