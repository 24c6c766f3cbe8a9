"""Check a controller configuration without starting anything (``rapier-config check``).

A configuration is what ``ryu-manager rapier_app.controller --config-file FILE ...``
reads: the ``[rapier]`` options (:data:`.ryuconf.OPTS`), Ryu's own options in
``[DEFAULT]`` (``observe_links``, ``wsapi_host``, ``wsapi_port``,
``ofp_listen_host``), and the topology the ``topology`` option names (a generated
spec, ``file:PATH`` or ``discover``).  :func:`check_config` runs the controller's
own start-up checks on it, in the controller's order, with no Ryu event loop, no
socket and no database written:

1. the files parse (oslo.config's own parser, which also gives each option's line);
2. every key of ``[rapier]`` is an option (unknown keys are errors: the controller
   would ignore them silently); unknown keys of ``[DEFAULT]`` and unknown sections are
   warnings (Ryu apps may register options of their own);
3. :func:`.ryuconf.settings_from_conf` (oslo.config types and bounds, then
   :meth:`.settings.Settings.validate`), repeated with each refused option reset to
   its default until it passes, so that *every* bad option is listed, not only the
   first;
4. :func:`.core.topology_from_settings` and :func:`.core.scheduler_from_settings`
   (what :func:`.core.make_core` builds), :func:`.ryuconf.check_observe_links`,
   :func:`.rest.listen_addresses` (REST off loopback needs ``rest_token``);
5. ``state_db``: an existing file must be a SQLite database of a schema this
   controller reads (opened read-only), a new one must be creatable;
6. warning: a token in a file other users can read (``chmod 600``).

Each :class:`Problem` names the option (``section.option``) and the file and line
where it is set; its :attr:`Problem.message` is the text the controller prints after
``rapier: `` when it refuses to start (:func:`.ryuconf.refusal_text`), so the checker
and the controller cannot disagree on a value.

Stack glue (the stack's options through :mod:`.stack`, oslo.config); the CLI is
:mod:`rapier_app.config_cli`.
"""

from __future__ import annotations

import difflib
import os
import re
import sqlite3
import stat
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from oslo_config import cfg as oslo_cfg

from .ryuconf import OPTS, check_observe_links, refusal_text, settings_from_conf
from .settings import OPTIONS, Settings, SettingsError

__all__ = ["CheckResult", "Problem", "check_config", "locate_options"]

#: The ``[rapier]`` options by name (:data:`.settings.OPTIONS`).
_OPTIONS = {o.name: o for o in OPTIONS}
#: Options of ``ryu.cmd.manager`` (not imported here: importing it monkey-patches the
#: process with eventlet).
_RYU_MANAGER_OPTS = ("app", "app_lists", "enable_debugger", "pid_file", "user_flags")
#: The default of Ryu's ``--wsapi-host`` and ``--ofp-listen-host``.
_RYU_ANY = "0.0.0.0"


@dataclass(frozen=True)
class Problem:
    """One finding of :func:`check_config`.

    Attributes:
        section: config section (``rapier``, ``DEFAULT``, ...); ``""`` for a file-level
            problem (unreadable, does not parse).
        option: the option named (None for a file-level problem or an unknown section).
        file: the file where the option is set (the last file given when it is not set).
        line: 1-based line of that setting, None when the option is not set anywhere
            (its default is at fault, e.g. with a conflicting option).
        message: the controller's text, ``<option>: <what is wrong>`` for a value (what
            ``ryu-manager`` prints after ``rapier: ``), else a description.
        severity: ``error`` (the controller refuses it, or would ignore the key) or
            ``warning``.
        via: when ``option`` is not set (its default conflicts with another option),
            ``section.option`` of the setting at ``file:line`` it conflicts with.
    """

    section: str
    option: Optional[str]
    file: str
    line: Optional[int]
    message: str
    severity: str = "error"
    via: Optional[str] = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        tag = "warning: " if self.severity == "warning" else ""
        if self.option is None:
            name = f"[{self.section}]: " if self.section else ""
            return f"{where}: {tag}{name}{self.message}"
        detail = self.message
        if detail.startswith(f"{self.option}: "):
            detail = detail[len(self.option) + 2:]
        name = f"{self.section}.{self.option}"
        if self.via:
            name = f"{self.via} conflicts with {name} (not set: its default)"
        elif self.line is None:
            name += " (not set: its default)"
        return f"{where}: {tag}{name}: {detail}"


@dataclass
class CheckResult:
    """What :func:`check_config` found.

    Attributes:
        files: the files checked, in order (a later file wins, as with oslo.config).
        problems: errors and warnings, errors first, each kind by file and line.
        settings: the :class:`Settings` read (with refused options at their defaults),
            or None when the files could not be read.
        summary: one line describing a good configuration (scheduler, topology,
            listeners, agents, database); ``""`` when there are errors.
    """

    files: List[str]
    problems: List[Problem] = field(default_factory=list)
    settings: Optional[Settings] = None
    summary: str = ""

    @property
    def errors(self) -> List[Problem]:
        """The problems of severity ``error``."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def ok(self) -> bool:
        """True when no error was found (warnings allowed)."""
        return not self.errors


# -- where each option is set ----------------------------------------------------------
class _LineParser(oslo_cfg.ConfigParser):
    """oslo.config's own file parser, also recording the line each key starts on."""

    def __init__(self, filename: str):
        super().__init__(filename, {})
        self.lines: Dict[Tuple[str, str], List[int]] = {}
        self._key_line = 0

    def _split_key_value(self, line):
        self._key_line = self.lineno  # assignment() runs later, at the next line
        return super()._split_key_value(line)

    def assignment(self, key, value):
        super().assignment(key, value)
        self.lines.setdefault((self.section, key), []).append(self._key_line)


def locate_options(path: str) -> Dict[Tuple[str, str], List[int]]:
    """``{(section, key): [line, ...]}``: every assignment of a config file, with the
    1-based line it starts on (several when the key is repeated; the last one wins).

    Raises:
        OSError: the file cannot be read.
        oslo_config.cfg.ParseError: the file does not parse (``lineno``, ``msg``).
    """
    p = _LineParser(path)
    p.parse()
    return p.lines


def _ryu_options() -> Tuple[set, Dict[str, set]]:
    """The stack's options: ``(top-level names, {group: names})`` as ``ryu-manager``
    or ``rapier-controller`` registers them (the stack's option modules imported,
    not its manager: importing that monkey-patches the process)."""
    from . import stack  # its import registers them

    conf = stack.CONF
    # oslo.config has no public listing of registered options by group
    top = {info["opt"].dest for info in conf._opts.values()} | set(_RYU_MANAGER_OPTS)
    groups = {name: {info["opt"].dest for info in g._opts.values()}
              for name, g in conf._groups.items() if name != "rapier"}
    return top, groups


# -- the oslo.config object, as ryu-manager builds it -----------------------------------
def _make_conf(files: Sequence[str]) -> oslo_cfg.ConfigOpts:
    """A private oslo.config object with the ``[rapier]`` options and the Ryu options
    the checks read, loaded from ``files`` (never the process-wide ``ryu.cfg.CONF``).
    """
    conf = oslo_cfg.ConfigOpts()
    conf.register_opts(OPTS, group="rapier")
    conf.register_opts([oslo_cfg.StrOpt("wsapi_host", default=_RYU_ANY),
                        oslo_cfg.IntOpt("wsapi_port", default=8080),
                        oslo_cfg.StrOpt("ofp_listen_host", default=_RYU_ANY),
                        oslo_cfg.BoolOpt("observe_links", default=False)])
    args: List[str] = []
    for f in files:
        args += ["--config-file", f]
    conf(args=args, project=None, default_config_files=[])
    return conf


class _Group:
    """``conf.rapier`` with some options read as their ``ryu-manager`` default."""

    def __init__(self, group, reset):
        self._group, self._reset = group, reset

    def __getattr__(self, name):
        if name in self._reset:
            return _OPTIONS[name].controller_default()
        return getattr(self._group, name)


class _Conf:
    """The oslo.config object seen by :func:`.ryuconf.settings_from_conf` with the
    options of ``reset`` at their defaults."""

    def __init__(self, conf, reset):
        self.rapier = _Group(conf.rapier, reset)


# -- the checks -------------------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _named(message: str) -> List[str]:
    """Option-like words of a message, in order (``--wsapi-host`` -> ``wsapi_host``)."""
    return [w.lstrip("-").replace("-", "_") for w in _WORD.findall(message)]


class _Checker:
    """State of one :func:`check_config` run."""

    def __init__(self, files: Sequence[str]):
        self.files = list(files)
        self.where: Dict[Tuple[str, str], Tuple[str, int]] = {}  # last setting wins
        self.problems: List[Problem] = []

    def at(self, section: str, option: str) -> Tuple[str, Optional[int]]:
        """(file, line) of the last setting of ``section.option``, else (last file,
        None)."""
        return self.where.get((section, option), (self.files[-1], None))

    def add(self, section: str, option: Optional[str], message: str,
            severity: str = "error", loc: Optional[Tuple[str, Optional[int]]] = None,
            via: Optional[str] = None) -> None:
        """Record a problem of ``section.option`` (located where it is set, or at
        ``loc``)."""
        f, line = loc if loc is not None else (self.at(section, option) if option
                                                else (self.files[-1], None))
        self.problems.append(Problem(section, option, f, line, message, severity, via))

    def refused(self, exc: BaseException, default: str = "rapier") -> str:
        """Record a start-up refusal (a :class:`SettingsError` of the controller): named
        by the option its message starts with, located at that option's setting or,
        when it is not set (a conflict with its default), at the first option the
        message mentions that is set.  Returns the option named."""
        msg = refusal_text(exc)
        head = msg.split(":", 1)[0].strip()
        name = head if head in _OPTIONS else None
        loc = via = None
        if name is None or ("rapier", name) not in self.where:
            for w in _named(msg):
                sec = next((s for s in ("rapier", "DEFAULT") if (s, w) in self.where), None)
                if sec is not None:
                    loc, via = self.where[(sec, w)], f"{sec}.{w}"
                    break
        self.add(default, name or head, msg, loc=loc, via=via)
        return name or head

    def read_files(self) -> bool:
        """Parse every file (recording where each key is set); False when one cannot
        be read or parsed (problems recorded)."""
        good = True
        for f in self.files:
            try:
                lines = locate_options(f)
            except OSError as exc:
                self.add("", None, f"cannot read the configuration file: "
                         f"{exc.strerror or exc}", loc=(f, None))
                good = False
                continue
            except oslo_cfg.ParseError as exc:
                self.add("", None, f"does not parse: {exc.msg}"
                         + (f": {exc.line!r}" if exc.line else ""), loc=(f, exc.lineno))
                good = False
                continue
            except UnicodeDecodeError as exc:
                self.add("", None, f"does not parse: not UTF-8 text ({exc.reason})",
                         loc=(f, None))
                good = False
                continue
            for (sec, key), at in lines.items():
                sec_n = sec if sec == "DEFAULT" else sec.lower()
                if len(at) > 1:
                    self.add(sec_n, key, f"{key}: set {len(at)} times (lines "
                             f"{', '.join(map(str, at))}); the last one wins", "warning",
                             loc=(f, at[-1]))
                self.where[(sec_n, key)] = (f, at[-1])
        return good

    def unknown_keys(self) -> None:
        """Unknown ``[rapier]`` keys (errors) and unknown Ryu keys or sections
        (warnings)."""
        top, groups = _ryu_options()
        reported = set()
        for (sec, key), loc in sorted(self.where.items(), key=lambda kv: kv[1]):
            if sec == "rapier":
                if key not in _OPTIONS:
                    near = difflib.get_close_matches(key, list(_OPTIONS), n=1)
                    hint = f" (did you mean {near[0]}?)" if near else \
                        " (the options: configs/rapier.conf)"
                    self.add(sec, key, f"{key}: unknown option{hint}; the controller "
                             f"would ignore it", loc=loc)
            elif sec == "DEFAULT":
                if key not in top:
                    near = difflib.get_close_matches(key, sorted(top), n=1)
                    hint = f" (did you mean {near[0]}?)" if near else ""
                    self.add(sec, key, f"{key}: not an option of ryu-manager{hint}; "
                             f"ignored unless another Ryu app declares it", "warning",
                             loc=loc)
            elif sec in groups:
                if key not in groups[sec]:
                    self.add(sec, key, f"{key}: not an option of Ryu's [{sec}]", "warning",
                             loc=loc)
            elif sec not in reported:
                reported.add(sec)
                self.add(sec, None, "unknown section (the controller reads [rapier] and "
                         "Ryu's [DEFAULT]); ignored", "warning", loc=(loc[0], None))

    def settings(self, conf) -> Tuple[Settings, set]:
        """:func:`settings_from_conf`, each refused option reset to its default and the
        call repeated, until it passes.  Returns the settings and the options reset."""
        reset: set = set()
        for _ in range(len(_OPTIONS) + 1):
            try:
                return settings_from_conf(_Conf(conf, reset)), reset
            except SettingsError as exc:
                name = self.refused(exc)
                # reset the option named or, when it is at its default already (a
                # conflict), the first other option of the message that is set
                candidates = [name] + _named(refusal_text(exc))
                target = next((c for c in candidates if c in _OPTIONS and c not in reset
                               and ("rapier", c) in self.where), None)
                if target is None:
                    break
                reset.add(target)
        # no way to reach a valid set by resetting: the defaults (always valid)
        return Settings(**{n: o.controller_default() for n, o in _OPTIONS.items()}), \
            set(_OPTIONS)

    def state_db(self, settings: Settings) -> None:
        """``state_db``: an existing file is a SQLite database of a schema this
        controller reads (opened read-only); a new one can be created."""
        from .store import SCHEMA_VERSION

        path = settings.state_db
        if not settings.store_enabled or path == ":memory:":
            return
        if os.path.isdir(path):
            self.add("rapier", "state_db", f"state_db: {path} is a directory")
            return
        if os.path.exists(path):
            try:
                db = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
                try:
                    version = db.execute("PRAGMA user_version").fetchone()[0]
                    check = db.execute("PRAGMA quick_check").fetchone()[0]
                finally:
                    db.close()
            except sqlite3.Error as exc:
                self.add("rapier", "state_db", f"state_db: state_db {path}: not a usable "
                         f"RAPIER database ({exc}); move it away to start empty")
                return
            if version > SCHEMA_VERSION:
                self.add("rapier", "state_db", f"state_db: state_db {path}: schema version "
                         f"{version} is newer than this controller's ({SCHEMA_VERSION}); "
                         f"upgrade the controller or use another file")
            elif check != "ok":
                self.add("rapier", "state_db", f"state_db: state_db {path}: corrupt "
                         f"(quick_check: {check}); move it away to start empty")
            return
        d = os.path.dirname(os.path.abspath(path))
        while not os.path.exists(d):
            d = os.path.dirname(d)
        if not os.path.isdir(d) or not os.access(d, os.W_OK | os.X_OK):
            self.add("rapier", "state_db", f"state_db: state_db {path}: cannot create it: "
                     f"{d} is not a writable directory")

    def token_files(self, settings: Settings) -> None:
        """Warn about a token kept in a file other users can read."""
        for name in ("rest_token", "agent_token"):
            if not getattr(settings, name) or ("rapier", name) not in self.where:
                continue
            f, line = self.where[("rapier", name)]
            try:
                mode = stat.S_IMODE(os.stat(f).st_mode)
            except OSError:
                continue
            if mode & 0o077:
                self.add("rapier", name, f"{name}: {f} holds a token and has mode "
                         f"{mode:04o}: other users can read it; chmod 600 {f}", "warning")


def check_config(files: Sequence[str], observe_links: bool = False) -> CheckResult:
    """Check a controller configuration as ``ryu-manager`` would read it.

    Args:
        files: oslo.config files, in ``--config-file`` order (a later file wins).
            Relative paths inside them (``file:PATH``, ``state_db``) are resolved from
            the current directory, as the controller resolves them from its own.
        observe_links: ``ryu-manager`` runs with ``--observe-links`` (also true when
            ``[DEFAULT] observe_links = true`` is set in a file).

    Returns:
        a :class:`CheckResult`: ``ok`` when the controller would start with these
        files (as far as can be known without a network); every problem otherwise.

    Raises:
        ValueError: no file given.
    """
    if not files:
        raise ValueError("files: at least one configuration file is needed")
    ck = _Checker(files)
    result = CheckResult(list(files), ck.problems)
    if not ck.read_files():
        return result
    ck.unknown_keys()
    try:
        conf = _make_conf(files)
    except oslo_cfg.Error as exc:  # not expected after read_files: oslo's own parser
        ck.add("", None, f"oslo.config refuses the files: {exc}")
        return result
    settings, reset = ck.settings(conf)
    result.settings = settings
    topo = None
    if not reset & {"topology", "link_bps", "path_slack"}:
        from .core import scheduler_from_settings, topology_from_settings

        try:
            topo = topology_from_settings(settings)
        except SettingsError as exc:
            ck.refused(exc)
        if "scheduler" not in reset:
            try:  # on the default fabric when the topology is refused: name still checked
                scheduler_from_settings(settings, topo if topo is not None else
                                        topology_from_settings(Settings()))
            except SettingsError as exc:
                ck.refused(exc)
        try:
            check_observe_links(settings, observe_links or bool(conf.observe_links))
        except SettingsError as exc:
            ck.refused(exc)
    addrs = None
    if not reset & {"rest_host", "rest_token", "ofp_host"}:
        from .rest import listen_addresses

        try:
            addrs = listen_addresses(settings, conf.wsapi_host, conf.ofp_listen_host)
        except SettingsError as exc:
            ck.refused(exc)
    if "state_db" not in reset:
        ck.state_db(settings)
    ck.token_files(settings)
    order = {f: i for i, f in enumerate(files)}
    ck.problems.sort(key=lambda p: (p.severity != "error", order.get(p.file, 0),
                                    p.line is None, p.line or 0))
    if result.ok:
        result.summary = _summary(settings, topo, addrs, conf)
    return result


def _summary(settings: Settings, topo, addrs, conf) -> str:
    """The one-line description of a good configuration."""
    from topologies.base import describe

    if settings.topology.strip().lower() == "discover":
        fabric = "topology discover (built as switches connect)"
    else:
        fabric = describe(topo) if topo is not None else settings.topology
    port = settings.rest_port if settings.rest_port is not None and conf.wsapi_port == 8080 \
        else conf.wsapi_port
    rest = f"REST {addrs['rest_host']}:{port} (token {'on' if settings.rest_token else 'off'})"
    return (f"scheduler {settings.scheduler} on {fabric}; {rest}, OpenFlow on "
            f"{addrs['ofp_host']}; agents {settings.agent_url or 'off'}; state_db "
            f"{settings.state_db if settings.store_enabled else 'off'}")

