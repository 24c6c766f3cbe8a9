"""FIFO coflow scheduling (Orchestra / Baraat's FIFO, as the Aalo paper's Table 1
describes it): registered as ``fifo``.  Non-clairvoyant.

Units: bit/s for rates, seconds for times.  Shared machinery: :mod:`.base`.
"""

from __future__ import annotations

from ..registry import register
from .base import _SeedScheduler

@register("fifo")
class Fifo(_SeedScheduler):
    """Coflows served one after another in arrival order (Orchestra, Baraat).

    Aalo Table 1 characterises Orchestra and Baraat as one FIFO queue whose work
    conservation goes to the "next coflow".  Here: coflows sorted by (arrival time,
    id); the first gets max-min fair rates for its flows on the full capacity, the
    next gets max-min fair rates on what is left, and so on, so later coflows
    back-fill idle ports.  Needs no size: non-clairvoyant.
    """

    clairvoyant = False
    #: reads no size (bytes sent and completions only)
    unknown_sizes = "unused"
    reads_progress = False  # the order needs only arrival times; no byte counters
    #: strict priority by water-filling on what earlier coflows left: every flow
    #: ends on a saturated link (back-filling, Aalo Table 1's "next coflow")
    work_conserving = "path"

    def plan(self, now, coflows, rates):
        order = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id))
        res = self.fresh_residual()
        self.strict_pass([(self.group(c), None) for c in order],
                         res, rates)
        return [c.coflow_id for c in order], {}
