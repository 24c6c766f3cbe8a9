"""The controller's pure core: no Ryu import, no sockets, no clock.

Faucet-style (see ``shared/STYLE.md``): the Ryu shell (:mod:`.app`) translates
events into calls on :class:`ControllerCore` and sends what they return.  The core
returns OpenFlow rules and agent rate pushes *as data* (:class:`~.rules.FlowRule`,
:class:`~.rules.GroupRule`, :class:`~.pushes.AgentPush`), so everything here is
tested without a switch, a host agent or a running Ryu.  Time is passed in (``now`` in seconds since
the controller started).

Units everywhere: sizes and byte counters in bytes, rates in bit/s, times in
seconds.

What the core does (the controller part of the issue):

* validates REST requests (:func:`~.validation.parse_coflow_request`), raising
  :class:`~rapier_app.httpjson.RequestError` (HTTP status + the offending field)
  before touching any state, so that bad input changes nothing;
* keeps the registry of coflows (``active`` / ``done`` / ``cancelled``) as
  :class:`~rapier_app.core.model.CoflowState` objects shared with the scheduler, as
  the simulator does (one :class:`~rapier_app.core.model.InfoPolicy`);
* calls the scheduler on every arrival, completion and cancel (and when the
  scheduler's :meth:`next_wakeup` is due), and diffs the new schedule against the
  rules already installed: rules to add, to modify (path moved: ``MODIFY_STRICT``
  keeps the byte counters) and to delete, plus the new per-host rate sets for the
  agents;
* computes default forwarding for traffic that is not a scheduled coflow
  (:func:`default_forwarding`: per-destination shortest paths, ECMP over OpenFlow
  ``SELECT`` groups) and answers ARP (:func:`parse_arp_request`,
  :func:`build_arp_reply`);
* tracks progress from flow-stats byte counters of each flow's first-hop rule
  (:meth:`ControllerCore.apply_flow_stats`) and detects completion.

Completion detection (how byte counters become finished flows) is documented in
:mod:`.progress`.

Layout (the core split by concern; each name is imported from the module that
defines it):

* :mod:`.settings` -- :class:`Settings`, :func:`build_scheduler`;
* :mod:`.validation` -- :func:`~.validation.parse_coflow_request` (raising
  :class:`~rapier_app.httpjson.RequestError`);
* :mod:`.registry` -- the coflow registry (:class:`~.registry.RegistryMixin`:
  submit, get, cancel, active) and :class:`FlowTrack`;
* :mod:`.rules` -- rules as data, default forwarding, topology checks,
  :func:`~.rules.diff_rules`;
* :mod:`.pushes` -- :class:`AgentPush` and :class:`~.pushes.PushBook` (which host
  must be pushed);
* :mod:`.openflows` -- open coflows, flows added over time, close, unknown sizes;
* :mod:`.progress` -- byte counters -> progress and completions;
* :mod:`.views` -- the REST API's JSON views;
* :mod:`.arp` -- proxy ARP bytes;
* :mod:`.decisions` -- a decision in three steps (snapshot, scheduler call,
  apply), the budget and the deferral of decisions while one runs;
* :mod:`.applying` -- the schedule -> rules and pushes step
  (:meth:`~.applying.ApplyMixin._apply`), at the cost of the flows that changed;
* here -- :class:`ControllerCore`, which ties them together (rules of one flow,
  the desired rule table), and :func:`make_core`.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from topologies import Topology, TopologyError, build_topology

from ..core.model import CoflowState, FlowState, InfoPolicy, Schedule
from .admission import AdmissionMixin
from .applying import ApplyMixin
from .arp import build_arp_reply, parse_arp_request
from .coexist import BACKGROUND, CoexistMixin
from .decisions import DecisionMixin
from .durability import DurabilityMixin
from .fabric import DISCOVER, FabricMixin
from .ledger import RuleLedger
from .metrics import CoreMetrics
from .openflows import OpenFlowsMixin
from .progress import ProgressMixin
from .reconcile import Repair, diff_table, entry_from_stats
from .pushes import PushBook
from .registry import SCHEDULED, FlowTrack, RegistryMixin
from .rules import PRIORITY_COFLOW, Actions, FlowRule, check_observed, default_forwarding
from .settings import Settings, SettingsError, build_scheduler
from .store import Store, StoreError
from .views import ViewsMixin

BITS = 8.0



class DesiredRules(dict):
    """The coflow rules the controller wants on the switches: ``{(dpid, flow_id):
    FlowRule}`` (a dict), indexed by flow so that a flow's rules are found without
    walking every rule (a coflow's view costs its own flows' rules, not all of them),
    and by switch (a switch's reconciliation round costs that switch's rules).

    Every dict mutation keeps the index (``d[k] = r``, ``del``, ``pop``,
    ``popitem``, ``setdefault``, ``update``, ``clear``).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()
        self._by_flow: Dict[str, Dict[Tuple[int, str], FlowRule]] = {}
        self._by_switch: Dict[int, Dict[Tuple[int, str], FlowRule]] = {}
        self.update(*args, **kwargs)

    def __setitem__(self, key, rule) -> None:
        super().__setitem__(key, rule)
        self._by_flow.setdefault(key[1], {})[key] = rule
        self._by_switch.setdefault(key[0], {})[key] = rule

    def __delitem__(self, key) -> None:
        super().__delitem__(key)
        self._unindex(key)

    def _unindex(self, key) -> None:
        for index, k in ((self._by_flow, key[1]), (self._by_switch, key[0])):
            mine = index.get(k)
            if mine is not None:
                mine.pop(key, None)
                if not mine:
                    del index[k]

    def pop(self, key, *default):
        had = key in self
        out = super().pop(key, *default)
        if had:
            self._unindex(key)
        return out

    def popitem(self):
        key, rule = super().popitem()
        self._unindex(key)
        return key, rule

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args, **kwargs) -> None:
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def clear(self) -> None:
        super().clear()
        self._by_flow.clear()
        self._by_switch.clear()

    def of_flow(self, flow_id: str) -> List[FlowRule]:
        """Flow ``flow_id``'s rules, in the order they were set (a new list; empty
        for a flow with none)."""
        return list(self._by_flow.get(flow_id, {}).values())

    def of_switch(self, dpid: int) -> List[FlowRule]:
        """Switch ``dpid``'s rules, sorted by flow id (a new list; empty for a
        switch with none): what ``sorted(self.items())`` filtered on ``dpid`` gives,
        without walking the other switches' rules."""
        return [r for _, r in sorted(self._by_switch.get(dpid, {}).items())]


class ControllerCore(ApplyMixin, AdmissionMixin, DecisionMixin, RegistryMixin, OpenFlowsMixin,
                     ProgressMixin, DurabilityMixin, ViewsMixin, CoexistMixin, FabricMixin):
    """Coflow registry, scheduling, rule diffs, agent pushes and progress.

    Args:
        topology: the configured fabric (from ``topologies/``).
        scheduler: a scheduler for that topology (see :func:`build_scheduler`).
        settings: the controller options.
        log: optional ``logging.Logger``-like object (``info``/``warning``/``error``).
        store: the :class:`~.store.Store` that keeps accepted coflows across restarts
            (None: memory only).  :meth:`restore` reloads it.

    Every mutating method takes ``now`` (seconds since the controller started) and
    returns :class:`Actions` for the shell to carry out.  The REST operations come
    from :class:`~.registry.RegistryMixin`, progress from
    :class:`~.progress.ProgressMixin`, restart/retention/paging from
    :class:`~.durability.DurabilityMixin`, the views from :class:`~.views.ViewsMixin`.

    Rules: :attr:`desired` holds every coflow rule the controller wants on the
    switches, keyed ``(dpid, flow_id)`` (sent, or sent when the switch connects);
    :attr:`ledger` (:class:`~.ledger.RuleLedger`) what each switch confirmed with a
    barrier reply.  A rule is *installed* only once confirmed, *pending* before.
    """

    def __init__(self, topology: Topology, scheduler, settings: Optional[Settings] = None,
                 log=None, store: Optional[Store] = None):
        self.topology = topology
        self.scheduler = scheduler
        self.settings = (settings or Settings()).validate()
        self.log = log
        self.policy = InfoPolicy(scheduler.clairvoyant)
        self.coflows: "OrderedDict[str, CoflowState]" = OrderedDict()
        self.state: Dict[str, str] = {}
        self.ended_s: Dict[str, float] = {}
        self.fallback: Dict[str, str] = {}
        #: coflow id -> QUEUED / SCHEDULED / FALLBACK (see :mod:`.registry`)
        self.decision: Dict[str, str] = {}
        #: decisions whose wall-clock time exceeded ``decision_budget_s``
        self.budget_exceeded = 0
        #: reconciliation totals (rounds, switches skipped, differences repaired)
        self.reconcile_counts: Dict[str, int] = {"rounds": 0, "skipped": 0, "missing": 0,
                                                 "wrong": 0, "stale": 0}
        self.tracks: Dict[str, FlowTrack] = {}
        #: dpids whose next flow-stats reply holds pre-clear counters (:mod:`.progress`)
        self.reconnect_due: Set[int] = set()
        self.flow_by_cookie: Dict[int, FlowState] = {}
        self._desired = DesiredRules()
        #: flow id -> (path or ("count", first dpid), its rules) of the last decision
        self._rule_cache: Dict[str, Tuple[tuple, List[FlowRule]]] = {}
        self.setup_apply()
        self.ledger = RuleLedger()
        self.store = store
        self._pushes = PushBook(self.agent_url)
        #: host -> what its agent was last sent (the push book's own dict)
        self.pushed: Dict[str, Tuple] = self._pushes.pushed
        self.last_schedule: Optional[Schedule] = None
        self.last_schedule_s: Optional[float] = None
        self.last_solve_s = 0.0
        self.schedule_count = 0
        self.errors: List[str] = []
        self._next_cookie = 1
        self._next_auto = 1
        self.wall_clock = None  # optional () -> s, to time scheduler calls
        self._defaults = default_forwarding(topology)
        g = topology.graph
        self._dpid = {s: g.nodes[s]["dpid"] for s in topology.switches}
        #: down and missing links (:mod:`.links`; set by :func:`.links.wrap`)
        self.link_state = None
        #: Prometheus metrics of this core (``GET /metrics``, :mod:`.metrics`)
        self.metrics = CoreMetrics(self)
        self.setup_open_flows()
        self.setup_fabric()

    # -- helpers ----------------------------------------------------------------
    def _log(self, level: str, msg: str, *args) -> None:
        if self.log is not None:
            getattr(self.log, level)(msg, *args)

    def ip(self, host: str) -> str:
        """IPv4 address of ``host``."""
        return self.topology.graph.nodes[host]["ip"]

    def agent_url(self, host: str) -> str:
        """Agent base URL of ``host`` from the ``agent_url`` template."""
        return self.settings.agent_url.format(host=host, ip=self.ip(host),
                                              port=self.settings.agent_port)

    def default_rules(self, dpid: int) -> List[Any]:
        """Groups then flow rules of default forwarding and ARP for switch ``dpid``
        (empty for a dpid that is not in the topology)."""
        groups, rules = self._defaults.get(dpid, ([], []))
        return list(groups) + list(rules)

    def switch_rules(self, dpid: int) -> List[Any]:
        """Everything switch ``dpid`` must hold: defaults plus current coflow rules
        (sent after a switch (re)connects and its tables were cleared)."""
        return self.default_rules(dpid) + [r.with_command("add")
                                           for r in self.desired.of_switch(dpid)]

    def is_known_dpid(self, dpid: int) -> bool:
        """True when ``dpid`` belongs to a switch of the configured topology."""
        return dpid in self._defaults

    def check_observed(self, switch_ports, links=()) -> List[str]:
        """:func:`check_observed` on this core's topology."""
        return check_observed(self.topology, switch_ports, links)


    def _path_rules(self, f: FlowState, path: Sequence[str]) -> List[FlowRule]:
        g = self.topology.graph
        match = self.rule_match(f)
        cookie = self.tracks[f.flow_id].cookie
        rules = []
        for i in range(1, len(path) - 1):
            s = path[i]
            port = g.edges[s, path[i + 1]]["port"]
            rules.append(FlowRule(self._dpid[s], PRIORITY_COFLOW, match, (("output", port),),
                                  cookie, "add", f.flow_id))
        return rules

    def _counting_rule(self, f: FlowState) -> FlowRule:
        """First-hop rule with the default-forwarding action (keeps counters for a
        flow on default forwarding)."""
        track = self.tracks[f.flow_id]
        ip = self.ip(f.dst)
        action = None
        for r in self._defaults.get(track.first_dpid, ((), ()))[1]:
            if r.match_dict().get("ipv4_dst") == ip:
                action = r.actions
        match = self.rule_match(f)
        return FlowRule(track.first_dpid, PRIORITY_COFLOW, match, action, track.cookie,
                        "add", f.flow_id)

    def _valid_path(self, f: FlowState, path) -> bool:
        if not path or len(path) < 3 or path[0] != f.src or path[-1] != f.dst:
            return False
        try:
            self.topology.path_links(path)
        except TopologyError:
            return False
        return path[1] in self._dpid

    def _flow_rules(self, f: FlowState, path: Optional[tuple],
                    built: Optional[List[FlowRule]] = None) -> Tuple[tuple, List[FlowRule]]:
        """``(key, rules)`` of flow ``f``: its path rules (``path``) or its counting
        rule (None), reused from the last decision when the key -- the path, or the
        first-hop switch of the counting rule -- is the same and the desired table
        still holds exactly those rules (:attr:`_rule_cache`); else ``built`` (the
        path's rules, built off the event loop by
        :meth:`~.applying.ApplyMixin.plan_apply`) or new ones."""
        fid = f.flow_id
        key = path if path is not None else ("count", self.tracks[fid].first_dpid)
        hit = self._rule_cache.get(fid)
        if hit is not None and hit[0] == key:
            mine = self._desired._by_flow.get(fid)
            rules = hit[1]
            if mine is not None and len(mine) == len(rules) and \
                    all(mine.get((r.dpid, fid)) is r for r in rules):
                return key, rules
        if path is None:
            rules = [self._counting_rule(f)]
        else:
            rules = built if built is not None else self._path_rules(f, path)
        self._rule_cache[fid] = (key, rules)
        return key, rules

    @property
    def desired(self) -> DesiredRules:
        """Every coflow rule the controller wants on the switches, ``{(dpid,
        flow_id): FlowRule}``, indexed by flow (:class:`DesiredRules`); a plain
        dict assigned here is indexed on assignment."""
        return self._desired

    @desired.setter
    def desired(self, rules) -> None:
        self._desired = rules if isinstance(rules, DesiredRules) else DesiredRules(rules)
        self._rule_cache.clear()
        self._apply_full = True  # the apply step's records no longer hold (.applying)

    # -- what the switches hold (barrier-confirmed) --------------------------
    @property
    def installed(self) -> Dict[Tuple[int, str], FlowRule]:
        """Coflow rules confirmed on their switch by a barrier reply, keyed
        ``(dpid, flow_id)`` like :attr:`desired` (a subset of it while rules are
        pending; rules of flows no longer desired until their delete is confirmed)."""
        out = {}
        for dpid, table in self.ledger.confirmed.items():
            for r in table.values():
                if isinstance(r, FlowRule) and r.flow_id is not None:
                    out[(dpid, r.flow_id)] = r
        return out

    def switch_connected(self, dpid: int, counters_first: bool = False) -> List[Any]:
        """Switch ``dpid`` (re)connected: nothing on it is confirmed any more; returns
        :meth:`switch_rules`, what it must be given (after clearing it).
        ``counters_first``: the shell asked for its flow statistics before clearing
        it (:meth:`~.progress.ProgressMixin.expect_reconnect_counters`)."""
        self.ledger.reset(dpid)
        if counters_first:
            self.expect_reconnect_counters(dpid)
        return self.switch_rules(dpid)

    def switch_want(self, dpid: int) -> List[FlowRule]:
        """Every flow rule switch ``dpid`` must hold (defaults, ARP, desired coflow
        rules; groups left out), command ``add``: what reconciliation compares the
        switch's table with."""
        return [r for r in self.switch_rules(dpid) if isinstance(r, FlowRule)]

    def reconcile_switch(self, dpid: int, stats) -> Tuple[Repair, Actions]:
        """One reconciliation round of switch ``dpid`` (:mod:`.reconcile`).

        Args:
            stats: the entries of its flow table with our cookie tag, as
                ``OFPFlowStats``-like objects (see :func:`.reconcile.entry_from_stats`)
                or :class:`.reconcile.Entry`.

        Returns:
            (the :class:`~.reconcile.Repair` with its counts, Actions carrying its
            rules).  Counts are added to :attr:`reconcile_counts` and logged when
            something differed.
        """
        have = []
        for st in stats:
            try:
                have.append(st if hasattr(st, "actions") else entry_from_stats(st))
            except ValueError as exc:  # an action we never install: leave it alone
                self._log("warning", "switch dpid=%#x: unreadable entry: %s", dpid, exc)
        rep = diff_table(dpid, self.switch_want(dpid), have)
        self.reconcile_counts["rounds"] += 1
        for k in ("missing", "wrong", "stale"):
            self.reconcile_counts[k] += getattr(rep, k)
        if rep.differences:
            self._log("warning", "reconcile dpid=%#x: %d missing, %d wrong, %d stale rules "
                      "repaired", dpid, rep.missing, rep.wrong, rep.stale)
        return rep, Actions(rules=list(rep.rules))

    def schedule_view(self) -> Dict[str, Any]:
        """:meth:`~.views.ViewsMixin.schedule_view` plus ``reconcile`` (totals of
        :meth:`reconcile_switch`), ``budget_exceeded`` (decisions over
        ``decision_budget_s``) and ``queued`` (coflows awaiting Algorithm 1: without
        rules, or ``provisional`` on ECMP paths at leftover rates, :mod:`.admission`;
        ``/metrics`` has them by decision)."""
        view = super().schedule_view()
        view["reconcile"] = dict(self.reconcile_counts)
        view["budget_exceeded"] = self.budget_exceeded
        view["queued"] = len(self.queued())
        view["broker"] = self.broker_view()
        return view

    def switch_lost(self, dpid: int) -> None:
        """Switch ``dpid`` disconnected: its table is unknown until it reconnects."""
        self.ledger.lost(dpid)
        self.reconnect_due.discard(dpid)

    def rules_sent(self, dpid: int, barrier_xid: int, items) -> None:
        """The shell sent ``items`` ((xid, rule) in order) to ``dpid`` followed by
        barrier ``barrier_xid``: they are pending (:meth:`.ledger.RuleLedger.sent`)."""
        self.ledger.sent(dpid, barrier_xid, items)

    def barrier_reply(self, dpid: int, xid: int) -> int:
        """Barrier ``xid`` of ``dpid`` answered: its rules are installed.  Returns the
        number of rules confirmed."""
        return self.ledger.barrier_reply(dpid, xid)

    def rule_error(self, dpid: int, xid: int) -> Optional[Any]:
        """``dpid`` answered message ``xid`` with an OpenFlow error: the rule is not
        recorded installed (it stays pending in the view); logged and returned."""
        item = self.ledger.error(dpid, xid)
        if item is not None:
            self._log("error", "switch dpid=%#x rejected %s", dpid, item)
            self.errors.append(f"switch dpid={dpid:#x} rejected {item}")
        return item

    def rule_expired(self, dpid: int, priority: int, match, cookie: int) -> Actions:
        """The switch removed a rule on its idle timeout (``OFPFlowRemoved``): forget
        it; a rule still desired (its flow is active) is sent again (ADD)."""
        self.ledger.removed(dpid, priority, match)
        acts = Actions()
        for r in self.desired.of_switch(dpid):
            if r.priority == priority and r.match == tuple(match) and r.cookie == cookie:
                acts.rules.append(r.with_command("add"))
        return acts

    def rule_states(self, flow_id: str) -> Dict[str, int]:
        """``{"installed": n, "pending": m}``: the flow's desired rules confirmed by a
        barrier reply, and not (yet).  Touches that flow's rules only
        (:meth:`DesiredRules.of_flow`)."""
        out = {"installed": 0, "pending": 0}
        for r in self.desired.of_flow(flow_id):
            out[self.ledger.status(r)] += 1
        return out

    def coflow_view(self, cid: str, flows: bool = True) -> Dict[str, Any]:
        """:meth:`~.views.ViewsMixin.coflow_view` plus ``decision``, ``rates`` and,
        per flow, ``rules`` (:meth:`rule_states`); ``flows=False``: the summary
        (no ``flows`` key, no rule looked up).  A coflow that left memory
        (retention) is answered from the database
        (:meth:`~.durability.DurabilityMixin.stored_view`).

        Raises:
            RequestError: 404 for an id neither in memory nor in the database.
        """
        if cid not in self.coflows and self.store is not None:
            return self.stored_view(cid, flows)
        view = super().coflow_view(cid, flows)
        view["decision"] = self.decision.get(cid, SCHEDULED)
        view["rates"] = "applied" if self.rates_applied(cid) else "pending"
        for i, fv in enumerate(view.get("flows", ())):
            self._pause_every(i)  # under the lock (.registry.hold_pause)
            fv["rules"] = self.rule_states(fv["flow_id"])
        return view

    #: widest coflow whose POST/DELETE/done reply carries its flows; a wider one is
    #: answered with its summary (``GET /coflows/<id>`` has the flows)
    REPLY_FLOWS_MAX = 100

    def reply_view(self, cid: str) -> Dict[str, Any]:
        """The coflow in a POST, DELETE or flow-done reply: :meth:`coflow_view` with
        its flows up to :attr:`REPLY_FLOWS_MAX` flows, its summary above (the reply
        costs no per-flow work for a big coflow).  Raises RequestError 404."""
        c = self.coflows.get(cid)
        return self.coflow_view(cid, flows=c is None or c.width <= self.REPLY_FLOWS_MAX)

    def push_failed(self, host: str, now: Optional[float] = None) -> float:
        """Mark ``host``'s pushed set as unknown so the next reschedule pushes again;
        with ``now`` (s) its retry waits the exponential backoff of
        ``agent_retry_min_s`` .. ``agent_retry_max_s``.  Returns the delay (s)."""
        self.metrics.push_failures.inc()
        if now is None:
            return self._pushes.failed(host)
        return self._pushes.failed(host, now, self.settings.agent_retry_min_s,
                                   self.settings.agent_retry_max_s)

    def push_succeeded(self, host: str, gen: int = 0) -> None:
        """A push to ``host`` went through: reset its backoff and record its
        generation ``gen`` as in force (:meth:`.pushes.PushBook.succeeded`)."""
        self.metrics.pushes.inc()
        self._pushes.succeeded(host, gen)

    def rates_applied(self, cid: str) -> bool:
        """True when every unfinished flow of coflow ``cid`` that has a rate limit has
        it in force on its source host (the agent acknowledged a set holding it,
        :meth:`.pushes.PushBook.limited`); always True without agents.  Until then
        a sender that starts runs unshaped: an agent passes flows it has no limit
        for at line rate."""
        c = self.get(cid)
        if self.decision.get(cid) == BACKGROUND:
            return True  # never limited (.coexist)
        return all(self._pushes.limited(f.flow_id) for f in c.active_flows())

    def retry_pushes(self, now: float = float("inf")) -> Actions:
        """Pushes for the hosts whose last push failed and whose backoff ran out at
        ``now`` (their current rate set)."""
        return Actions(pushes=self._pushes.retry(now))

    def push_all(self) -> Actions:
        """Every agent's full desired set (periodic agent reconciliation), or nothing
        when agents are off."""
        if not self.settings.agent_url:
            return Actions()
        return Actions(pushes=self._pushes.push_all())

    def arp_answer(self, frame: bytes) -> Optional[bytes]:
        """Proxy ARP: the reply frame to an ARP request for a host of the topology,
        or None (not an ARP request, or the target IP is no host of ours)."""
        req = parse_arp_request(frame)
        if req is None:
            return None
        mac, ip, target = req
        try:
            host = self.topology.host_by_ip(target)
        except TopologyError:
            return None
        return build_arp_reply(mac, ip, self.topology.graph.nodes[host]["mac"], target)

    def wakeup_due(self, now: float) -> bool:
        """True when the scheduler asked for a decision at or before ``now``."""
        if not self.active():
            return False
        try:
            t = self.scheduler.next_wakeup(self.last_schedule_s or 0.0)
        except Exception:  # noqa: BLE001
            return False
        return t is not None and t <= now


def topology_from_settings(settings: Settings) -> Topology:
    """The topology ``settings`` name (``topology``, ``link_bps``, ``path_slack``): an
    empty one that grows as switches connect for ``topology = discover``.  What
    :func:`make_core` builds, and what ``rapier-config check`` checks.

    Raises:
        SettingsError: bad topology spec, or a topology file that cannot be read,
            does not parse or does not validate (``topology: ...``).
    """
    try:
        if settings.topology.strip().lower() == DISCOVER:
            topo = Topology("discovered").freeze()  # grows as switches connect
        else:
            topo = build_topology(settings.topology, settings.link_bps)
        if settings.path_slack is not None:
            topo.set_path_slack(settings.path_slack)
    except TopologyError as exc:
        msg = str(exc)
        raise SettingsError(msg if msg.startswith("topology:") else f"topology: {msg}") from None
    return topo


def scheduler_from_settings(settings: Settings, topo: Topology):
    """:func:`.settings.build_scheduler` with its error named ``scheduler: ...``.

    Raises:
        SettingsError: unknown scheduler name or parameters it refuses.
    """
    from ..scheduling import SchedulerError

    try:
        return build_scheduler(settings, topo)
    except SchedulerError as exc:
        msg = str(exc)
        raise SettingsError(msg if msg.startswith("scheduler:") else f"scheduler: {msg}") from None


def make_core(settings: Settings, log=None) -> ControllerCore:
    """Build topology, scheduler and core from ``settings``.

    Opens the database ``settings.state_db`` (when enabled) but does not reload it:
    the caller calls :meth:`ControllerCore.restore` with its clock.

    Raises:
        SettingsError: bad topology spec or scheduler name (naming the option), or a
        database that cannot be used (``state_db: ...``: corrupt, newer schema).
    """
    settings.validate()
    topo = topology_from_settings(settings)
    sched = scheduler_from_settings(settings, topo)
    store = None
    if settings.store_enabled:
        try:
            store = Store(settings.state_db, sync=settings.state_db_sync)
        except StoreError as exc:
            raise SettingsError(f"state_db: {exc}") from None
    core = ControllerCore(topo, sched, settings, log, store)
    if settings.broker:
        from .coexist import wrap

        wrap(core)
    return core


__all__ = ["ControllerCore", "DesiredRules", "make_core", "scheduler_from_settings",
           "topology_from_settings"]
