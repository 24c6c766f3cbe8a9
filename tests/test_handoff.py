"""The controller hand-off model (rapier_app.sim.handoff, issue 13): hand-computed
CCTs, invariants under the delay and bad input."""

import json
from types import SimpleNamespace

import pytest

from rapier_app.cli import main
from rapier_app.core.model import make_coflow
from rapier_app.core.workload import synthetic
from rapier_app.scheduling import load_all, make_scheduler
from rapier_app.sim import simulate
from rapier_app.sim.checker import check_schedule
from rapier_app.sim.handoff import HandoffDelay
from topologies import big_switch, build_topology

load_all()

GBIT = 125e6  # bytes in one Gbit


def _two_flows():
    # one coflow, two flows from h1 on a 1 Gbit/s big switch: 1 Gbit to h2, 2 Gbit to h3
    return [make_coflow("c", 0.0, [("h1", "h2", GBIT), ("h1", "h3", 2 * GBIT)])]


@pytest.mark.parametrize("delay,cct", [
    # no delay: both at 0.5 Gbit/s until 2 s, then the 2nd alone at 1 Gbit/s: 3 s
    (0.0, 3.0),
    # D = 0.1 s: both start at 0.1 s, the 1st ends at 2.1 s; the 2nd keeps 0.5 Gbit/s
    # until its raise is due at 2.2 s (0.05 Gbit), then 0.95 Gbit at 1 Gbit/s: 3.15 s
    (0.1, 3.15),
    # D = 0.5 s: start 0.5, 1st ends 2.5; 0.25 Gbit more at 0.5 until 3.0, 0.75 at 1
    (0.5, 3.75),
])
def test_fair_sharing_with_a_hand_off_delay_hand_computed(delay, cct):
    topo = big_switch(3)
    s = make_scheduler("baseline", topo)
    res = simulate(topo, _two_flows(), HandoffDelay(s, delay) if delay else s)
    assert res.coflows[0].cct_s == pytest.approx(cct)


def test_its_own_wake_ups_are_not_decisions_of_the_inner_scheduler():
    # decisions at the arrival (0 s) and at the first flow's end (2.1 s); the raises
    # falling due at 0.1 s and 2.2 s apply what was decided, as an agent would
    topo = big_switch(3)
    inner = make_scheduler("baseline", topo)
    calls = []
    real = inner.schedule
    inner.schedule = lambda now, states: calls.append(now) or real(now, states)
    w = HandoffDelay(inner, 0.1)
    seen = []
    real_w = w.schedule
    w.schedule = lambda now, states: seen.append(now) or real_w(now, states)
    res = simulate(topo, _two_flows(), w)
    assert res.coflows[0].cct_s == pytest.approx(3.15)
    assert calls == pytest.approx([0.0, 2.1])
    assert seen == pytest.approx([0.0, 0.1, 2.1, 2.2])


def test_a_flow_first_given_no_path_is_raised_late():
    # a previous allocation without a path (rate 0), then one with a path and a
    # rate: a raise like any other
    from rapier_app.core.model import Allocation, Schedule

    class Two:
        name = "two"
        reads_progress = False

        def __init__(self):
            self.n = 0

        def schedule(self, now, states):
            self.n += 1
            return Schedule({"x": Allocation(None, 0.0)} if self.n == 1
                            else {"x": Allocation(("h1", "s", "h2"), 5.0)})

        def next_wakeup(self, now):
            return None

        def flows_finished(self, flows):
            pass

    class Live:
        def active_flows(self):
            return [SimpleNamespace(flow_id="x")]

    w = HandoffDelay(Two(), 0.5)
    assert w.schedule(0.0, [Live()]).allocations["x"].rate_bps == 0.0
    assert w.schedule(1.0, [Live()]).allocations["x"].rate_bps == 0.0
    assert w.next_wakeup(1.0) == pytest.approx(1.5)
    assert w.schedule(1.5, [Live()]).allocations["x"].rate_bps == 5.0


def test_jitter_is_seeded_and_bounded():
    topo = big_switch(3)
    got = []
    for seed in (1, 1, 2):
        s = HandoffDelay(make_scheduler("baseline", topo), 0.1, jitter_s=0.2, seed=seed)
        got.append(simulate(topo, _two_flows(), s).coflows[0].cct_s)
    assert got[0] == got[1]
    assert got[0] != got[2]
    # each of the two waits (start, raise) is in [0.1, 0.3) s and costs at most itself
    for c in got:
        assert 3.1 < c < 3.6


@pytest.mark.parametrize("name", ["rapier", "scheduling-only", "baseline"])
def test_no_link_above_capacity_and_every_byte_delivered(name):
    topo = build_topology("fattree:4")
    cfs = synthetic(topo, 6, 6, 0.2, "uniform:10,100", 3)
    log = []
    s = HandoffDelay(make_scheduler(name, topo, seed=0), 0.15, jitter_s=0.1, seed=4)
    res = simulate(topo, cfs, s, event_log=log)
    rep = check_schedule(topo, cfs, log, level=None, ccts={r.coflow_id: r.cct_s
                                                           for r in res.coflows})
    assert rep.counts == {}, rep.violations[:3]
    assert rep.max_utilisation <= 1 + 1e-9
    assert len(res.coflows) == len(cfs)
    # a delay only ever holds traffic back: no coflow ends earlier than with none
    ideal = simulate(topo, cfs, make_scheduler(name, topo, seed=0))
    assert res.ccts.mean() > ideal.ccts.mean()


@pytest.mark.parametrize("kw,field", [
    ({"delay_s": -0.1}, "delay_s"),
    ({"delay_s": "soon"}, "delay_s"),
    ({"delay_s": 0.1, "jitter_s": -1}, "jitter_s"),
    ({"delay_s": float("nan")}, "delay_s"),
    ({"delay_s": 0.1, "jitter_s": float("inf")}, "jitter_s"),
])
def test_bad_delays_name_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        HandoffDelay(make_scheduler("baseline", big_switch(3)), **kw)


@pytest.mark.parametrize("opt", ["--handoff-delay", "--handoff-jitter"])
def test_cli_rejects_a_negative_delay_naming_the_option(tmp_path, capsys, opt):
    rc = main(["--scenario", "fig1", opt, "-0.5", "--out", str(tmp_path), "--quiet",
               "--no-plot", "--no-bound"])
    assert rc == 2
    assert opt in capsys.readouterr().err


def test_cli_does_not_delay_tcp_fair_sharing(tmp_path, capsys):
    # baseline models TCP: no rates are pushed, so no hand-off; rapier is delayed
    argv = ["--scenario", "fig1", "--schedulers", "rapier,baseline", "--json", "--quiet",
            "--no-plot", "--no-bound"]
    assert main(argv + ["--out", str(tmp_path / "a")]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(argv + ["--handoff-delay", "0.1", "--out", str(tmp_path / "b")]) == 0
    late = json.loads(capsys.readouterr().out)
    assert late["baseline"]["avg_cct_s"] == plain["baseline"]["avg_cct_s"] == pytest.approx(1.5)
    assert late["rapier"]["avg_cct_s"] == pytest.approx(1.45)


def test_cli_handoff_delay_on_fig1(tmp_path, capsys):
    # Fig. 1: rapier's CCTs 1.0 and 1.6 s.  With every raise 0.1 s late both coflows
    # start 0.1 s late, and b, whose flows wait for a's link, gets a's bandwidth
    # 0.1 s after a ends (1.1 s): a 1.1 s, b 1.8 s, average 1.45 s
    rc = main(["--scenario", "fig1", "--schedulers", "rapier", "--handoff-delay", "0.1",
               "--json", "--out", str(tmp_path), "--quiet", "--no-plot", "--no-bound"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rapier"]["avg_cct_s"] == pytest.approx(1.45)
    summ = json.loads((tmp_path / "summary.json").read_text())
    assert summ["options"]["handoff_delay"] == 0.1
