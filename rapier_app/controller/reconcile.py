"""Reconciliation: a switch's flow table as read back, against the controller's view.

Consistency.  Periodically (``reconcile_interval_s``) and after a switch
reconnects, the Ryu shell reads each switch's table back with an
``OFPFlowStatsRequest`` filtered by our cookie tag (:data:`.rules.COOKIE_TAG` /
``COOKIE_TAG_MASK``: only the controller's rules, never another app's) and hands the
entries to :func:`diff_table` together with what the switch must hold (default
forwarding, ARP and the desired coflow rules, :meth:`.core.ControllerCore.switch_want`).
The repair rules go out through the switch's outbox (one writer per switch, a barrier
behind them, recorded by :class:`.ledger.RuleLedger`) like every other rule.

Differences, keyed by the switch-side identity of a flow entry (priority and match,
OpenFlow 1.3.5 section 6.4; match fields compared as a set, the order a switch
reports them in does not matter):

* **missing**: wanted, not on the switch -> ``ADD``;
* **wrong**: on the switch with other actions or another cookie -> ``ADD`` (replaces
  the entry; ``MODIFY_STRICT`` could not change the cookie);
* **stale**: on the switch with our cookie tag, not wanted -> ``DELETE_STRICT``.

Groups are not read back (flow stats do not list them); they are re-sent in full when
a switch reconnects.  The shell skips a round for a switch with rules in flight (sent,
barrier not answered) or sent after the request: the reply could predate them.

Pure: no Ryu import, no I/O.  Flow-stats entries are duck-typed (``priority``,
``cookie``, ``match.items()``, ``instructions[i].actions[j].port|group_id``) so the
tests pass plain objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Hashable, Iterable, List, Tuple

from .rules import OFPP_CONTROLLER, FlowRule


@dataclass(frozen=True)
class Entry:
    """One flow entry as read back from a switch.

    Attributes:
        priority: flow priority.
        match: ((field, value), ...) in Ryu ``OFPMatch`` names, any order.
        actions: (("output", port) | ("group", gid) | ("controller", 0), ...).
        cookie: the entry's 64-bit cookie.
    """

    priority: int
    match: Tuple[Tuple[str, Any], ...]
    actions: Tuple[Tuple[str, int], ...]
    cookie: int


@dataclass
class Repair:
    """What one reconciliation round of one switch found and the rules that fix it.

    Attributes:
        dpid: the switch.
        missing, wrong, stale: counts of each kind of difference (see the module
            docstring).
        rules: the repair, adds first then deletes (FlowRule, commands ``add`` /
            ``delete``).
    """

    dpid: int
    missing: int = 0
    wrong: int = 0
    stale: int = 0
    rules: List[FlowRule] = field(default_factory=list)

    @property
    def differences(self) -> int:
        """missing + wrong + stale."""
        return self.missing + self.wrong + self.stale


def table_key(priority: int, match: Iterable[Tuple[str, Any]]) -> Hashable:
    """Identity of a flow entry: ``(priority, frozenset of match fields)``."""
    return (int(priority), frozenset((k, v) for k, v in match))


def entry_from_stats(stat) -> Entry:
    """An :class:`Entry` from one ``OFPFlowStats`` (real or duck-typed): apply-actions
    ``OFPActionOutput`` -> ``("output", port)`` (``("controller", 0)`` for
    ``OFPP_CONTROLLER``), ``OFPActionGroup`` -> ``("group", group_id)``.

    Raises:
        ValueError: an action that is neither (naming it); the caller treats the
        entry as wrong.
    """
    actions = []
    for inst in getattr(stat, "instructions", None) or []:
        for a in getattr(inst, "actions", None) or []:
            if hasattr(a, "group_id"):
                actions.append(("group", int(a.group_id)))
            elif hasattr(a, "port"):
                port = int(a.port)
                actions.append(("controller", 0) if port == OFPP_CONTROLLER
                               else ("output", port))
            else:
                raise ValueError(f"actions: unexpected action {type(a).__name__}")
    match = stat.match
    items = match.items() if hasattr(match, "items") else match
    return Entry(int(stat.priority), tuple((k, v) for k, v in items), tuple(actions),
                 int(stat.cookie))


def diff_table(dpid: int, want: Iterable[FlowRule], have: Iterable[Entry]) -> Repair:
    """Compare switch ``dpid``'s table ``have`` (entries read back, our cookie tag
    only) with ``want`` (every flow rule it must hold, command ``add``).

    Returns:
        a :class:`Repair`: missing and wrong entries re-sent as ``ADD`` of the wanted
        rule (in ``want``'s order), stale entries removed with ``DELETE_STRICT``
        (priority and match as the switch reported them).  Nothing for a table that
        matches.
    """
    rep = Repair(dpid)
    have_by_key: Dict[Hashable, Entry] = {table_key(e.priority, e.match): e for e in have}
    wanted = set()
    for r in want:
        key = table_key(r.priority, r.match)
        wanted.add(key)
        got = have_by_key.get(key)
        if got is None:
            rep.missing += 1
            rep.rules.append(r.with_command("add"))
        elif got.actions != tuple(r.actions) or got.cookie != r.cookie:
            rep.wrong += 1
            rep.rules.append(r.with_command("add"))
    for key, e in have_by_key.items():
        if key not in wanted:
            rep.stale += 1
            rep.rules.append(FlowRule(dpid, e.priority, e.match, e.actions, e.cookie,
                                      "delete", None))
    return rep
