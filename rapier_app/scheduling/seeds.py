"""The seed papers' schedulers beside RAPIER: Aalo, Philae, Sincronia, OPTAS, FIFO.

Registered names (selectable in the simulator and in the controller configuration):

* ``aalo`` -- D-CLAS, Aalo (Chowdhury and Stoica, SIGCOMM 2015), Section 4.4 and
  Pseudocode 1.  Non-clairvoyant.
* ``philae`` -- pilot-flow sampling, Philae (Jajoo, Hu, Lin; seed 001), Sections 2-3.
  Non-clairvoyant.
* ``sincronia`` -- BSSI ordering (Algorithm 1), order-preserving greedy rates
  (Algorithm 2), the online epoch framework (Section 4.2) and prioritized work
  conservation (Section 4.4), Sincronia (Agarwal et al., SIGCOMM 2018).  Clairvoyant.
* ``sincronia-immediate`` -- the same with BSSI recomputed at every arrival and
  departure (the "immediate recomputation" baseline of Sincronia Section 5.2).
* ``optas`` -- tiny-task detection and FIFO priority, OPTAS (seed 002), Sections
  III-IV.  Non-clairvoyant.
* ``fifo`` -- coflows served in arrival order (Orchestra / Baraat's FIFO, as the Aalo
  paper's Table 1 describes it).  Non-clairvoyant.

Per-flow fair sharing (``fair``) lives in :mod:`classic`.

Layout (issue 15): one module per family -- :mod:`.fifo`, :mod:`.aalo`,
:mod:`.philae`, :mod:`.sincronia`, :mod:`.optas` -- on the shared machinery of
:mod:`.seedbase` (sticky ECMP routes, padded link matrices, the strict and weighted
allocation passes, :func:`waterfill`, :func:`greedy_rates`).  This module re-exports
all of them, so ``from rapier_app.scheduling.seeds import Aalo`` keeps working, and
importing it registers every seed scheduler (:data:`.base.REGISTRY`).

Units: bytes for sizes and counters, bit/s for rates and capacities, seconds for
times.  Every scheduler routes by sticky ECMP (a flow keeps the path
:meth:`Scheduler.ecmp_path` hashes it to), as the seed papers assume a big switch or
ECMP fabric, and returns a rate for every active flow: the controller enforces rates,
not priorities, so priority disciplines are turned into rates by the allocation
passes of :mod:`.seedbase`.  The readings made where the papers are silent are
stated in each class docstring and collected in ``docs/seed-schedulers.md``.

Information model: the non-clairvoyant classes set ``clairvoyant = False``; they read
only endpoints, ``bytes_sent``, completions and (after completion) sizes.  The
:class:`~rapier_app.core.model.FlowState` guard raises ``InformationError`` if they
ask for anything else.
"""

from .aalo import Aalo
from .fifo import Fifo
from .optas import Optas
from .philae import Philae
from .seedbase import (BITS, CROSS_TOL, MIB, REL_TOL, WATERFILL_INCREMENTAL, greedy_rates,
                       link_index, waterfill)
# private names that tests and older code import from here
from .seedbase import _Group, _row_all, _row_any, _row_max, _row_min  # noqa: F401
from .seedbase import _SeedScheduler, _waterfill_incremental, _waterfill_plain  # noqa: F401
from .sincronia import (Sincronia, SincroniaImmediate, SincroniaMaxMin, bssi_lp_select,
                        bssi_order, orphan_order)

__all__ = ["Aalo", "BITS", "CROSS_TOL", "Fifo", "MIB", "Optas", "Philae", "REL_TOL",
           "Sincronia", "SincroniaImmediate", "SincroniaMaxMin", "WATERFILL_INCREMENTAL",
           "bssi_lp_select", "bssi_order", "greedy_rates", "link_index", "orphan_order",
           "waterfill"]
