"""OPTAS: tiny-task detection and FIFO priority for tiny coflows (seed 002), Sections
III-IV: registered as ``optas``.  Non-clairvoyant.

Units: bytes for sizes and thresholds, bit/s for rates, seconds for times.  Shared
machinery: :mod:`.seedbase`; readings where the paper is silent: the class docstring
and ``docs/seed-schedulers.md``.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ..core.model import CoflowState, FlowState
from .base import SchedulerError, register
from .seedbase import BITS, CROSS_TOL, MIB, _Group, _SeedScheduler, waterfill

@register("optas")
class Optas(_SeedScheduler):
    """OPTAS: tiny-task detection and FIFO priority for tiny coflows (seed 002).

    Source: OPTAS Section IV ("OPTAS sets one threshold to filtrate large tasks.  We
    compare the backlogged bytes in sendbuffer plus the transmitted bytes ... if the
    sum ... is larger than the threshold ... the flow is a long flow, the task it
    involved is a large task"; "a tiny task is all flows it involves are smaller than
    1MB, so we set the threshold 1MB"), Section III-C / IV (tiny tasks have priority
    over large ones; the task list is sorted by start time and its head gets bandwidth
    first; "subsequent tasks are not completely blocked"), Section V (large tasks fair
    share below the tiny ones, the "O" configuration of Fig. 9).

    A coflow is tiny until one of its flows has bytes_sent + backlog > ``threshold``;
    then it is large for good.  Tiny coflows are served FIFO by arrival, strict
    priority, each coflow's flows max-min fair, later tiny coflows back-filling;
    large coflows then share what is left per-flow max-min fairly.

    Args:
        threshold: bytes, default 1 MiB (the 1 MB send buffer of Section IV; MB read
            as 2^20 bytes like the Linux buffer size it stands for).

    Raises:
        SchedulerError: threshold <= 0.

    Readings: the backlog is the flow's send-buffer occupancy.  The flow model here
    exposes no backlog to a non-clairvoyant scheduler, so the scheduler uses
    ``flow.backlog_bytes`` when the model provides it and 0 otherwise: a flow is then
    found large once it has *sent* more than the threshold, which the scheduler
    catches exactly by asking to be woken at that instant.
    """

    clairvoyant = False
    #: per-flow bytes sent come from the simulator's counters (see ``flow_sent``)
    reads_progress = "vector"
    #: tiny coflows water-filled in FIFO order, then large ones water-filled on
    #: what is left: every flow ends on a saturated link
    work_conserving = "path"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 threshold: float = MIB):
        super().__init__(topology, seed, max_paths)
        if not threshold > 0:
            raise SchedulerError(f"threshold: must be > 0 bytes, got {threshold!r}")
        self.threshold = float(threshold)
        self._large: set = set()
        # (group, its flows' rates in bit/s) of every tiny coflow, from the last plan
        self._tiny: List[Tuple[_Group, np.ndarray]] = []

    @staticmethod
    def _backlog(flows: Sequence[FlowState]) -> Optional[np.ndarray]:
        """Per flow, the send-buffer backlog in bytes, or None when the flow model
        exposes none (the simulator's does not)."""
        if not flows or not hasattr(flows[0], "backlog_bytes"):
            return None
        return np.array([float(getattr(f, "backlog_bytes", 0.0) or 0.0) for f in flows])

    def is_large(self, c: CoflowState) -> bool:
        """Update and return whether ``c`` has been detected as a large task: one of
        its flows, finished or not, has bytes sent + backlog above the threshold."""
        if c.coflow_id in self._large:
            return True
        thr = self.threshold * (1 + CROSS_TOL)
        g = self.group(c)
        seen = self.flow_sent(g)
        back = self._backlog(g.flows)
        if back is not None:
            seen = seen + back
        if g.done_max > thr or (g.n and float(seen.max()) > thr):
            self._large.add(c.coflow_id)
            return True
        return False

    def plan(self, now, coflows, rates):
        live = {c.coflow_id for c in coflows}
        self._large &= live
        order = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id))
        tiny = [c for c in order if not self.is_large(c)]
        large = [c for c in order if c.coflow_id in self._large]
        res = self.fresh_residual()
        self.strict_pass([(self.group(c), None) for c in tiny], res, rates)
        if large:
            self.joint_pass([self.group(c) for c in large], res, rates, waterfill)
        self._tiny = [(g, rates[id(g)]) for g in map(self.group, tiny)]
        return [c.coflow_id for c in tiny + large], {"tiny": [c.coflow_id for c in tiny]}

    def next_wakeup(self, now: float) -> Optional[float]:
        """When the first flow of a tiny coflow will pass the threshold (s)."""
        best = None
        for g, r in self._tiny:
            pos = r > 0
            if not g.n or not pos.any():
                continue
            seen = self.flow_sent(g)
            back = self._backlog(g.flows)
            if back is not None:
                seen = seen + back
            need = self.threshold - seen[pos]
            t = now + np.maximum(need, 0.0) * BITS / r[pos]
            # wake just after the crossing so that "larger than" holds
            t = t + np.maximum(t * 1e-12, 1e-9)
            t = t[t > now]
            if t.size:
                v = float(t.min())
                if best is None or v < best:
                    best = v
        return best
