"""How long the controller took to start, phase by phase (``GET /health``'s
``startup``; docs/operations.md, "What survives a restart").

A restarted controller is away for as long as its start takes: flows that finish
meanwhile leave the flows behind them at their old (trickle) rates until the new
process has learnt it and pushed new rates.  :data:`STARTUP` records when each step
of the start was reached, in seconds since the process was created (``exec``, read
from ``/proc/self/stat``; the import of this module when that cannot be read):

``imports``      Ryu and the controller's modules imported (before the app exists);
``core``         settings checked, topology built, database opened, scheduler built,
                 numba's CPU target loaded (:func:`rapier_app.kernels.prepare`);
``restored``     the database's coflows reloaded and decided again, their agent
                 pushes queued;
``rest``         the REST server listening (reports and submissions accepted);
``kernels``      the scheduler's compiled kernels loaded (:mod:`rapier_app.warmup`);
``first_switch`` / ``all_switches``   the first / every configured switch connected;
``first_flow_done``   the first flow completion learnt (report or counters);
``first_decision``    the first scheduler decision finished;
``first_push``   the first agent acknowledged a rate set.

Each phase is recorded once (the first time), with the CPU seconds the process
had used by then (``cpu_s``, every thread): where the wall time of a phase is much
longer than its CPU time, the process waited, mostly for a CPU the machine's other
work held.  Pure: no Ryu import.
"""

from __future__ import annotations

import os
import time
from typing import Dict, Optional


def process_start_unix() -> Optional[float]:
    """When this process was created (Unix seconds): now minus its age, the age from
    ``/proc/self/stat`` (field 22, clock ticks after boot) and ``/proc/uptime``
    (seconds after boot); None where ``/proc`` cannot be read (not Linux).
    Resolution: one clock tick (10 ms)."""
    try:
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        now = time.time()
        with open("/proc/self/stat") as fh:
            stat = fh.read()
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22
        return now - max(uptime - ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return None


class StartupClock:
    """Phases of one process's start (module docstring).

    Args:
        t0_unix: when the process started (Unix s); default :func:`process_start_unix`,
            or now when ``/proc`` cannot be read.
    """

    def __init__(self, t0_unix: Optional[float] = None) -> None:
        if t0_unix is None:
            t0_unix = process_start_unix()
        self.t0_unix = time.time() if t0_unix is None else float(t0_unix)
        self.marks: Dict[str, float] = {}
        self.cpu: Dict[str, float] = {}

    def mark(self, phase: str, t_unix: Optional[float] = None) -> bool:
        """Record ``phase`` at ``t_unix`` (default now), with the process's CPU time
        now, unless already recorded; returns True when it was recorded now."""
        if phase in self.marks:
            return False
        self.marks[phase] = time.time() if t_unix is None else float(t_unix)
        self.cpu[phase] = time.process_time()
        return True

    def view(self) -> Dict[str, object]:
        """``{"process_start_unix": s, "phases_s": {phase: s after the start},
        "cpu_s": {phase: CPU s of the process by then}}`` (phases in the order
        reached, seconds rounded to the millisecond)."""
        order = sorted(self.marks.items(), key=lambda kv: kv[1])
        return {"process_start_unix": round(self.t0_unix, 3),
                "phases_s": {k: round(t - self.t0_unix, 3) for k, t in order},
                "cpu_s": {k: round(self.cpu[k], 3) for k, _ in order}}


#: The controller process's start (one per process).
STARTUP = StartupClock()

__all__ = ["STARTUP", "StartupClock", "process_start_unix"]
