"""The scheduler registry: every scheduler class registers under a name
(``@register("rapier")``) so that the CLI and the controller's configuration select it
by name (:func:`make_scheduler`); :func:`load_all` imports the built-in families.

Built-in families (one subpackage each): :mod:`~rapier_app.scheduling.classic`,
:mod:`~rapier_app.scheduling.rapier`, :mod:`~rapier_app.scheduling.seeds`.
"""

from __future__ import annotations

import importlib
from typing import Callable, Dict, Type

from topologies import Topology

from .base import Scheduler, SchedulerError

#: the built-in scheduler subpackages :func:`load_all` imports
_MODULES = ["classic", "rapier", "seeds"]


REGISTRY: Dict[str, Type[Scheduler]] = {}


def register(name: str) -> Callable[[Type[Scheduler]], Type[Scheduler]]:
    """Class decorator: make a scheduler selectable by ``name``."""

    def deco(cls: Type[Scheduler]) -> Type[Scheduler]:
        cls.name = name
        REGISTRY[name] = cls
        return cls

    return deco


def make_scheduler(name: str, topology: Topology, seed: int = 0, **params) -> Scheduler:
    """Instantiate the scheduler registered as ``name``.

    Raises:
        SchedulerError: unknown name, or a parameter the scheduler does not take.
    """
    load_all()
    cls = REGISTRY.get(name)
    if cls is None:
        raise SchedulerError(f"scheduler: unknown scheduler {name!r}; known: "
                             f"{', '.join(sorted(REGISTRY))}")
    try:
        return cls(topology, seed=seed, **params)
    except TypeError as exc:
        raise SchedulerError(f"scheduler: bad parameter for {name}: {exc}") from None


def load_all() -> None:
    """Import every built-in scheduler subpackage, which registers its classes
    (missing optional ones are skipped)."""
    for mod in _MODULES:
        try:
            importlib.import_module(f"{__package__}.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{mod}":
                raise


def scheduler_names() -> list:
    """Names of all registered schedulers, sorted."""
    load_all()
    return sorted(REGISTRY)
