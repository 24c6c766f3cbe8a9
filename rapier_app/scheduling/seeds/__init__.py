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

Layout: one module per family -- :mod:`.fifo`, :mod:`.aalo`, :mod:`.philae`,
:mod:`.sincronia`, :mod:`.optas` -- on the shared machinery: :mod:`.base`
(:class:`~.base._SeedScheduler`: sticky ECMP routes, the strict, joint and weighted
allocation passes, the Schedule output), :mod:`.group` (a coflow's padded link
matrix), :mod:`.stack` (the compiled passes' stacked inputs) and :mod:`.passes`
(:func:`~.passes.waterfill`, :func:`~.passes.greedy_rates`).  Importing this package
registers every seed scheduler (:data:`~rapier_app.scheduling.registry.REGISTRY`).

Units: bytes for sizes and counters, bit/s for rates and capacities, seconds for
times.  Every scheduler routes by sticky ECMP (a flow keeps the path
:meth:`Scheduler.ecmp_path` hashes it to), as the seed papers assume a big switch or
ECMP fabric, and returns a rate for every active flow: the controller enforces rates,
not priorities, so priority disciplines are turned into rates by the allocation
passes of :mod:`.base`.  The readings made where the papers are silent are
stated in each class docstring and collected in ``docs/seed-schedulers.md``.

Information model: the non-clairvoyant classes set ``clairvoyant = False``; they read
only endpoints, ``bytes_sent``, completions and (after completion) sizes.  The
:class:`~rapier_app.core.model.FlowState` guard raises ``InformationError`` if they
ask for anything else.
"""

from . import aalo, fifo, optas, philae, sincronia  # noqa: F401  (registers the schedulers)
