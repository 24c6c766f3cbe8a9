"""Shared pytest configuration: make the repository root importable, and give
every test a time limit."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# The controller run by ryu-manager keeps its coflows in a database file by default
# (its [rapier] state_db default is $RAPIER_STATE_DB): real ryu-manager processes
# started by tests get an in-memory one unless their config names a file.  In-process
# Settings() keep :memory: whatever this says.
os.environ["RAPIER_STATE_DB"] = ":memory:"


#: Seconds a test may run before it fails (pytest-timeout, installed with the test
#: extras).  The slowest test takes about a minute; a test that hangs (a compiled
#: kernel that never leaves its loop, an emulated network that never answers) fails
#: with every thread's stack printed instead of holding CI until its own limit.
#: ``thread``: the only method that stops a loop inside compiled code, which never
#: returns to the interpreter to see a signal; it ends the test process.
#: ``RAPIER_TEST_TIMEOUT_S`` changes it (0: no limit).
try:
    TEST_TIMEOUT_S = float(os.environ.get("RAPIER_TEST_TIMEOUT_S", "900"))
except ValueError:
    TEST_TIMEOUT_S = float("nan")
if not TEST_TIMEOUT_S >= 0:
    raise SystemExit("RAPIER_TEST_TIMEOUT_S: must be a number of seconds >= 0 (0: no "
                     f"limit), got {os.environ['RAPIER_TEST_TIMEOUT_S']!r}")


def pytest_collection_modifyitems(config, items):
    """A ``timeout`` mark (:data:`TEST_TIMEOUT_S`, method ``thread``) on every test
    that has none, when pytest-timeout is loaded."""
    if not config.pluginmanager.hasplugin("timeout"):
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_S, method="thread"))
