"""Helpers shared by the benchmark scripts of this folder.

The scripts run as ``python benchmarks/NAME.py``, so this folder is on ``sys.path``
and they import this module as ``_common``; importing it also puts the repository
root on ``sys.path`` (``rapier_app``, ``topologies``, ``enforcement``,
``mininet_tests`` import without installing the package).

* :data:`DEFAULT_TRACE`: the Facebook coflow trace (``$RAPIER_FB_TRACE`` or beside
  the repository);
* :func:`add_trace_options`: ``--trace`` and ``--limit`` through
  :func:`rapier_app.workload_options.add_workload_options` (the options
  ``rapier-sim`` takes), with the benchmarks' defaults; :func:`check_trace_options`
  refuses a missing trace file or a limit below 1;
* :func:`write_json`: the scripts' ``--json`` output.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from rapier_app.workload_options import add_workload_options  # noqa: E402

#: The public Facebook coflow trace (FB2010-1Hr-150-0: 526 coflows on 150 racks):
#: ``$RAPIER_FB_TRACE`` when set (as for ``rapier-bench`` and the tests), else where
#: the project's checkout expects it, ``../shared/traces`` beside the repository.
DEFAULT_TRACE = os.environ.get("RAPIER_FB_TRACE") or os.path.join(
    os.path.dirname(ROOT), "shared", "traces", "FB2010-1Hr-150-0.txt")


def add_trace_options(parser, limit: Optional[int] = None, **overrides: dict):
    """Declare ``--trace`` (default :data:`DEFAULT_TRACE`) and ``--limit`` (default
    ``limit``: the first N coflows; None: all) on ``parser``, plus any further
    workload options named in ``overrides`` (e.g. ``topology=dict(default=...)``),
    through :func:`rapier_app.workload_options.add_workload_options`.  Returns the
    parser."""
    extra = [n for n in overrides if n not in ("trace", "limit")]
    trace = dict(default=DEFAULT_TRACE, help=f"coflow-benchmark trace file (default "
                                             f"{os.path.relpath(DEFAULT_TRACE, ROOT)})")
    lim = dict(default=limit, help="replay only the first N coflows of --trace "
                                   f"(default {limit if limit else 'all'})")
    trace.update(overrides.pop("trace", {}))
    lim.update(overrides.pop("limit", {}))
    return add_workload_options(parser, "trace", "limit", *extra, trace=trace, limit=lim,
                                **overrides)


def check_trace_options(args) -> None:
    """Refuse a ``--trace`` file that does not exist and a ``--limit`` below 1.

    Raises:
        SystemExit: naming the option.
    """
    if args.limit is not None and args.limit <= 0:
        raise SystemExit(f"--limit: must be positive, got {args.limit}")
    if not os.path.exists(args.trace):
        raise SystemExit(f"--trace: {args.trace} does not exist")


def write_json(path: Optional[str], rows: Any, indent: int = 1) -> None:
    """Write ``rows`` (anything :func:`json.dump` takes) to ``path`` as JSON, indented
    by ``indent`` spaces, without a trailing newline; nothing when ``path`` is empty or
    None (the scripts' ``--json`` not given).

    Raises:
        OSError: the file cannot be written.
        TypeError: ``rows`` holds something JSON cannot represent.
    """
    if not path:
        return
    with open(path, "w") as fh:
        json.dump(rows, fh, indent=indent)
