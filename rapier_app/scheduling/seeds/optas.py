"""OPTAS: tiny-task detection and FIFO priority for tiny coflows (seed 002), Sections
III-IV: registered as ``optas``.  Non-clairvoyant.

Units: bytes for sizes and thresholds, bit/s for rates, seconds for times.  Shared
machinery: :mod:`.base`; readings where the paper is silent: the class docstring
and ``docs/seed-schedulers.md``.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from topologies import Topology

from ...core.model import CoflowState
from ..base import SchedulerError
from ..registry import register
from .base import _SeedScheduler
from .group import _Group
from .passes import BITS, CROSS_TOL, MIB, waterfill

@register("optas")
class Optas(_SeedScheduler):
    """OPTAS: tiny-task detection and FIFO priority for tiny coflows (seed 002).

    Source: OPTAS Section IV ("OPTAS sets one threshold to filtrate large tasks.  We
    compare the backlogged bytes in sendbuffer plus the transmitted bytes ... if the
    sum ... is larger than the threshold ... the flow is a long flow, the task it
    involved is a large task"; "a tiny task is all flows it involves are smaller than
    1MB, so we set the threshold 1MB"; "The default send buffer size is 1MB ... When
    the first few packets are about to send, send buffer of the flow is filled by user
    data, so the occupied buffer size reflects the size of flow"), Section III-C / IV
    (tiny tasks have priority over large ones; the task list is sorted by start time
    and its head gets bandwidth first; "subsequent tasks are not completely
    blocked"), Section V (large tasks fair share below the tiny ones, the "O"
    configuration of Fig. 9).

    A coflow is tiny until one of its flows has bytes_sent + backlog > ``threshold``;
    then it is large for good.  Tiny coflows are served FIFO by arrival, strict
    priority, each coflow's flows max-min fair, later tiny coflows back-filling;
    large coflows then share what is left per-flow max-min fairly.

    Send-buffer model (``buffer_model=True``, default).  Each flow has a kernel send
    buffer of ``sndbuf`` bytes.  From the flow's start the application copies its
    data into the buffer at ``app_rate_bps`` (default: the line rate of the flow's
    first link, i.e. the sender's NIC), never more than ``sndbuf`` bytes ahead of
    what the network has taken and never more than the flow's size.  Bytes written
    by time t:

        written(t) = max(sent(t), min(size, app_rate * (t - start) / 8, sent(t) + sndbuf))

    The Buffer Monitor sees backlog = written - sent, so the OPTAS test "backlog +
    transmitted > threshold" is ``written(t) > threshold``.  A flow of at most
    ``threshold`` bytes is never large; a larger one is found large at
    max(start + threshold * 8 / app_rate, the instant sent + sndbuf passes the
    threshold), whatever its network rate: with sndbuf = threshold = 1 MiB, 8.39 ms
    after it starts at 1 Gbit/s, or as soon as it sends its first bytes if it is
    blocked then.  The model is the only code that reads a flow's true size
    (``flow.spec``): it stands for the sender's kernel; the scheduler learns only
    the one bit "written > threshold" and the instant it flips.
    ``buffer_model=False`` is the earlier reading: no buffer, a flow is
    large once it has *sent* more than the threshold.

    Args:
        threshold: bytes, default 1 MiB (the 1 MB send buffer of Section IV; MB read
            as 2^20 bytes like the Linux buffer size it stands for).
        sndbuf: send-buffer capacity in bytes, default 1 MiB (Section IV's default).
        app_rate_bps: rate (bit/s) at which the application fills the buffer; None:
            the capacity of the flow's first link.
        buffer_model: see above.

    Raises:
        SchedulerError: threshold, sndbuf or app_rate_bps not > 0.
    """

    clairvoyant = False
    #: reads no size; with sizes hidden the send-buffer model, which stands for the
    #: sender's kernel and reads the true size, is off (:meth:`expect_unknown_sizes`)
    unknown_sizes = "unused"
    #: per-flow bytes sent come from the simulator's counters (see ``flow_sent``)
    reads_progress = "vector"
    #: tiny coflows water-filled in FIFO order, then large ones water-filled on
    #: what is left: every flow ends on a saturated link
    work_conserving = "path"

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 threshold: float = MIB, sndbuf: float = MIB,
                 app_rate_bps: Optional[float] = None, buffer_model: bool = True):
        super().__init__(topology, seed, max_paths)
        if not threshold > 0:
            raise SchedulerError(f"threshold: must be > 0 bytes, got {threshold!r}")
        if not sndbuf > 0:
            raise SchedulerError(f"sndbuf: must be > 0 bytes, got {sndbuf!r}")
        if app_rate_bps is not None and not app_rate_bps > 0:
            raise SchedulerError(f"app_rate_bps: must be > 0 bit/s, got {app_rate_bps!r}")
        self.threshold = float(threshold)
        self.sndbuf = float(sndbuf)
        self.app_rate_bps = None if app_rate_bps is None else float(app_rate_bps)
        self.buffer_model = bool(buffer_model)
        self._large: set = set()
        self._now = 0.0
        # (group, its flows' rates in bit/s) of every tiny coflow, from the last plan
        self._tiny: List[Tuple[_Group, np.ndarray]] = []

    def expect_unknown_sizes(self) -> None:
        """Sizes are hidden (``rapier-sim --hide-sizes``): the send-buffer model
        reads each flow's true size to stand for the sender's kernel, so it is
        turned off (``buffer_model=False``: a flow is large once it has *sent* more
        than ``threshold``)."""
        self.buffer_model = False

    # -- the send-buffer model (the sender's kernel) ------------------------------
    def _true_sizes(self, g: _Group) -> np.ndarray:
        """Flow sizes (bytes) for the buffer model only, cached on the group."""
        if g.sizes is None:
            g.sizes = np.fromiter((f.spec.size_bytes for f in g.flows), float, g.n)
        return g.sizes

    def _app_rate(self, g: _Group) -> np.ndarray:
        """Per flow, the rate (bit/s) at which the application fills its buffer."""
        if self.app_rate_bps is not None:
            return np.full(g.n, self.app_rate_bps)
        return self._cap[g.P[:, 0]]

    def seen_bytes(self, g: _Group, now: float) -> np.ndarray:
        """Per active flow of ``g``, what the Buffer Monitor reports at ``now`` (s):
        bytes sent + send-buffer backlog, i.e. written(now) of the class docstring
        (``buffer_model=False``: bytes sent)."""
        sent = self.flow_sent(g)
        if not self.buffer_model or g.n == 0:
            return sent
        start = np.fromiter((f.start_s for f in g.flows), float, g.n)
        app = self._app_rate(g) * np.maximum(now - start, 0.0) / BITS
        w = np.minimum(np.minimum(self._true_sizes(g), app), sent + self.sndbuf)
        return np.maximum(w, sent)  # what was sent was written

    def crossing_times(self, g: _Group, now: float, r: np.ndarray) -> np.ndarray:
        """Per active flow of ``g``, the instant (s) at which what the monitor reports
        first exceeds the threshold if the flow keeps rate ``r`` (bit/s); ``inf``
        when it never does (a flow of at most ``threshold`` bytes, or a blocked one
        that needs to send first)."""
        thr = self.threshold
        sent = self.flow_sent(g)
        out = np.full(g.n, np.inf)
        pos = r > 0
        if not self.buffer_model:
            out[pos] = now + np.maximum(thr - sent[pos], 0.0) * BITS / r[pos]
            return out
        big = self._true_sizes(g) > thr
        start = np.fromiter((f.start_s for f in g.flows), float, g.n)
        t_app = start + thr * BITS / self._app_rate(g)
        need = thr - self.sndbuf - sent          # bytes to send before sent + B > thr
        t_net = np.where(need < 0, now, np.inf)
        ok = pos & (need >= 0)
        t_net[ok] = now + need[ok] * BITS / r[ok]
        out[big] = np.maximum(np.maximum(t_app[big], t_net[big]), now)
        return out

    def is_large(self, c: CoflowState) -> bool:
        """Update and return whether ``c`` has been detected as a large task: one of
        its flows, finished or not, has bytes sent + backlog above the threshold."""
        if c.coflow_id in self._large:
            return True
        thr = self.threshold * (1 + CROSS_TOL)
        g = self.group(c)
        if g.done_max > thr or (g.n and float(self.seen_bytes(g, self._now).max()) > thr):
            self._large.add(c.coflow_id)
            return True
        return False

    def plan(self, now, coflows, rates):
        self._now = now
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
        """When the first flow of a tiny coflow will be reported above the threshold
        (s), at the current rates."""
        best = None
        for g, r in self._tiny:
            if not g.n:
                continue
            t = self.crossing_times(g, now, r)
            t = t[np.isfinite(t)]
            if not t.size:
                continue
            # wake just after the crossing so that "larger than" holds
            t = t + np.maximum(t * 1e-12, 1e-9)
            t = t[t > now]
            if t.size:
                v = float(t.min())
                if best is None or v < best:
                    best = v
        return best
