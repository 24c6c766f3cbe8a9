"""Fixtures of the emulation tests (root, Open vSwitch userspace datapath, Mininet).

CI runs these as root after ``scripts/install.sh``; nothing is skipped: without root
or without Open vSwitch the tests fail with a message saying what is missing.
Open vSwitch is started here if it is not running, and stopped again (by the PIDs in
its pidfiles) at the end of the session only if this session started it.  Each test
builds its own network inside :class:`mininet_tests.runner.Emulation`, which stops
every process it started, by PID, also when the test fails.
"""

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)


@pytest.fixture(scope="session")
def ovs():
    """Open vSwitch daemons running for the whole session."""
    if os.geteuid() != 0:
        raise RuntimeError("emulation tests need root (Mininet, Open vSwitch, tc); "
                           "run them as root after scripts/install.sh")
    from mininet_tests.runner import OvsDaemons

    daemons = OvsDaemons()
    daemons.start()
    try:
        yield daemons
    finally:
        daemons.stop()
