"""``baseline`` (ECMP routes, per-flow max-min fair sharing) and ``fair`` (the same,
named as the seed papers' per-flow fair sharing).  Units: bit/s for rates.
"""

from __future__ import annotations

from typing import Sequence

from ...core.model import CoflowState, Schedule
from ..maxmin import max_min_fair_flat
from ..registry import register
from .routed import _Routed


@register("baseline")
class Baseline(_Routed):
    """RAPIER's baseline (Section V): ECMP routing and per-flow max-min fair sharing.

    Models TCP sharing at flow level.  Source: RAPIER Section V, "Baseline".
    """

    reads_progress = False  # ECMP routes are cached; max-min needs no byte counts
    #: ECMP and max-min fair shares read no size
    unknown_sizes = "unused"
    #: max-min fair (progressive filling): every flow ends on a saturated link
    work_conserving = "path"
    #: its rates model TCP sharing by itself (the emulation runs baseline's agents
    #: unenforced), so no controller hand-off applies
    rates_pushed = False

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        flows, paths, _, lens, lidx, _, _ = self._active_routes(coflows, (0, 1, 3, 4))
        rates = max_min_fair_flat(lens, lidx, self.topology.capacity)
        return Schedule.from_vectors(flows, paths, rates, order=[c.coflow_id for c in coflows],
                                     tuple_paths=True)


@register("fair")
class PerFlowFair(Baseline):
    """Per-flow max-min fair sharing on ECMP routes (TCP-like), the normaliser used
    by the Aalo and Sincronia evaluations.  Identical to ``baseline``."""
