"""rapier-bench: the --quick --json contract (issue 5) and the trace lookup."""

import json

from rapier_app.experiments import bench


def test_quick_json_reports_alg1_pass_and_lp_counts(capsys):
    # k=16 and the FB prefix are left to the benchmark itself (minutes here)
    assert bench.main(["--quick", "--json", "--reps", "1", "--max-k", "8", "--no-sim"]) == 0
    res = json.loads(capsys.readouterr().out)  # one JSON object, nothing else
    assert res["alg1_pass_s"]["k8_n20_w128"] > 0
    # the plain Algorithm 1 re-solves LP (4) in every round: 20 + 19 + ... + 1 = 210;
    # the fast path solves a coflow only while it has no plan valid for the reserved
    # volume on its candidate links and its lower bound could still win the round:
    # here each coflow once, in the round it is picked
    assert res["lp_solves"]["k8_n20_w128"] == 20
    assert res["lp_solves"]["plain_k8_n20_w128"] == 210
    # the same pass with lp="exact" (GLOP every time) solves the same 20 LPs; with
    # lp="fast" the greedy placement is certified optimal at all 20
    assert res["alg1_pass_exact_s"]["k8_n20_w128"] > 0
    assert res["lp_solves"]["exact_k8_n20_w128"] == 20
    assert res["lp_certified"]["k8_n20_w128"] == 20


def test_sim_times_finds_the_trace_beside_the_repository():
    out = bench.sim_times(1)
    assert set(out["fb_trace_first1"]) == {"baseline", "routing-only", "scheduling-only",
                                           "rapier"}


def test_fb_prefix_times_per_scheduler():
    out = bench.fb_prefix_times(2, ["baseline", "fifo"])
    assert out["prefix"] == 2 and set(out["wall_s"]) == {"baseline", "fifo"}
    # coflow 1 (one flow of 1 MB) ends before coflow 2 (two equal flows from ports
    # 104 and 132 into port 140) arrives at 10.833 s; both of its flows end together.
    # Decision points: the two arrivals only (a completion that leaves nothing
    # running asks no one)
    assert out["events"] == {"baseline": 2, "fifo": 2}
    assert all(v > 0 for v in out["wall_s"].values())
