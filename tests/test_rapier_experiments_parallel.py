"""rapier-experiment scale-out (issue 15): tasks, --jobs, Dask, list, merge, --out.

The points are tiny (width-16 coflows on fattree512, one or two cheap schemes) so
that every backend test stays within a few seconds; rows must be identical, CCTs
bit for bit, whichever backend ran them.
"""

import json
import os

import pytest

from rapier_app.experiments import cli
from rapier_app.experiments.merge import MergeConflict, merge_files, merge_rows
from rapier_app.experiments.parallel import execute, largest_first
from rapier_app.experiments.sweeps import (RUN_FIELDS, Task, append_runs, pending, plan_tasks,
                                           read_runs, run_key)
from test_rapier_experiments import _csv_row as _row  # one runs.csv row, fields as keywords

GRID = dict(experiment="width", fabric_name="fattree512", values=[16], tries=2,
            schemes=["baseline", "routing-only"])


def _det(rows):
    """Rows without the wall time, sorted by run: what must not depend on the backend."""
    return sorted((tuple(r[k] for k in RUN_FIELDS if k != "wall_s") for r in rows))


def test_plan_tasks_grid_order_seeds_and_pending():
    tasks = plan_tasks("number", "vl2-512", [10, 30], 3, ["baseline", "rapier"], base_seed=5)
    # x-major, then try; try i -> seed base_seed + i
    assert [(t.x, t.try_index, t.seed) for t in tasks] == [
        (10.0, 0, 5), (10.0, 1, 6), (10.0, 2, 7), (30.0, 0, 5), (30.0, 1, 6), (30.0, 2, 7)]
    assert tasks[0].command() == ("rapier-experiment point --experiment number --fabric vl2-512 "
                                  "--x 10 --seed 5 --schemes baseline,rapier --sizes uniform:1,10")
    done = {("number", "vl2-512", 10.0, 5, "uniform:1,10", "baseline"),
            ("number", "vl2-512", 10.0, 5, "uniform:1,10", "rapier"),
            ("number", "vl2-512", 30.0, 6, "uniform:1,10", "rapier")}
    left = pending(tasks, done)
    assert [(t.x, t.seed, t.schemes) for t in left] == [
        (10.0, 6, ("baseline", "rapier")), (10.0, 7, ("baseline", "rapier")),
        (30.0, 5, ("baseline", "rapier")), (30.0, 6, ("baseline",)),
        (30.0, 7, ("baseline", "rapier"))]
    with pytest.raises(ValueError, match="fabric"):
        plan_tasks("width", "nosuch", [16], 1, ["baseline"])
    with pytest.raises(ValueError, match="tries"):
        plan_tasks("width", "fattree512", [16], 0, ["baseline"])


def test_jobs_2_and_dask_localcluster_give_the_serial_rows(tmp_path):
    from distributed import Client, LocalCluster
    tasks = plan_tasks(**GRID)
    serial = execute(tasks, str(tmp_path / "s.csv"))
    assert len(serial) == 4 and len({r["avg_cct_s"] for r in serial}) == 4
    par = execute(tasks, str(tmp_path / "p.csv"), jobs=2)
    assert _det(par) == _det(serial)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        stats = {}
        dk = execute(tasks, str(tmp_path / "d.csv"), dask=client, stats=stats)
    assert _det(dk) == _det(serial)
    assert stats["points"] == 2 and stats["backend"] == "dask:client"
    # one worker, one thread: the points' own wall time fits in the call's
    assert 0 < stats["task_cpu_s"] and 0 < stats["task_wall_s"] <= stats["wall_s"]
    # what the parent wrote is what was returned, CCTs bit for bit (repr round trip)
    for name, rows in (("s", serial), ("p", par), ("d", dk)):
        assert _det(read_runs(str(tmp_path / f"{name}.csv"))) == _det(rows)


def test_a_failing_point_is_named_and_finished_points_stay(tmp_path):
    good = Task("width", "fattree512", 16.0, 0, 1, "uniform:1,10", ("baseline",))
    bad = Task("width", "fattree512", 16.0, 1, 2, "uniform:1,10", ("no-such-scheduler",))
    path = str(tmp_path / "runs.csv")
    with pytest.raises(RuntimeError, match="width fattree512 x=16 seed=2"):
        execute([good, bad], path)
    assert [r["scheme"] for r in read_runs(path)] == ["baseline"]
    with pytest.raises(ValueError, match="jobs"):
        execute([good], path, jobs=2, dask="local:1")
    with pytest.raises(ValueError, match="jobs"):
        execute([good], path, jobs=-1)


def test_cli_run_resumes_logs_by_appending_and_defaults_to_a_fresh_folder(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = ["run", "--experiment", "width", "--fabric", "fattree512", "--values", "16",
            "--schemes", "baseline", "-q"]
    assert cli.main(args) == 0
    made = [d for d in os.listdir(tmp_path) if d.startswith("rapier-experiment-")]
    assert len(made) == 1
    out = tmp_path / made[0]
    rows = read_runs(str(out / "runs.csv"))
    assert [(r["scheme"], r["seed"]) for r in rows] == [("baseline", 1)]
    # second run into the same folder: nothing to do, runs.csv unchanged, log appended
    before = (out / "runs.csv").read_text()
    assert cli.main(args + ["--out", str(out)]) == 0
    assert (out / "runs.csv").read_text() == before
    log = (out / "experiment.log").read_text()
    assert log.count("points (") == 2 and "nothing to run" in log
    # a default folder inside the repository's results/ is refused
    monkeypatch.setattr(cli, "RESULTS_DIR", str(tmp_path))
    assert cli.main(args) == 2
    assert "--out" in capsys.readouterr().err


def test_cli_list_marks_done_and_prints_json_lines(tmp_path, capsys):
    append_runs(str(tmp_path / "runs.csv"), [_row(x=16.0, seed=1, scheme="baseline")])
    base = ["list", "--experiment", "width", "--fabric", "fattree512", "--values", "16,32",
            "--tries", "2", "--schemes", "baseline,rapier", "--out", str(tmp_path)]
    assert cli.main(base) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines] == ["partial", "todo", "todo", "todo"]
    assert lines[1].endswith("--x 16 --seed 2 --schemes baseline,rapier --sizes uniform:1,10")
    assert cli.main(base + ["--json"]) == 0
    objs = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [(o["x"], o["seed"], o["status"], o["todo"]) for o in objs] == [
        (16.0, 1, "partial", ["rapier"]), (16.0, 2, "todo", ["baseline", "rapier"]),
        (32.0, 1, "todo", ["baseline", "rapier"]), (32.0, 2, "todo", ["baseline", "rapier"])]


def test_merge_dedups_sorts_and_refuses_conflicts(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    append_runs(str(a / "runs.csv"), [
        _row(x=32.0, scheme="rapier", avg_cct_s=0.1 + 0.2), _row(scheme="baseline")])
    append_runs(str(b / "runs.csv"), [
        _row(x=32.0, scheme="rapier", avg_cct_s=0.1 + 0.2), _row(seed=2)])
    dest, n_in, n_out = merge_files([str(a), str(b / "runs.csv")], str(tmp_path / "m"))
    assert (n_in, n_out) == (4, 3)
    rows = read_runs(dest)
    assert [(r["x"], r["seed"], r["scheme"]) for r in rows] == [
        (16.0, 1, "baseline"), (16.0, 2, "baseline"), (32.0, 1, "rapier")]
    assert rows[2]["avg_cct_s"] == 0.1 + 0.2  # 0.30000000000000004, bit for bit
    # the same run with another CCT (one ulp apart) names the point and both files
    with pytest.raises(MergeConflict, match=r"x=32 seed=1 .*scheme=rapier.*0\.3 s in"):
        merge_rows([("a", [_row(x=32.0, scheme="rapier", avg_cct_s=0.1 + 0.2)]),
                    ("b", [_row(x=32.0, scheme="rapier", avg_cct_s=0.3)])])
    with pytest.raises(MergeConflict, match="reschedule"):
        merge_rows([("a", [_row()]), ("b", [_row(seed=2, reschedule="flow")])])
    # through the CLI: exit 2 and the point on stderr; an existing output refused
    c = tmp_path / "c"
    c.mkdir()
    append_runs(str(c / "runs.csv"), [_row(avg_cct_s=2.0)])
    assert cli.main(["merge", str(a), str(c), "--out", str(tmp_path / "m2")]) == 2
    assert "scheme=baseline" in capsys.readouterr().err
    assert not (tmp_path / "m2" / "runs.csv").exists()
    assert cli.main(["merge", str(a), "--out", str(tmp_path / "m"), "--no-report"]) == 2
    assert cli.main(["merge", str(a), str(b), "--out", str(tmp_path / "m3")]) == 0
    assert (tmp_path / "m3" / "summary.md").exists()
    assert sorted(run_key(r) for r in read_runs(str(tmp_path / "m3" / "runs.csv"))) == \
        sorted(run_key(r) for r in rows)


def test_big_appends_its_markdown_log(tmp_path):
    args = ["big", "--fabric", "fattree512", "--coflows", "2", "--width", "4",
            "--schemes", "baseline", "--out", str(tmp_path), "-q"]
    assert cli.main(args) == 0
    assert cli.main(args) == 0
    text = (tmp_path / "big_fattree512.md").read_text()
    assert text.count("# One try on `fattree512`") == 2
    assert text.count("- **baseline**: average CCT") == 2


def test_merge_names_a_junk_or_truncated_runs_csv(tmp_path, capsys):
    """A runs.csv that is not one, or whose cell is cut, exits 2 naming file and line."""
    a = tmp_path / "a"
    a.mkdir()
    append_runs(str(a / "runs.csv"), [_row(), _row(seed=2)])
    text = (a / "runs.csv").read_text().splitlines()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "runs.csv").write_text("\n".join(text[:-1] + [text[-1].split(",")[0] + ",zz"]))
    assert cli.main(["merge", str(cut), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert f"{cut / 'runs.csv'}:3:" in err and "expected a number" in err
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "runs.csv").write_text("hello,world\n1,2\n")
    assert cli.main(["merge", str(junk), "--out", str(tmp_path / "m")]) == 2
    assert "not a runs CSV: missing column(s) x" in capsys.readouterr().err


def test_parallel_backends_start_the_largest_points_first():
    """LPT order: flows = coflows x width x schemes (width sweep: 20 coflows; number
    sweep: width 128); ties keep grid order."""
    t = [Task("width", "fattree512", 16.0, 0, 1, "uniform:1,10", ("baseline",)),
         Task("width", "fattree512", 64.0, 0, 1, "uniform:1,10", ("baseline",)),
         Task("number", "fattree512", 10.0, 0, 1, "uniform:1,10", ("baseline", "rapier")),
         Task("width", "fattree512", 64.0, 1, 2, "uniform:1,10", ("baseline",))]
    assert [x.flows() for x in t] == [320, 1280, 2560, 1280]
    assert largest_first(t) == [t[2], t[1], t[3], t[0]]
