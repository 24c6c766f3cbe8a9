"""Every test runs under a time limit (tests/conftest.py, pytest-timeout from the
test extras of setup.py): a hang fails the run with the stacks printed instead of
holding CI until its own limit."""

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

# this directory's conftest by path: ``import conftest`` may give another directory's
_spec = importlib.util.spec_from_file_location(
    "suite_conftest", os.path.join(os.path.dirname(os.path.abspath(__file__)), "conftest.py"))
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


def test_this_test_has_the_suite_time_limit(request):
    # fails when pytest-timeout is not installed by the README's commands, or
    # when the conftest hook stops adding the mark
    mark = request.node.get_closest_marker("timeout")
    assert mark is not None, "pytest-timeout missing: pip install -e .[test]"
    assert mark.args == (conftest.TEST_TIMEOUT_S,) and mark.kwargs == {"method": "thread"}


def test_a_loop_in_compiled_code_is_stopped(tmp_path):
    # a compiled loop never returns to the interpreter (no signal is seen): the
    # thread method still ends the test, with a failure naming the time-out
    here = os.path.join(conftest.ROOT, "tests", "conftest.py")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("suite_conftest", {here!r})
        suite = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(suite)
        pytest_collection_modifyitems = suite.pytest_collection_modifyitems
    """))
    (tmp_path / "test_hang.py").write_text(textwrap.dedent("""
        import numba

        @numba.njit(nogil=True)
        def spin(n):
            i = 0
            while n > 0:
                i += 1
            return i

        def test_hang():
            spin(1)
    """))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(tmp_path)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "RAPIER_TEST_TIMEOUT_S": "5"},
                       cwd=tmp_path)
    assert r.returncode != 0
    assert "Timeout" in r.stdout + r.stderr and "spin" in r.stdout + r.stderr


@pytest.mark.parametrize("bad", ["soon", "-5", "nan", ""])
def test_a_bad_time_limit_is_named(bad):
    here = os.path.join(conftest.ROOT, "tests")
    r = subprocess.run([sys.executable, "-c", "import conftest"], capture_output=True,
                       text=True, timeout=120, cwd=here,
                       env={**os.environ, "RAPIER_TEST_TIMEOUT_S": bad})
    assert r.returncode != 0 and "RAPIER_TEST_TIMEOUT_S" in r.stderr
