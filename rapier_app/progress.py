"""Progress reporting shared by the command-line tools (one library: tqdm).

Every long-running command (``rapier-sim``, ``rapier-emulate``, ``rapier-experiment``)
reports progress on stderr through this module, so that they look and behave alike:

* :func:`progress_enabled` decides whether anything is shown: never with
  ``--quiet``; never in ``--json`` mode when stderr is not a terminal (a pipeline
  reading the JSON wants a clean stderr); otherwise yes.
* :func:`bar` is a tqdm bar (percent, rate, ETA).  On a terminal it redraws one
  line; elsewhere (a log file, CI) it writes a plain line every
  :data:`LOG_INTERVAL_S` seconds instead of carriage returns.
* :class:`SimProgress` adapts a bar to the simulator's
  ``progress(done_coflows, total_coflows, now_s)`` callback and adds the simulated
  time and its rate (simulated seconds per wall second).
* :func:`phase` wraps a step of unknown length: a line appears once it has run for
  :data:`PHASE_THRESHOLD_S` (1 s) and another with its duration when it ends, so
  every phase that takes more than a second is visible and short ones stay silent.
* :func:`note` prints one line without breaking a live bar.

Units: seconds (wall and simulated), coflows.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Iterator, Optional, TextIO

from tqdm import tqdm

#: A phase prints its first line after this many seconds (and nothing if faster).
PHASE_THRESHOLD_S = 1.0
#: Seconds between refreshes of a bar on a terminal.
TTY_INTERVAL_S = 0.2
#: Seconds between lines of a bar when stderr is not a terminal.
LOG_INTERVAL_S = 10.0


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def progress_enabled(quiet: bool = False, json_mode: bool = False,
                     stream: Optional[TextIO] = None) -> bool:
    """Whether a command shows progress on ``stream`` (default ``sys.stderr``).

    False with ``quiet``; False in ``json_mode`` when the stream is not a terminal;
    True otherwise.
    """
    if quiet:
        return False
    if json_mode and not _isatty(stream if stream is not None else sys.stderr):
        return False
    return True


def _columns(stream: TextIO) -> int:
    """The terminal width of ``stream`` in columns (0 when unknown)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class _LineStream:
    """A file-like wrapper that turns tqdm's carriage-return redraws into plain lines
    (for logs and pipes, where ``\\r`` would pile up on one line)."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.encoding = getattr(stream, "encoding", "utf-8")

    def write(self, s: str) -> int:
        text = s.replace("\r", "").rstrip()
        if text:
            self.stream.write(text + "\n")
        return len(s)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False


def bar(total: Optional[float], desc: str, unit: str = "coflow", enabled: bool = True,
        stream: Optional[TextIO] = None, **kw) -> tqdm:
    """A tqdm progress bar on ``stream`` (default stderr), or a disabled one.

    Args:
        total: number of units (None: unknown, no percentage or ETA).
        desc: the label, e.g. ``"rapier try 1/3"``.
        unit: what is counted (``"coflow"``, ``"point"``, ...).
        enabled: False gives a bar that prints nothing (see :func:`progress_enabled`).
        stream: where to write (default ``sys.stderr``).
        **kw: further tqdm options.

    Returns:
        The bar; use it as a context manager or call ``close()``.
    """
    stream = stream if stream is not None else sys.stderr
    tty = _isatty(stream)
    sized = tty and _columns(stream) > 0  # a pty may report 0 columns: fixed width then
    opts = dict(total=total, desc=desc, unit=unit, disable=not enabled, leave=True,
                file=stream if tty else _LineStream(stream),
                mininterval=TTY_INTERVAL_S if tty else LOG_INTERVAL_S,
                dynamic_ncols=sized, ncols=None if sized else 100,
                nrows=None if sized else 50)  # tqdm hides bars below a 0-row screen
    opts.update(kw)
    return tqdm(**opts)


def note(msg: str, enabled: bool = True, stream: Optional[TextIO] = None) -> None:
    """Print one progress line on ``stream`` (default stderr) without breaking a bar."""
    if enabled:
        tqdm.write(msg, file=stream if stream is not None else sys.stderr)


@contextlib.contextmanager
def phase(label: str, enabled: bool = True, stream: Optional[TextIO] = None,
          threshold_s: float = PHASE_THRESHOLD_S) -> Iterator[None]:
    """Context manager around one step: ``<label> ...`` is printed once the step has
    run for ``threshold_s`` seconds, and ``<label>: done in X.X s`` when it ends if it
    took that long; nothing for faster steps.  Exceptions pass through.
    """
    if not enabled:
        yield
        return
    t0 = time.monotonic()
    shown = threading.Event()

    def _start_line() -> None:
        shown.set()
        note(f"{label} ...", True, stream)

    timer = threading.Timer(threshold_s, _start_line)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        dt = time.monotonic() - t0
        if dt >= threshold_s or shown.is_set():
            note(f"{label}: done in {dt:.1f} s", True, stream)


class SimProgress:
    """The simulator's ``progress(done, total, now_s)`` callback, drawn as a bar in
    coflows (percent, coflows per second, ETA) with the simulated time and its rate
    (simulated seconds per wall second) as postfix.

    Args:
        desc: the bar's label; enabled, stream: as :func:`bar`.
        total: number of coflows if known up front (the first callback sets it
            otherwise).
        on_done: optional callable ``on_done(done, now_s)`` run at every callback,
            even when the bar is disabled (e.g. to append finished coflows to a CSV).
    """

    def __init__(self, desc: str, enabled: bool = True, total: Optional[int] = None,
                 stream: Optional[TextIO] = None, on_done=None):
        self.bar = bar(total, desc, "coflow", enabled, stream)
        self.t0 = time.monotonic()
        self.on_done = on_done

    def __call__(self, done: int, total: int, now_s: float) -> None:
        if self.bar.total != total:
            self.bar.total = total
        wall = time.monotonic() - self.t0
        rate = now_s / wall if wall > 0 else 0.0
        self.bar.set_postfix_str(f"sim t={now_s:.4g} s, {rate:.3g} sim-s/s", refresh=False)
        self.bar.update(done - self.bar.n)
        if self.on_done is not None:
            self.on_done(done, now_s)

    def close(self) -> None:
        """Close the bar (prints its final state)."""
        self.bar.close()

    def __enter__(self) -> "SimProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
