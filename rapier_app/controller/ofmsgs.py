"""Translate the core's rule data into OpenFlow 1.3 messages (Ryu parser objects).

Every function takes a Ryu ``Datapath``-like object (anything with ``ofproto`` and
``ofproto_parser``: the real one or a test fake) and returns message objects; nothing
is sent here.  Tests build them against ``ryu.ofproto.ofproto_v1_3_parser`` and
serialise them.  Source of the message layout: OpenFlow Switch Specification 1.3.5,
sections 7.3.4.1 (flow mod), 7.3.4.2 (group mod), 7.3.5.2 (flow stats).
"""

from __future__ import annotations

import os
from typing import Any, List, Sequence

from .rules import COOKIE_TAG, COOKIE_TAG_MASK, FlowRule, GroupRule


def actions_for(dp, actions: Sequence[tuple]) -> List[Any]:
    """OFPAction objects for ``(("output", port) | ("group", gid) | ("controller", 0))``.

    Raises:
        ValueError: an unknown action kind.
    """
    ofp, parser = dp.ofproto, dp.ofproto_parser
    out = []
    for kind, arg in actions:
        if kind == "output":
            out.append(parser.OFPActionOutput(int(arg), 0))
        elif kind == "group":
            out.append(parser.OFPActionGroup(int(arg)))
        elif kind == "controller":
            out.append(parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER))
        else:
            raise ValueError(f"action: unknown action kind {kind!r}")
    return out


#: (parser module id, rule match tuple) -> its ``OFPMatch``: building one through
#: Ryu's parser (field normalisation, netaddr) is about 90 % of a flow mod's cost,
#: and a flow's rules on every switch of its path, and its rules again after each
#: re-route, share one match.  The parser does not change a match it serialises.
_MATCHES: dict = {}
#: entries kept at most (then the cache starts again)
MATCH_CACHE_MAX = 200_000


def match_for(dp, match: tuple):
    """The ``OFPMatch`` of a rule's match (``((field, value), ...)``), built once
    per match (:data:`_MATCHES`)."""
    parser = dp.ofproto_parser
    key = (id(parser), match)
    try:
        m = _MATCHES.get(key)
    except TypeError:  # a value that does not hash: no caching
        return parser.OFPMatch(**dict(match))
    if m is None:
        m = parser.OFPMatch(**dict(match))
        if len(_MATCHES) >= MATCH_CACHE_MAX:
            _MATCHES.clear()
        _MATCHES[key] = m
    return m


def flow_mod(dp, rule: FlowRule, idle_timeout_s: int = 0):
    """An ``OFPFlowMod`` for ``rule`` (ADD, MODIFY_STRICT or DELETE_STRICT in table 0).

    ``OFPFF_CHECK_OVERLAP`` is off, so a repeated ADD replaces the rule;
    MODIFY_STRICT changes only the instructions and keeps the byte counters and
    timeouts (OpenFlow 1.3 section 6.4).

    Args:
        idle_timeout_s: the ADD's ``idle_timeout`` in seconds (0..65535; 0: none),
            given to coflow rules as a safety net: the switch removes a
            rule no packet matched for that long, and with it set the ADD carries
            ``OFPFF_SEND_FLOW_REM`` so the controller hears of the removal.

    Raises:
        ValueError: unknown command, or ``idle_timeout_s`` outside 0..65535.
    """
    if isinstance(idle_timeout_s, bool) or not isinstance(idle_timeout_s, int) \
            or not 0 <= idle_timeout_s <= 0xFFFF:
        raise ValueError(f"idle_timeout_s: must be an integer 0..65535, got {idle_timeout_s!r}")
    ofp, parser = dp.ofproto, dp.ofproto_parser
    match = match_for(dp, rule.match)
    commands = {"add": ofp.OFPFC_ADD, "modify": ofp.OFPFC_MODIFY_STRICT,
                "delete": ofp.OFPFC_DELETE_STRICT}
    if rule.command not in commands:
        raise ValueError(f"command: unknown flow mod command {rule.command!r}")
    inst = []
    if rule.command != "delete":
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS,
                                             actions_for(dp, rule.actions))]
    idle = idle_timeout_s if rule.command == "add" else 0
    flags = ofp.OFPFF_SEND_FLOW_REM if idle else 0
    return parser.OFPFlowMod(datapath=dp, cookie=rule.cookie, cookie_mask=0, table_id=0,
                             command=commands[rule.command], idle_timeout=idle,
                             hard_timeout=0, priority=rule.priority,
                             buffer_id=ofp.OFP_NO_BUFFER, out_port=ofp.OFPP_ANY,
                             out_group=ofp.OFPG_ANY, flags=flags, match=match,
                             instructions=inst)


def group_mod(dp, group: GroupRule):
    """An ``OFPGroupMod`` for a SELECT group with one output bucket per port; each
    bucket watches its own output port, so the switch skips a bucket whose link is
    down (link failure) until the controller re-routes."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    buckets = [parser.OFPBucket(weight=1, watch_port=int(p), watch_group=ofp.OFPG_ANY,
                                actions=[parser.OFPActionOutput(int(p), 0)])
               for p in group.ports]
    command = {"add": ofp.OFPGC_ADD, "modify": ofp.OFPGC_MODIFY,
               "delete": ofp.OFPGC_DELETE}[group.command]
    return parser.OFPGroupMod(dp, command, ofp.OFPGT_SELECT, group.group_id,
                              buckets if group.command != "delete" else [])


def message_for(dp, item, idle_timeout_s: int = 0):
    """``flow_mod`` or ``group_mod`` depending on the rule type; ``idle_timeout_s``
    (see :func:`flow_mod`) applies to coflow rules only (``flow_id`` set), never to
    default forwarding."""
    if isinstance(item, GroupRule):
        return group_mod(dp, item)
    return flow_mod(dp, item, idle_timeout_s if item.flow_id is not None else 0)


#: messages built between two hand-overs of the interpreter lock (:func:`build_messages`)
YIELD_EVERY = 16


def build_messages(dp, batch, idle_timeout_s: int = 0) -> List[Any]:
    """The messages of ``batch`` (``(rule, message or None)`` pairs, in order): the
    message given, or :func:`message_for` the rule.  Builds objects and touches
    nothing else, so the controller runs it in a native thread for a large batch;
    every :data:`YIELD_EVERY` messages it lets go of the interpreter lock
    (``os.sched_yield``), so that the event loop, which waits for the lock after
    each of its system calls, waits about 0.3 ms instead of the interpreter's
    switch interval (5 ms) each time."""
    out = []
    for n, (item, msg) in enumerate(batch, 1):
        out.append(msg if msg is not None else message_for(dp, item, idle_timeout_s))
        if n % YIELD_EVERY == 0:
            os.sched_yield()  # releases the lock (not patched by eventlet)
    return out


def barrier_request(dp):
    """An ``OFPBarrierRequest``: the switch answers once every earlier message is
    processed (OpenFlow 1.3 section 6.2)."""
    return dp.ofproto_parser.OFPBarrierRequest(dp)


def clear_switch(dp) -> List[Any]:
    """Messages that delete every flow carrying our cookie tag (all tables) and every
    group, sent when a switch connects so that stale rules of an earlier run go.

    Flows of other apps (Ryu's LLDP rule for ``--observe-links``, cookie 0) are left
    alone: they may be installed before or after this message.
    """
    ofp, parser = dp.ofproto, dp.ofproto_parser
    return [parser.OFPFlowMod(datapath=dp, cookie=COOKIE_TAG, cookie_mask=COOKIE_TAG_MASK,
                              table_id=ofp.OFPTT_ALL,
                              command=ofp.OFPFC_DELETE, out_port=ofp.OFPP_ANY,
                              out_group=ofp.OFPG_ANY, match=parser.OFPMatch()),
            parser.OFPGroupMod(dp, ofp.OFPGC_DELETE, 0, ofp.OFPG_ALL, []),
            parser.OFPBarrierRequest(dp)]


def flow_stats_request(dp):
    """A flow-stats request for every rule carrying our cookie tag (table 0)."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    return parser.OFPFlowStatsRequest(dp, 0, 0, ofp.OFPP_ANY, ofp.OFPG_ANY,
                                      COOKIE_TAG, COOKIE_TAG_MASK, parser.OFPMatch())


def port_stats_request(dp):
    """An ``OFPPortStatsRequest`` for every port (``OFPP_ANY``; spec 7.3.5.8): the
    site broker's counters (:mod:`.coexist`)."""
    return dp.ofproto_parser.OFPPortStatsRequest(dp, 0, dp.ofproto.OFPP_ANY)


def packet_out(dp, port: int, data: bytes):
    """A packet-out sending ``data`` (an Ethernet frame) out of ``port``."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    return parser.OFPPacketOut(datapath=dp, buffer_id=ofp.OFP_NO_BUFFER,
                               in_port=ofp.OFPP_CONTROLLER,
                               actions=[parser.OFPActionOutput(int(port), 0)], data=data)


#: Match fields of a coflow rule, in :func:`.rules.flow_match` order.
_COFLOW_MATCH_FIELDS = ("eth_type", "ip_proto", "ipv4_src", "ipv4_dst", "tcp_src", "tcp_dst",
                        "udp_src", "udp_dst")


def match_tuple(match) -> tuple:
    """A switch's ``OFPMatch`` (e.g. of an ``OFPFlowRemoved``) as the core's match
    data ``((field, value), ...)``, fields in :func:`.rules.flow_match` order (the
    only rules with an idle timeout are coflow rules)."""
    return tuple((k, match[k]) for k in _COFLOW_MATCH_FIELDS if k in match)
