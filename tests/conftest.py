"""Shared pytest configuration: make the repository root importable."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# The controller keeps its coflows in a database file by default (issue 14): tests
# get an in-memory one unless they name a file (Settings(state_db=...)).
os.environ["RAPIER_STATE_DB"] = ":memory:"
