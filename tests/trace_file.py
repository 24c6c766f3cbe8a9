"""Where the tests find the public Facebook coflow trace."""

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The public Facebook coflow trace: ``../shared/traces`` beside the checkout (as in
#: CI), or the file named by the environment variable ``RAPIER_FB_TRACE``.
FB_TRACE = os.environ.get("RAPIER_FB_TRACE") or os.path.join(
    os.path.dirname(ROOT), "shared", "traces", "FB2010-1Hr-150-0.txt")


def fb_trace() -> str:
    """Path of the Facebook trace; fails the calling test (not a skip: the trace is
    part of the test environment) with the expected location when it is missing."""
    if not os.path.exists(FB_TRACE):
        pytest.fail(f"Facebook trace not found at {FB_TRACE}: check out the project with "
                    f"../shared beside it, or set RAPIER_FB_TRACE", pytrace=False)
    return FB_TRACE
