"""``rapier-config check`` (rapier_app/controller/configcheck.py, rapier_app/config_cli.py):
good configurations pass with one line; each broken one exits 2 naming the option
(``section.option``) and the file:line where it is set; every problem of a file is
listed, not only the first; and the checker refuses with the text the controller
itself prints when ``ryu-manager`` refuses to start."""

import json
import os
import sqlite3
import subprocess

import pytest

from rapier_app.config_cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEAD = "# a controller configuration\n[rapier]\nagent_url =\nstate_db = off\n"
#: line of the first option after HEAD
LINE = HEAD.count("\n") + 1


def write(tmp_path, body, name="controller.conf", head=HEAD, mode=0o600):
    f = tmp_path / name
    f.write_text(head + body.format(tmp=tmp_path))
    os.chmod(f, mode)
    return f


def run(capsys, *argv):
    rc = main(["check", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def errors(err):
    """The problem lines of stderr (without the count line and warnings)."""
    return [ln for ln in err.splitlines()
            if not ln.startswith("rapier-config:") and ": warning: " not in ln]


# -- good ----------------------------------------------------------------------------------
@pytest.mark.parametrize("conf", ["rapier.conf", "fattree4.conf", "mininet-leafspine.conf"])
def test_shipped_configs_are_good(capsys, conf):
    rc, out, err = run(capsys, os.path.join(REPO, "configs", conf))
    assert rc == 0, err
    assert err == ""
    assert len(out.splitlines()) == 1
    assert out.startswith(os.path.join(REPO, "configs", conf) + ": ok: scheduler rapier on ")


def test_good_config_with_a_topology_file_summarises_it(tmp_path, capsys):
    topo = os.path.join(REPO, "configs", "topologies", "ring-two-speeds.yaml")
    f = write(tmp_path, f"topology = file:{topo}\nscheduler = baseline\nrest_port = 8181\n")
    rc, out, err = run(capsys, f)
    assert rc == 0, err
    line = out.strip()
    assert line.startswith(f"{f}: ok: scheduler baseline on ")
    assert "REST 127.0.0.1:8181 (token off)" in line
    assert "agents off; state_db off" in line


# -- broken, one problem each ---------------------------------------------------------------
# (id, body, option named, line offset of the setting from LINE, words of the message)
BROKEN = [
    ("unknown-option", "schedular = rapier\n", "schedular", 0, "did you mean scheduler?"),
    ("bad-number", "max_flows_per_coflow = abc\n", "max_flows_per_coflow", 0,
     "not a valid int: invalid literal"),
    ("bad-float", "delta_s = soon\n", "delta_s", 0, "not a valid float"),
    ("bad-bool", "broker = maybe\n", "broker", 0, "not a valid bool"),
    ("out-of-range-port", "seed = 1\nagent_port = 70000\n", "agent_port", 1,
     "less than or equal to 65535"),
    ("out-of-range-fraction", "idle_fraction = 1.5\n", "idle_fraction", 0,
     "must be in [0, 1), got 1.5"),
    ("negative-time", "\nstats_interval_s = -1\n", "stats_interval_s", 1,
     "must be a positive number"),
    ("bad-token", "rest_token = short\n", "rest_token", 0, "at least 16 characters"),
    ("bad-agent-url", "agent_url = ftp://{{ip}}\n", "agent_url", 0,
     "must start with http:// or unix:"),
    ("bad-link-capacities", "link_capacities = s1-s2\n", "link_capacities", 0,
     "must be NODE-NODE=BPS"),
    ("topology-file-does-not-parse", "topology = file:{tmp}/bad.yaml\n", "topology", 0,
     "bad.yaml:2: yaml: does not parse"),
    ("topology-file-missing", "topology = file:{tmp}/none.yaml\n", "topology", 0,
     "none.yaml"),
    ("topology-file-invalid", "topology = file:{tmp}/unknown-switch.yaml\n", "topology", 0,
     "unknown switch 's9'"),
    ("topology-spec-unknown", "topology = torus:3\n", "topology", 0, "unknown kind 'torus'"),
    ("topology-spec-bad-parameters", "topology = fattree:3\n", "topology", 0,
     "fat-tree arity must be an even integer >= 2, got 3"),
    ("scheduler-unknown", "scheduler = nope\n", "scheduler", 0, "unknown scheduler 'nope'"),
    ("discover-without-observe-links", "topology = discover\n", "topology", 0,
     "start rapier-controller (or ryu-manager) with --observe-links"),
    ("state-db-not-a-database", "state_db = {tmp}/junk.sqlite3\n", "state_db", 0,
     "not a usable RAPIER database"),
    ("state-db-newer-schema", "state_db = {tmp}/future.sqlite3\n", "state_db", 0,
     "schema version 99 is newer"),
    ("state-db-under-a-file", "state_db = {tmp}/junk.sqlite3/db\n", "state_db", 0,
     "is not a writable directory"),
]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "bad.yaml").write_text("switches: [\n")
    (tmp_path / "unknown-switch.yaml").write_text(
        "default_capacity_bps: 1G\nswitches:\n  s1: {dpid: 1}\n  s2: {dpid: 2}\nhosts:\n"
        "  h1: {ip: 10.0.0.1, mac: 02:00:00:00:00:01, switch: s1, port: 1}\nlinks:\n"
        "  - {a: s1, a_port: 2, b: s9, b_port: 1}\n")
    (tmp_path / "junk.sqlite3").write_bytes(b"this is not sqlite" * 100)
    db = sqlite3.connect(tmp_path / "future.sqlite3")
    db.execute("PRAGMA user_version = 99")
    db.close()
    return tmp_path


@pytest.mark.parametrize("body,option,offset,words", [b[1:] for b in BROKEN],
                         ids=[b[0] for b in BROKEN])
def test_broken_config_names_option_and_line(files, capsys, body, option, offset, words):
    f = write(files, body)
    rc, out, err = run(capsys, f)
    assert rc == 2, err
    assert out == ""
    lines = errors(err)
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{f}:{LINE + offset}: rapier.{option}: "), err
    assert words in lines[0], err
    assert err.splitlines()[-1] == f"rapier-config: {f}: 1 problem"


def test_config_file_that_does_not_parse(tmp_path, capsys):
    f = write(tmp_path, "seed = 1\nthis line has no value\n")
    rc, _, err = run(capsys, f)
    assert rc == 2
    assert errors(err) == [f"{f}:{LINE + 1}: does not parse: No ':' or '=' found in "
                           f"assignment: 'this line has no value'"]


def test_missing_config_file(tmp_path, capsys):
    rc, _, err = run(capsys, tmp_path / "nowhere.conf")
    assert rc == 2
    assert errors(err) == [f"{tmp_path / 'nowhere.conf'}: cannot read the configuration "
                           f"file: No such file or directory"]


def test_option_outside_a_section(tmp_path, capsys):
    f = write(tmp_path, "", head="scheduler = rapier\n")
    rc, _, err = run(capsys, f)
    assert rc == 2
    assert errors(err) == [f"{f}:1: does not parse: Section must be started before "
                           f"assignment"]


# -- conflicting options: located at the option that is set ------------------------------
@pytest.mark.parametrize("body,via,option,words", [
    ("rest_host = 0.0.0.0\n", "rapier.rest_host", "rapier.rest_token",
     "required when REST listens off loopback"),
    ("agent_retry_min_s = 40\n", "rapier.agent_retry_min_s", "rapier.agent_retry_max_s",
     "must be >= agent_retry_min_s (40.0), got 30.0"),
], ids=["rest-off-loopback-without-token", "retry-min-above-default-max"])
def test_conflicting_options(tmp_path, capsys, body, via, option, words):
    f = write(tmp_path, body)
    rc, _, err = run(capsys, f)
    assert rc == 2
    (line,) = errors(err)
    assert line.startswith(f"{f}:{LINE}: {via} conflicts with {option} (not set: its "
                           f"default): "), line
    assert words in line


def test_ryu_flag_in_default_section_counts(tmp_path, capsys):
    # [DEFAULT] wsapi_host off loopback needs the token too; observe_links there
    # makes topology = discover acceptable
    f = write(tmp_path, "topology = discover\n",
              head="[DEFAULT]\nwsapi_host = 10.1.2.3\nobserve_links = true\n" + HEAD)
    rc, _, err = run(capsys, f)
    assert rc == 2
    (line,) = errors(err)
    assert line.startswith(f"{f}:2: DEFAULT.wsapi_host conflicts with rapier.rest_token")
    f = write(tmp_path, "topology = discover\n", name="ok.conf",
              head="[DEFAULT]\nobserve_links = true\n" + HEAD)
    rc, out, err = run(capsys, f)
    assert rc == 0, err
    assert "topology discover (built as switches connect)" in out
    f = write(tmp_path, "topology = discover\n", name="flag.conf")
    assert run(capsys, f, "--observe-links")[0] == 0


# -- every problem, not only the first -------------------------------------------------------
def test_every_problem_is_listed_in_line_order(files, capsys):
    f = write(files, "topology = file:{tmp}/bad.yaml\n"       # LINE
                     "schedular = rapier\n"                    # +1
                     "max_flows_per_coflow = abc\n"            # +2
                     "agent_port = 70000\n"                    # +3
                     "rest_token = short\n"                    # +4
                     "agent_retry_min_s = 40\n"                # +5
                     "idle_fraction = 1.5\n"                   # +6
                     "delta_s = 5\n"
                     "delta_s = 6\n"                           # +8: set twice (warning)
                     "[mystery]\nx = 1\n")                     # unknown section (warning)
    rc, _, err = run(capsys, f)
    assert rc == 2
    got = [(ln.split(": ")[0], ln.split(": ")[1].split(" ")[0]) for ln in errors(err)]
    assert got == [(f"{f}:{LINE}", "rapier.topology"), (f"{f}:{LINE + 1}", "rapier.schedular"),
                   (f"{f}:{LINE + 2}", "rapier.max_flows_per_coflow"),
                   (f"{f}:{LINE + 3}", "rapier.agent_port"),
                   (f"{f}:{LINE + 4}", "rapier.rest_token"),
                   (f"{f}:{LINE + 5}", "rapier.agent_retry_min_s"),
                   (f"{f}:{LINE + 6}", "rapier.idle_fraction")]
    warnings = [ln for ln in err.splitlines() if ": warning: " in ln]
    assert warnings == [f"{f}:{LINE + 8}: warning: rapier.delta_s: set 2 times (lines "
                        f"{LINE + 7}, {LINE + 8}); the last one wins",
                        f"{f}: warning: [mystery]: unknown section (the controller reads "
                        f"[rapier] and Ryu's [DEFAULT]); ignored"]
    assert err.splitlines()[-1] == f"rapier-config: {f}: 7 problems"


def test_later_file_wins_and_is_named(tmp_path, capsys):
    base = write(tmp_path, "seed = 1\n", name="base.conf")
    site = write(tmp_path, "\n\nseed = -4\n", name="site.conf")
    rc, _, err = run(capsys, base, site)
    assert rc == 2
    (line,) = errors(err)
    assert line.startswith(f"{site}:{LINE + 2}: rapier.seed: must be an integer >= 0, got -4")
    assert run(capsys, site, base)[0] == 0  # base's seed = 1 wins


# -- warnings ------------------------------------------------------------------------------------
def test_token_in_a_file_others_can_read_is_a_warning(tmp_path, capsys):
    token = "abcdefghijklmnopqrstuvwxyz012345"
    f = write(tmp_path, f"rest_token = {token}\n", mode=0o644)
    rc, out, err = run(capsys, f)
    assert rc == 0
    assert "(token on)" in out
    assert err.strip() == (f"{f}:{LINE}: warning: rapier.rest_token: {f} holds a token and "
                           f"has mode 0644: other users can read it; chmod 600 {f}")
    rc, _, err = run(capsys, f, "--strict")
    assert rc == 2
    os.chmod(f, 0o600)
    rc, _, err = run(capsys, f, "--strict")
    assert rc == 0 and err == ""


def test_ryu_key_typo_is_a_warning(tmp_path, capsys):
    f = write(tmp_path, "", head="[DEFAULT]\nobserve_link = true\n" + HEAD)
    rc, _, err = run(capsys, f)
    assert rc == 0
    assert "f:2: warning: DEFAULT.observe_link: not an option of ryu-manager (did you mean " \
           "observe_links?)" in err.replace(str(f), "f")


# -- outputs and options -----------------------------------------------------------------------
def test_json_output(files, capsys):
    f = write(files, "scheduler = nope\nseed = x\n")
    rc, out, _ = run(capsys, f, "--json")
    assert rc == 2
    doc = json.loads(out)
    assert doc["ok"] is False and doc["summary"] == ""
    assert [(p["option"], p["line"], p["severity"]) for p in doc["problems"]] == \
        [("scheduler", LINE, "error"), ("seed", LINE + 1, "error")]
    assert doc["problems"][1]["message"].startswith("seed: not a valid int")


def test_workdir_resolves_relative_paths(files, capsys):
    f = write(files, "topology = file:bad.yaml\n")
    rc, _, err = run(capsys, f, "--workdir", files)
    assert rc == 2 and "bad.yaml:2: yaml: does not parse" in err
    (files / "sub").mkdir()
    rc, _, err = run(capsys, f, "--workdir", files / "sub")
    assert rc == 2 and "No such file" in err
    assert run(capsys, f, "--workdir", files / "nope")[0] == 2


def test_nothing_is_written(files, capsys):
    # a new database is only checked for, not created
    f = write(files, "state_db = {tmp}/state/new.sqlite3\n")
    assert run(capsys, f)[0] == 0
    assert not (files / "state").exists()


# -- the checker and the controller refuse with the same words -----------------------------------
@pytest.mark.parametrize("body,option", [
    ("topology = leafspine:2,2,2\nmax_flows_per_coflow = abc\n", "max_flows_per_coflow"),
    ("topology = file:{tmp}/bad.yaml\n", "topology"),
    ("topology = leafspine:2,2,2\nrest_host = 0.0.0.0\n", "rest_token"),
], ids=["bad-number", "topology-file-does-not-parse", "rest-off-loopback-without-token"])
def test_checker_and_controller_refuse_with_the_same_message(files, body, option):
    from mininet_tests.ryuproc import controller_command, free_port
    from rapier_app.controller.configcheck import check_config

    f = write(files, body)
    res = subprocess.run(controller_command("--config-file",
                          str(f), "--wsapi-port", str(free_port()), "--ofp-tcp-listen-port",
                          str(free_port())), cwd=files,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    out = res.stdout.decode(errors="replace")
    assert res.returncode == 2, out[-2000:]
    refusal = out.rstrip().splitlines()[-1]
    assert refusal.startswith(f"rapier: {option}: "), out[-2000:]
    cwd = os.getcwd()
    os.chdir(files)
    try:
        result = check_config([str(f)])
    finally:
        os.chdir(cwd)
    assert [p.option for p in result.errors] == [option]
    assert f"rapier: {result.errors[0].message}" == refusal
