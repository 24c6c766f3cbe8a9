"""Controller options (:class:`Settings`, the ``[rapier]`` section of the oslo.config
file) and the scheduler they name (:func:`build_scheduler`).

Units: bit/s for rates, seconds for times, bytes for sizes.  Part of the controller's
pure core (:mod:`.core`); no Ryu import.
"""

from __future__ import annotations

import inspect
import math
import os
import re
from dataclasses import dataclass, field, fields
from typing import Any, Dict, Mapping, Optional

from topologies import Topology


#: Bearer tokens (``rest_token``, ``agent_token``): RFC 6750 ``b64token`` characters,
#: at least 16 of them.
TOKEN_RE = re.compile(r"^[A-Za-z0-9\-._~+/]{16,}=*$")


#: Default database file (relative to the working directory) unless the environment
#: variable ``RAPIER_STATE_DB`` names another (the test suite sets ``:memory:``).
DEFAULT_STATE_DB = "rapier-state/controller.sqlite3"


def default_state_db() -> str:
    """``$RAPIER_STATE_DB`` or :data:`DEFAULT_STATE_DB`."""
    return os.environ.get("RAPIER_STATE_DB", DEFAULT_STATE_DB)


class SettingsError(ValueError):
    """A controller option has a bad value; the message starts with its name."""


@dataclass
class Settings:
    """Controller options (the ``[rapier]`` section of the oslo.config file).

    Attributes:
        scheduler: scheduler registry name (``rapier``, ``baseline``, ...).
        topology: topology spec for :func:`topologies.build_topology`
            (``leafspine:3,3,3``, ``fattree:4``, ``vl2:4,4,2``, ...).
        link_bps: link speed override in bit/s (None: the builder's default,
            1 Gbit/s); must match the emulated link speed for rates to be right.
        rest_host, rest_port: REST listen address.  ``rest_host`` None: 127.0.0.1
            (loopback), unless ``--wsapi-host`` names another address; an address
            off loopback needs ``rest_token`` (see the security block below).
            ``rest_port`` None: Ryu's ``--wsapi-port`` (8080).
        agent_url: URL template of the host agents, with ``{host}``, ``{ip}`` and
            ``{port}`` placeholders; ``http://{ip}:{port}`` or
            ``unix:/tmp/rapier-agents/{host}.sock``.  Empty: no agents (rates are
            computed and shown, not enforced).
        agent_port: TCP port of the agents (``{port}``).
        agent_timeout_s: timeout of one agent HTTP call in seconds.
        lp_time_limit_s: time limit of one LP solve in seconds (RAPIER).
        delta_s: RAPIER's starvation threshold delta in seconds.
        stats_interval_s: flow-stats polling period in seconds.
        min_rate_bps: rate pushed to agents for a flow the schedule makes wait
            (rate 0): a trickle that keeps its TCP connection alive, in bit/s.
        header_bytes: per-packet header bytes subtracted from rule byte counters
            to estimate payload bytes.
        finish_slack_bytes: a flow is done when its payload estimate reaches
            ``size_bytes - finish_slack_bytes``.
        idle_finish_s, idle_fraction: the idle completion rule (module docstring).
        stats_completion: flows may be completed from flow statistics (the size and
            idle rules).  False (issue 13): only a receiver's or agent's report
            (``POST .../flows/<n>/done``) completes a flow; statistics still give
            ``bytes_sent``.  Counters at the first hop count a flow's bytes before
            they cross the bottleneck queue, and retransmissions twice, so the size
            rule can close a flow whose last bytes are still on their way.
        seed: scheduler seed (ECMP hashing).
        max_paths: cap on candidate paths per host pair (0: the whole ECMP set).
        reschedule_on: when a flow finishes without ending its coflow, ``"flow"``
            calls the scheduler again (RAPIER and Varys then run only their
            work-conservation pass, which hands the finished flow's bandwidth to
            the surviving flows, and the new rates are pushed); ``"coflow"`` keeps
            the last decision for the remaining flows (only the finished flow's
            rules and rate go); ``"auto"`` (default) follows the scheduler's own
            ``reschedule_on`` (``flow`` for RAPIER and Varys: Algorithm 1 / SEBF +
            MADD run in full when a coflow arrives or finishes, RAPIER Section
            IV-C, work conservation alone at the other flow completions).

    Durability and retention (issue 14; see ``docs/operations.md``):

    Attributes:
        state_db: SQLite file of the accepted coflows and their state (WAL mode,
            :mod:`.store`); relative paths are taken from the working directory;
            ``:memory:`` keeps it in memory (tests), ``""`` or ``off`` disables it.
            Default: ``$RAPIER_STATE_DB`` or ``rapier-state/controller.sqlite3``.
        store_progress_interval_s: how often the flows' ``bytes_sent`` are written
            to the database (s); arrivals, completions and cancels are written at once.
        retention_s: a done or cancelled coflow leaves memory this long after it
            ended (s; it stays in the database and in ``GET /coflows``).
        rule_idle_timeout_s: OpenFlow ``idle_timeout`` of the coflow rules (s, 0..65535;
            0: none), a safety net for rules a crashed controller left behind.
        page_limit: default and largest page of ``GET /coflows`` (coflows).

    Security (issue 14; see ``docs/operations.md``):

    Attributes:
        rest_token: bearer token every mutating REST call (POST, PUT, DELETE) must
            send as ``Authorization: Bearer <token>``; ``""``: none, allowed only while
            REST listens on loopback (the controller refuses to start otherwise).
            At least 16 characters of ``A-Z a-z 0-9 - . _ ~ + /`` (RFC 6750 token).
        agent_token: bearer token the controller sends to the host agents (each
            agent's ``--token-file``); ``""``: none (agents on Unix sockets).
        ofp_host: OpenFlow listen address; None: 127.0.0.1 unless Ryu's
            ``--ofp-listen-host`` names another address.
        max_body_bytes: largest REST request body (bytes); larger: 413.
        max_flows_per_coflow: most flows in one ``POST /coflows``; more: 413.

    Responsiveness and reconciliation (issue 14; see ``docs/operations.md``):

    Attributes:
        decision_budget_s: wall-clock budget of one scheduling decision (s), all
            LPs of the call together (the decision worker, :mod:`.worker`); a
            decision that takes longer puts the coflows it was deciding for the first
            time on default forwarding (``GET /coflows/<id>``: ``decision`` is
            ``fallback``, ``fallback`` gives the reason).
        reconcile_interval_s: period of reading every switch's flow table back and
            repairing differences from the controller's view (s; 0: only when a
            switch reconnects).
        agent_retry_min_s, agent_retry_max_s: exponential backoff of a failed agent
            push: first retry after ``agent_retry_min_s``, doubling up to
            ``agent_retry_max_s`` (s).
        agent_reconcile_interval_s: period of pushing every agent its full desired
            rate set again, whatever it was sent (s; 0: never).
        rest_socket_timeout_s: idle timeout of one REST connection (s): a client that
            sends nothing for this long is disconnected (eventlet.wsgi
            ``socket_timeout``).
        rest_max_connections: most concurrent REST connections (eventlet.wsgi
            ``max_size``: green threads serving them).
    """

    scheduler: str = "rapier"
    topology: str = "leafspine:3,3,3"
    link_bps: Optional[float] = None
    rest_host: Optional[str] = None
    rest_port: Optional[int] = None
    agent_url: str = "http://{ip}:{port}"
    agent_port: int = 7070
    agent_timeout_s: float = 1.0
    lp_time_limit_s: float = 5.0
    delta_s: float = 10.0
    stats_interval_s: float = 0.5
    min_rate_bps: float = 100e3
    header_bytes: int = 66
    finish_slack_bytes: int = 1448
    idle_finish_s: float = 2.0
    idle_fraction: float = 0.05
    stats_completion: bool = True
    seed: int = 0
    max_paths: int = 0
    reschedule_on: str = "auto"
    # -- durability and retention (issue 14) --
    state_db: str = field(default_factory=default_state_db)
    store_progress_interval_s: float = 1.0
    retention_s: float = 3600.0
    rule_idle_timeout_s: int = 300
    page_limit: int = 1000
    # -- security (issue 14: listen addresses, tokens, request caps) --
    rest_token: str = ""
    agent_token: str = ""
    ofp_host: Optional[str] = None
    max_body_bytes: int = 1 << 20
    max_flows_per_coflow: int = 1000
    # -- responsiveness and reconciliation (issue 14) --
    decision_budget_s: float = 2.0
    reconcile_interval_s: float = 10.0
    agent_retry_min_s: float = 0.5
    agent_retry_max_s: float = 30.0
    agent_reconcile_interval_s: float = 30.0
    rest_socket_timeout_s: float = 30.0
    rest_max_connections: int = 4096

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
        if not isinstance(self.stats_completion, bool):
            raise SettingsError(f"stats_completion: must be true or false, got "
                                f"{self.stats_completion!r}")
        if self.reschedule_on not in ("auto", "flow", "coflow"):
            raise SettingsError(f"reschedule_on: must be auto, flow or coflow, got "
                                f"{self.reschedule_on!r}")
        if not isinstance(self.idle_fraction, (int, float)) or not 0 <= self.idle_fraction < 1:
            raise SettingsError(f"idle_fraction: must be in [0, 1), got {self.idle_fraction!r}")
        self._validate_durability()
        self._validate_security()
        self._validate_responsiveness()
        return self

    def _validate_responsiveness(self) -> None:
        """Check the responsiveness and reconciliation options (issue 14)."""
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
        """Check the durability and retention options (issue 14)."""
        if not isinstance(self.state_db, str):
            raise SettingsError(f"state_db: must be a file path, :memory: or off, got "
                                f"{self.state_db!r}")
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
        """Check the security options (issue 14)."""
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


def build_scheduler(settings: Settings, topology: Topology):
    """Instantiate ``settings.scheduler`` for ``topology``.

    Passes ``delta_s`` and ``lp_time_limit_s`` (and ``max_paths`` when non-zero) only
    to schedulers whose constructor takes them (RAPIER does; the baselines do not).

    Raises:
        rapier_app.scheduling.SchedulerError: unknown scheduler name.
    """
    from ..scheduling import REGISTRY, load_all, make_scheduler

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
    return make_scheduler(settings.scheduler, topology, seed=settings.seed, **params)
