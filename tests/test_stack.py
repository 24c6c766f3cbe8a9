"""The OpenFlow stack layer (rapier_app/controller/stack.py, stackchoice.py): which
stack is chosen, that it is the only module importing one, and that the native-thread
stack leaves eventlet out of the controller's process."""

import os
import re
import subprocess
import sys

import pytest

from rapier_app.controller import stack
from rapier_app.controller.stackchoice import StackUnavailable, choose, normalise

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOTH = {"ryu", "os_ken"}.__contains__


@pytest.mark.parametrize("env,modules,installed,want", [
    ({}, {}, BOTH, "os-ken"),                                    # default: os-ken
    ({"RAPIER_OF_STACK": "ryu"}, {}, BOTH, "ryu"),
    ({"RAPIER_OF_STACK": "OS_KEN"}, {}, BOTH, "os-ken"),
    ({}, {}, {"ryu"}.__contains__, "ryu"),                       # only Ryu installed
    ({"RAPIER_OF_STACK": "os-ken"}, {"ryu.cmd.manager": 1}, BOTH, "ryu"),  # ryu-manager runs
    ({"RAPIER_OF_STACK": "ryu"}, {"os_ken.base.app_manager": 1}, BOTH, "os-ken"),
], ids=["default", "env-ryu", "env-spelling", "only-ryu", "ryu-manager-wins", "os-ken-running"])
def test_choose(env, modules, installed, want):
    assert choose(env, modules, installed) == want


@pytest.mark.parametrize("env,installed,msg", [
    ({"RAPIER_OF_STACK": "nox"}, BOTH, "RAPIER_OF_STACK: 'nox' is not a stack"),
    ({"RAPIER_OF_STACK": "ryu"}, {"os_ken"}.__contains__, "RAPIER_OF_STACK: ryu is not installed"),
    ({}, lambda pkg: False, "no OpenFlow stack"),
])
def test_choose_refuses(env, installed, msg):
    with pytest.raises(StackUnavailable, match=re.escape(msg)):
        choose(env, {}, installed)
    assert issubclass(StackUnavailable, ImportError)  # pure use without a stack


def test_normalise():
    assert [normalise(n) for n in ("os_ken", "OSKen", " os-ken ", "Ryu")] == \
        ["os-ken", "os-ken", "os-ken", "ryu"]


def test_the_stack_in_use_and_its_thread_model():
    assert stack.NAME in ("ryu", "os-ken")
    assert stack.THREADS == ("eventlet" if stack.GREEN else "native")
    assert stack.BaseApp.__name__ == ("RyuApp" if stack.NAME == "ryu" else "OSKenApp")
    if stack.NAME == "ryu":
        assert stack.GREEN  # Ryu's hub is eventlet's
    desc = stack.describe()
    assert desc.startswith(f"{stack.NAME} {stack.VERSION}, ")
    assert desc.endswith(f"Python {sys.version.split()[0]}")
    assert (stack.offload() is None) == (not stack.GREEN)


def test_only_the_stack_module_imports_ryu_or_os_ken():
    pattern = re.compile(r"^\s*(import|from)\s+(ryu|os_ken)(\.|\s)", re.M)
    found = []
    for top in ("rapier_app", "enforcement", "mininet_tests", "topologies", "client",
                "benchmarks", "tests", "scripts", "examples", "tools"):
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    with open(path, encoding="utf-8") as fh:
                        if pattern.search(fh.read()):
                            found.append(os.path.relpath(path, ROOT))
    assert found == [os.path.join("rapier_app", "controller", "stack.py")]


def test_the_app_imports_eventlet_only_on_green_threads():
    out = subprocess.run([sys.executable, "-c", "import sys, rapier_app.controller.app; "
                          "print('eventlet' in sys.modules)"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(stack.GREEN)


def test_launcher_version_names_project_stack_threads_and_python():
    exe = os.path.join(os.path.dirname(sys.executable), "rapier-controller")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip()
    from importlib.metadata import version
    assert line.startswith(f"rapier-controller {version('rapier-coflow')}")
    assert line.endswith(f"({stack.describe()})")


def test_launcher_refuses_an_unknown_option_in_one_line():
    exe = os.path.join(os.path.dirname(sys.executable), "rapier-controller")
    out = subprocess.run([exe, "--no-such-option"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "no-such-option" in out.stderr


def test_discovery_state_survives_concurrent_threads():
    """os-ken's LLDP discovery state (PortDataState's linked list) written by three
    threads at once: without the stack's lock a port drops out of the rotation
    (KeyError in the unlink, seen within a second); with it, none does."""
    if stack.GREEN:  # eventlet never preempts there: nothing to serialise
        assert stack.serialise_discovery() is False
        return
    import importlib
    import threading
    import time

    assert stack.serialise_discovery() is True
    switches = importlib.import_module(stack.BaseApp.__module__.split(".")[0]
                                       + ".topology.switches")

    class Port(tuple):
        def is_down(self):
            return False

    ports = switches.PortDataState()
    keys = [Port(("p", i)) for i in range(40)]
    for k in keys:
        ports.add_port(k, b"lldp")
    errors, stop = [], time.time() + 1.0

    def front():
        i = 0
        while time.time() < stop:
            ports.move_front(keys[i % 40])
            i += 7

    def rotate():
        while time.time() < stop:
            for k, _ in ports.items():
                ports.lldp_sent(k)

    def guarded(fn):
        def run():
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 -- what the test looks for
                errors.append(exc)
        return run

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=guarded(f)) for f in (front, rotate, front)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    assert sorted(k for k, _ in ports.items()) == sorted(keys)


def test_hub_event_wait_times_out():
    """``hub.Event.wait(timeout)`` returns False after about ``timeout`` when nobody
    sets the event (os-ken's native one blocked until set: its LLDP loop then never
    re-sent a lost frame), and True at once when it is set."""
    import threading
    import time

    ev, got = stack.hub.Event(), []

    def waiter():
        t0 = time.monotonic()
        got.append((ev.wait(timeout=0.2), time.monotonic() - t0))

    t = threading.Thread(target=waiter, daemon=True)
    t.start()
    t.join(5)
    assert got and got[0][0] is False and 0.15 <= got[0][1] < 2.0, got
    ev.set()
    assert ev.wait(timeout=5) is True
