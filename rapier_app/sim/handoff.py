"""A controller hand-off delay for the flow-level simulator.

The simulator applies a scheduler's rates at the instant of the decision.  A real
controller cannot: between a flow's last byte and its freed bandwidth being used by
another flow lie the completion report, the decision, the push to the host agent,
the agent's HTB change and TCP's ramp to the new rate.  In the emulation
(measured on ``rapier-emulate`` run files and the agents' logs) that is a median 35-67 ms from a flow's last byte to a raise in force at the
sender's agent, then 125-282 ms until the raised flow sends at 80 % of its new rate
(100 ms resolution); a fixed 0.15 s reproduces rapier's and scheduling-only's
emulated CCTs within 3 % (mininet_tests/README.md, "hand-off latency").

:class:`HandoffDelay` models it as a scheduler wrapper: every rate *raise* (and every
new flow) takes effect ``delay_s`` (plus an optional uniform random ``jitter_s``)
after the decision that made it, while every rate *decrease* applies at once, so no
link is ever above capacity (the decreases that free the room for a raise are in
force before the raise).  A raise still pending when a later decision lowers the
target is cut to the new target; until a raise is due the flow keeps its old rate,
on the decision's path.  A wake-up the wrapper asked for (a raise falling due) is
not a decision point of the inner scheduler: the rates in force are recomputed from
the inner scheduler's last decision, as a host agent applies a pushed rate without
the controller deciding again.  ``rapier-sim --handoff-delay S [--handoff-jitter
J]`` and ``rapier-emulate --sim-handoff-delay S`` use it.

Units: seconds, bit/s.  No Ryu, Mininet or tc here.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from ..core.model import Allocation, Schedule
from ..core.wrapper import SchedulerWrapper


class HandoffDelay(SchedulerWrapper):
    """Wraps a scheduler so that rate raises take effect late (module docstring).

    Args:
        inner: the scheduler (any object with ``schedule(now, states) -> Schedule``
            and ``next_wakeup(now)``; its other attributes are read through).
        delay_s: seconds from a decision to a raise it makes being in force (>= 0).
        jitter_s: each raise waits ``delay_s + U(0, jitter_s)`` seconds instead
            (>= 0; 0 = a fixed delay).  seed: seed of the jitter's generator.

    The wrapper declares no work-conservation level (``work_conserving = None``):
    a delayed raise leaves capacity idle on purpose, so ``rapier-check`` must not
    flag it.

    Raises:
        ValueError: ``delay_s`` or ``jitter_s`` negative, infinite or not a number
            (names it).
    """

    volatile_schedules = False
    work_conserving = None

    def __init__(self, inner, delay_s: float, jitter_s: float = 0.0, seed: int = 0):
        for field, v in (("delay_s", delay_s), ("jitter_s", jitter_s)):
            try:
                ok = 0 <= float(v) < float("inf")
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ValueError(f"{field}: must be a number >= 0 s, got {v!r}")
        super().__init__(inner)
        self.delay_s = float(delay_s)
        self.jitter_s = float(jitter_s)
        self._rng = np.random.default_rng(seed)
        #: flow id -> (path, rate bit/s) in force after the last decision
        self.applied: Dict[str, Tuple[tuple, float]] = {}
        #: flow id -> (due time s, path, target rate bit/s) of raises not yet in force
        self.pending: Dict[str, Tuple[float, tuple, float]] = {}
        self._target: Optional[dict] = None   # the inner scheduler's last decision
        self._inner_wake: Optional[float] = None

    def _due(self, now: float) -> float:
        d = self.delay_s
        if self.jitter_s > 0:
            d += float(self._rng.uniform(0.0, self.jitter_s))
        return now + d

    def schedule(self, now: float, states) -> Schedule:
        """The inner scheduler's schedule with raises held back until due.

        Returns:
            Schedule: per flow id the rate in force now (bit/s) on the inner
            decision's path; never above the inner decision's rate.
        """
        own = (self._target is not None and any(t == now for t, _, _ in self.pending.values())
               and self._inner_wake != now)
        if own:
            # our own wake-up: the agents apply what was pushed; no new decision
            live = {f.flow_id for c in states for f in c.active_flows()}
            tgt = {fid: a for fid, a in self._target.items() if fid in live}
        else:
            tgt = dict(self.inner.schedule(now, states).allocations)
            self._target = tgt
        out, pend = {}, {}
        for fid, a in tgt.items():
            old = self.applied.get(fid)
            due = self.pending.get(fid)
            if old is None:                       # a new flow waits for its push
                t = due[0] if due else self._due(now)
                rate = a.rate_bps if t <= now + 1e-12 else 0.0
            else:
                orate = old[1]
                if a.rate_bps <= orate + 1e-9:    # a decrease (or no change): at once
                    out[fid] = Allocation(a.path, a.rate_bps)
                    continue
                t = due[0] if due else self._due(now)
                rate = a.rate_bps if t <= now + 1e-12 else orate  # the old rate until due
            out[fid] = Allocation(a.path, rate)
            if rate < a.rate_bps:
                pend[fid] = (t, a.path, a.rate_bps)
        self.pending = pend
        self.applied = {fid: (a.path, a.rate_bps) for fid, a in out.items()}
        return Schedule(out)

    def next_wakeup(self, now: float) -> Optional[float]:
        """The earliest pending raise after ``now``, or the inner scheduler's own
        wake-up if that is earlier (seconds; None when neither exists)."""
        ts = [t for t, _, _ in self.pending.values() if t > now]
        w = self.inner.next_wakeup(now)
        self._inner_wake = w
        if w is not None:
            ts.append(w)
        return min(ts) if ts else None
