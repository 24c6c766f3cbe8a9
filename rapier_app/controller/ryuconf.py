"""The controller's oslo.config options under ``ryu-manager``: the ``[rapier]`` group
(:data:`OPTS`, one option per entry of ``options.toml``), the :class:`Settings` read
from it, and how a refused start is reported (one line, exit status 2).

Ryu glue (imports ``ryu.cfg``); the pure option table is :mod:`.settings`.
"""

from __future__ import annotations

import sys
from dataclasses import fields

from .compat import ensure_eventlet_compat

ensure_eventlet_compat()

from oslo_config.cfg import Error as ConfigError  # noqa: E402
from ryu import cfg  # noqa: E402

from .settings import OPTIONS, Settings, SettingsError  # noqa: E402

__all__ = ["CONF", "OPTS", "REFUSE_EXIT", "observe_links", "refuse_to_start",
           "settings_from_conf"]

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
            raise SettingsError(f"{f.name}: {exc}") from None
    return Settings(**values).validate()


#: Exit status of ``ryu-manager`` when the controller refuses to start.
REFUSE_EXIT = 2


def refuse_to_start(exc: BaseException, stream=None) -> None:
    """Print ``rapier: <field>: <message>`` as one line on ``stream`` (stderr) and exit
    with :data:`REFUSE_EXIT`: how the controller run by ``ryu-manager`` reports a bad
    option or topology file instead of a traceback.

    Raises:
        SystemExit: always, with status 2.
    """
    text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    print(f"rapier: {text}", file=stream or sys.stderr, flush=True)
    raise SystemExit(REFUSE_EXIT)
