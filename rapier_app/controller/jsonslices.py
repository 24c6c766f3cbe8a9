"""JSON encoding in slices, for the REST replies of the controller.

A 1,000-flow coflow's view (``GET /rapier/v1/coflows/<id>``) is about 0.4 MB of
JSON: ``json.dumps`` encodes it in one call, 8 ms on this machine and twice that
while a decision's native thread competes for the interpreter lock, during which
the event loop serves nothing (``/health`` included).  :func:`dumps_sliced` gives
the same text, encoding long lists one element at a time and calling ``pause()``
between elements (the Ryu app yields to the event loop there once its slice of
time ran out, :meth:`~.loop.DecisionLoopMixin._pause`).

Pure (standard library only).
"""

from __future__ import annotations

import json
from typing import Any, Callable

__all__ = ["LONG", "dumps_sliced"]

#: lists with more elements than this are encoded element by element (and a dict
#: holding one, key by key); shorter ones, and everything inside them, in one call
LONG = 16

_ENCODE = json.JSONEncoder().encode  # what json.dumps(obj) uses with no options


def _long(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and len(v) > LONG


def _encode(obj: Any, pause: Callable[[], None]) -> str:
    if _long(obj):
        parts = []
        for x in obj:
            parts.append(_encode(x, pause))
            pause()
        return "[" + ", ".join(parts) + "]"
    if type(obj) is dict and all(type(k) is str for k in obj) and \
            any(_long(v) for v in obj.values()):
        return "{" + ", ".join(_ENCODE(k) + ": " + _encode(v, pause)
                               for k, v in obj.items()) + "}"
    return _ENCODE(obj)


def dumps_sliced(obj: Any, pause: Callable[[], None]) -> str:
    """``json.dumps(obj)`` (the same text, default options), with ``pause()``
    called after each element of every list longer than :data:`LONG` elements.

    ``obj`` must not change while this runs (the caller's views are copies).

    Raises:
        TypeError, ValueError: as ``json.dumps`` (an object it cannot encode, a
        circular reference).
    """
    return _encode(obj, pause)
