"""Statistics, aggregation and the fabrics of the evaluation (rapier_app.experiments)."""

import math

import pytest

from rapier_app.experiments.fabrics import FABRICS, fabric
from rapier_app.experiments.sweeps import EXPERIMENTS, improvement, summarize
from rapier_app.sim.metrics import mean_ci95


def test_mean_ci95_hand_computed():
    # n = 2, values 1, 3: mean 2, s = sqrt(2); t_{0.975,1} is the Cauchy quantile
    # tan(pi (0.975 - 1/2)) = 12.7062 -> half-width 12.7062 * sqrt(2) / sqrt(2)
    m2, h2 = mean_ci95([1.0, 3.0])
    assert m2 == 2.0
    assert h2 == pytest.approx(math.tan(math.pi * 0.475), rel=1e-12)
    assert h2 == pytest.approx(12.7062, abs=1e-4)
    # n = 3, values 1, 2, 3: s = 1; t_{0.975,2} = 0.95 sqrt(2 / (4 * 0.975 * 0.025))
    # (closed form for 2 degrees of freedom) = 4.30265 -> half-width 4.30265 / sqrt(3)
    m, h = mean_ci95([1.0, 2.0, 3.0])
    assert m == 2.0
    t2 = 0.95 * math.sqrt(2 / (4 * 0.975 * 0.025))
    assert h == pytest.approx(t2 / math.sqrt(3), rel=1e-12)
    assert h == pytest.approx(2.48414, abs=1e-5)
    # n = 1: the interval is undefined -> NaN half-width (not 0)
    m1, h1 = mean_ci95([5.0])
    assert m1 == 5.0 and math.isnan(h1)
    with pytest.raises(ValueError, match="values"):
        mean_ci95([])
    with pytest.raises(ValueError, match="finite"):
        mean_ci95([1.0, float("nan")])


def test_one_ci_function_everywhere():
    # rapier-sim, rapier-experiment and benchmarks/sweep_claims.py share one function,
    # defined in rapier_app.sim.metrics and imported from there (no re-export)
    import ast
    import importlib.util
    import os

    import rapier_app.cli as sim_cli
    import rapier_app.experiments.sweeps as sweeps
    from rapier_app.sim import metrics
    assert sweeps.mean_ci95 is metrics.mean_ci95 is mean_ci95
    assert not hasattr(sim_cli, "mean_ci95")  # rapier-sim imports it where it uses it
    with open(sim_cli.__file__, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    assert {(n.level, n.module) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            and "mean_ci95" in {a.name for a in n.names}} == {(1, "sim.metrics")}
    path = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "sweep_claims.py")
    spec = importlib.util.spec_from_file_location("sweep_claims", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.ci95([1.0, 3.0]) == mean_ci95([1.0, 3.0])


def test_improvement_is_papers_metric():
    # Table II: (228.6 - 117.5) / 228.6 = 48.6%
    assert improvement(117.5, 228.6) == pytest.approx(0.486, abs=5e-4)


def _row(scheme, seed, cct, lb=1.0):
    return {"experiment": "width", "fabric": "f", "sizes": "s", "x": 16.0, "try": seed - 1,
            "seed": seed, "scheme": scheme, "avg_cct_s": cct, "lower_bound_s": lb,
            "ratio_to_bound": cct / lb, "wall_s": 1.0, "events": 1, "n_coflows": 1}


def test_summarize_means_ci_and_improvement():
    rows = [_row("baseline", 1, 4.0), _row("baseline", 2, 6.0),
            _row("rapier", 1, 2.0), _row("rapier", 2, 3.0)]
    s = {r["scheme"]: r for r in summarize(rows)}
    assert s["rapier"]["avg_cct_s"] == 2.5
    assert s["rapier"]["improvement"] == pytest.approx(0.5)   # (5 - 2.5) / 5
    assert s["rapier"]["improvement_ci95"] == pytest.approx(0.0, abs=1e-12)  # 0.5 both tries
    assert s["baseline"]["improvement"] == 0.0
    assert s["rapier"]["ratio_to_bound"] == 2.5
    assert s["rapier"]["tries"] == 2


def test_experiment_workloads_match_paper():
    assert EXPERIMENTS["width"].workload_args(64) == {"n_coflows": 20, "width": 64,
                                                      "mean_interarrival_s": 0.1}
    assert EXPERIMENTS["number"].workload_args(30)["n_coflows"] == 30
    assert EXPERIMENTS["interval"].workload_args(0.4) == {"n_coflows": 30, "width": 128,
                                                          "mean_interarrival_s": 0.4}


@pytest.mark.parametrize("name", ["fattree512", "vl2-512", "vl2-512-os"])
def test_512_server_fabrics(name):
    t = fabric(name)
    assert len(t.hosts) == 512
    assert name in FABRICS
    with pytest.raises(KeyError):
        fabric("nope")


def test_wide_table_cells_hand_computed():
    from rapier_app.experiments.report import wide_table
    runs = []
    for seed, base, rap in ((1, 2.0, 1.0), (2, 4.0, 3.0)):
        for sch, v in (("baseline", base), ("rapier", rap)):
            runs.append({"experiment": "width", "fabric": "fattree512", "sizes": "u",
                         "x": 16.0, "scheme": sch, "seed": seed, "avg_cct_s": v,
                         "lower_bound_s": 0.5, "ratio_to_bound": v / 0.5, "wall_s": 1.0})
    runs.append({"experiment": "width", "fabric": "fattree512", "sizes": "u", "x": 32.0,
                 "scheme": "baseline", "seed": 1, "avg_cct_s": 5.0, "lower_bound_s": 1.0,
                 "ratio_to_bound": 5.0, "wall_s": 1.0})
    lines = wide_table(summarize(runs))
    assert lines[0] == "| x | bound (s) | baseline | rapier |"
    # x=16: baseline mean 3.0 (t_{0.975,1} = 12.706, sd sqrt(2), half-width
    # 12.706 * sqrt(2) / sqrt(2) = 12.706); rapier mean 2.0, improvement (3 - 2) / 3
    assert lines[2] == "| 16 | 0.500 | 3.000 +- 12.706 | 2.000 +- 12.706 (+33%) |"
    # x=32: one try, no CI; rapier missing
    assert lines[3] == "| 32 | 1.000 | 5.000 | - |"


def _csv_row(**kw):
    r = {"experiment": "width", "fabric": "fattree512", "x": 16.0, "try": 0, "seed": 1,
         "sizes": "uniform:1,10", "scheme": "baseline", "n_coflows": 20, "avg_cct_s": 1.0,
         "lower_bound_s": 0.5, "ratio_to_bound": 2.0, "wall_s": 0.1, "events": 3,
         "reschedule": "auto"}
    r.update(kw)
    return r


def test_runs_csv_upgrades_old_header_and_refuses_mixed_decision_points(tmp_path):
    import csv
    from rapier_app.experiments.parallel import run_sweep
    from rapier_app.experiments.sweeps import (RUN_FIELDS, append_runs, check_decision_points,
                                               read_runs)
    path = tmp_path / "runs.csv"
    old_fields = [f for f in RUN_FIELDS if f != "reschedule"]
    with open(path, "w", newline="") as fh:  # a file from before the column existed
        w = csv.DictWriter(fh, fieldnames=old_fields)
        w.writeheader()
        w.writerow({k: v for k, v in _csv_row(avg_cct_s=2.5).items() if k in old_fields})
    append_runs(str(path), [_csv_row(scheme="rapier", reschedule="flow")])
    rows = read_runs(str(path))
    assert [(r["scheme"], r["avg_cct_s"], r["reschedule"]) for r in rows] == \
        [("baseline", 2.5, ""), ("rapier", 1.0, "flow")]
    with open(path) as fh:
        assert fh.readline().strip().split(",") == RUN_FIELDS
    # rows of unknown ('') and other ('flow') decision points: no silent mixing
    with pytest.raises(ValueError, match="reschedule"):
        check_decision_points(str(path), None)
    with pytest.raises(ValueError, match="'flow'"):
        run_sweep("width", "fattree512", [16], 1, ["baseline"], str(tmp_path),
                  reschedule_on="coflow")
    assert len(read_runs(str(path))) == 2  # nothing appended, nothing lost


def test_cli_point_refuses_mixed_decision_points(tmp_path, capsys):
    from rapier_app.experiments.cli import main
    from rapier_app.experiments.sweeps import append_runs
    append_runs(str(tmp_path / "runs.csv"), [_csv_row(reschedule="flow")])
    rc = main(["point", "--experiment", "width", "--fabric", "fattree512", "--x", "16",
               "--seed", "1", "--schemes", "baseline", "--out", str(tmp_path)])
    assert rc == 2
    assert "reschedule" in capsys.readouterr().err
