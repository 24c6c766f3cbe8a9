"""RAPIER's variants: the same Algorithms 1-3 with one reading changed.

* ``rapier-residual`` (:class:`RapierResidual`): LP (4) solved on the residual
  capacities R (the literal reading of Algorithm 2 line 2);
* ``rapier-isolated`` (:class:`RapierIsolated`): LP (4) on the full capacities, each
  coflow routed as if the fabric were empty;
* ``rapier-bssi`` (:class:`RapierBSSI`): RAPIER's joint routing with Sincronia's BSSI
  coflow order (beyond the papers);
* ``rapier-ls`` (:class:`RapierLS`): Algorithm 2's argmax rounding improved by a
  greedy placement and local search (:func:`~.routes.improved_routes`);
* ``rapier-spread`` (:class:`RapierSpread`): the flows' ECMP paths whenever they
  reach the same fixed-route alpha (:func:`~.routes.spread_routes`).

The readings of the paper are documented in :mod:`.scheduler`.  Units: volumes in
bits, capacities in bit/s, times in seconds.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from topologies import Topology

from ...core.model import CoflowState
from ..base import SchedulerError
from ..registry import register
from .routes import improved_index, improved_routes, spread_index, spread_routes
from .scheduler import Rapier


@register("rapier-residual")
class RapierResidual(Rapier):
    """RAPIER with LP (4) solved on the residual capacities R (the literal reading of
    Algorithm 2 line 2; see the module docstring)."""

    def __init__(self, topology: Topology, seed: int = 0, **kw):
        kw.setdefault("route_on", "residual")
        super().__init__(topology, seed, **kw)


@register("rapier-isolated")
class RapierIsolated(Rapier):
    """RAPIER with LP (4) solved on the full capacities: each coflow routed as if the
    fabric were empty (``route_on="full"``, this project's earlier default).
    Kept to show what routing on the leftover capacity buys: later coflows' routes
    cross saturated links and model (2) gives them alpha = 0.  Argmax rounding
    alone (``tie_break="none"``), as before.  LP (4) by ``lp="fast"`` unless told
    otherwise: on the empty fabric the greedy placement is certified optimal for
    (4) at all 136 solves of 20,000 decision points from the Facebook hour's 186th
    coflow on ``fattree:10``; the whole hour: average CCT 29.02 s in 747 s of wall
    time (beside the unit tests), 29.03 s in 1,240 s (alone) with the simplex's
    vertices."""

    default_tie_break = "none"
    default_lp = "fast"

    def __init__(self, topology: Topology, seed: int = 0, **kw):
        kw.setdefault("route_on", "full")
        super().__init__(topology, seed, **kw)


@register("rapier-bssi")
class RapierBSSI(Rapier):
    """Beyond the papers: RAPIER's joint routing with Sincronia's BSSI coflow order.

    At every full pass (coflow arrivals and completions):

    1. each coflow's isolation routing (LP (4) on the full capacities, argmax
       rounding) gives its remaining demand per link, d_c^l = bits / C_l (s);
    2. the coflow order on those demands: with ``order="bssi"``, Sincronia's
       Bottleneck-Select-Scale-Iterate (Sincronia Algorithm 1,
       :func:`~rapier_app.scheduling.seeds.sincronia.bssi_order`, weights = coflow weights).
       With ``order="best"`` (default), the order of lowest concurrent-open-shop
       cost (:func:`~rapier_app.scheduling.orders.open_shop_cost`, sum of w_c times
       the completion of c served one coflow after another) among BSSI's, RAPIER
       Algorithm 1's minimum-completion-first rule on the same demands
       (:func:`~rapier_app.scheduling.orders.greedy_completion_order`) and Varys's
       SEBF (:func:`~rapier_app.scheduling.orders.sebf_order`); ties keep BSSI,
       then SEBF.  The cost is the one Sincronia's Theorem 1 bounds the CCTs of an
       order-preserving schedule with, and the chosen order's cost is at most
       BSSI's, so BSSI's 2-approximation of that cost carries over;
    3. in that order each coflow is routed again by LP (4) on the capacity left by
       the coflows ahead (``route_on="reserved"``) and gets model (2) rates on the
       residual R (Algorithm 2), as in ``rapier``;
    4. work conservation hands the rest out in that order (Sincronia Section 4.4's
       prioritized work conservation; ``wc="alg3"``: RAPIER's Algorithm 3 order),
       at full passes and at every other flow completion.

    Why ``"best"``: measured on the first 300 coflows of the Facebook hour on
    ``bigswitch:150``, BSSI alone averages 26.80 s against rapier's 25.38 s (BSSI
    ranks by the most loaded port only and often puts a short coflow behind a long
    one there); the lowest-cost order of the three averages 24.97 s (docs/results.md).

    No starvation guard: the order is what Sincronia's 4-approximation (Theorem
    1) covers.  Args as :class:`Rapier`, plus ``wc`` (``"order"`` default, or
    ``"alg3"``), ``order`` (``"best"`` default, or ``"bssi"``) and ``rank_lp``:
    how step 1's isolation LPs (4), which only rank, are solved: ``"fast"``
    (default: the greedy placement where LP duality certifies it optimal, else the
    simplex, i.e. ``lp="fast"`` of :class:`Rapier` for these solves only; step 3's
    LPs keep ``lp``) or ``"exact"`` (the scheduler's ``lp``).  Both give an optimal
    solution of each isolation LP; they may be different vertices, hence
    different per-link demands off the host links and possibly another order.
    Measured: the same CCTs to the bit on the Facebook hour on ``fattree:10``
    (1,125 s of wall time beside another replay, against 1,273 s alone with
    ``"exact"``); on the sweeps of ``results/sweeps``
    another order at a few points (docs/evaluation.md).
    ``self.stats["order_<name>"]`` counts the full passes each order won
    (``order_same`` when all three agree).

    Raises:
        SchedulerError: as :class:`Rapier`; unknown ``wc`` or ``order``.
    """

    def __init__(self, topology: Topology, seed: int = 0, wc: str = "order",
                 order: str = "best", rank_lp: str = "fast", **kw):
        kw.setdefault("route_on", "reserved")
        super().__init__(topology, seed, **kw)
        if wc not in ("order", "alg3"):
            raise SchedulerError(f"wc: must be 'order' or 'alg3', got {wc!r}")
        if order not in ("best", "bssi"):
            raise SchedulerError(f"order: must be 'best' or 'bssi', got {order!r}")
        if rank_lp not in ("exact", "fast"):
            raise SchedulerError(f"rank_lp: must be 'exact' or 'fast', got {rank_lp!r}")
        self.wc = wc
        self.order = order
        self.rank_lp = rank_lp
        #: the isolation routes of step 1 when they are solved with rank_lp="fast"
        #: (kept apart from the routes step 3 reuses: same layout as _full_routes)
        self._rank_routes: dict = {}
        for k in ("order_bssi", "order_sebf", "order_greedy", "order_same"):
            self.stats[k] = 0
        self._prio: Optional[List[CoflowState]] = None

    def coflow_order(self, now: float, active: Sequence[CoflowState]
                     ) -> Optional[List[CoflowState]]:
        """The order of ``active`` on their isolation-routed demands (class doc)."""
        from ..orders import greedy_completion_order, open_shop_cost, sebf_order
        from ..seeds.sincronia import bssi_order

        if not active:
            self._prio = []
            return []
        cap = self.topology.capacity
        D = np.zeros((len(active), len(cap)))
        apart = self.rank_lp == "fast" and self._rounding.lp != "fast"
        if apart:
            live = {c.coflow_id for c in active}
            for cid in [k for k in self._rank_routes if k not in live]:
                del self._rank_routes[cid]
            kept = self._full_routes
            self._full_routes, self._rounding.lp = self._rank_routes, "fast"
        try:
            for i, c in enumerate(active):
                plan = self.minimum_cct(c, cap, None)
                if plan.load_links is not None and plan.load_links.size:
                    D[i, plan.load_links] = plan.load_bits / cap[plan.load_links]
        finally:
            if apart:
                self._full_routes, self._rounding.lp = kept, self.lp
        rank = {c.coflow_id: r for r, c in enumerate(
            sorted(active, key=lambda c: (c.arrival_s, c.coflow_id)))}
        w = [c.weight for c in active]
        tk = [rank[c.coflow_id] for c in active]
        idx = bssi_order(D, w, coflow_tiebreak=tk)
        if self.order == "best":
            cands = [("bssi", idx), ("sebf", sebf_order(D, tk)),
                     ("greedy", greedy_completion_order(D, w, tk))]
            if all(o == idx for _, o in cands):
                self.stats["order_same"] += 1
            else:
                name, idx = min(cands, key=lambda no: open_shop_cost(D, no[1], w))
                self.stats["order_" + name] += 1
        self._prio = [active[i] for i in idx]
        return list(self._prio)

    def coflows_changed(self, coflow_ids: Sequence[str]) -> None:
        """As :meth:`Rapier.coflows_changed`, the ranking routes of those coflows too."""
        super().coflows_changed(coflow_ids)
        for cid in coflow_ids:
            self._rank_routes.pop(cid, None)

    def capacity_changed(self) -> None:
        """As :meth:`Rapier.capacity_changed`, the ranking routes too."""
        super().capacity_changed()
        self._rank_routes.clear()

    def wc_priority(self, active: Sequence[CoflowState]) -> Optional[List[CoflowState]]:
        if self.wc == "alg3" or self._prio is None:
            return None
        live = {c.coflow_id for c in active}
        return [c for c in self._prio if c.coflow_id in live]


@register("rapier-ls")
class RapierLS(Rapier):
    """RAPIER (Algorithms 1-3, ``route_on="full"``) with the improved rounding of
    :func:`improved_routes` in place of Algorithm 2's argmax.  Same parameters as
    :class:`~rapier_app.scheduling.rapier.scheduler.Rapier`."""

    default_tie_break = "none"  # the rounding is this variant's own

    def round_routes(self, flows, vols, usable, ms, lp_cap):
        """Argmax rounding (Alg. 2 lines 3-7) improved by greedy + local search."""
        base = super().round_routes(flows, vols, usable, ms, lp_cap)
        return improved_routes(self.topology, flows, vols, usable, base, lp_cap,
                               self.max_paths)

    def round_index(self, flows, vol, carr, argmax_k, lp_cap):
        """:meth:`round_routes` on the flows' path blocks (:func:`improved_index`)."""
        return improved_index(vol, carr.path_blocks(), argmax_k, lp_cap)


@register("rapier-spread")
class RapierSpread(Rapier):
    """RAPIER with Algorithm 2's rounding replaced, per coflow, by the flows' ECMP
    paths whenever those reach the same fixed-route alpha (:func:`spread_routes`).
    Same parameters as :class:`~rapier_app.scheduling.rapier.scheduler.Rapier`; Algorithms 1
    and 3 and the LP are unchanged."""

    default_tie_break = "none"  # the rounding is this variant's own

    def round_routes(self, flows, vols, usable, ms, lp_cap):
        """Argmax rounding (Alg. 2 lines 3-7), then ECMP when it is as good."""
        base = super().round_routes(flows, vols, usable, ms, lp_cap)
        return spread_routes(self.topology, flows, vols, usable, base, lp_cap,
                             self.ecmp_path)

    def round_index(self, flows, vol, carr, argmax_k, lp_cap):
        """:meth:`round_routes` on the flows' path blocks (:func:`spread_index`);
        None (the dict rounding) when a flow's ECMP path is not a candidate."""
        ek = self._rounding._ecmp_index(flows, carr)
        if ek is None:
            return None
        return spread_index(vol, carr.path_blocks(), argmax_k, ek, lp_cap)
