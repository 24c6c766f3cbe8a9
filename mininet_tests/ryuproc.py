"""Start the real controller (``rapier-controller``, on the OpenFlow stack installed)
on free loopback ports and wait until its REST API answers: shared by the tests and
benchmarks that need a live controller process (security, idle sockets, POST
latency).

No Mininet needed: the controller runs without switches.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from typing import List, Optional

from enforcement import client
from rapier_app.errors import RapierError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def venv_bin(name: str) -> str:
    """``name`` next to this interpreter (the venv's ``bin``), else on PATH, else the
    bare name (the start fails naming it)."""
    cand = os.path.join(os.path.dirname(sys.executable), name)
    return cand if os.path.exists(cand) else (shutil.which(name) or name)


def controller_command(*args: str) -> List[str]:
    """``rapier-controller ARGS...`` (the launcher of the venv running this)."""
    return [venv_bin("rapier-controller"), *args]


def manager_commands(*args: str) -> List[List[str]]:
    """Every way this installation starts the controller with ``args``:
    ``rapier-controller`` always, and ``ryu-manager ... rapier_app.controller`` where
    the stack is Ryu (its own manager command)."""
    from rapier_app.controller import stack

    cmds = [controller_command(*args)]
    if stack.NAME == "ryu":
        cmds.append([venv_bin("ryu-manager"), *args, "rapier_app.controller"])
    return cmds


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (int)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ControllerError(RapierError, RuntimeError):
    """The controller process exited or its REST API did not answer in time."""


def start_controller(conf_text: str, cwd: str, quiet: bool = False,
                     timeout_s: float = 30.0):
    """Write ``conf_text`` (an oslo.config file: ``[rapier]`` section) to
    ``cwd/controller.conf``, start ``rapier-controller`` with it on two free loopback ports
    and wait until ``GET /rapier/v1/health`` answers 200.

    Returns:
        (process, base URL "http://127.0.0.1:PORT", REST port, OpenFlow port).

    Raises:
        ControllerError: the process exited (with the tail of its output) or did not
            answer within ``timeout_s`` seconds; the process is killed first.
    """
    rest_port, of_port = free_port(), free_port()
    conf = os.path.join(cwd, "controller.conf")
    with open(conf, "w") as fh:
        fh.write(conf_text)
    out = subprocess.DEVNULL if quiet else subprocess.PIPE
    proc = subprocess.Popen(controller_command(
                             "--config-file", conf, "--wsapi-port", str(rest_port),
                             "--ofp-tcp-listen-port", str(of_port)),
                            stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
    base = f"http://127.0.0.1:{rest_port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if client.request(base, "GET", "/rapier/v1/health", timeout=1)[0] == 200:
                return proc, base, rest_port, of_port
        except OSError:
            if proc.poll() is not None:
                tail = "" if quiet else proc.stdout.read().decode(errors="replace")[-2000:]
                raise ControllerError(f"rapier-controller exited: {tail}") from None
            time.sleep(0.2)
    stop_controller(proc)
    raise ControllerError(f"controller REST did not answer within {timeout_s} s")


def stop_controller(proc: Optional[subprocess.Popen]) -> None:
    """Terminate ``proc`` (kill after 10 s)."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
