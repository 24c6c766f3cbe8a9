"""The systemd units (configs/systemd/) and their installer (scripts/install-services.sh).

The installer renders the units into temporary directories (unit, configuration and
state directories of the test's own), pointed at the venv that runs these tests.
Then:

* ``systemd-analyze verify`` accepts each rendered unit: no error and no warning
  about it (verify exits 0 on unknown keys and bad values, so its output is read
  too).  It works without systemd as PID 1 and checks that ExecStart's binary
  exists, so the controller's unit fails here until ``rapier-controller`` is in the
  venv; ``systemd-analyze security --offline`` keeps the hardening in place;
* each unit's ExecStart, expanded as systemd does (Environment=, then
  EnvironmentFile=, ``$VAR`` split into words, ``${VAR}`` one word), is STARTED FOR
  REAL in the unit's WorkingDirectory with a service's clean environment: the agent
  (``--no-enforce``, its socket in a temporary runtime directory standing for
  RuntimeDirectory=) answers ``GET /v1/health`` over its Unix socket, the controller
  (the installed config, its REST port and OpenFlow port free ones, no agents)
  answers ``GET /rapier/v1/health`` 200 and opens its database in the state
  directory; both stop on SIGTERM within the unit's TimeoutStopSec with a status
  systemd counts as clean.

The sandboxing options themselves (ProtectSystem= ...) need systemd to run the
unit; they are checked by ``systemd-analyze`` only.
"""

import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install-services.sh"
TEMPLATES = ROOT / "configs" / "systemd"
UNITS = ("rapier-controller", "rapier-agent")
#: systemd's PATH for services (systemd 252, /usr not split).
SERVICE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: The controller can take 10-20 s to start on a cold machine; generous.
CONTROLLER_START_S = 180.0
AGENT_START_S = 30.0
#: Highest ``systemd-analyze security`` exposure accepted (x10: 30 = 3.0, "OK").
MAX_EXPOSURE = 30


def the_venv() -> Path:
    """The venv running these tests (scripts/install.sh's ``<checkout>/.venv``), else
    the checkout's ``.venv``."""
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        return Path(sys.prefix)
    return ROOT / ".venv"


def systemd_analyze() -> str:
    exe = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
    assert os.access(exe, os.X_OK), ("systemd-analyze missing: apt-get install systemd "
                                     "(Debian's package; systemd need not run)")
    return exe


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_installer(base: Path, *extra: str) -> subprocess.CompletedProcess:
    """scripts/install-services.sh into ``base``/{units,etc,state}, never reloading
    the machine's systemd."""
    return subprocess.run(
        ["bash", str(SCRIPT), "--unit-dir", str(base / "units"), "--etc-dir",
         str(base / "etc"), "--state-dir", str(base / "state"), "--venv", str(the_venv()),
         "--no-reload", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


# -- a small reader of unit files -------------------------------------------------------
def parse_unit(path: Path) -> dict:
    """{section: {key: [values in order]}} of a unit file (comments, blank lines and
    backslash continuations as systemd reads them)."""
    sections: dict = {}
    cur = None
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            cur = sections.setdefault(line[1:-1], {})
            continue
        key, sep, value = line.partition("=")
        assert sep and cur is not None, f"{path}: not KEY=VALUE in a section: {line!r}"
        cur.setdefault(key.strip(), []).append(value.strip())
    return sections


def read_env_file(path: Path) -> dict:
    """KEY=VALUE lines of an EnvironmentFile= (comments skipped, quotes removed)."""
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        assert sep, f"{path}: not KEY=VALUE: {line!r}"
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def service_environment(service: dict, base_env: dict) -> dict:
    """``base_env`` plus Environment= then EnvironmentFile= (a ``-`` path may be
    missing), in systemd's order: the files win."""
    env = dict(base_env)
    for value in service.get("Environment", []):
        for word in shlex.split(value):
            key, sep, val = word.partition("=")
            assert sep, f"Environment={value}: {word!r} is not KEY=VALUE"
            env[key] = val
    for value in service.get("EnvironmentFile", []):
        optional = value.startswith("-")
        path = Path(value.lstrip("-"))
        if path.exists():
            env.update(read_env_file(path))
        else:
            assert optional, f"EnvironmentFile={value} does not exist"
    return env


def expand_exec(line: str, env: dict) -> list:
    """An ExecStart= line as argv: systemd's prefixes dropped, a word ``$VAR`` becomes
    the variable's words (none when empty), ``${VAR}`` inside a word its value."""
    line = line.lstrip("@-:+!")
    argv = []
    for word in shlex.split(line):
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if m:
            argv.extend(env.get(m.group(1), "").split())
            continue
        argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}",
                           lambda mm: env.get(mm.group(1), ""), word))
    assert "%" not in " ".join(argv), f"unit specifiers are not expanded here: {argv}"
    return argv


def unit_command(unit_file: Path, replace: dict = None) -> tuple:
    """(argv, env, cwd, stop timeout s) of a unit's ExecStart, with the paths of
    ``replace`` ({path a unit names: the test's path}) substituted in argv."""
    service = parse_unit(unit_file)["Service"]
    assert len(service["ExecStart"]) == 1, service["ExecStart"]
    env = service_environment(service, {"PATH": SERVICE_PATH, "LANG": "C.UTF-8"})
    argv = expand_exec(service["ExecStart"][0], env)
    for old, new in (replace or {}).items():
        argv = [a.replace(old, new) for a in argv]
    cwd = service.get("WorkingDirectory", ["/"])[-1].lstrip("-")
    stop = service.get("TimeoutStopSec", ["90s"])[-1]
    stop_s = float(stop[:-1]) if stop.endswith("s") else float(stop)
    return argv, env, cwd, stop_s


# -- running a unit's command ----------------------------------------------------------
class Service:
    """A unit's command line as a subprocess, its output in files."""

    def __init__(self, argv, env, cwd, logdir: Path, name: str):
        self.out = logdir / f"{name}.out"
        self.err = logdir / f"{name}.err"
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                         stdout=o, stderr=e, start_new_session=True)
        self.argv = argv

    def tail(self) -> str:
        text = self.err.read_text(errors="replace") + self.out.read_text(errors="replace")
        return f"argv {self.argv}\nexit {self.proc.poll()}\n--- output (tail) ---\n" \
               + text[-4000:]

    def wait_until(self, probe, timeout_s: float, what: str):
        """Call ``probe()`` until it returns something true; fail when the process
        exits first or ``timeout_s`` passes.  Returns the probe's value."""
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"exited before {what}:\n{self.tail()}")
            try:
                got = probe()
                if got:
                    return got
            except (OSError, http.client.HTTPException) as exc:
                last = exc
            time.sleep(0.25)
        pytest.fail(f"no {what} within {timeout_s:.0f} s (last error: {last!r}):\n"
                    f"{self.tail()}")

    def terminate(self, timeout_s: float) -> int:
        """SIGTERM (as systemctl stop); the exit status, or a failure after
        ``timeout_s`` (the process is then killed)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"still running {timeout_s:.0f} s after SIGTERM "
                        f"(TimeoutStopSec):\n{self.tail()}")

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def clean_exit(status: int) -> bool:
    """Exit statuses systemd counts as a clean stop of a service by default."""
    return status in (0, -signal.SIGTERM, -signal.SIGINT, -signal.SIGHUP, -signal.SIGPIPE)


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("agent", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def http_get(conn: http.client.HTTPConnection, path: str):
    """(status, JSON body) of GET ``path``."""
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    return resp.status, json.loads(body.decode()) if body else None


# -- fixtures ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The units, config and state directory as the installer leaves them in
    temporary directories."""
    base = tmp_path_factory.mktemp("services")
    res = run_installer(base)
    assert res.returncode == 0, res.stdout + res.stderr
    return base


# -- the installer ------------------------------------------------------------------------
def test_installer_renders_the_units_and_config(tmp_path):
    venv = the_venv()
    res = run_installer(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    for name in UNITS:
        text = (tmp_path / "units" / f"{name}.service").read_text()
        assert not re.search(r"@[A-Z_]+@", text), f"{name}: placeholder left"
        service = parse_unit(tmp_path / "units" / f"{name}.service")["Service"]
        assert service["ExecStart"][0].startswith(f"{venv}/bin/{name} ")
        assert f"-{tmp_path}/etc/" in " ".join(service["EnvironmentFile"])
        assert service["Restart"] == ["on-failure"]
    ctl = parse_unit(tmp_path / "units" / "rapier-controller.service")
    assert f"--config-file {tmp_path}/etc/rapier.conf" in ctl["Service"]["ExecStart"][0]
    assert ctl["Service"]["StateDirectory"] == ["rapier"]
    assert ctl["Service"]["WorkingDirectory"] == [f"{tmp_path}/state"]
    assert "network-online.target" in ctl["Unit"]["After"][0]
    assert ctl["Service"]["CapabilityBoundingSet"] == [""]
    agent = parse_unit(tmp_path / "units" / "rapier-agent.service")
    assert agent["Service"]["RuntimeDirectory"] == ["rapier-agent"]
    assert agent["Service"]["CapabilityBoundingSet"] == ["CAP_NET_ADMIN"]
    conf = (tmp_path / "etc" / "rapier.conf").read_text()
    assert re.findall(r"(?m)^state_db\s*=\s*(.*)$", conf) == \
        [f"{tmp_path}/state/controller.sqlite3"]
    assert stat.S_IMODE((tmp_path / "etc" / "rapier.conf").stat().st_mode) == 0o600
    assert (tmp_path / "state").is_dir()
    assert read_env_file(tmp_path / "etc" / "agent.env") == {"RAPIER_AGENT_ARGS": ""}
    assert read_env_file(tmp_path / "etc" / "controller.env") == \
        {"RAPIER_CONTROLLER_ARGS": ""}
    assert "systemctl enable --now rapier-controller" in res.stdout


def test_installer_is_idempotent_and_keeps_the_operators_config(tmp_path):
    assert run_installer(tmp_path).returncode == 0
    mine = "[rapier]\nscheduler = fair\nstate_db = /srv/mine.sqlite3\n"
    (tmp_path / "etc" / "rapier.conf").write_text(mine)
    (tmp_path / "etc" / "agent.env").write_text("RAPIER_AGENT_ARGS=--iface eth9\n")
    units = {n: (tmp_path / "units" / f"{n}.service").read_bytes() for n in UNITS}
    res = run_installer(tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "etc" / "rapier.conf").read_text() == mine
    assert (tmp_path / "etc" / "agent.env").read_text() == "RAPIER_AGENT_ARGS=--iface eth9\n"
    for n in UNITS:
        assert (tmp_path / "units" / f"{n}.service").read_bytes() == units[n]
        assert f"{n}.service unchanged" in res.stdout
    assert sorted(p.name for p in (tmp_path / "units").iterdir()) == \
        sorted(f"{n}.service" for n in UNITS)


def test_installer_refuses_bad_input(tmp_path):
    res = run_installer(tmp_path, "--state-dir", "relative/state")
    assert res.returncode == 2 and "absolute" in res.stderr
    res = subprocess.run(["bash", str(SCRIPT), "--unit-dir", str(tmp_path / "u"),
                          "--etc-dir", str(tmp_path / "e"), "--venv", str(tmp_path / "nope"),
                          "--no-reload"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "install.sh" in res.stderr
    assert not (tmp_path / "u").exists()


# -- the parser the runs below rely on ------------------------------------------------------
def test_exec_expansion_like_systemd():
    env = {"A": "--x 1  --y", "E": "", "B": "b c"}
    assert expand_exec("-/bin/p $A $E ${B} pre${B}post $UNSET", env) == \
        ["/bin/p", "--x", "1", "--y", "b c", "preb cpost"]


# -- systemd-analyze ------------------------------------------------------------------------
@pytest.mark.parametrize("name", UNITS)
def test_systemd_analyze_verify(installed, name):
    unit = installed / "units" / f"{name}.service"
    res = subprocess.run([systemd_analyze(), "verify", str(unit)], capture_output=True,
                         text=True, timeout=120)
    about_it = [ln for ln in (res.stdout + res.stderr).splitlines()
                if name in ln or str(unit) in ln]
    assert res.returncode == 0 and not about_it, (
        f"systemd-analyze verify {unit}: exit {res.returncode}\n{res.stdout}{res.stderr}")


@pytest.mark.parametrize("name", UNITS)
def test_systemd_analyze_security(installed, name):
    unit = installed / "units" / f"{name}.service"
    res = subprocess.run([systemd_analyze(), "security", "--offline=true",
                          f"--threshold={MAX_EXPOSURE}", "--no-pager", str(unit)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"exposure above {MAX_EXPOSURE / 10}:\n{res.stdout}{res.stderr}"


# -- the units' commands, run for real --------------------------------------------------------
def test_agent_unit_command_serves_health_on_its_socket(installed, tmp_path):
    unit = installed / "units" / "rapier-agent.service"
    service = parse_unit(unit)["Service"]
    runtime = tmp_path / "run" / service["RuntimeDirectory"][0]   # RuntimeDirectory=
    runtime.mkdir(parents=True, mode=int(service["RuntimeDirectoryMode"][0], 8))
    # the operator's options, as /etc/rapier/agent.env holds them: no tc, and one
    # interface named (a host with several needs --iface)
    (installed / "etc" / "agent.env").write_text("RAPIER_AGENT_ARGS=--no-enforce --iface lo\n")
    argv, env, cwd, stop_s = unit_command(unit, {"/run/rapier-agent": str(runtime)})
    sock = runtime / "agent.sock"
    assert argv == [f"{the_venv()}/bin/rapier-agent", "--listen", f"unix:{sock}",
                    "--no-enforce", "--iface", "lo"]
    env["RUNTIME_DIRECTORY"] = str(runtime)
    svc = Service(argv, env, cwd, tmp_path, "agent")
    try:
        status, body = svc.wait_until(
            lambda: sock.exists() and http_get(_UnixHTTP(str(sock), 5), "/v1/health"),
            AGENT_START_S, "GET /v1/health on the agent's socket")
        assert status == 200, (status, body)
        assert body["ok"] is True and body["enforce"] is False and body["iface"] == "lo"
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600
        rc = svc.terminate(stop_s)
        assert clean_exit(rc), f"exit {rc} after SIGTERM:\n{svc.tail()}"
        assert not sock.exists(), "the agent left its socket behind"
    finally:
        svc.kill()


def test_controller_unit_command_serves_health(installed, tmp_path):
    venv = the_venv()
    unit = installed / "units" / "rapier-controller.service"
    assert os.access(venv / "bin" / "rapier-controller", os.X_OK), (
        f"{venv}/bin/rapier-controller is missing (setup.py's console script; "
        f"reinstall: scripts/install.sh)")
    rest, ofp = free_port(), free_port()
    conf = installed / "etc" / "rapier.conf"       # the installed config, as an operator edits it
    text = conf.read_text()
    text, n_rest = re.subn(r"(?m)^#?rest_port\s*=.*$", f"rest_port = {rest}", text)
    text, n_agent = re.subn(r"(?m)^agent_url\s*=.*$", "agent_url =", text)
    assert (n_rest, n_agent) == (1, 1), "configs/rapier.conf: rest_port/agent_url lines moved"
    conf.write_text(text)
    (installed / "etc" / "controller.env").write_text(
        f"RAPIER_CONTROLLER_ARGS=--ofp-tcp-listen-port {ofp}\n")
    argv, env, cwd, stop_s = unit_command(unit)
    assert argv == [f"{venv}/bin/rapier-controller", "--config-file", str(conf),
                    "--ofp-tcp-listen-port", str(ofp)]
    state = installed / "state"
    assert cwd == str(state)
    env["STATE_DIRECTORY"] = str(state)
    svc = Service(argv, env, cwd, tmp_path, "controller")
    try:
        status, body = svc.wait_until(
            lambda: http_get(http.client.HTTPConnection("127.0.0.1", rest, timeout=5),
                             "/rapier/v1/health"),
            CONTROLLER_START_S, f"GET /rapier/v1/health on 127.0.0.1:{rest}")
        assert status == 200, (status, body)
        assert isinstance(body, dict), body
        assert (state / "controller.sqlite3").is_file(), (
            f"no database at the config's state_db; state dir: {os.listdir(state)}\n"
            f"{svc.tail()}")
        rc = svc.terminate(stop_s)
        assert clean_exit(rc), f"exit {rc} after SIGTERM:\n{svc.tail()}"
    finally:
        svc.kill()
