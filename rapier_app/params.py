"""Typed scheduler parameters from the command line, and scheduler plugins.

``--param SCHED.KEY=VALUE`` values are checked against the scheduler class's
constructor (read with :mod:`inspect` and :func:`typing.get_type_hints`, walking
up the class hierarchy through ``**kwargs``): an unknown key or a value of the wrong
type is an error naming ``SCHED.KEY``, e.g.
``rapier.delta_s: expected a number, got 'abc'``.

``--schedulers package.module:Class`` loads a :class:`~rapier_app.scheduling.
Scheduler` subclass from outside the project (:func:`load_plugin`) and registers it.
"""

from __future__ import annotations

import importlib
import inspect
import math
import typing
from typing import Any, Dict, List, Optional, Tuple, Type

from .errors import RapierError

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
_NONE = ("none", "null")


class ParamError(RapierError, ValueError):
    """A bad ``--param`` or plugin specification (the message names it)."""


def split_params(items: List[str]) -> Dict[str, Dict[str, str]]:
    """``["rapier.delta_s=5"]`` -> ``{"rapier": {"delta_s": "5"}}`` (values as text).

    Raises:
        ParamError: an item without the ``SCHEDULER.KEY=VALUE`` shape.
    """
    out: Dict[str, Dict[str, str]] = {}
    for item in items:
        key, sep, val = item.partition("=")
        sched, dot, name = key.rpartition(".")
        if not sep or not dot or not sched or not name:
            raise ParamError(f"--param: expected SCHEDULER.KEY=VALUE, got {item!r}")
        out.setdefault(sched, {})[name] = val
    return out


def constructor_params(cls: type) -> Dict[str, Tuple[Any, Any]]:
    """The keyword parameters ``cls(topology, seed=..., **params)`` accepts:
    ``{name: (type hint or None, default)}``, through every ``__init__`` up the MRO
    that passes ``**kwargs`` on.  ``topology`` and ``seed`` are left out."""
    out: Dict[str, Tuple[Any, Any]] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            sig = inspect.signature(init)
        except (TypeError, ValueError):
            break
        try:
            hints = typing.get_type_hints(init)
        except Exception:  # unresolvable annotations: fall back to the defaults' types
            hints = {}
        more = False
        for p in list(sig.parameters.values())[1:]:
            if p.kind is p.VAR_KEYWORD:
                more = True
            elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and \
                    p.name not in ("topology", "seed") and p.name not in out:
                out[p.name] = (hints.get(p.name),
                               None if p.default is p.empty else p.default)
        if not more:
            break
    return out


def _unwrap_optional(hint) -> Tuple[Any, bool]:
    """``Optional[X]`` -> ``(X, True)``; other hints -> ``(hint, False)``."""
    if typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0], True
    return hint, False


def _guess(text: str):
    """A value of unknown type: int, float, bool, None or the text itself."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in _NONE:
        return None
    return text


def convert(field: str, text: str, hint, default) -> Any:
    """Convert ``text`` to the type of a constructor parameter.

    The type comes from the hint (``float``, ``int``, ``bool``, ``str``,
    ``Optional[...]``), else from the default's type; ``none`` is accepted where the
    hint is Optional or the default is None.

    Raises:
        ParamError: ``"<field>: expected a number, got 'abc'"`` and the like.
    """
    typ, optional = _unwrap_optional(hint) if hint is not None else (None, False)
    if typ is None and default is not None:
        typ = type(default)
    optional = optional or default is None
    low = text.strip().lower()
    if optional and low in _NONE:
        return None
    if typ is bool:
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ParamError(f"{field}: expected true or false, got {text!r}")
    if typ is int:
        try:
            return int(text)
        except ValueError:
            try:
                f = float(text)
            except ValueError:
                f = math.nan
            if math.isfinite(f) and f.is_integer():
                return int(f)
            raise ParamError(f"{field}: expected an integer, got {text!r}") from None
    if typ is float:
        try:
            v = float(text)
        except ValueError:
            raise ParamError(f"{field}: expected a number, got {text!r}") from None
        if math.isnan(v):
            raise ParamError(f"{field}: expected a number, got {text!r}")
        return v
    if typ is str:
        return text
    return _guess(text)


def typed_params(name: str, cls: type, raw: Dict[str, str]) -> Dict[str, Any]:
    """Check and convert one scheduler's ``--param`` values.

    Args:
        name: the scheduler's registry name (used in messages).
        cls: its class.
        raw: ``{key: text}`` from :func:`split_params`.

    Returns:
        ``{key: value}`` with values of the constructor's types.

    Raises:
        ParamError: an unknown key ("bad parameter", naming the known ones) or a value
            that does not convert (naming ``name.key``).
    """
    known = constructor_params(cls)
    out = {}
    for key, text in raw.items():
        if key not in known:
            raise ParamError(f"--param: bad parameter {name}.{key}: {name} takes "
                             f"{', '.join(sorted(known)) or 'no parameters'}")
        hint, default = known[key]
        out[key] = convert(f"{name}.{key}", text, hint, default)
    return out


def load_plugin(spec: str) -> Tuple[str, Type]:
    """Import ``package.module:Class``, check that it is a scheduler and register it.

    The registry name is the class's own ``name`` attribute when it sets one (for
    instance through ``@register("my-sched")``), else the class name.  The module
    must be importable (on ``sys.path``, e.g. through ``PYTHONPATH``).

    Returns:
        ``(registry name, class)``.

    Raises:
        ParamError: bad spec, module or class not found, not a Scheduler subclass,
            or its name already taken by another class.
    """
    from .scheduling import REGISTRY, Scheduler, load_all

    mod_name, sep, cls_name = spec.partition(":")
    if not sep or not mod_name or not cls_name:
        raise ParamError(f"--schedulers: expected package.module:Class, got {spec!r}")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ParamError(f"--schedulers: cannot import module {mod_name!r} of {spec!r}: "
                         f"{exc}") from None
    obj: Optional[type] = mod
    for part in cls_name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ParamError(f"--schedulers: module {mod_name!r} has no {cls_name!r}")
    if not (isinstance(obj, type) and issubclass(obj, Scheduler)):
        raise ParamError(f"--schedulers: {spec!r} is not a subclass of "
                         f"rapier_app.scheduling.Scheduler")
    load_all()
    name = obj.__dict__.get("name") or obj.__name__
    if REGISTRY.get(name, obj) is not obj:
        raise ParamError(f"--schedulers: {spec!r} would take the name {name!r} of "
                         f"{REGISTRY[name].__module__}.{REGISTRY[name].__name__}")
    obj.name = name
    REGISTRY[name] = obj
    return name, obj
