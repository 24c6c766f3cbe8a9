"""Conventions shared by every console script (``rapier-sim``, ``rapier-experiment``,
``rapier-emulate``, ``rapier-bench``, ``rapier-agent``).

* :func:`add_common_arguments`: ``--version`` (package version from its metadata
  plus the git commit when run from a checkout) and one verbosity convention,
  ``-v/--verbose`` (repeatable) and ``-q/--quiet`` (repeatable), with the old
  ``--log-level LEVEL`` kept as a deprecated alias where a tool had it;
  :func:`log_level` and :func:`setup_logging` turn them into a logging level.
* :func:`stdout_fd_to` keeps native libraries' output (HiGHS prints its banner from
  C++ straight to file descriptor 1) off stdout, at the file-descriptor level.
* :func:`run_info`: version, commit and argv for a run's ``summary.json``.

Typed ``--param`` values and ``module:Class`` scheduler plugins live in
:mod:`rapier_app.params`.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import subprocess
import sys
from functools import lru_cache
from typing import Iterator, Optional

#: The distribution name in setup.py.
DIST = "rapier-coflow"
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def package_version() -> str:
    """The installed distribution's version (``importlib.metadata``), falling back to
    ``rapier_app.__version__`` when the package is not installed."""
    try:
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version(DIST)
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover - Python < 3.8
        pass
    from . import __version__
    return __version__


@lru_cache(maxsize=1)
def git_commit() -> Optional[str]:
    """``git describe --always --dirty --abbrev=40`` of the checkout this package runs
    from (the full commit hash, ``-dirty`` when the tree has local changes), or None
    when it is not a git checkout or git is missing (2 s timeout)."""
    if not os.path.isdir(os.path.join(_REPO, ".git")):
        return None
    try:
        out = subprocess.run(["git", "-C", _REPO, "describe", "--always", "--dirty",
                              "--abbrev=40"], capture_output=True, text=True, timeout=2)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def version_string(prog: str) -> str:
    """``"<prog> <version> (git <commit>)"``, the commit part only when known."""
    commit = git_commit()
    return f"{prog} {package_version()}" + (f" (git {commit})" if commit else "")


class _VersionAction(argparse.Action):
    """``--version``: print :func:`version_string` on stdout and exit 0 (the git call
    runs only when the option is given)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print the version (and git commit) and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_string(parser.prog))
        parser.exit(0)


class _DeprecatedLogLevel(argparse.Action):
    """``--log-level LEVEL``: the old spelling, still accepted; warns on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        if str(values).upper() not in ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG"):
            parser.error(f"--log-level: expected DEBUG, INFO, WARNING, ERROR or CRITICAL, "
                         f"got {values!r}")
        print(f"{parser.prog}: warning: --log-level is deprecated; use -v/--verbose or "
              f"-q/--quiet", file=sys.stderr)
        setattr(namespace, self.dest, str(values).upper())


def add_common_arguments(parser: argparse.ArgumentParser, log_level_alias: bool = False,
                         quiet_help: str = "less output: no progress (-qq: errors only)",
                         verbose_help: str = "more output: INFO log lines (-vv: DEBUG)"
                         ) -> argparse.ArgumentParser:
    """Add ``--version``, ``-v/--verbose`` and ``-q/--quiet`` (mutually exclusive,
    both counting) to ``parser``; with ``log_level_alias`` also the deprecated
    ``--log-level``.  Read the result with :func:`log_level` / ``args.quiet``.

    Returns the parser.
    """
    parser.add_argument("--version", action=_VersionAction)
    g = parser.add_mutually_exclusive_group()
    g.add_argument("-v", "--verbose", action="count", default=0, help=verbose_help)
    g.add_argument("-q", "--quiet", action="count", default=0, help=quiet_help)
    if log_level_alias:
        parser.add_argument("--log-level", dest="log_level", action=_DeprecatedLogLevel,
                            default=None, metavar="LEVEL",
                            help="deprecated: use -v/-q (DEBUG, INFO, WARNING, ERROR)")
    return parser


def log_level(args: argparse.Namespace, base: int = logging.WARNING) -> int:
    """The logging level ``args`` ask for: ``base`` moved one step (10) down per
    ``-v`` and up per ``-q`` (clamped to DEBUG..CRITICAL); an explicit deprecated
    ``--log-level`` wins."""
    explicit = getattr(args, "log_level", None)
    if explicit:
        return getattr(logging, explicit)
    lvl = base - 10 * getattr(args, "verbose", 0) + 10 * getattr(args, "quiet", 0)
    return max(logging.DEBUG, min(logging.CRITICAL, lvl))


def setup_logging(args: argparse.Namespace, base: int = logging.WARNING,
                  fmt: str = "%(asctime)s %(name)s %(levelname)s %(message)s") -> int:
    """``logging.basicConfig`` on stderr at :func:`log_level`; returns the level."""
    lvl = log_level(args, base)
    logging.basicConfig(level=lvl, stream=sys.stderr, format=fmt)
    return lvl


@contextlib.contextmanager
def stdout_fd_to(target: Optional[int] = None) -> Iterator[None]:
    """Point file descriptor 1 at ``target`` (an open fd, e.g. 2 for stderr; None:
    ``/dev/null``) for the duration of the block, so that native code (solvers'
    banners and logs) cannot write on the process's stdout; Python's ``sys.stdout``
    and C's stdio buffers are flushed on the way in and out.  A no-op when fd 1 is
    not open.
    """
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    null = None
    try:
        sys.stdout.flush()
        _flush_c_stdio()
        if target is None:
            null = os.open(os.devnull, os.O_WRONLY)
            target = null
        os.dup2(target, 1)
        yield
    finally:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)
        if null is not None:
            os.close(null)


def _flush_c_stdio() -> None:
    """``fflush(NULL)`` through ctypes: C stdout buffered while fd 1 was redirected
    must not reach the real stdout later."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # pragma: no cover - no libc
        pass


def run_info(argv) -> dict:
    """What a run's ``summary.json`` records about the program: version, git commit
    (None outside a checkout; the first :func:`git_commit` call of the process, which
    ``rapier-sim`` makes before it simulates), the command line and the Python
    version."""
    return {"version": package_version(), "git_commit": git_commit(),
            "argv": list(argv), "python": sys.version.split()[0]}
