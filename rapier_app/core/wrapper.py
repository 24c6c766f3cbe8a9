"""The base of schedulers that wrap another scheduler.

The simulator's wrappers (:class:`~rapier_app.sim.background.BackgroundScheduler`,
:class:`~rapier_app.sim.handoff.HandoffDelay`) and the controller's
(:class:`~rapier_app.controller.links.LinkAwareScheduler`,
:class:`~rapier_app.core.broker.ResidualScheduler`) change what the wrapped
scheduler decides and are used in its place: everything else is the wrapped one's.
"""

from __future__ import annotations

from typing import Tuple


class SchedulerWrapper:
    """A scheduler standing in for ``inner``: every attribute the wrapper does not
    define itself is read from ``inner`` (``name``, ``clairvoyant``, ``topology``,
    ``next_wakeup``, ...); subclasses override :meth:`schedule` and whatever else
    they change.

    :attr:`reads_progress` and :meth:`flows_finished` are defined here (not only
    forwarded) because the simulator reads them on the wrapper's class
    (:class:`~rapier_app.sim.state.SimState` calls ``flows_finished`` when the class
    defines its own).

    Args:
        inner: the wrapped scheduler (any object with ``schedule(now, coflows)``;
            :class:`~rapier_app.scheduling.base.Scheduler` or another wrapper).

    Class attributes:
        not_forwarded: attribute names never read from ``inner`` (a missing one
            raises AttributeError instead of recursing, e.g. while ``copy`` or
            ``pickle`` rebuild the wrapper before ``inner`` is set).
    """

    not_forwarded: Tuple[str, ...] = ("inner",)

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        # only called for attributes the wrapper lacks: read the inner scheduler's
        if name in type(self).not_forwarded:
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def reads_progress(self):
        """The inner scheduler's ``reads_progress`` (the simulator checks it)."""
        return self.inner.reads_progress

    def flows_finished(self, *args, **kwargs):
        """Passed on to the inner scheduler's ``flows_finished`` hook, when it has one
        (the hook is optional for the controller's duck-typed schedulers)."""
        hook = getattr(self.inner, "flows_finished", None)
        if hook is not None:
            return hook(*args, **kwargs)
        return None
