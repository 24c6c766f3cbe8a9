"""A switch's reconciliation round costs that switch's rules, not every rule the
controller holds: the desired-rule table is indexed by switch too.

Counted, not timed (as tests/test_controller_reads.py counts the reads): under a
burst, every switch is reconciled each ``reconcile_interval_s`` and each round
sorted and filtered the whole table (13,400 rules on fattree:4 after 1,000 coflows
of 4 flows: 20 full sorts per round, on the event loop).
"""

from rapier_app.controller.core import DesiredRules, make_core
from rapier_app.controller.reconcile import Entry
from rapier_app.controller.settings import Settings

from test_controller_reads import SpyRules, _body, _confirm, _spy, small_case


def _scan(desired, dpid):
    """What the switch's rules were found by before the index: a sorted full scan."""
    return [r for (d, _), r in sorted(dict.items(desired)) if d == dpid]


def test_switch_index_follows_every_change():
    core = small_case()
    core.desired = dict(core.desired)  # a plain dict given back is indexed too
    assert isinstance(core.desired, DesiredRules)
    dpids = {d for d, _ in core.desired}
    assert len(dpids) >= 3
    for d in dpids:
        assert core.desired.of_switch(d) == _scan(core.desired, d) != []
    k = next(iter(core.desired))
    r = core.desired.pop(k)
    assert r not in core.desired.of_switch(k[0])
    assert core.desired.of_switch(k[0]) == _scan(core.desired, k[0])
    core.desired[k] = r
    assert core.desired.of_switch(k[0]) == _scan(core.desired, k[0])
    del core.desired[k]
    assert r not in core.desired.of_switch(k[0])
    core.desired.setdefault(k, r)
    assert core.desired.of_switch(k[0]) == _scan(core.desired, k[0])
    core.desired.clear()
    assert core.desired.of_switch(k[0]) == [] and core.desired.of_switch(-1) == []


def test_reconciling_one_switch_walks_only_its_rules():
    core = make_core(Settings(scheduler="baseline", agent_url=""))
    xid = 1
    for i in range(10):
        _, acts = core.submit(_body(f"c{i}", 200, k=9, port0=1024 + 1000 * i), float(i))
        xid = _confirm(core, acts, xid)
    dpid = max({d for d, _ in core.desired}, key=lambda d: -len(_scan(core.desired, d)))
    mine = _scan(core.desired, dpid)
    assert 0 < len(mine) < len(core.desired) / 2
    want_before = core.switch_want(dpid)
    _spy(core)
    want = core.switch_want(dpid)
    assert SpyRules.scanned == 0        # no walk over every switch's rules
    assert want == want_before          # same rules, same order
    assert [r for r in want if r.priority == mine[0].priority] == \
        [r.with_command("add") for r in mine]
    # a round over a table equal to what the switch must hold: nothing to repair
    table = [Entry(r.priority, r.match, r.actions, r.cookie) for r in want]
    rep, acts = core.reconcile_switch(dpid, table)
    assert (rep.missing, rep.wrong, rep.stale) == (0, 0, 0) and acts.rules == []
    # one rule gone: found missing and sent again
    rep, acts = core.reconcile_switch(dpid, [e for e in table if e.match != mine[0].match])
    assert (rep.missing, rep.wrong, rep.stale) == (1, 0, 0)
    assert [r.match for r in acts.rules] == [mine[0].match]
    # a rule the switch removed on its idle timeout, still desired: sent again
    acts = core.rule_expired(dpid, mine[0].priority, mine[0].match, mine[0].cookie)
    assert [(r.match, r.command) for r in acts.rules] == [(mine[0].match, "add")]
    assert SpyRules.scanned == 0
