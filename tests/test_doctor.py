"""``rapier-doctor`` (rapier_app/doctor.py): each check fed broken environments through
its injectable runners (OVS down or absent, a kernel-datapath bridge without the
module, no sch_htb or cls_u32, no tc, the wrong eventlet, a cold kernel cache, the
agent socket missing, of the wrong mode or stale), the report and exit status, and
one real run on this machine (root, Open vSwitch started if needed, a real agent on a
Unix socket) in which every check passes."""

import json
import os
import socket
import stat
import threading

import pytest

from rapier_app import doctor
from rapier_app.doctor import FAIL, OK, WARN, Check, KernelCache, Result

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FakeRun:
    """A command runner answering by the first words of argv; records the calls."""

    def __init__(self, answers):
        self.answers = answers  # [(prefix tuple, Result or callable(argv, input))]
        self.calls = []

    def __call__(self, argv, input=None, timeout=20.0):
        self.calls.append((list(argv), input))
        for prefix, res in self.answers:
            if tuple(argv[:len(prefix)]) == tuple(prefix):
                return res(argv, input) if callable(res) else res
        return Result(127, "", f"{argv[0]}: command not found")


def by_name(checks):
    return {c.name: c for c in checks}


# -- python ------------------------------------------------------------------------------
@pytest.mark.parametrize("version,status", [((3, 8, 10), FAIL), ((3, 9, 18), FAIL),
                                            ((3, 10, 0), OK), ((3, 11, 7), OK),
                                            ((3, 13, 5), OK)],
                         ids=["3.8-too-old", "3.9-below-os-ken", "3.10", "3.11", "3.13"])
def test_python_version(version, status):
    c = doctor.check_python(version, "cpython")
    assert c.status == status
    assert ".".join(map(str, version)) in c.detail
    assert (c.fix != "") == (status != OK)


# -- the OpenFlow stack ------------------------------------------------------------------------
@pytest.mark.parametrize("stack,band", [("os-ken", "3.11"), ("os-ken", "3.13"),
                                        ("ryu", "3.11"), ("ryu", "3.13")])
def test_pins_copy_equals_requirements_files(stack, band):
    pins = doctor.read_pins(os.path.join(REPO, f"requirements-{stack}.txt"), band)
    pins.pop("setuptools", None)
    assert pins == doctor.PINS[(stack, band)]
    assert doctor.read_pins("/nonexistent/requirements.txt") == {}


@pytest.mark.parametrize("installed,env,status,detail", [
    ({"os-ken": "4.2.2"}, {}, OK, "os-ken 4.2.2 (native threads)"),
    ({"os-ken": "4.2.2"}, {"OSKEN_HUB_TYPE": "eventlet"}, OK, "os-ken 4.2.2 (eventlet)"),
    ({"ryu": "4.34"}, {}, OK, "ryu 4.34 (eventlet)"),
    ({"ryu": "4.34", "os-ken": "4.2.2"}, {"RAPIER_OF_STACK": "ryu"}, OK, "ryu 4.34 (eventlet); "
     "Ryu and os-ken both installed"),
    ({"os-ken": "3.0.1"}, {}, FAIL, "os-ken 3.0.1 installed, want ==4.2.2"),
    ({}, {}, FAIL, "no OpenFlow stack"),
    ({"os-ken": "4.2.2"}, {"RAPIER_OF_STACK": "ryu"}, FAIL, "RAPIER_OF_STACK: ryu is not installed"),
    ({"os-ken": "4.2.2"}, {"RAPIER_OF_STACK": "floodlight"}, FAIL,
     "RAPIER_OF_STACK: 'floodlight' is not a stack"),
], ids=["os-ken", "os-ken-eventlet", "ryu", "both-env-picks", "old-os-ken", "none",
        "env-names-missing", "env-unknown"])
def test_stack_check(installed, env, status, detail):
    c = doctor.check_stack(installed.get, env)
    assert c.status == status and c.detail.startswith(detail), c
    assert (c.fix != "") == (status != OK)
    if status != OK:
        assert "scripts/install.sh" in c.fix


@pytest.mark.parametrize("installed,py,status,bad", [
    ({"ryu": "4.34", "eventlet": "0.33.3", "dnspython": "2.6.1"}, (3, 11, 7), OK, None),
    ({"ryu": "4.34", "eventlet": "0.30.2", "dnspython": "2.6.1"}, (3, 11, 7), FAIL, "eventlet"),
    ({"ryu": "4.34", "eventlet": "0.35.0", "dnspython": "2.6.1"}, (3, 11, 7), FAIL, "eventlet"),
    ({"ryu": "4.34", "eventlet": "0.33.3", "dnspython": "1.16.0"}, (3, 11, 7), FAIL, "dnspython"),
    ({"ryu": "4.34", "eventlet": "0.33.3", "dnspython": "2.6.1"}, (3, 13, 5), FAIL, "eventlet"),
    ({"ryu": "4.34", "eventlet": "0.41.3", "dnspython": "2.7.0"}, (3, 13, 5), OK, None),
    ({"ryu": "4.34", "dnspython": "2.7.0"}, (3, 13, 5), FAIL, "eventlet"),
], ids=["pinned-3.11", "old-eventlet", "new-eventlet-on-3.11", "old-dnspython",
        "0.33-on-3.13", "0.41-on-3.13", "missing"])
def test_eventlet_versions_on_ryu(installed, py, status, bad):
    c = doctor.check_eventlet(installed.get, py, {})
    assert c.status == status, c
    if bad:
        assert "scripts/install.sh" in c.fix and f"pip install '{bad}" in c.fix
        assert f"{bad} {installed.get(bad) or 'missing'}" in c.detail


def test_eventlet_is_not_checked_on_native_threads():
    c = doctor.check_eventlet({"os-ken": "4.2.2"}.get, (3, 13, 5), {})
    assert c.status == OK and c.detail == "not used (os-ken on native threads)"


def test_controller_import_failure_names_the_error():
    run = FakeRun([((doctor.sys.executable, "-c"), Result(
        1, "", "Traceback (most recent call last):\n  ...\nImportError: cannot import name "
               "'ALREADY_HANDLED' from 'eventlet.wsgi'\n"))])
    c = doctor.check_controller_import(run)
    assert c.status == FAIL
    assert c.detail.startswith("import rapier_app.controller failed: ImportError: cannot "
                               "import name 'ALREADY_HANDLED'")
    assert "scripts/install.sh" in c.fix


# -- kernels -------------------------------------------------------------------------------------
@pytest.mark.parametrize("state,status,fix", [
    (KernelCache(45, 45, "/c", True, True), OK, ""),
    (KernelCache(42, 45, "/c", True, True), OK, ""),
    (KernelCache(0, 45, "/c", True, True), FAIL, "python -m rapier_app.warmup"),
    (KernelCache(0, 45, "/ro", False, True), FAIL, "NUMBA_CACHE_DIR"),
    (KernelCache(10, 45, "/c", True, True), WARN, "python -m rapier_app.warmup"),
    (KernelCache(0, 0, "", False, False), WARN, "RAPIER_KERNELS"),
], ids=["warm", "warm-but-unused-paths", "cold", "cold-unwritable", "mostly-stale",
        "disabled"])
def test_kernel_cache(state, status, fix):
    c = doctor.check_kernels(lambda: state)
    assert c.status == status
    assert fix in c.fix
    if state.enabled:
        assert f"{state.cached} of {state.total} kernels" in c.detail


def test_kernel_cache_probe_counts_this_checkout():
    st = doctor.kernel_cache_state()
    from rapier_app import kernels
    assert st.enabled == kernels.ENABLED
    if st.enabled:
        assert st.total >= 40 and 0 <= st.cached <= st.total
        assert os.path.isabs(st.cache_dir)


# -- Open vSwitch ------------------------------------------------------------------------------
VSCTL = ("ovs-vsctl", "--timeout=3")
VERSION = (VSCTL + ("get", "Open_vSwitch", ".", "ovs_version"), Result(0, '"3.1.0"\n', ""))
APPCTL_OK = (("ovs-appctl",), Result(0, "ovs-vswitchd (Open vSwitch) 3.1.0\n", ""))
TYPES = (VSCTL + ("get", "Open_vSwitch", ".", "datapath_types"),
         Result(0, "[netdev, system]\n", ""))


def bridges(text):
    return (VSCTL + ("--format=csv",), Result(0, text, ""))


def test_ovs_down():
    run = FakeRun([(VSCTL, Result(1, "", "ovs-vsctl: unix:/var/run/openvswitch/db.sock: "
                                         "database connection failed (No such file or "
                                         "directory)\n"))])
    ovs, dp = doctor.check_ovs(run, lambda: False)
    assert ovs.status == FAIL and "database connection failed" in ovs.detail
    assert "ovs-ctl start" in ovs.fix
    assert dp.status == WARN and dp.detail.startswith("not checked")


def test_ovs_not_installed():
    ovs, dp = doctor.check_ovs(FakeRun([]), lambda: False)
    assert ovs.status == FAIL and "not installed" in ovs.detail
    assert ovs.fix == "apt-get install openvswitch-switch"


def test_ovs_vswitchd_down():
    run = FakeRun([VERSION, (("ovs-appctl",), Result(1, "", "ovs-appctl: cannot connect to "
                                                            "\"/var/run/openvswitch/ovs-vswitchd.ctl\""))])
    ovs, dp = doctor.check_ovs(run, lambda: False)
    assert ovs.status == FAIL and "ovs-vswitchd does not" in ovs.detail


def test_ovs_userspace_datapath_only():
    run = FakeRun([VERSION, APPCTL_OK, TYPES, bridges("s1,netdev\ns2,netdev\n")])
    ovs, dp = doctor.check_ovs(run, lambda: False)
    assert ovs.status == OK and "3.1.0" in ovs.detail
    assert dp.status == OK
    assert dp.detail.startswith("userspace (netdev) datapath only: no openvswitch kernel "
                                "module; 2 bridge(s)")
    assert "ovsuser" in dp.detail and "ethtool -K" in dp.detail


def test_ovs_kernel_bridge_without_the_module():
    # a bridge left by a run without datapath='user' (type "" = system)
    run = FakeRun([VERSION, APPCTL_OK, TYPES, bridges("s1,netdev\ns9,\n")])
    ovs, dp = doctor.check_ovs(run, lambda: False)
    assert ovs.status == OK
    assert dp.status == FAIL
    assert dp.detail.startswith("bridge(s) s9 use a datapath this host lacks (usable: netdev)")
    assert "ovs-vsctl del-br" in dp.fix


def test_ovs_kernel_datapath_with_the_module():
    run = FakeRun([VERSION, APPCTL_OK, TYPES, bridges("s9,\n")])
    ovs, dp = doctor.check_ovs(run, lambda: True)
    assert dp.status == OK and dp.detail.startswith("kernel (system) datapath available")


CTL = VSCTL + ("--format=csv", "--no-headings", "--data=bare", "--columns=_uuid,max_backoff")
BRS = VSCTL + ("--format=csv", "--no-headings", "--data=bare", "--columns=name,controller")


@pytest.mark.parametrize("controllers,bridges_,status,named", [
    ("u1,1000\nu2,1000\n", "s1,u1\ns2,u2\n", OK, None),
    ("u1,1000\nu2,\n", "s1,u1\ns2,u2\n", WARN, "s2 retry a lost controller only every 8 s"),
    ("u1,4000\nu2,900\n", "s1,u1\ns2,u2\n", WARN, "s1 retry a lost controller only every 4 s"),
    ("", "s1,\n", OK, "no bridge has a controller"),
], ids=["1000ms", "unset-is-8s", "4s", "no-controller"])
def test_ovs_reconnect_backoff(controllers, bridges_, status, named):
    run = FakeRun([(CTL, Result(0, controllers, "")), (BRS, Result(0, bridges_, ""))])
    c = doctor.check_ovs_reconnect(run)
    assert c.status == status, c
    assert named is None or named in c.detail, c
    assert ("max_backoff=1000" in c.fix) == (status == WARN)


def test_ovs_reconnect_not_checked_when_ovs_is_down():
    c = doctor.check_ovs_reconnect(FakeRun([]))
    assert c.status == WARN and c.detail.startswith("not checked")


# -- traffic control --------------------------------------------------------------------------
UNSHARE = ("unshare", "--net", "tc", "-batch", "-")


def test_tc_runs_the_agents_commands_in_a_throwaway_namespace():
    run = FakeRun([(UNSHARE, Result(0, "", ""))])
    htb, u32 = doctor.check_tc(run, is_root=True)
    assert (htb.status, u32.status) == (OK, OK)
    (argv1, batch1), (argv2, batch2) = run.calls
    assert argv1 == argv2 == list(UNSHARE)
    from enforcement import tc
    assert batch1.splitlines() == [" ".join(tc.setup_commands("lo")[0][1:]),
                                   "class add dev lo parent 1: classid 1:10 htb rate "
                                   "10000000bit ceil 10000000bit quantum "
                                   f"{tc.QUANTUM_BYTES}"]
    assert batch1.startswith("qdisc replace dev lo root handle 1: htb")
    assert batch2.splitlines() == batch1.splitlines() + [
        "filter add dev lo parent 1: protocol ip prio 16 u32 match ip src 10.0.0.1/32 match "
        "ip dst 10.0.0.2/32 match ip protocol 6 0xff match ip dport 5001 0xffff flowid 1:10"]


def test_tc_without_htb():
    run = FakeRun([(UNSHARE, Result(2, "", "Error: Specified qdisc kind is unknown.\n"
                                           "Command failed -:1\n"))])
    htb, u32 = doctor.check_tc(run, is_root=True)
    assert htb.status == FAIL and "Specified qdisc kind is unknown" in htb.detail
    assert "sch_htb" in htb.fix
    assert u32.status == WARN and "needs an HTB qdisc" in u32.detail
    assert len(run.calls) == 1


def test_tc_without_u32():
    def answer(argv, batch):
        if "u32" in batch:
            return Result(1, "", 'Unknown filter "u32", hence option "match" is '
                                 'unparsable\nCommand failed -:3\n')
        return Result(0, "", "")

    htb, u32 = doctor.check_tc(FakeRun([(UNSHARE, answer)]), is_root=True)
    assert htb.status == OK
    assert u32.status == FAIL and 'Unknown filter "u32"' in u32.detail
    assert "cls_u32" in u32.fix


def test_tc_not_installed():
    run = FakeRun([(UNSHARE, Result(127, "", "unshare: failed to execute tc: No such file "
                                             "or directory\n"))])
    htb, u32 = doctor.check_tc(run, is_root=True)
    assert htb.status == FAIL and "tc (iproute2)" in htb.detail
    assert "apt-get install iproute2" in htb.fix


def test_tc_not_root():
    run = FakeRun([])
    htb, u32 = doctor.check_tc(run, is_root=False)
    assert htb.status == u32.status == WARN and "needs root" in htb.detail
    assert run.calls == []


# -- the agent's socket -------------------------------------------------------------------
def fake_stat(mode):
    return lambda path: os.stat_result((mode, 1, 1, 1, 0, 0, 0, 0, 0, 0))


def healthy(base):
    return 200, {"ok": True, "iface": "h1-eth0", "flows": 3, "enforce": True}


def test_agent_socket_missing(tmp_path):
    c = doctor.check_agent_socket(f"unix:{tmp_path}/agent.sock", health=healthy)
    assert c.status == FAIL and c.detail == f"no agent socket at {tmp_path}/agent.sock"
    assert f"rapier-agent --listen unix:{tmp_path}/agent.sock" in c.fix


def test_agent_socket_of_the_wrong_mode(tmp_path):
    path = str(tmp_path / "agent.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    try:
        os.chmod(path, 0o666)
        c = doctor.check_agent_socket(f"unix:{path}", health=healthy)
        assert c.status == FAIL and "has mode 0666: other users can connect" in c.detail
        assert f"chmod 600 {path}" in c.fix
        os.chmod(path, 0o600)
        c = doctor.check_agent_socket(f"unix:{path}", health=healthy)
        assert c.status == OK and "mode 0600" in c.detail and "3 flows" in c.detail
    finally:
        s.close()


def test_agent_socket_not_a_socket(tmp_path):
    (tmp_path / "agent.sock").write_text("")
    c = doctor.check_agent_socket(f"unix:{tmp_path}/agent.sock", health=healthy)
    assert c.status == FAIL and "is not a socket" in c.detail


def test_agent_socket_stale():
    def refused(base):
        raise ConnectionRefusedError(111, "Connection refused")

    c = doctor.check_agent_socket("unix:/run/x.sock", lstat=fake_stat(stat.S_IFSOCK | 0o600),
                                  health=refused)
    assert c.status == FAIL and "a socket left by a stopped agent" in c.detail
    assert "replaces the stale socket" in c.fix


def test_agent_socket_answered_by_something_else():
    c = doctor.check_agent_socket("unix:/run/x.sock", lstat=fake_stat(stat.S_IFSOCK | 0o600),
                                  health=lambda base: (404, "not found"))
    assert c.status == FAIL and "answered 404" in c.detail


def test_agent_on_tcp():
    seen = []
    c = doctor.check_agent_socket("127.0.0.1:7070",
                                  health=lambda base: seen.append(base) or healthy(base))
    assert c.status == OK and seen == ["http://127.0.0.1:7070"]
    assert doctor.check_agent_socket("nonsense").status == FAIL


# -- report and exit status -------------------------------------------------------------------
def test_report_and_exit_status(monkeypatch, capsys):
    checks = [Check("python", OK, "cpython 3.11.7"),
              Check("ovs", FAIL, "ovsdb-server does not answer", "start it"),
              Check("kernels", WARN, "10 of 45", "python -m rapier_app.warmup")]
    monkeypatch.setattr(doctor, "run_checks", lambda role, listen: checks)
    assert doctor.main([]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "OK    python            cpython 3.11.7"
    assert out[1] == "FAIL  ovs               ovsdb-server does not answer"
    assert out[2].strip() == "fix: start it"
    assert out[-1] == "1 OK, 1 WARN, 1 FAIL"
    assert doctor.main(["--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["role"] == "all"
    assert [c["status"] for c in doc["checks"]] == [OK, FAIL, WARN]
    assert doc["checks"][1]["fix"] == "start it"
    assert doctor.main(["-q"]) == 1
    out = capsys.readouterr().out
    assert "cpython" not in out and out.startswith("FAIL  ovs")
    monkeypatch.setattr(doctor, "run_checks", lambda role, listen: checks[::2])
    assert doctor.main(["-qq"]) == 0
    assert capsys.readouterr().out == ""


def test_roles_select_their_checks():
    assert doctor.ROLES["agent"] == ("python", "tc-htb", "tc-u32", "agent-socket")
    with pytest.raises(ValueError, match="^role: "):
        doctor.run_checks("switch")


# -- this machine ---------------------------------------------------------------------------
@pytest.fixture
def ovs():
    """Open vSwitch running (started, and stopped again, only if it was not)."""
    from mininet_tests.runner import OvsDaemons
    d = OvsDaemons()
    d.start()
    yield
    d.stop()


@pytest.fixture
def agent_socket(tmp_path):
    """A real agent (no tc commands) serving on a Unix socket."""
    from enforcement.agent import Enforcer, make_server
    path = str(tmp_path / "agent.sock")
    enf = Enforcer("lo", enforce=False)
    enf.start()
    server = make_server(f"unix:{path}", enf)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield path
    server.shutdown()
    server.server_close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (tc in a network namespace, OVS)")
def test_real_run_on_this_machine(ovs, agent_socket, capsys):
    assert doctor.main(["--agent-listen", f"unix:{agent_socket}", "--json"]) == 0
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert list(checks) == list(doctor.ROLES["controller"] + doctor.ROLES["agent"][1:])
    for name in ("python", "stack", "eventlet", "controller-import", "kernels",
                 "ovs", "ovs-datapath", "tc-htb", "tc-u32", "agent-socket"):
        assert checks[name]["status"] == OK, checks[name]
    # no openvswitch kernel module here (shared/ENVIRONMENT.md): userspace only
    if not os.path.isdir("/sys/module/openvswitch"):
        assert checks["ovs-datapath"]["detail"].startswith("userspace (netdev) datapath only")
    assert checks["agent-socket"]["detail"].startswith(f"{agent_socket} (mode 0600")
    assert "iface lo, 0 flows, enforce False" in checks["agent-socket"]["detail"]
    # the agent role alone
    assert doctor.main(["--role", "agent", "--agent-listen", f"unix:{agent_socket}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split()[1] for ln in out[:-1]] == list(doctor.ROLES["agent"])
    assert out[-1] == "4 OK, 0 WARN, 0 FAIL"
