"""Coflow schedulers behind one interface (:class:`Scheduler`).

Layout (each scheme, paper algorithm and engine by its folder):

* :mod:`.base` -- the :class:`Scheduler` interface and :class:`SchedulerError`;
  :mod:`.registry` -- names, :func:`register`, :func:`make_scheduler`;
* shared allocation passes: :mod:`.maxmin` (max-min fair), :mod:`.conserve` (work
  conservation between coflow events), :mod:`.orders` (coflow orders on demand
  matrices), :mod:`.pathcache` (candidate paths and their link matrices);
* :mod:`.rapier` -- RAPIER (Zhao et al., INFOCOM 2015): Algorithms 1-2
  (:mod:`.rapier.scheduler`), LP (4) and model (2) (:mod:`.rapier.lp4`), Algorithm 2's
  rounding (:mod:`.rapier.rounding`), Algorithm 3 (:mod:`.rapier.alg3`), plans
  (:mod:`.rapier.plan`), route heuristics (:mod:`.rapier.routes`) and the variants
  (:mod:`.rapier.variants`);
* :mod:`.seeds` -- the seed papers' schedulers: FIFO, Aalo, Philae, Sincronia, OPTAS
  on shared passes;
* :mod:`.classic` -- the RAPIER paper's comparison schemes: ``baseline``, ``fair``,
  ``routing-only``, ``scheduling-only`` (Varys).

The public API for callers and plugin schedulers is this package's names (import
them from ``rapier_app.scheduling``); the compiled engines of the passes live in
:mod:`rapier_app.kernels`.
"""

from .base import Scheduler, SchedulerError, UnknownSizeError
from .maxmin import max_min_fair
from .registry import REGISTRY, load_all, make_scheduler, register, scheduler_names

__all__ = ["REGISTRY", "Scheduler", "SchedulerError", "load_all", "make_scheduler",
           "max_min_fair", "register", "scheduler_names", "UnknownSizeError"]
