"""rapier-bench: the --quick --json contract (issue 5) and the trace lookup."""

import json

from rapier_app.experiments import bench


def test_quick_json_reports_alg1_pass_and_lp_counts(capsys):
    assert bench.main(["--quick", "--json", "--reps", "1"]) == 0
    res = json.loads(capsys.readouterr().out)  # one JSON object, nothing else
    assert res["alg1_pass_s"]["k8_n20_w128"] > 0
    # the plain Algorithm 1 re-solves LP (4) in every round: 20 + 19 + ... + 1 = 210;
    # the fast path solves each coflow once, then again only when reserved volume
    # landed on its candidate links and its lower bound could still win the round
    assert res["lp_solves"]["k8_n20_w128"] == 39
    assert res["lp_solves"]["plain_k8_n20_w128"] == 210


def test_sim_times_finds_the_trace_beside_the_repository():
    out = bench.sim_times(1)
    assert set(out["fb_trace_first1"]) == {"baseline", "routing-only", "scheduling-only",
                                           "rapier"}
