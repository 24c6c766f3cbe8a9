"""Flow-statistics replies parsed lazily: the counters at once, the match and the
instructions when first read (Ryu glue).

The poller asks every first-hop switch for its rules every ``stats_interval_s``
for their byte counters (:mod:`.progress`), and every ``reconcile_interval_s``
for the whole table (:mod:`.reconcile`).  Ryu parses each entry of a reply
completely in the datapath's receive loop, on the event loop: the match through
``OFPMatch.parser`` (every OXM field converted to its user form, addresses as
text) and every instruction and action, about 40 us per entry of 5 match fields
and one output on this machine, while progress reads the cookie and two
counters.  Under a burst of 1,000 coflows of 4 flows on ``fattree:4`` that parsing
was about a third of the event loop (docs/operations.md, "Under load").

:class:`LazyFlowStats` is an ``OFPFlowStats`` whose ``parser`` unpacks the fixed
header (length, table, durations, priority, timeouts, flags, cookie, packet and
byte counts: OpenFlow 1.3.5 section 7.3.5.2, ``ofp_flow_stats``) and keeps the
message buffer; ``match`` and ``instructions`` are parsed by Ryu's own parsers the
first time either is read, so every consumer sees what Ryu would have given.
:func:`install` makes it the body class of Ryu's ``OFPFlowStatsReply`` (the class
``OFPMultipartReply.parser_stats_body`` instantiates for ``OFPMP_FLOW``); the Ryu
app calls it when it is loaded.
"""

from __future__ import annotations

import struct

from .stack import ofproto_v1_3 as ofproto
from .stack import ofproto_v1_3_parser as parser
from .stack import utils


class LazyFlowStats(parser.OFPFlowStats):
    """One ``ofp_flow_stats`` entry: header fields parsed, ``match`` (``OFPMatch``)
    and ``instructions`` (list of ``OFPInstruction``) parsed on first access, each
    equal to what ``OFPFlowStats.parser`` gives.  Raises what Ryu's parsers raise
    on a malformed entry, when it is read."""

    #: listed so that Ryu's ``StringifyMixin`` (``str``, ``to_jsondict``) shows them
    #: although they are properties
    _opt_attributes = ["match", "instructions"]

    def __init__(self, *args, **kwargs):
        self._raw = None  # (buffer, offset of the match) until parsed
        self._match = None
        self._instructions = None
        super().__init__(*args, **kwargs)

    def _parse_rest(self) -> None:
        buf, offset = self._raw
        self._raw = None
        match = parser.OFPMatch.parser(buf, offset)
        match_length = utils.round_up(match.length, 8)
        inst_length = (self.length - (ofproto.OFP_FLOW_STATS_SIZE - ofproto.OFP_MATCH_SIZE
                                      + match_length))
        offset += match_length
        instructions = []
        while inst_length > 0:
            inst = parser.OFPInstruction.parser(buf, offset)
            instructions.append(inst)
            offset += inst.len
            inst_length -= inst.len
        self._match, self._instructions = match, instructions

    @property
    def match(self):
        """The entry's ``OFPMatch`` (parsed on first access)."""
        if self._raw is not None:
            self._parse_rest()
        return self._match

    @match.setter
    def match(self, value) -> None:
        self._match = value

    @property
    def instructions(self):
        """The entry's instructions (parsed on first access)."""
        if self._raw is not None:
            self._parse_rest()
        return self._instructions

    @instructions.setter
    def instructions(self, value) -> None:
        self._instructions = value

    @classmethod
    def parser(cls, buf, offset):
        """The entry at ``offset`` of ``buf`` (a multipart reply's bytes): header
        fields now, match and instructions later (the buffer is kept).

        Raises:
            struct.error: the buffer ends inside the fixed header.
        """
        st = cls()
        (st.length, st.table_id, st.duration_sec, st.duration_nsec, st.priority,
         st.idle_timeout, st.hard_timeout, st.flags, st.cookie, st.packet_count,
         st.byte_count) = struct.unpack_from(ofproto.OFP_FLOW_STATS_0_PACK_STR, buf, offset)
        st._raw = (buf, offset + ofproto.OFP_FLOW_STATS_0_SIZE)
        return st


def install() -> None:
    """Make Ryu parse OpenFlow 1.3 flow-statistics replies with :class:`LazyFlowStats`
    (process-wide; idempotent)."""
    parser.OFPFlowStatsReply.cls_stats_body_cls = LazyFlowStats


__all__ = ["LazyFlowStats", "install"]
