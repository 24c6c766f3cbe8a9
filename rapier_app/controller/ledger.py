"""What each switch holds, as confirmed by OpenFlow barrier replies.

Consistency: a rule is recorded *installed* only after the switch answered
the ``OFPBarrierRequest`` sent behind it (OpenFlow Switch Specification 1.3.5,
section 6.2: "upon receipt of a barrier request, the switch must finish processing
all previously-received messages ... before sending the barrier reply").  Until
then it is *pending*.

The Ryu shell sends each switch's messages from one writer (:mod:`.app`), records
every batch with :meth:`RuleLedger.sent` (the xid of each flow/group mod and of the
barrier behind them), and calls :meth:`RuleLedger.barrier_reply` /
:meth:`RuleLedger.error` on the switch's answers.  A batch's changes are applied
to :attr:`RuleLedger.confirmed` in send order, as the switch applies them (ADD
replaces an entry with the same priority and match, MODIFY_STRICT changes an
existing one only, DELETE_STRICT removes it, section 6.4), minus the messages the
switch answered with an error.

Pure: no Ryu import, no I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, Hashable, List, Optional, Sequence, Set, Tuple

from .rules import FlowRule, GroupRule


def entry_key(item) -> Hashable:
    """The switch-side identity of a rule: ``(priority, match)`` for a flow entry of
    table 0, ``("group", group_id)`` for a group."""
    if isinstance(item, GroupRule):
        return ("group", item.group_id)
    return (item.priority, item.match)


class RuleLedger:
    """Per switch (dpid): entries confirmed by a barrier reply, and the batches sent
    but not yet confirmed.

    Attributes:
        confirmed: dpid -> {entry key: rule} (FlowRule with command ``add``, or
            GroupRule), the controller's view of the switch's table.
        failed: count of messages the switches answered with an error.
    """

    def __init__(self) -> None:
        self.confirmed: Dict[int, Dict[Hashable, Any]] = {}
        self._inflight: Dict[int, "OrderedDict[int, List[Tuple[int, Any]]]"] = {}
        self._failed: Dict[int, Set[int]] = {}
        self.failed = 0

    def reset(self, dpid: int) -> None:
        """Switch ``dpid`` (re)connected and is being cleared: nothing confirmed, and
        the barriers of an earlier connection will never be answered."""
        self.confirmed[dpid] = {}
        self._inflight[dpid] = OrderedDict()
        self._failed[dpid] = set()

    def lost(self, dpid: int) -> None:
        """Switch ``dpid`` disconnected: its table is unknown (it is cleared and
        refilled when it connects again)."""
        self.confirmed.pop(dpid, None)
        self._inflight.pop(dpid, None)
        self._failed.pop(dpid, None)

    def sent(self, dpid: int, barrier_xid: int, items: Sequence[Tuple[int, Any]]) -> None:
        """Record a batch: ``items`` as ``(xid, FlowRule | GroupRule)`` in send order,
        followed by the barrier request ``barrier_xid``."""
        self._inflight.setdefault(dpid, OrderedDict())[barrier_xid] = list(items)
        self.confirmed.setdefault(dpid, {})

    def error(self, dpid: int, xid: int) -> Optional[Any]:
        """The switch rejected message ``xid``: it will not be confirmed.  Returns
        the rejected rule, or None when ``xid`` is no pending rule."""
        for batch in self._inflight.get(dpid, {}).values():
            for x, item in batch:
                if x == xid:
                    self._failed.setdefault(dpid, set()).add(xid)
                    self.failed += 1
                    return item
        return None

    def barrier_reply(self, dpid: int, xid: int) -> int:
        """The switch answered barrier ``xid``: apply every batch up to and including
        it, in send order.  Returns the number of rules confirmed (0 for an unknown
        xid: a barrier of an earlier connection, or not ours)."""
        inflight = self._inflight.get(dpid)
        if not inflight or xid not in inflight:
            return 0
        table = self.confirmed.setdefault(dpid, {})
        failed = self._failed.get(dpid, set())
        n = 0
        while inflight:
            bx, batch = inflight.popitem(last=False)
            for x, item in batch:
                if x in failed:
                    failed.discard(x)
                    continue
                n += 1
                key = entry_key(item)
                if item.command == "delete":
                    table.pop(key, None)
                elif item.command == "modify" and not isinstance(item, GroupRule):
                    if key in table:
                        table[key] = item.with_command("add")
                else:
                    table[key] = item.with_command("add") if isinstance(item, FlowRule) \
                        else item
            if bx == xid:
                break
        return n

    def removed(self, dpid: int, priority: int, match) -> Optional[Any]:
        """The switch removed an entry by itself (idle timeout): forget it.  Returns
        the forgotten rule or None."""
        return self.confirmed.get(dpid, {}).pop((priority, tuple(match)), None)

    def pending(self, dpid: int) -> int:
        """Number of rules sent to ``dpid`` and awaiting a barrier reply."""
        return sum(len(b) for b in self._inflight.get(dpid, {}).values())

    def pending_total(self) -> int:
        """Number of rules sent to any switch and awaiting a barrier reply."""
        return sum(len(b) for q in self._inflight.values() for b in q.values())

    def status(self, rule: FlowRule) -> str:
        """``"installed"`` when ``rule`` (same priority, match, actions and cookie) is
        confirmed on its switch, else ``"pending"``."""
        have = self.confirmed.get(rule.dpid, {}).get(entry_key(rule))
        if have is not None and have.actions == rule.actions and have.cookie == rule.cookie:
            return "installed"
        return "pending"
