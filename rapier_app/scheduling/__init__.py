"""Coflow schedulers behind one interface (:class:`base.Scheduler`).

Every scheduler module registers its classes by name; :func:`load_all` imports them
so that :func:`base.make_scheduler` can find any of them.
"""

import importlib

from .base import REGISTRY, Scheduler, SchedulerError, make_scheduler, max_min_fair, register

_MODULES = ["classic", "rapier", "seeds", "fast"]


def load_all() -> None:
    """Import every built-in scheduler module (missing optional ones are skipped)."""
    for mod in _MODULES:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{mod}":
                raise


def scheduler_names() -> list:
    """Names of all registered schedulers, sorted."""
    load_all()
    return sorted(REGISTRY)


__all__ = ["REGISTRY", "Scheduler", "SchedulerError", "load_all", "make_scheduler",
           "max_min_fair", "register", "scheduler_names"]
