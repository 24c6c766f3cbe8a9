"""A burst of coflows from concurrent clients on Open vSwitch (fattree:4, real
``ryu-manager``): none is left on default forwarding once the burst is decided, and
every cancelled coflow's rules leave the switches.

Runs the benchmark that measures the same thing at 1,000 coflows
(``benchmarks/controller_burst_emulated.py``, its ``run()``) on 100 coflows, so the
figures in docs/operations.md and this check come from one code path.  No timing is
asserted (figures live in benchmarks/README.md).
"""

import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import controller_burst_emulated  # noqa: E402


def test_burst_is_decided_and_cancelled_rules_leave_the_switches(ovs):
    """4 clients POST 100 single-flow coflows (25 each, each client's previous coflow
    DELETEd after every 4th POST: 24 cancels, 76 active), /health asked meanwhile.
    Once decided: no active coflow ``fallback`` or ``queued``, the 20 switches hold
    exactly the active flows' rules (read with ``ovs-ofctl``) and none of the
    cancelled ones, and the controller's reconciliation repaired nothing.  Then each
    client cancels 5 decided coflows whose rules are on the switches: those rules
    are all gone, and the remaining ones untouched."""
    out = controller_burst_emulated.run("fattree:4", "rapier", clients=4, coflows=100,
                                        cancel_after=5, timeout_s=60)
    assert out["n_errors"] == 0, out
    assert out["delete"]["n"] == 24 and out["post"]["n"] == 100, out
    assert out["health"]["n"] > 0, out
    assert out["active_coflows"] == 76, out
    assert out["left_on_default_forwarding"] == 0, out
    assert out["rules_expected"] >= out["active_coflows"], out
    assert out["rules_on_switches"] == out["rules_expected"], out
    assert (out["missing"], out["wrong_port"], out["stale"], out["deleted_rules_on_switches"],
            out["pending_in_controller_view"]) == (0, 0, 0, 0, 0), out
    rec = out["reconcile"]
    assert (rec["missing"], rec["wrong"], rec["stale"]) == (0, 0, 0), out
    after = out["cancel_after"]
    assert after["n_errors"] == 0 and after["cancelled"] == 20, out
    # each cancelled flow had a rule on at least its edge switch before the DELETE
    assert after["deleted_rules_before"] >= 20, out
    assert after["gone_after_s"] is not None, out
    assert (after["deleted_rules_on_switches"], after["missing"], after["wrong_port"],
            after["stale"]) == (0, 0, 0, 0), out
    assert after["rules_on_switches"] == after["rules_expected"] \
        == out["rules_expected"] - after["deleted_rules_before"], out
