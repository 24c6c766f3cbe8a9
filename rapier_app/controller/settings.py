"""Controller options (:class:`Settings`, the ``[rapier]`` section of the oslo.config
file) and the scheduler they name (:func:`build_scheduler`).

Every option is declared once, in the table ``options.toml`` beside this module
(name, type, default, help text, oslo.config bounds; read by
:func:`parse_option_table` into :data:`OPTIONS`): :class:`Settings` gets its fields,
defaults and docstring from it, and :data:`.ryuconf.OPTS` its oslo.config options.

Units: bit/s for rates, seconds for times, bytes for sizes.  Part of the controller's
pure core (:mod:`.core`); no Ryu import.
"""

from __future__ import annotations

import inspect
import math
import os
import textwrap
from dataclasses import dataclass, field, fields, make_dataclass
from importlib import resources
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: the tomli backport, same API
    import tomli as tomllib  # type: ignore[no-redef]

from topologies import Topology

from ..errors import RapierError
from ..httpjson import TOKEN_RE


#: Default database file of the controller run by ``ryu-manager`` (relative to the
#: working directory) unless the environment variable ``RAPIER_STATE_DB`` names
#: another.  An in-process :class:`Settings` keeps none unless given ``state_db``.
DEFAULT_STATE_DB = "rapier-state/controller.sqlite3"


def default_state_db() -> str:
    """``$RAPIER_STATE_DB`` or :data:`DEFAULT_STATE_DB`: the ``[rapier] state_db``
    default of ``ryu-manager``."""
    return os.environ.get("RAPIER_STATE_DB", DEFAULT_STATE_DB)


class SettingsError(RapierError, ValueError):
    """A controller option has a bad value; the message starts with its name."""


class OptionTableError(RapierError, ValueError):
    """The option table (``options.toml``) is malformed; the message names the file,
    the option and the key at fault."""


#: Option types of the table -> the Python type of the value.
OPTION_TYPES: Dict[str, type] = {"str": str, "float": float, "int": int, "bool": bool}

#: Functions an option may name as its ``controller_default_factory``.
DEFAULT_FACTORIES: Dict[str, Callable[[], Any]] = {"default_state_db": default_state_db}

_OPTION_KEYS = {"name", "type", "optional", "default", "controller_default_factory", "help",
                "doc",
                "min", "max", "secret"}


@dataclass(frozen=True)
class Option:
    """One controller option as ``options.toml`` declares it.

    Attributes:
        name: option name (a :class:`Settings` field, an oslo.config option).
        type: ``str``, ``float``, ``int`` or ``bool`` (a key of :data:`OPTION_TYPES`).
        section: name of the table section (``core``, ``durability``, ...).
        help: oslo.config help text.
        doc: the :class:`Settings` docstring entry.
        optional: the value may be None (unset).
        default: the default value (None for an optional option without one): the
            :class:`Settings` default.
        controller_default_factory: name of a :data:`DEFAULT_FACTORIES` function
            giving the oslo.config default (the controller run by ``ryu-manager``)
            instead of ``default``, or None.
        oslo: extra oslo.config arguments (``min``, ``max``, ``secret``).
    """

    name: str
    type: str
    section: str
    help: str
    doc: str
    optional: bool = False
    default: Any = None
    controller_default_factory: Optional[str] = None
    oslo: Mapping[str, Any] = field(default_factory=dict)

    def default_value(self) -> Any:
        """The :class:`Settings` default (in-process use)."""
        return self.default

    def controller_default(self) -> Any:
        """The oslo.config default of ``ryu-manager``'s ``[rapier]`` group: the
        ``controller_default_factory`` called now, else :attr:`default`."""
        if self.controller_default_factory is not None:
            return DEFAULT_FACTORIES[self.controller_default_factory]()
        return self.default

    def dataclass_field(self) -> Tuple[str, str, Any]:
        """``(name, annotation, dataclasses.field)`` for :func:`dataclasses.make_dataclass`;
        the annotation is a string (``"Optional[float]"``), as in a class body under
        ``from __future__ import annotations``."""
        annotation = f"Optional[{self.type}]" if self.optional else self.type
        return self.name, annotation, field(default=self.default)


def _check_value(where: str, key: str, value: Any, kind: str) -> Any:
    """``value`` as an option of type ``kind`` (an int widened to float for a float
    option); raises :class:`OptionTableError` naming ``where`` and ``key`` otherwise."""
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if type(value) is not OPTION_TYPES[kind]:
        raise OptionTableError(f"{where}: {key} must be a {kind}, got {value!r}")
    return value


def _parse_option(where: str, section: str, raw: Mapping[str, Any]) -> Option:
    """One ``[[section.option]]`` table -> :class:`Option` (checked, see
    :func:`parse_option_table`)."""
    unknown = sorted(set(raw) - _OPTION_KEYS)
    if unknown:
        raise OptionTableError(f"{where}: unknown key(s) {', '.join(unknown)} "
                               f"(known: {', '.join(sorted(_OPTION_KEYS))})")
    kind = raw.get("type")
    if kind not in OPTION_TYPES:
        raise OptionTableError(f"{where}: type must be one of "
                               f"{', '.join(sorted(OPTION_TYPES))}, got {kind!r}")
    for key in ("help", "doc"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise OptionTableError(f"{where}: {key} must be a non-empty string")
    if "help" not in raw:
        raise OptionTableError(f"{where}: help is missing")
    optional = raw.get("optional", False)
    if not isinstance(optional, bool):
        raise OptionTableError(f"{where}: optional must be true or false, got {optional!r}")
    factory = raw.get("controller_default_factory")
    if factory is not None and factory not in DEFAULT_FACTORIES:
        raise OptionTableError(f"{where}: controller_default_factory must be one of "
                               f"{', '.join(sorted(DEFAULT_FACTORIES))}, got {factory!r}")
    if "default" in raw:
        default = _check_value(where, "default", raw["default"], kind)
    elif not optional:
        raise OptionTableError(f"{where}: default is missing (or say optional = true)")
    else:
        default = None
    oslo: Dict[str, Any] = {}
    for key in ("min", "max"):
        if key in raw:
            if kind not in ("int", "float"):
                raise OptionTableError(f"{where}: {key} applies to int and float options")
            oslo[key] = _check_value(where, key, raw[key], kind)
    if "secret" in raw:
        oslo["secret"] = _check_value(where, "secret", raw["secret"], "bool")
    return Option(name=raw["name"], type=kind, section=section, help=raw["help"],
                  doc=raw.get("doc", raw["help"]), optional=optional, default=default,
                  controller_default_factory=factory, oslo=oslo)


def parse_option_table(text: str, source: str = "options.toml"
                       ) -> Tuple[Tuple[Tuple[str, str], ...], Tuple[Option, ...]]:
    """Parse and check an option table (the format of ``options.toml``).

    Args:
        text: TOML text: ``[[section]]`` tables (``name``, ``title``), each with
            ``[[section.option]]`` tables (keys: the file's header comment).
        source: file name for the error messages.

    Returns:
        ``(sections, options)``: ``(name, title)`` per section and every
        :class:`Option`, both in table order.

    Raises:
        OptionTableError: bad TOML, an unknown key or type, a default of the wrong
            type, a missing default or help text, a repeated or non-identifier name.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise OptionTableError(f"{source}: {exc}") from None
    if set(data) != {"section"} or not isinstance(data["section"], list):
        raise OptionTableError(f"{source}: expected only [[section]] tables, got keys "
                               f"{', '.join(sorted(data)) or 'none'}")
    sections, options, seen = [], [], set()
    for i, sec in enumerate(data["section"]):
        sname, title = sec.get("name"), sec.get("title")
        if not isinstance(sname, str) or not isinstance(title, str) \
                or set(sec) - {"name", "title", "option"} \
                or not isinstance(sec.get("option", []), list):
            raise OptionTableError(f"{source}: section {i + 1} needs a name and a title "
                                   f"(and nothing but option tables)")
        sections.append((sname, title))
        for raw in sec.get("option", []):
            name = raw.get("name") if isinstance(raw, dict) else None
            where = f"{source}: option {name!r}"
            if not isinstance(name, str) or not name.isidentifier() or name in seen:
                raise OptionTableError(f"{where}: name must be a new Python identifier")
            seen.add(name)
            options.append(_parse_option(where, sname, raw))
    return tuple(sections), tuple(options)


def _settings_doc(sections: Sequence[Tuple[str, str]], options: Sequence[Option]) -> str:
    """The option list appended to the :class:`Settings` docstring: every option of
    the table by section, with its type and default (indented as a class docstring)."""
    lines = []
    for sname, title in sections:
        lines += ["", f"    {title}:", "", "    Attributes:"]
        for o in (o for o in options if o.section == sname):
            default = repr(o.default)
            if o.controller_default_factory:
                default += f"; ryu-manager: {o.controller_default_factory}()"
            kind = f"Optional[{o.type}]" if o.optional else o.type
            lines += textwrap.wrap(f"{o.name} ({kind}, default {default}): {o.doc}",
                                   width=88, initial_indent="        ",
                                   subsequent_indent="            ",
                                   break_on_hyphens=False, break_long_words=False)
    return "\n".join(lines) + "\n"


#: The option table: ``(name, title)`` per section, and every :class:`Option` in the
#: order of the :class:`Settings` fields.
SECTIONS, OPTIONS = parse_option_table(
    resources.files(__package__).joinpath("options.toml").read_text(encoding="utf-8"),
    "rapier_app/controller/options.toml")

#: Generated dataclass holding the fields of :class:`Settings` (one per option).
_Fields = make_dataclass("_Fields", [o.dataclass_field() for o in OPTIONS],
                         namespace={"__module__": __name__})


@dataclass
class Settings(_Fields):
    """Controller options (the ``[rapier]`` section of the oslo.config file).

    Declared once, in ``rapier_app/controller/options.toml``: the fields, their
    defaults, the list below and the oslo.config options (``ryuconf.OPTS``) all come from
    that table.  Units: bit/s for rates, seconds for times, bytes for sizes.
    """

    def scheduler_param_items(self) -> Dict[str, str]:
        """``scheduler_params`` as ``{key: value text}`` (empty for none).

        Raises:
            SettingsError: an item without the ``KEY=VALUE`` shape, naming
            ``scheduler_params``.
        """
        out: Dict[str, str] = {}
        for item in (self.scheduler_params or "").split(","):
            item = item.strip()
            if not item:
                continue
            key, sep, val = item.partition("=")
            if not sep or not key.strip():
                raise SettingsError(f"scheduler_params: expected KEY=VALUE, got {item!r}")
            out[key.strip()] = val.strip()
        return out

    def validate(self) -> "Settings":
        """Check every option; return self.

        Raises:
            SettingsError: the first bad option, named (e.g. ``rest_port: ...``).
        """
        def positive(name: str, v, allow_none: bool = False) -> None:
            if v is None and allow_none:
                return
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (v > 0) \
                    or not math.isfinite(v):
                raise SettingsError(f"{name}: must be a positive number, got {v!r}")

        if not isinstance(self.scheduler, str) or not self.scheduler:
            raise SettingsError(f"scheduler: must be a scheduler name, got {self.scheduler!r}")
        if not isinstance(self.scheduler_params, str):
            raise SettingsError(f"scheduler_params: must be KEY=VALUE[,KEY=VALUE...], got "
                                f"{self.scheduler_params!r}")
        self.scheduler_param_items()
        if not isinstance(self.topology, str) or not self.topology:
            raise SettingsError(f"topology: must be a topology spec, got {self.topology!r}")
        positive("link_bps", self.link_bps, allow_none=True)
        if self.rest_port is not None and not (isinstance(self.rest_port, int)
                                               and 0 < self.rest_port < 65536):
            raise SettingsError(f"rest_port: must be a TCP port 1..65535, got {self.rest_port!r}")
        if not (isinstance(self.agent_port, int) and 0 < self.agent_port < 65536):
            raise SettingsError(f"agent_port: must be a TCP port 1..65535, got {self.agent_port!r}")
        if self.agent_url:
            if not (self.agent_url.startswith("http://") or self.agent_url.startswith("unix:")):
                raise SettingsError(f"agent_url: must start with http:// or unix:, got "
                                    f"{self.agent_url!r}")
            try:
                self.agent_url.format(host="h1", ip="10.0.0.1", port=1)
            except (KeyError, IndexError, ValueError) as exc:
                raise SettingsError(f"agent_url: bad placeholder {exc} in {self.agent_url!r} "
                                    f"(allowed: {{host}}, {{ip}}, {{port}})") from None
        for name in ("agent_timeout_s", "lp_time_limit_s", "stats_interval_s",
                     "idle_finish_s"):
            positive(name, getattr(self, name))
        if isinstance(self.delta_s, bool) or not isinstance(self.delta_s, (int, float)) \
                or not self.delta_s >= 0:
            raise SettingsError(f"delta_s: must be >= 0 seconds, got {self.delta_s!r}")
        if not isinstance(self.min_rate_bps, (int, float)) or not self.min_rate_bps >= 0:
            raise SettingsError(f"min_rate_bps: must be >= 0, got {self.min_rate_bps!r}")
        for name in ("header_bytes", "finish_slack_bytes", "seed", "max_paths"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise SettingsError(f"{name}: must be an integer >= 0, got {v!r}")
        if self.path_slack is not None and (isinstance(self.path_slack, bool) or not
                                            isinstance(self.path_slack, int) or
                                            self.path_slack < 0):
            raise SettingsError(f"path_slack: must be an integer >= 0, got "
                                f"{self.path_slack!r}")
        if not isinstance(self.stats_completion, bool):
            raise SettingsError(f"stats_completion: must be true or false, got "
                                f"{self.stats_completion!r}")
        if self.reschedule_on not in ("auto", "flow", "coflow"):
            raise SettingsError(f"reschedule_on: must be auto, flow or coflow, got "
                                f"{self.reschedule_on!r}")
        if not isinstance(self.idle_fraction, (int, float)) or not 0 <= self.idle_fraction < 1:
            raise SettingsError(f"idle_fraction: must be in [0, 1), got {self.idle_fraction!r}")
        self._validate_broker()
        self._validate_durability()
        self._validate_security()
        self._validate_responsiveness()
        self._validate_discovery()
        return self

    def _validate_broker(self) -> None:
        """Check the site broker and small-coflow options (:mod:`.coexist`)."""
        from ..core.broker import BrokerError
        from .coexist import broker_settings

        if not isinstance(self.broker, bool):
            raise SettingsError(f"broker: must be true or false, got {self.broker!r}")
        try:
            broker_settings(self).validate()
        except BrokerError as exc:
            raise SettingsError(f"broker_{exc}") from None
        for name in ("small_coflow_bytes", "small_coflow_width"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise SettingsError(f"{name}: must be an integer >= 0, got {v!r}")
    def _validate_discovery(self) -> None:
        """Check the discovery options (``discover_settle_s``, ``link_capacities``,
        ``discover_host_net``)."""
        from .discovery import DiscoveryError, parse_host_net, parse_link_capacities

        v = self.discover_settle_s
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v < 0:
            raise SettingsError(f"discover_settle_s: must be >= 0 seconds, got {v!r}")
        for name, parse in (("link_capacities", parse_link_capacities),
                            ("discover_host_net", parse_host_net)):
            if not isinstance(getattr(self, name), str):
                raise SettingsError(f"{name}: must be a string, got {getattr(self, name)!r}")
            try:
                parse(getattr(self, name))
            except DiscoveryError as exc:
                raise SettingsError(str(exc)) from None

    def _validate_responsiveness(self) -> None:
        """Check the responsiveness and reconciliation options."""
        def number(name: str, zero_ok: bool) -> float:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) \
                    or not math.isfinite(v) or v < 0 or (v == 0 and not zero_ok):
                raise SettingsError(f"{name}: must be {'>= 0' if zero_ok else '> 0'} "
                                    f"seconds, got {v!r}")
            return v

        for name in ("decision_budget_s", "agent_retry_min_s", "agent_retry_max_s",
                     "rest_socket_timeout_s"):
            number(name, False)
        for name in ("reconcile_interval_s", "agent_reconcile_interval_s"):
            number(name, True)
        if self.agent_retry_max_s < self.agent_retry_min_s:
            raise SettingsError(f"agent_retry_max_s: must be >= agent_retry_min_s "
                                f"({self.agent_retry_min_s!r}), got {self.agent_retry_max_s!r}")
        for name in ("rest_max_connections",):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SettingsError(f"{name}: must be an integer >= 1, got {v!r}")

    def _validate_durability(self) -> None:
        """Check the durability and retention options."""
        if not isinstance(self.state_db, str):
            raise SettingsError(f"state_db: must be a file path, :memory: or off, got "
                                f"{self.state_db!r}")
        if self.state_db_sync not in ("normal", "full"):
            raise SettingsError(f"state_db_sync: must be normal or full, got "
                                f"{self.state_db_sync!r}")
        for name in ("store_progress_interval_s", "retention_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 \
                    or not math.isfinite(v):
                raise SettingsError(f"{name}: must be >= 0 seconds, got {v!r}")
        v = self.rule_idle_timeout_s
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 65535:
            raise SettingsError(f"rule_idle_timeout_s: must be an integer 0..65535 "
                                f"(OpenFlow idle_timeout), got {v!r}")
        v = self.page_limit
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SettingsError(f"page_limit: must be an integer >= 1, got {v!r}")

    def _validate_security(self) -> None:
        """Check the security options."""
        for name in ("rest_token", "agent_token"):
            v = getattr(self, name)
            if not isinstance(v, str) or (v and not TOKEN_RE.fullmatch(v)):
                raise SettingsError(f"{name}: must be empty or at least 16 characters of "
                                    f"A-Z a-z 0-9 - . _ ~ + / (got {len(str(v))} characters "
                                    f"or a character outside that set)")
        for name in ("rest_host", "ofp_host"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, str) or not v.strip()):
                raise SettingsError(f"{name}: must be an address or unset, got {v!r}")
        for name, lo in (("max_body_bytes", 1024), ("max_flows_per_coflow", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise SettingsError(f"{name}: must be an integer >= {lo}, got {v!r}")

    @property
    def store_enabled(self) -> bool:
        """True when :attr:`state_db` names a database (a file or ``:memory:``)."""
        return self.state_db.strip().lower() not in ("", "off", "none")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Settings":
        """Build from a mapping of option name -> value (unknown names rejected).

        Raises:
            SettingsError: unknown option name, or a bad value (see :meth:`validate`).
        """
        known = {f.name for f in fields(cls)}
        for k in values:
            if k not in known:
                raise SettingsError(f"{k}: unknown option (known: {', '.join(sorted(known))})")
        return cls(**dict(values)).validate()


Settings.__doc__ += _settings_doc(SECTIONS, OPTIONS)


def build_scheduler(settings: Settings, topology: Topology):
    """Instantiate ``settings.scheduler`` for ``topology``.

    Passes ``delta_s`` and ``lp_time_limit_s`` (and ``max_paths`` when non-zero) only
    to schedulers whose constructor takes them (RAPIER does; the baselines do not),
    then ``scheduler_params`` (typed by :func:`rapier_app.params.typed_params`).

    Raises:
        rapier_app.scheduling.SchedulerError: unknown scheduler name.
        SettingsError: ``scheduler_params`` names an unknown key or a bad value.
    """
    from ..scheduling import REGISTRY, SchedulerError, load_all, make_scheduler

    load_all()
    cls = REGISTRY.get(settings.scheduler)
    params: Dict[str, Any] = {}
    if cls is not None:
        wanted = {"delta_s": settings.delta_s, "lp_time_limit_s": settings.lp_time_limit_s}
        if settings.max_paths:
            wanted["max_paths"] = settings.max_paths
        accepted = set()
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            sig = inspect.signature(init)
            accepted |= {n for n, p in sig.parameters.items()
                         if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            if not any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
                break
        params = {k: v for k, v in wanted.items() if k in accepted}
        raw = settings.scheduler_param_items()
        if raw:
            from ..params import ParamError, typed_params
            try:
                params.update(typed_params(settings.scheduler, cls, raw))
            except ParamError as exc:
                raise SettingsError(f"scheduler_params: {exc}") from None
            try:
                return make_scheduler(settings.scheduler, topology, seed=settings.seed,
                                      **params)
            except SchedulerError as exc:
                raise SettingsError(f"scheduler_params: {exc}") from None
    return make_scheduler(settings.scheduler, topology, seed=settings.seed, **params)
