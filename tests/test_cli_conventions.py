"""CLI conventions (issue 15): --version everywhere, -v/-q, typed --param, conflicting
options refused, solvers kept off stdout, progress rules, crash-safe coflows.csv,
summary.json provenance and scheduler plugins loaded by ``module:Class``."""

import argparse
import csv
import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest

from rapier_app import cli_common, progress
from rapier_app.cli import main
from rapier_app.params import ParamError, typed_params
from rapier_app.scheduling import REGISTRY, load_all
from rapier_app.scheduling.rapier.scheduler import Rapier

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1024 * 1024


def _entry_points():
    from enforcement import agent
    from mininet_tests import emulate
    from rapier_app import cli
    from rapier_app.experiments import bench
    from rapier_app.experiments import cli as exp_cli
    from rapier_app import config_cli, doctor, topology_cli
    from rapier_app.sim import check_cli
    from rapier_app.controller import launcher
    return {"rapier-controller": launcher.main,"rapier-sim": cli.main, "rapier-experiment": exp_cli.main,
            "rapier-bench": bench.main, "rapier-emulate": emulate.main,
            "rapier-agent": agent.main, "rapier-check": check_cli.main,
            "rapier-topology": topology_cli.main, "rapier-config": config_cli.main,
            "rapier-doctor": doctor.main}


def test_every_console_script_is_covered():
    from importlib.metadata import entry_points
    eps = entry_points()
    eps = eps.select(group="console_scripts") if hasattr(eps, "select") else \
        eps.get("console_scripts", [])
    ours = {e.name for e in eps if e.value.split(".")[0] in
            ("rapier_app", "enforcement", "mininet_tests")}
    assert ours and ours <= set(_entry_points())


@pytest.mark.parametrize("prog", ["rapier-controller", "rapier-sim", "rapier-experiment",
                                  "rapier-bench",
                                  "rapier-emulate", "rapier-agent", "rapier-check",
                                  "rapier-topology", "rapier-config", "rapier-doctor"])
def test_every_console_script_answers_version(prog, capsys):
    from importlib.metadata import version
    with pytest.raises(SystemExit) as exc:
        _entry_points()[prog](["--version"])
    assert exc.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"{prog} {version('rapier-coflow')}")
    commit = cli_common.git_commit()
    if commit:  # a checkout: the commit is named
        assert f"(git {commit})" in out


def test_version_names_the_checkout_commit():
    def head():
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()

    before = head()
    if not before:
        pytest.skip("not a git checkout")
    cli_common.git_commit.cache_clear()
    got = cli_common.git_commit().split("-")[0]
    assert got in (before, head())  # others may commit meanwhile


def test_verbosity_convention():
    p = cli_common.add_common_arguments(argparse.ArgumentParser(prog="x"),
                                        log_level_alias=True)
    lv = lambda argv, base=logging.WARNING: cli_common.log_level(p.parse_args(argv), base)
    assert lv([]) == logging.WARNING
    assert lv(["-v"]) == logging.INFO
    assert lv(["-vv"]) == logging.DEBUG
    assert lv(["-vvvv"]) == logging.DEBUG  # clamped
    assert lv(["-q"]) == logging.ERROR
    assert lv(["--quiet", "--quiet"]) == logging.CRITICAL
    assert lv([], logging.INFO) == logging.INFO  # the agent's default
    assert lv(["--log-level", "debug"], logging.INFO) == logging.DEBUG  # deprecated alias
    with pytest.raises(SystemExit):
        p.parse_args(["-v", "-q"])  # mutually exclusive
    with pytest.raises(SystemExit):
        p.parse_args(["--log-level", "loud"])


def test_deprecated_log_level_warns(capsys):
    p = cli_common.add_common_arguments(argparse.ArgumentParser(prog="rapier-agent"),
                                        log_level_alias=True)
    p.parse_args(["--log-level", "WARNING"])
    assert "--log-level is deprecated" in capsys.readouterr().err


# -- typed --param --------------------------------------------------------------------
def test_typed_params_against_rapier_constructor():
    got = typed_params("rapier", Rapier, {"delta_s": "5", "solver": "HIGHS", "fast": "false",
                                          "aggregate": "none", "aggregate_min_paths": "1e3",
                                          "lp_time_limit_s": "2.5"})
    assert got == {"delta_s": 5.0, "solver": "HIGHS", "fast": False, "aggregate": None,
                   "aggregate_min_paths": 1000, "lp_time_limit_s": 2.5}
    assert type(got["delta_s"]) is float and type(got["aggregate_min_paths"]) is int


@pytest.mark.parametrize("raw,msg", [
    ({"delta_s": "abc"}, "rapier.delta_s: expected a number, got 'abc'"),
    ({"delta_s": "nan"}, "rapier.delta_s: expected a number, got 'nan'"),
    ({"fast": "maybe"}, "rapier.fast: expected true or false, got 'maybe'"),
    ({"aggregate_min_paths": "1.5"}, "rapier.aggregate_min_paths: expected an integer, got '1.5'"),
    ({"delta_s": "none"}, "rapier.delta_s: expected a number, got 'none'"),
    ({"bogus": "1"}, "bad parameter rapier.bogus: rapier takes "),
])
def test_typed_param_errors_name_the_key(raw, msg):
    with pytest.raises(ParamError) as exc:
        typed_params("rapier", Rapier, raw)
    assert msg in str(exc.value)


def test_subclass_params_come_through_kwargs():
    # rapier-bssi's __init__(topology, seed, wc, **kw) passes the rest to Rapier
    cls = REGISTRY["rapier-bssi"] if "rapier-bssi" in REGISTRY else None
    if cls is None:
        from rapier_app.scheduling import load_all
        load_all()
        cls = REGISTRY["rapier-bssi"]
    assert typed_params("rapier-bssi", cls, {"wc": "order", "delta_s": "3"}) == \
        {"wc": "order", "delta_s": 3.0}


def test_cli_param_error_exits_2(tmp_path, capsys):
    rc = main(["--scenario", "fig1", "--schedulers", "rapier", "--param", "rapier.delta_s=abc",
               "--out", str(tmp_path), "-q"])
    assert rc == 2
    assert "rapier.delta_s: expected a number, got 'abc'" in capsys.readouterr().err
    # a value of the right type the scheduler refuses: named as written, before any
    # simulation or lower bound runs
    rc = main(["--scenario", "fig1", "--schedulers", "baseline,rapier", "--param",
               "rapier.delta_s=-1", "--out", str(tmp_path), "-q"])
    assert rc == 2
    assert "--param rapier.delta_s: must be >= 0, got -1.0" in capsys.readouterr().err
    # baseline (listed first) did not run either: no per-coflow row beyond the header
    assert len((tmp_path / "coflows.csv").read_text().splitlines()) <= 1


def test_cli_unknown_lp_solver_is_named(tmp_path, capsys):
    # before: every LP (4) raised, every coflow fell back to default forwarding, and
    # the run "succeeded" with no LP solved
    rc = main(["--scenario", "fig1", "--schedulers", "rapier", "--param",
               "rapier.solver=CLP", "--out", str(tmp_path), "-q"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "--param rapier.solver: OR-Tools LP solver 'CLP' is not available here" in err
    # a solver model_builder offers still runs and finds Fig. 1's optimum
    rc = main(["--scenario", "fig1", "--schedulers", "rapier", "--param",
               "rapier.solver=glop", "--json", "--no-plot", "--out", str(tmp_path / "ok"),
               "-q"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["rapier"]["avg_cct_s"] == pytest.approx(1.3)


def test_experiment_tries_zero_is_refused(tmp_path, capsys):
    from rapier_app.experiments import cli as exp_cli
    assert exp_cli.main(["run", "--experiment", "width", "--fabric", "fattree512",
                         "--values", "16", "--tries", "0", "--schemes", "baseline",
                         "--out", str(tmp_path / "w"), "-q"]) == 2
    assert "--tries: must be at least 1, got 0" in capsys.readouterr().err


# -- conflicting options ----------------------------------------------------------------
@pytest.mark.parametrize("argv,msg", [
    (["--synthetic", "2,3,0", "--topology", "fattree:4", "--limit", "3"],
     "--limit: applies only to --trace"),
    (["--scenario", "fig1", "--placement", "random"], "--placement: applies only to --trace"),
    (["--scenario", "fig1", "--sizes", "const:1"], "--sizes: applies only to --synthetic"),
    (["--scenario", "fig1", "--scale", "2"], "--scale: applies only to --scenario testbed"),
    (["--synthetic", "2,3,0", "--topology", "fattree:4", "--write-trace", "x.txt",
      "--tries", "2"], "--write-trace: writes one workload"),
    (["--synthetic", "2,3,0"], "--topology: required with --synthetic"),
    (["--scenario", "fig1", "--max-paths", "0"], "--max-paths: must be >= 1"),
])
def test_conflicting_options_are_refused(tmp_path, capsys, argv, msg):
    assert main(argv + ["--out", str(tmp_path), "-q", "--no-plot"]) == 2
    assert msg in capsys.readouterr().err
    assert not (tmp_path / "coflows.csv").exists()  # refused before running


# -- stdout is the result alone ------------------------------------------------------------
def _run_sim(args, env=None):
    return subprocess.run([sys.executable, "-m", "rapier_app.cli"] + args, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=env)


def test_highs_banner_never_reaches_json_stdout(tmp_path):
    args = ["--scenario", "fig1", "--schedulers", "rapier,baseline", "--json", "--no-plot",
            "--param", "rapier.solver=HIGHS", "--out", str(tmp_path)]
    p = _run_sim(args)
    assert p.returncode == 0, p.stderr
    obj = json.loads(p.stdout)  # the whole of stdout is one JSON object
    assert obj["rapier"]["avg_cct_s"] == pytest.approx(1.3)
    assert "HiGHS" not in p.stdout
    # the banner exists: with -v it is routed to stderr
    p = _run_sim(args + ["-v"])
    assert p.returncode == 0
    assert json.loads(p.stdout)["baseline"]["avg_cct_s"] == pytest.approx(1.5)
    assert "HiGHS" in p.stderr


def test_stdout_fd_to_redirects_native_writes(capfd):
    # (what a C++ solver does: write(2) on fd 1)
    with cli_common.stdout_fd_to(2):
        os.write(1, b"native-out\n")
    os.write(1, b"after\n")
    with cli_common.stdout_fd_to(None):  # /dev/null
        os.write(1, b"gone\n")
    out, err = capfd.readouterr()
    assert out == "after\n"
    assert err == "native-out\n"


# -- progress ---------------------------------------------------------------------------------
def test_progress_rules():
    class Tty:
        def isatty(self):
            return True

    class Pipe:
        def isatty(self):
            return False

    assert progress.progress_enabled(False, False, Pipe())
    assert progress.progress_enabled(False, True, Tty())
    assert not progress.progress_enabled(False, True, Pipe())  # --json off a terminal
    assert not progress.progress_enabled(True, False, Tty())  # --quiet


def test_progress_lines_on_stderr(tmp_path):
    base = ["--scenario", "fig1", "--schedulers", "baseline", "--no-plot", "--out",
            str(tmp_path)]
    p = _run_sim(base)
    assert p.returncode == 0
    assert "lower bound try 1/1" in p.stderr and "baseline try 1/1" in p.stderr
    assert "2/2" in p.stderr and "sim t=1.6 s" in p.stderr
    assert "\r" not in p.stderr  # not a terminal: plain lines
    for quiet in (["-q"], ["--json"]):  # -q, or --json with stderr a pipe: no progress
        p = _run_sim(base + quiet)
        assert p.returncode == 0
        assert "baseline try" not in p.stderr and "coflow/s" not in p.stderr


def test_phase_prints_only_slow_steps():
    import io
    import time
    buf = io.StringIO()
    with progress.phase("fast", stream=buf, threshold_s=0.2):
        pass
    with progress.phase("slow", stream=buf, threshold_s=0.05):
        time.sleep(0.15)
    lines = buf.getvalue().splitlines()
    assert lines[0] == "slow ..."
    assert lines[1].startswith("slow: done in ")
    assert len(lines) == 2


# -- outputs: summary provenance, crash-safe CSV -----------------------------------------------
def test_summary_records_options_version_commit(tmp_path, capsys):
    argv = ["--scenario", "fig1", "--schedulers", "rapier,baseline", "--param",
            "rapier.delta_s=5", "--reschedule", "coflow", "--max-paths", "2", "--no-plot",
            "-q", "--out", str(tmp_path)]
    assert main(argv) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["options"]["param"] == ["rapier.delta_s=5"]
    assert s["options"]["reschedule"] == "coflow" and s["options"]["max_paths"] == 2
    assert s["options"]["limit"] is None and s["options"]["quiet"] == 1
    assert s["params"] == {"rapier": {"delta_s": 5.0}}
    assert s["argv"] == argv
    from importlib.metadata import version
    assert s["version"] == version("rapier-coflow")
    assert s["git_commit"] == cli_common.git_commit()


PLUGIN = textwrap.dedent('''
    """Test plug-in schedulers, outside the rapier_app package."""
    import numpy as np

    from rapier_app.core.model import Allocation, Schedule
    from rapier_app.scheduling import Scheduler, max_min_fair


    class SmallestFirst(Scheduler):
        """Smallest remaining coflow first, strict priority, ECMP paths."""

        def __init__(self, topology, seed=0, max_paths=None, boost: float = 1.0):
            super().__init__(topology, seed, max_paths)
            self.boost = boost

        def schedule(self, now, coflows):
            residual = self.topology.capacity.astype(float)
            alloc = {}
            order = sorted(coflows, key=lambda c: (
                sum(f.remaining_bytes for f in c.active_flows()), c.coflow_id))
            for c in order:
                flows = c.active_flows()
                paths = [self.ecmp_path(f) for f in flows]
                links = [self.topology.path_links(p) for p in paths]
                for f, p, ls, r in zip(flows, paths, links, max_min_fair(links, residual)):
                    alloc[f.flow_id] = Allocation(p, float(r))
                    residual[ls] -= r
                np.maximum(residual, 0.0, out=residual)
            return Schedule(alloc, order=[c.coflow_id for c in order])


    class Crashes(SmallestFirst):
        """Raises once the first coflow has finished (a killed run)."""

        name = "crashes"

        def schedule(self, now, coflows):
            if now > 0 and len(coflows) == 1:
                raise RuntimeError("killed")
            return super().schedule(now, coflows)


    class NotAScheduler:
        pass
''')

# Two coflows h1 -> h2 at t=0 on a 2-port big switch (1 Gbit/s): x = 100 MiB, y = 200 MiB.
# T = 100 MiB / 1 Gbit/s = 0.8388608 s.  Smallest first: x ends at T, y at 3T (avg 2T);
# fair sharing: x at 2T, y at 3T (avg 2.5T).
TWO_COFLOWS = "2 2\nx 0 1 0 1 1:100.0\ny 0 1 0 1 1:200.0\n"
T = 100 * MIB * 8 / 1e9


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    d = tmp_path / "plugins"
    d.mkdir()
    (d / "my_rapier_plugin.py").write_text(PLUGIN)
    (d / "two.txt").write_text(TWO_COFLOWS)
    monkeypatch.syspath_prepend(str(d))
    load_all()  # the built-ins are registered before the snapshot
    before = dict(REGISTRY)
    yield d
    for k in set(REGISTRY) - set(before):
        del REGISTRY[k]
    sys.modules.pop("my_rapier_plugin", None)


def test_plugin_scheduler_by_module_class(plugin_dir, tmp_path, capsys):
    rc = main(["--trace", str(plugin_dir / "two.txt"), "--schedulers",
               "baseline,my_rapier_plugin:SmallestFirst", "--param", "SmallestFirst.boost=2",
               "--json", "--no-plot", "--no-bound", "-q", "--out", str(tmp_path / "o")])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["SmallestFirst"]["avg_cct_s"] == pytest.approx(2 * T, rel=1e-9)
    assert out["baseline"]["avg_cct_s"] == pytest.approx(2.5 * T, rel=1e-9)


@pytest.mark.parametrize("spec,msg", [
    ("my_rapier_plugin:Nope", "has no 'Nope'"),
    ("my_rapier_plugin:NotAScheduler", "is not a subclass"),
    ("no_such_module_xyz:Cls", "cannot import module 'no_such_module_xyz'"),
])
def test_bad_plugins_are_usage_errors(plugin_dir, tmp_path, capsys, spec, msg):
    rc = main(["--scenario", "fig1", "--schedulers", spec, "-q", "--out", str(tmp_path)])
    assert rc == 2
    assert msg in capsys.readouterr().err


def test_plugin_param_is_typed(plugin_dir, tmp_path, capsys):
    rc = main(["--scenario", "fig1", "--schedulers", "my_rapier_plugin:SmallestFirst",
               "--param", "SmallestFirst.boost=lots", "-q", "--out", str(tmp_path)])
    assert rc == 2
    assert "SmallestFirst.boost: expected a number, got 'lots'" in capsys.readouterr().err


def test_plugin_through_pythonpath_in_a_fresh_process(plugin_dir, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(plugin_dir))
    p = _run_sim(["--trace", str(plugin_dir / "two.txt"), "--schedulers",
                  "my_rapier_plugin:SmallestFirst", "--json", "--no-plot", "--out",
                  str(tmp_path / "o")], env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["SmallestFirst"]["avg_cct_s"] == pytest.approx(2 * T, rel=1e-9)
    # the LP bound: each alone, x takes T and y 2T
    assert out["SmallestFirst"]["ratio_to_lower_bound"] == pytest.approx(2 * T / (1.5 * T))


def test_killed_run_keeps_finished_coflows(plugin_dir, tmp_path):
    out = tmp_path / "o"
    with pytest.raises(RuntimeError, match="killed"):
        main(["--trace", str(plugin_dir / "two.txt"), "--schedulers",
              "baseline,my_rapier_plugin:Crashes", "--no-plot", "--no-bound", "-q",
              "--out", str(out)])
    rows = list(csv.DictReader(open(out / "coflows.csv")))
    # baseline finished both coflows, crashes finished x (at T) before it died
    assert [(r["scheduler"], r["coflow_id"]) for r in rows] == \
        [("baseline", "x"), ("baseline", "y"), ("crashes", "x")]
    assert float(rows[2]["cct_s"]) == pytest.approx(T, rel=1e-6)
    assert not (out / "summary.json").exists()


def test_csv_rows_sorted_by_arrival_at_the_end(tmp_path, capsys):
    assert main(["--synthetic", "6,2,0.05", "--topology", "fattree:4", "--schedulers",
                 "baseline,scheduling-only", "--no-plot", "--no-bound", "-q", "--out",
                 str(tmp_path)]) == 0
    rows = list(csv.DictReader(open(tmp_path / "coflows.csv")))
    assert [r["scheduler"] for r in rows] == ["baseline"] * 6 + ["scheduling-only"] * 6
    for part in (rows[:6], rows[6:]):
        assert [r["coflow_id"] for r in part] == [f"c{i}" for i in range(1, 7)]
