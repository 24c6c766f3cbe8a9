"""Start the real controller (``ryu-manager rapier_app.controller``) on free loopback
ports and wait until its REST API answers: shared by the tests and benchmarks that
need a live controller process (security, idle sockets, POST latency).

No Mininet needed: the controller runs without switches.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from typing import Optional

from enforcement import client
from rapier_app.errors import RapierError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
    ``cwd/controller.conf``, start ``ryu-manager`` with it on two free loopback ports
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
    proc = subprocess.Popen([os.path.join(REPO, ".venv", "bin", "ryu-manager"),
                             "--config-file", conf, "--wsapi-port", str(rest_port),
                             "--ofp-tcp-listen-port", str(of_port), "rapier_app.controller"],
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
                raise ControllerError(f"ryu-manager exited: {tail}") from None
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
