"""The controller's oslo.config options (``ryu-manager`` or ``rapier-controller``): the ``[rapier]`` group
(:data:`OPTS`, one option per entry of ``options.toml``), the :class:`Settings` read
from it, and how a refused start is reported (one line, exit status 2).

Stack glue (the stack's ``cfg``, :mod:`.stack`); the pure option table is :mod:`.settings`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import fields

from oslo_config.cfg import Error as ConfigError

from .settings import OPTIONS, Settings, SettingsError
from .stack import cfg

__all__ = ["CONF", "OPTS", "REFUSE_EXIT", "check_observe_links", "observe_links",
           "refusal_text", "refuse_to_start", "settings_from_conf"]

#: oslo.config option class per option type of the table (:data:`.settings.OPTIONS`).
_OPT_CLASSES = {"str": cfg.StrOpt, "float": cfg.FloatOpt, "int": cfg.IntOpt,
                "bool": cfg.BoolOpt}

#: The controller's options, group ``[rapier]``: one per entry of ``options.toml``
#: (:data:`.settings.OPTIONS`), with its default (the controller's: ``state_db`` is on),
#: help text, bounds and secrecy.
OPTS = [_OPT_CLASSES[o.type](o.name, default=o.controller_default(), help=o.help,
                             **o.oslo)
        for o in OPTIONS]

CONF = cfg.CONF
CONF.register_opts(OPTS, group="rapier")


def observe_links(conf=CONF) -> bool:
    """True when Ryu's LLDP link discovery runs (``--observe-links``)."""
    try:
        return bool(conf.observe_links)
    except Exception:  # noqa: BLE001 -- option not registered: ryu.topology not loaded
        return False


def check_observe_links(settings: Settings, observed: bool) -> None:
    """Refuse ``topology = discover`` without Ryu's LLDP link discovery.

    Args:
        settings: the controller's options.
        observed: whether ``--observe-links`` is on (:func:`observe_links`).

    Raises:
        SettingsError: ``topology: discover needs ...`` (the controller does not start).
    """
    if settings.topology.strip().lower() == "discover" and not observed:
        raise SettingsError("topology: discover needs Ryu's LLDP link discovery: "
                            "start rapier-controller (or ryu-manager) with --observe-links")


#: oslo.config's ConfigFileValueError text: "Value for option NAME from LOCATION is not
#: valid: REASON" (the location is a repr of oslo's internals).
_OSLO_VALUE_ERROR = re.compile(r"^Value for option \S+ from .* is not valid: (?P<reason>.*)$",
                               re.DOTALL)


def _value_error(name: str, exc: Exception) -> str:
    """``not a valid <type>: <reason>`` from an oslo.config value error on option
    ``name`` (its text as is when it has another form)."""
    m = _OSLO_VALUE_ERROR.match(str(exc))
    if m is None:
        return str(exc)
    kind = next((o.type for o in OPTIONS if o.name == name), "value")
    return f"not a valid {kind}: {m.group('reason')}"


def settings_from_conf(conf=CONF) -> Settings:
    """:class:`Settings` from the ``[rapier]`` group of an oslo.config object.

    Raises:
        SettingsError: a bad value, naming the option.
    """
    group = conf.rapier
    values = {}
    for f in fields(Settings):
        try:
            values[f.name] = getattr(group, f.name)
        except ConfigError as exc:  # e.g. "max_flows = abc" in the config file
            raise SettingsError(f"{f.name}: {_value_error(f.name, exc)}") from None
    return Settings(**values).validate()


#: Exit status of ``ryu-manager`` when the controller refuses to start.
REFUSE_EXIT = 2


def refusal_text(exc: BaseException) -> str:
    """The message of a refused start on one line (``<field>: <message>``, its lines
    joined with ``; ``): what :func:`refuse_to_start` prints after ``rapier: ``."""
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())


def refuse_to_start(exc: BaseException, stream=None) -> None:
    """Print ``rapier: <field>: <message>`` as one line on ``stream`` (stderr) and exit
    with :data:`REFUSE_EXIT`: how the controller run by ``ryu-manager`` reports a bad
    option or topology file instead of a traceback.

    Raises:
        SystemExit: always, with status 2.
    """
    print(f"rapier: {refusal_text(exc)}", file=stream or sys.stderr, flush=True)
    raise SystemExit(REFUSE_EXIT)
