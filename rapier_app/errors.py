"""The project's exception base class.

Every error the project raises on purpose derives from :class:`RapierError`, so a
caller (a CLI's ``main``, the controller's startup, a test) can catch the project's
own errors in one ``except`` and let genuine bugs through.  Each subclass also keeps
the builtin it always derived from (``ValueError`` for bad input, ``RuntimeError``
for a failed operation), so existing ``except ValueError`` clauses keep working.
"""

from __future__ import annotations

__all__ = ["RapierError"]


class RapierError(Exception):
    """Base class of every exception raised on purpose by ``rapier_app``,
    ``topologies``, ``enforcement`` and ``mininet_tests``.

    Subclasses pair it with the builtin they mean: ``class TopologyError(RapierError,
    ValueError)`` for input that does not parse or validate, ``RuntimeError`` for an
    operation that failed.
    """
