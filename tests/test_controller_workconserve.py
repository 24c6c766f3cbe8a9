"""Work conservation at flow completions, end to end through :class:`ControllerCore`.

RAPIER and Varys ("scheduling-only") have ``reschedule_on = "flow"``: when a flow
finishes and its coflow does not, the scheduler runs only its work-conservation pass
(:class:`rapier_app.scheduling.conserve.WorkConservation`) and hands the bandwidth the
flow freed to surviving flows.  These tests drive the real schedulers through the
controller's normal path (``submit`` -> flow-stats completion -> ``_finish`` ->
``scheduler.flows_finished`` -> ``reschedule`` -> ``_apply``) and check the agent rate
pushes the controller returns (the data the Ryu shell PUTs to the host agents).

Case (both schedulers), on ``bigswitch:6`` (one switch s1, hosts h1..h6, every host
link 1 Gbit/s each way; a flow h_i -> h_j uses h_i's uplink and h_j's downlink):

* coflow A = {A/0: h1->h2 100 MB, A/1: h3->h4 1000 MB}
* coflow B = {B/0: h1->h5 1100 MB, B/1: h3->h6 100 MB}

both submitted at t = 0 s (MB = 1e6 bytes, so 100 MB = 0.8 Gbit, 1000 MB = 8 Gbit,
1100 MB = 8.8 Gbit).  A/0 is then reported finished by flow statistics at t = 0.8 s.

Units: sizes and counters in bytes, rates in bit/s, times in seconds.  Agents limit
a flow at its source host, so every rate of a flow from h1 is pushed to h1's agent.
"""

import math

import pytest

from rapier_app.controller.core import make_core
from rapier_app.controller.rules import cookie_for
from rapier_app.controller.settings import Settings

MB = 1e6  # bytes
GBPS = 1e9  # bit/s
REL = 1e-6  # relative tolerance on rates
T_FINISH = 0.8  # s: A/0's completion as reported by flow statistics


def flow(src, dst, size, port):
    """One flow of a ``POST /coflows`` body (size in bytes)."""
    return {"src": src, "dst": dst, "size_bytes": size, "dst_port": port}


COFLOW_A = {"id": "A", "flows": [flow("h1", "h2", 100 * MB, 5001),
                                 flow("h3", "h4", 1000 * MB, 5002)]}
COFLOW_B = {"id": "B", "flows": [flow("h1", "h5", 1100 * MB, 5003),
                                 flow("h3", "h6", 100 * MB, 5004)]}


def start(scheduler, reschedule_on):
    """A core on bigswitch:6 with A and B submitted at t = 0.

    Returns (core, rates): ``rates`` maps flow id -> rate (bit/s) in the last agent
    push that carried the flow (the pushes of both submits, later ones win)."""
    core = make_core(Settings(scheduler=scheduler, topology="bigswitch:6",
                              reschedule_on=reschedule_on))
    assert core.topology.hosts == ["h1", "h2", "h3", "h4", "h5", "h6"]
    assert set(core.topology.capacity.tolist()) == {GBPS}
    rates = {}
    for body in (COFLOW_A, COFLOW_B):
        _, acts = core.submit(body, 0.0)
        for p in acts.pushes:
            for d in p.flows:
                rates[d["flow_id"]] = (p.host, d["rate_bps"])
    return core, rates


def finish_a0(core):
    """Report A/0 (100 MB) done through the normal completion path: a flow-stats
    reply of s1 (h1's first-hop switch) for A/0's rule whose payload estimate
    (byte_count - 66 * packet_count) equals the flow's size, at t = 0.8 s.

    Returns the :class:`Actions` of that call."""
    tr = core.tracks["A/0"]
    s1 = core.topology.graph.nodes["s1"]["dpid"]
    assert tr.first_dpid == s1 and tr.cookie == cookie_for(1)
    npkts = math.ceil(100 * MB / 1448)  # full-size segments of 1448 payload bytes
    nbytes = int(100 * MB) + core.settings.header_bytes * npkts
    # a reply for the same cookie from another switch is ignored
    assert core.apply_flow_stats(s1 + 1, [(tr.cookie, nbytes, npkts)], T_FINISH).finished == []
    acts = core.apply_flow_stats(s1, [(tr.cookie, nbytes, npkts)], T_FINISH)
    assert acts.finished == ["A/0"]
    assert core.coflows["A"].flows[0].finish_s == pytest.approx(T_FINISH, abs=1e-12)
    # A/0's only rule (on s1) goes; coflow A is still active (A/1 runs), so no
    # coflow ended: this is a flow event
    assert [(r.command, r.flow_id, r.dpid) for r in acts.rules] == [("delete", "A/0", s1)]
    assert core.coflow_view("A")["state"] == "active"
    assert core.coflow_view("B")["state"] == "active"
    return acts


def pushed(acts):
    """host -> {flow_id: rate_bps} of the agent pushes in ``acts``."""
    return {p.host: {d["flow_id"]: d["rate_bps"] for d in p.flows} for p in acts.pushes}


def allocated(core):
    """flow_id -> scheduled rate (bit/s) of the schedule in force."""
    return {fid: a["rate_bps"] for fid, a in core.schedule_view()["allocations"].items()}


# ---------------------------------------------------------------------------
# Varys (scheduling-only)
# ---------------------------------------------------------------------------
# Hand computation at t = 0 (SEBF + MADD, then greedy work conservation in SEBF
# order, every link 1 Gbit/s):
#   Gamma_A = max(0.8 Gbit on h1 up / h2 down, 8 Gbit on h3 up / h4 down) / 1 Gbit/s
#           = 8 s;  Gamma_B = max(8.8 Gbit on h1 up / h5 down, 0.8 Gbit) = 8.8 s
#   -> SEBF order A, B.
#   MADD for A: A/0 = 0.8 Gbit / 8 s = 0.1 Gbit/s, A/1 = 8 Gbit / 8 s = 1 Gbit/s.
#   Residual: h1 up 0.9, h2 down 0.9, h3 up 0, h4 down 0 (Gbit/s).
#   B: B/1 crosses h3 up (residual 0) -> Gamma'_B infinite -> no MADD rate for B.
#   Work conservation (order A/0, A/1, B/0, B/1): A/0 += min(0.9, 0.9) = 0.9 ->
#   1 Gbit/s; h1 up now 0, so B/0 gets 0; A/1 and B/1 find h3 up full.
#   => A/0 1 Gbit/s, A/1 1 Gbit/s, B/0 0, B/1 0 (pushed as the min_rate_bps trickle).
# At t = 0.8 s A/0 (0.8 Gbit at 1 Gbit/s) is done; it frees 1 Gbit/s on h1 up and
# h2 down.  Work conservation on the survivors: B/0 += min(h1 up 1, h5 down 1) =
# 1 Gbit/s; A/1 and B/1 still find h3 up full.
#   => push to h1: {B/0: 1e9}; h3's set (A/1 1e9, B/1 trickle) is unchanged: no push.
def test_varys_initial_rates():
    core, rates = start("scheduling-only", "auto")
    assert core.reschedule_mode() == "flow"
    trickle = core.settings.min_rate_bps  # 100 kbit/s for a flow scheduled at 0
    assert rates["A/0"][0] == "h1" and rates["A/0"][1] == pytest.approx(GBPS, rel=REL)
    assert rates["A/1"][0] == "h3" and rates["A/1"][1] == pytest.approx(GBPS, rel=REL)
    assert rates["B/0"] == ("h1", trickle)
    assert rates["B/1"] == ("h3", trickle)
    alloc = allocated(core)
    assert alloc["A/0"] == pytest.approx(GBPS, rel=REL)
    assert alloc["A/1"] == pytest.approx(GBPS, rel=REL)
    assert alloc["B/0"] == 0.0 and alloc["B/1"] == 0.0
    assert core.schedule_view()["order"] == ["A", "B"]  # SEBF: 8 s < 8.8 s


def test_varys_coflow_mode_leaves_b_waiting():
    """The old behaviour (decisions only at coflow events): the finished flow's limit
    goes, B/0 keeps its last rate 0, pushed as the min_rate_bps trickle."""
    core, _ = start("scheduling-only", "coflow")
    count = core.schedule_count
    acts = finish_a0(core)
    assert core.schedule_count == count  # the scheduler was not called
    assert core.scheduler.stats["wc_passes"] == 0
    p = pushed(acts)
    assert p == {"h1": {"B/0": core.settings.min_rate_bps}}
    assert allocated(core)["B/0"] == 0.0
    assert core.coflows["B"].flows[0].rate_bps == 0.0


# ---------------------------------------------------------------------------
# RAPIER
# ---------------------------------------------------------------------------
# Hand computation at t = 0 (Algorithm 1, then Algorithm 3; one path per host pair
# on a big switch, so LP (4) has nothing to route):
#   Minimum CCTs on the full capacities: T_A = 8 Gbit / 1 Gbit/s = 8 s (A/1),
#   T_B = 8.8 s (B/0); both waited 0 s (< delta), so Algorithm 1 picks A first.
#   A's rates remaining / T_A: A/0 = 0.1 Gbit/s, A/1 = 1 Gbit/s.
#   Residual: h1 up 0.9, h2 down 0.9, h3 up 0, h4 down 0 (Gbit/s).
#   B on the residual: B/1 needs h3 up (0) -> T infinite, no rate.
#   Algorithm 3 (wc_order="pick", default: coflows in Algorithm 1's pick order, A
#   then B; flows by decreasing remaining bytes): A/1 finds h3 up full; A/0 +=
#   min(h1 up 0.9, h2 down 0.9) = 0.9 -> 1 Gbit/s; B/0 and B/1 find h1 up and h3
#   up full.
#   => A/0 1 Gbit/s, A/1 1 Gbit/s, B/0 0 (trickle), B/1 0 (trickle).
# (wc_order="paper" visits B first, T = infinite, and gives B/0 the 0.9 Gbit/s.)
# At the flow event: A/0 done frees h1 up (and h2 down); work conservation on the
# survivors gives B/0 += min(h1 up 1, h5 down 1) = 1 Gbit/s; A/1 and B/1 still find
# h3 up full.
#   => push to h1: {B/0: 1e9} (was the trickle); no push to h3.
# (The flow statistics here simply say A/0 is done at 0.8 s.  The core trusts the
# counters, and the work-conservation pass does not depend on the time, only on
# who is still alive.)
def test_rapier_initial_rates():
    core, rates = start("rapier", "auto")
    assert core.reschedule_mode() == "flow"
    trickle = core.settings.min_rate_bps
    assert rates["A/0"][0] == "h1" and rates["A/0"][1] == pytest.approx(GBPS, rel=REL)
    assert rates["A/1"][0] == "h3" and rates["A/1"][1] == pytest.approx(GBPS, rel=REL)
    assert rates["B/0"] == ("h1", trickle)
    assert rates["B/1"] == ("h3", trickle)
    alloc = allocated(core)
    assert alloc == pytest.approx({"A/0": GBPS, "A/1": GBPS, "B/0": 0.0, "B/1": 0.0},
                                  rel=REL)
    view = core.schedule_view()
    assert view["order"][0] == "A" and view["fallback"] == {}
    assert view["info"]["t_min_s"]["A"] == pytest.approx(8.0, rel=REL)


@pytest.mark.parametrize("name", ["scheduling-only", "rapier"])
def test_flow_completion_pushes_freed_capacity_to_b(name):
    """Varys and RAPIER: B/0 0 -> 1 Gbit/s (hand computations above).
    One more scheduler call, a work-conservation pass only, and one push, to h1."""
    core, _ = start(name, "auto")
    count = core.schedule_count
    acts = finish_a0(core)
    assert core.schedule_count == count + 1
    assert core.scheduler.stats["wc_passes"] == 1
    p = pushed(acts)
    assert set(p) == {"h1"}  # h3's rate set did not change
    assert set(p["h1"]) == {"B/0"}  # A/0's limit is gone from h1's set
    assert p["h1"]["B/0"] == pytest.approx(GBPS, rel=REL)
    assert allocated(core) == pytest.approx({"A/1": GBPS, "B/0": GBPS, "B/1": 0.0}, rel=REL)
    assert core.coflows["B"].flows[0].rate_bps == pytest.approx(GBPS, rel=REL)
    # paths are kept by a work-conservation pass
    assert core.schedule_view()["allocations"]["B/0"]["path"] == ["h1", "s1", "h5"]


def test_rapier_coflow_mode_keeps_b_at_its_old_rate():
    """Decisions only at coflow events: B/0 keeps its rate 0 (the trickle) and h1's
    uplink idles, as under Varys."""
    core, _ = start("rapier", "coflow")
    count = core.schedule_count
    acts = finish_a0(core)
    assert core.schedule_count == count
    assert core.scheduler.stats["wc_passes"] == 0
    p = pushed(acts)
    assert p == {"h1": {"B/0": core.settings.min_rate_bps}}
    assert allocated(core)["B/0"] == 0.0


# ---------------------------------------------------------------------------
# The flows_finished hook is optional and must not break completion handling
# ---------------------------------------------------------------------------
def test_a_failing_flows_finished_hook_does_not_abort_completion():
    """A scheduler whose hook raises: the flow still finishes, its coflow is closed
    (one flow, so the coflow ends at t = 0.8 s), the error is recorded, and the
    flow's limit leaves h1's agent."""
    from rapier_app.controller.core import ControllerCore
    from topologies import build_topology

    from test_controller_fakes import PinnedScheduler

    class Raising(PinnedScheduler):
        def flows_finished(self, flows):
            raise RuntimeError("boom")

    topo = build_topology("bigswitch:6")
    sched = Raising()
    sched.plan["c1/0"] = (("h1", "s1", "h2"), 0.5 * GBPS)
    core = ControllerCore(topo, sched, Settings(scheduler="pinned"))
    _, acts = core.submit({"flows": [flow("h1", "h2", 100 * MB, 5001)]}, 0.0)
    assert pushed(acts) == {"h1": {"c1/0": 500_000_000}}
    tr = core.tracks["c1/0"]
    npkts = math.ceil(100 * MB / 1448)
    acts = core.apply_flow_stats(tr.first_dpid,
                                 [(tr.cookie, int(100 * MB) + 66 * npkts, npkts)], T_FINISH)
    assert acts.finished == ["c1/0"]
    assert core.coflow_view("c1")["state"] == "done"
    assert core.coflow_view("c1")["cct_s"] == pytest.approx(T_FINISH, abs=1e-12)
    assert pushed(acts) == {"h1": {}}
    assert len(core.errors) == 1 and "flows_finished failed" in core.errors[0]
