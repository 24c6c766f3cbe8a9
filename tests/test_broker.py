"""The site broker (rapier_app.core.broker): the EWMA of background load, the
residual capacity with its floors, and the scheduler wrapper that plans on it.
Every expected value is computed by hand in the comments."""

from types import SimpleNamespace

import numpy as np
import pytest

from rapier_app.core.broker import (BrokerError, BrokerSettings, ResidualScheduler,
                                    SiteBroker, residual_capacity)
from rapier_app.core.model import CoflowState, InfoPolicy, make_coflow
from rapier_app.core.wrapper import SchedulerWrapper
from rapier_app.errors import RapierError
from rapier_app.scheduling import load_all, make_scheduler
from topologies import build_topology

MB = 125_000  # bytes in one megabit


def test_ewma_hand_values():
    # the estimator alone: every window taken (steady_fraction 0)
    b = SiteBroker([10e6, 10e6], BrokerSettings(weight=0.5, change_fraction=0.0,
                                                steady_fraction=0.0))
    assert not b.observe(0.0, [0, 0], [0, 0])  # the first reading only sets the base
    # t=1: link 0 carried 3 Mbit, none of it coflow: sample 3 Mbit/s = the prediction
    b.observe(1.0, [3 * MB, 0], [0, 0])
    assert b.sample_bps.tolist() == [3e6, 0.0]
    assert b.prediction_bps.tolist() == [3e6, 0.0]
    # t=2: +5 Mbit on link 0, 1 Mbit of it coflow: sample 4; EWMA 0.5*4 + 0.5*3 = 3.5
    b.observe(2.0, [8 * MB, 2 * MB], [1 * MB, 2 * MB])
    assert b.sample_bps.tolist() == [4e6, 0.0]
    assert b.prediction_bps.tolist() == [3.5e6, 0.0]
    # t=4 (2 s later): +2 Mbit port, +2 Mbit coflow on link 0: sample 0; 0.5*3.5 = 1.75
    # link 1: +6 Mbit port, +2 Mbit coflow over 2 s: 2 Mbit/s; 0.5*2 + 0.5*0 = 1
    b.observe(4.0, [10 * MB, 8 * MB], [3 * MB, 4 * MB])
    assert b.sample_bps.tolist() == [0.0, 2e6]
    assert b.prediction_bps.tolist() == [1.75e6, 1e6]
    assert b.observations == 3


def test_ewma_weight_one_tracks_the_last_sample_and_weight_quarter():
    b = SiteBroker([10e6], BrokerSettings(weight=0.25, steady_fraction=0.0))
    b.observe(0, [0], [0])
    b.observe(1, [4 * MB], [0])        # first sample: 4
    b.observe(2, [4 * MB], [0])        # sample 0: 0.25*0 + 0.75*4 = 3
    assert b.prediction_bps[0] == pytest.approx(3e6, abs=1e-6)
    b.observe(3, [12 * MB], [0])       # sample 8: 0.25*8 + 0.75*3 = 4.25
    assert b.prediction_bps[0] == pytest.approx(4.25e6, abs=1e-6)


def test_counter_reset_and_unknown_counters_keep_the_prediction():
    b = SiteBroker([10e6, 10e6], BrokerSettings(weight=0.5))
    b.observe(0, [0, 0], [0, 0])
    b.observe(1, [2 * MB, 2 * MB], [0, 0])
    # link 0's port counter went back (switch reconnected); link 1 unknown
    b.observe(2, [1 * MB, np.nan], [0, 0])
    assert b.prediction_bps.tolist() == [2e6, 2e6]
    # the next reading is measured from the new base: +3 Mbit -> 3; 0.5*3 + 0.5*2
    b.observe(3, [4 * MB, 5 * MB], [0, 0])
    assert b.prediction_bps[0] == 2.5e6


def test_residual_with_reserve_and_minimum():
    cap = np.array([10e6, 10e6, 10e6, 20e6])
    pred = np.array([0.0, 3.5e6, 9.5e6, 3e6])
    # min(C*(1-0.1), max(C*0.2, C - pred)):
    #   0: min(9, max(2, 10)) = 9      1: min(9, max(2, 6.5)) = 6.5
    #   2: min(9, max(2, 0.5)) = 2     3: min(18, max(4, 17)) = 17
    got = residual_capacity(cap, pred, reserve_fraction=0.1, min_fraction=0.2)
    assert got.tolist() == [9e6, 6.5e6, 2e6, 17e6]


def test_in_force_changes_only_beyond_change_fraction():
    b = SiteBroker([10e6], BrokerSettings(weight=1.0, change_fraction=0.05, min_fraction=0.1))
    assert b.in_force_bps.tolist() == [10e6] and b.version == 0
    b.observe(0, [0], [0])
    assert not b.observe(1, [0.4 * MB], [0])   # 0.4 Mbit/s: 4 % of capacity, kept
    assert b.in_force_bps.tolist() == [10e6] and b.residual_bps.tolist() == [9.6e6]
    assert b.observe(2, [1.0 * MB], [0])       # 0.6 Mbit/s: 6 % moved: in force
    assert b.in_force_bps.tolist() == [9.4e6] and b.version == 1
    view = b.view()[0]
    assert view["prediction_bps"] == 0.6e6 and view["in_force_bps"] == 9.4e6


def test_bad_settings_and_arrays_name_the_field():
    for kw, field in ((dict(weight=0), "weight"), (dict(weight=1.5), "weight"),
                      (dict(period_s=0), "period_s"), (dict(reserve_fraction=1), "reserve"),
                      (dict(reserve_fraction=0.5, min_fraction=0.6), "min_fraction"),
                      (dict(change_fraction=-1), "change_fraction")):
        with pytest.raises(BrokerError, match=field):
            BrokerSettings(**kw).validate()
    b = SiteBroker([1e6, 1e6])
    with pytest.raises(BrokerError, match="port_bytes"):
        b.observe(0, [0], [0, 0])
    assert issubclass(BrokerError, RapierError) and issubclass(BrokerError, ValueError)


def _states(specs):
    pol = InfoPolicy(True)
    return [CoflowState(s, pol) for s in specs]


def test_residual_scheduler_plans_on_the_residual_without_touching_the_topology():
    load_all()
    topo = build_topology("bigswitch:2", 10e6)
    inner = make_scheduler("rapier", topo)
    b = SiteBroker(topo.capacity, BrokerSettings(weight=1.0))
    sched = ResidualScheduler(inner, b)
    states = _states([make_coflow("a", 0.0, [("h1", "h2", 1e6)])])
    assert sched.schedule(0.0, states).allocations["a/0"].rate_bps == pytest.approx(10e6)
    b.observe(0, np.zeros(4), np.zeros(4))
    b.observe(1, np.full(4, 3 * MB), np.zeros(4))   # 3 Mbit/s on every link
    # one flow alone gets the residual 10 - 3 = 7 Mbit/s
    assert sched.schedule(1.0, states).allocations["a/0"].rate_bps == pytest.approx(7e6)
    assert topo.capacity.tolist() == [10e6] * 4    # the shared topology is unchanged
    assert sched.name == "rapier"                  # other attributes read through


def test_scheduler_wrapper_forwards_what_it_does_not_define():
    class Inner:
        name, reads_progress = "inner", "coflow"
        finished = []

        def flows_finished(self, flows):
            self.finished.append(flows)

    w = SchedulerWrapper(Inner())
    assert (w.name, w.reads_progress) == ("inner", "coflow")
    w.flows_finished(["f"])
    assert Inner.finished == [["f"]]
    # the hook is optional: an inner scheduler without one is not called
    bare = SchedulerWrapper(SimpleNamespace(name="bare"))
    assert bare.flows_finished(["f"]) is None and bare.name == "bare"
    with pytest.raises(AttributeError):
        bare.clairvoyant
    # a wrapper rebuilt without __init__ (copy, pickle) does not recurse
    empty = SchedulerWrapper.__new__(SchedulerWrapper)
    with pytest.raises(AttributeError):
        empty.name


def test_negative_samples_are_averaged_and_the_prediction_clipped():
    # the coflow counters lag: a window counts 2 Mbit of a scheduled flow's bytes as
    # background, the next one 2 Mbit too few (sample -2): the EWMA keeps the sign
    b = SiteBroker([10e6], BrokerSettings(weight=0.5, steady_fraction=0.0))
    b.observe(0, [0], [0])
    b.observe(1, [1 * MB], [2 * MB])          # sample -1: ewma -1, prediction 0
    assert b.sample_bps[0] == -1e6 and b.ewma_bps[0] == -1e6
    assert b.prediction_bps[0] == 0.0 and b.residual_bps[0] == 10e6
    b.observe(2, [5 * MB], [3 * MB])          # sample +3: 0.5*3 + 0.5*(-1) = 1
    assert b.ewma_bps[0] == 1e6 and b.prediction_bps[0] == 1e6


def test_unsteady_windows_give_no_sample():
    # steady_fraction 0.1 of 10 Mbit/s: a window whose port or scheduled rate moved
    # by more than 1 Mbit/s since the window before is skipped on that link
    b = SiteBroker([10e6], BrokerSettings(weight=1.0, steady_fraction=0.1))
    b.observe(0, [0], [0])
    b.observe(1, [3 * MB], [0])                # first window: taken, 3
    assert b.prediction_bps[0] == 3e6
    # a scheduled flow starts mid-window and its counter lags: port 3 + 4, counted
    # 2 of its 4 -> the phantom sample 5 is not taken (scheduled rate 0 -> 2)
    b.observe(2, [10 * MB], [2 * MB])
    assert b.prediction_bps[0] == 3e6 and b.skipped[0] == 1
    # next window: the lagging 2 arrive (scheduled 6 against 2 before): skipped too
    b.observe(3, [17 * MB], [8 * MB])
    assert b.prediction_bps[0] == 3e6 and b.skipped[0] == 2
    # port 7, scheduled 4: the scheduled rate moved 6 -> 4: skipped once more
    b.observe(4, [24 * MB], [12 * MB])
    assert b.skipped[0] == 3
    # steady (7 and 4 again): taken, 7 - 4 = 3
    b.observe(5, [31 * MB], [16 * MB])
    assert b.skipped[0] == 3 and b.sample_bps[0] == 3e6
    # the background steps up to 5: port 7 -> 9 skips one window, then follows
    b.observe(6, [40 * MB], [20 * MB])
    assert b.prediction_bps[0] == 3e6 and b.skipped[0] == 4
    b.observe(7, [49 * MB], [24 * MB])
    assert b.prediction_bps[0] == 5e6


def test_only_links_that_moved_change_in_force():
    b = SiteBroker([10e6, 10e6], BrokerSettings(weight=1.0, change_fraction=0.05,
                                                steady_fraction=0.0))
    b.observe(0, [0, 0], [0, 0])
    # link 0: 3 Mbit/s (30 %: in force); link 1: 0.3 (3 %: kept at 10)
    assert b.observe(1, [3 * MB, 0.3 * MB], [0, 0])
    assert b.in_force_bps.tolist() == [7e6, 10e6]
    assert b.residual_bps.tolist() == [7e6, 9.7e6]
