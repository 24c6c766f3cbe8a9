"""RAPIER: joint routing and scheduling of coflows (Zhao et al., INFOCOM 2015).

* :mod:`.scheduler` -- :class:`~.scheduler.Rapier` (``rapier``): Algorithm 1
  (coflow pick order, Section IV-A) and Algorithm 2 (minimum CCT, Section IV-B);
  the module docstring documents every reading of the paper;
* :mod:`.lp4` -- LP (4) (the relaxation Algorithm 2 solves) and model (2) with fixed
  routes;
* :mod:`.rounding` -- Algorithm 2's rounding of LP (4) and its tie-break;
* :mod:`.alg3` -- Algorithm 3 (DistributeBandwidth, Section IV-C) and work
  conservation between coflow events;
* :mod:`.plan` -- the per-coflow plan and arrays the algorithms share;
* :mod:`.routes` -- route heuristics (greedy placement, local search, ECMP spread);
* :mod:`.nc` -- ``rapier-nc``: Algorithms 1-3 on estimated sizes when sizes are
  unknown (the project's own mode, no paper has it);
* :mod:`.variants` -- ``rapier-residual``, ``rapier-isolated``, ``rapier-bssi``,
  ``rapier-ls``, ``rapier-spread``.

Importing this package registers every RAPIER scheduler
(:data:`~rapier_app.scheduling.registry.REGISTRY`).
"""

from . import nc, scheduler, variants  # noqa: F401  (registers the schedulers)
