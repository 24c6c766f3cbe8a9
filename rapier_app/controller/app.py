"""The thin shell of the OpenFlow stack (:mod:`.stack`: os-ken or Ryu) around
:class:`~.core.ControllerCore` (Faucet style).

Each handler finds the object, calls one core method and sends what it returns:

* switch connects (``EventOFPSwitchFeatures``): clear its tables and groups, install
  default forwarding (per-destination shortest paths, ECMP ``SELECT`` groups), the
  ARP-to-controller rule, and the coflow rules it must hold;
* ``EventOFPPacketIn``: proxy ARP (answers from the topology definition);
* ``EventOFPFlowStatsReply``: byte counters of first-hop rules -> progress and
  completion;
* Ryu topology discovery (``EventSwitchEnter``, ``EventLinkAdd`` with
  ``--observe-links``): checked against the configured topology, mismatches logged
  at ERROR level and shown by ``GET /rapier/v1/topology``;
* REST (:mod:`.rest`): submit and cancel coflows.

Consistency and durability:

* one writer per switch: every message for a switch goes through its outbox, in the
  order of the core calls (the core runs under one lock and its result is queued
  before the lock is released); whoever drains the outbox sends everything queued,
  then one ``OFPBarrierRequest``; the rules of that batch are recorded *pending*
  in the core's :class:`~.ledger.RuleLedger` and *installed* on the
  ``OFPBarrierReply`` (``EventOFPBarrierReply``), minus those the switch answered
  with an ``OFPErrorMsg``;
* coflow rules carry ``idle_timeout``; ``EventOFPFlowRemoved`` forgets the rule (and
  sends it again if it is still wanted);
* the database (:mod:`.store`) is reloaded at start, on the clock of the first run.

Threads (``hub.spawn``: green on Ryu, native on os-ken): the REST server
(:mod:`.httpserver`), the poller (flow stats, the idle completion rule, scheduler
wake-ups, push retries), the agent pusher (:mod:`.pusher`) and the decision worker
(:mod:`.worker`).  Options: the ``[rapier]`` group, :data:`.ryuconf.OPTS`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from typing import Any, Callable, Dict, Iterable, Optional, Set

from .stack import (BaseApp, CONFIG_DISPATCHER, DEAD_DISPATCHER, GREEN,  # noqa: E402
                    MAIN_DISPATCHER, hub, ofp_event, ofproto_v1_3, set_ev_cls, topo_event)
from . import stack  # noqa: E402

from . import flowstats, links as linkmod, ofmsgs  # noqa: E402
from .httpserver import serve_rest  # noqa: E402
from .appflows import OpenFlowsAppMixin  # noqa: E402
from .loop import DecisionLoopMixin  # noqa: E402
from .pusher import AgentPusherMixin  # noqa: E402
from .worker import DecisionWorker  # noqa: E402
from .core import make_core  # noqa: E402
from .rules import Actions, missing_switches  # noqa: E402
from .settings import Settings  # noqa: E402
from .rest import configure_listeners, make_wsgi  # noqa: E402
from ..errors import RapierError  # noqa: E402
from .. import kernels  # noqa: E402
from .ryuconf import (CONF, check_observe_links, observe_links,  # noqa: E402
                      refuse_to_start, settings_from_conf)
from ..httpjson import RequestError  # noqa: E402
from .startup import STARTUP  # noqa: E402

flowstats.install()  # flow-stats replies: counters now, match and actions when read

LOG = logging.getLogger("rapier.controller")
STARTUP.mark("imports")

class RapierController(OpenFlowsAppMixin, DecisionLoopMixin, AgentPusherMixin, BaseApp):
    """RAPIER coflow controller (OpenFlow 1.3), an app of the OpenFlow stack in use
    (:mod:`.stack`: Ryu or os-ken).  ``wsgi`` is its REST API (a WSGI application),
    served from :meth:`start` on ``--wsapi-host``/``--wsapi-port``.

    Keyword args:
        rapier_settings: a :class:`Settings` to use instead of the ``[rapier]``
            options (tests); a bad setting or topology then raises its
            :class:`~rapier_app.errors.RapierError`.
        rapier_defer_start: with ``rapier_settings``, defer the kernels' warm-up and
            the restored coflows' decision to the decision worker, as ``ryu-manager``
            does (:meth:`~.loop.DecisionLoopMixin._first_decisions`); default False:
            both in ``__init__`` (an app built in-process and never started).

    Raises:
        SystemExit: status 2 when run from the ``[rapier]`` options (``ryu-manager``)
            and a setting or the topology is refused (:func:`refuse_to_start`: one
            line naming the option, no traceback).
    """

    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]
    green = GREEN  # the stack's thread model (loop.py)

    def __init__(self, *args, **kwargs):
        settings = kwargs.pop("rapier_settings", None)
        defer = kwargs.pop("rapier_defer_start", False)
        super().__init__(*args, **kwargs)
        if settings is not None:
            self._setup(settings, kwargs, defer)
            return
        try:
            self._setup(settings_from_conf(CONF), kwargs, True)
        except RapierError as exc:
            refuse_to_start(exc)

    def _setup(self, settings: Settings, kwargs: dict, defer: bool = False) -> None:
        """The body of ``__init__`` (raises the project's errors as they come); with
        ``defer`` the kernels and the restored coflows' decision wait for the worker."""
        self.settings = settings
        self.core = make_core(self.settings, LOG)
        # numba's CPU target before the REST server listens: loading it holds the
        # interpreter lock too long for /health (kernels.prepare); the kernels follow
        kernels.prepare()
        STARTUP.mark("core")
        self.core.links_observed = self.core.discover_mode or observe_links()
        check_observe_links(self.settings, observe_links())
        self.core.wall_clock = time.perf_counter
        # The clock carries on from the first run on this database (0 = its epoch).
        epoch = self.core.clock_epoch(time.time())
        self._t0 = time.monotonic() - max(time.time() - epoch, 0.0)
        #: One core call at a time (REST, OpenFlow events, poller); a POST yields
        #: holding it (readers wait for the whole coflow), the apply step releases it.
        self._lock = threading.RLock()
        #: dpid -> messages to send, in core order: (rule or None, message or None).
        self._outbox: Dict[int, deque] = {}
        self._writing: Dict[int, Any] = {}
        self.datapaths: Dict[int, Any] = {}
        self.switch_ports: Dict[int, Optional[list]] = {}
        self.links: set = set()
        self.mismatches: list = []
        self._stats_parts: Dict[int, list] = {}
        self._pending: "OrderedDict[str, Any]" = OrderedDict()
        self._push_event = hub.Event()
        self._agents_down: set = set()
        self._last_retry = 0.0
        self._reported_missing = False
        # Responsiveness and reconciliation (worker.py, reconcile.py).
        self.worker = DecisionWorker(hub.Queue(), hub.QueueEmpty, self._decide_batch,
                                     log=LOG)
        # decisions in a native thread, yields to the event loop (loop.py)
        # eventlet: decisions in a native thread (tpool), builds one at a time;
        # native threads: the worker is a thread of its own already
        self._init_loop(offload=stack.offload(), sleep=hub.sleep,
                        build_slot=hub.Semaphore(1) if GREEN else None)
        if not defer:  # kernels before the first decision (no cold start)
            self._load_kernels()
        # deferred: the REST server listens (reports are taken) while they load
        self.start_decided, self.core.worker_decides = not defer, defer
        self._batches: Dict[int, int] = {}  # dpid -> rule batches sent
        self._reconcile_req: Dict[int, int] = {}  # dpid -> _batches at the request
        self._reconcile_due: Set[int] = set()
        self._stats_full: Dict[int, list] = {}
        self._last_reconcile = self._last_agent_sync = self._last_broker = self.now()
        self._broker_asked: Optional[float] = None  # time of the port-stats requests
        self.wsgi = make_wsgi(self)
        self.rest_server = None  # bound in start()
        self._rest_address()
        # Reload the accepted coflows (rules go when switches connect, pushes after
        # the decision: now, or the worker's first when deferred).
        self.execute(self.core.restore(self.now()))
        self.core.worker_decides = False
        STARTUP.mark("restored")
        LOG.info("RAPIER controller: scheduler %s on %s (%d switches, %d hosts), agents %s",
                 self.settings.scheduler, self.core.topology.name,
                 len(self.core.topology.switches), len(self.core.topology.hosts),
                 self.settings.agent_url or "off")

    @property
    def link_state(self) -> linkmod.LinkState:
        """Down and missing links of the graph in force; the core's scheduler is
        wrapped to route around them (:mod:`.links`)."""
        return self.core.link_state

    # -- plumbing ---------------------------------------------------------------------
    def now(self) -> float:
        """Seconds since the controller started (the core's clock)."""
        return time.monotonic() - self._t0

    def _rest_address(self) -> None:
        """Set the REST and OpenFlow listen addresses (:func:`.rest.configure_listeners`:
        loopback unless configured); refuses (SettingsError) a REST address off
        loopback without ``rest_token``."""
        configure_listeners(CONF, self.settings, LOG)

    def start(self):
        """Start the stack's event loop, the REST server, the poller, the agent pusher
        and the decision worker (SystemExit 2 when the REST address cannot be bound)."""
        super().start()
        self.settle_gc = True  # the process is ours: keep full collections short
        self._spawn = hub.spawn  # a POST's rules go out after its reply (loop.py)
        self._start_loop()
        self._serve_rest()
        self.threads.append(hub.spawn(self._poll_loop))
        self.threads.append(hub.spawn(self._push_loop))
        self.threads.append(hub.spawn(self.worker.loop, None if self.start_decided
                                      else self._first_decisions))

    def _serve_rest(self) -> None:
        """Serve :attr:`wsgi` on ``--wsapi-host``/``--wsapi-port`` (as set by
        :func:`.rest.configure_listeners`) in the stack's thread model."""
        host, port = CONF.wsapi_host, CONF.wsapi_port
        try:
            self.rest_server = serve_rest(self.wsgi, host, port, self.settings, GREEN,
                                          hub.spawn, self.threads)
        except OSError as exc:
            refuse_to_start(RapierError(f"rest_port: cannot listen on {host}:{port}: "
                                        f"{exc.strerror or exc}"))
        STARTUP.mark("rest")
        LOG.info("REST serving on http://%s:%s (%s)", host, port, stack.THREADS)

    def execute(self, acts: Actions) -> None:
        """Queue the rules of ``acts`` for connected switches and its pushes, then
        send (see :meth:`flush`).

        Rules for a switch that is not connected are skipped: when it connects, it
        gets :meth:`ControllerCore.switch_rules` (the full current set).
        """
        with self._lock:
            dpids = self._enqueue(acts)
        self.flush(dpids)

    def _enqueue(self, acts: Actions) -> Set[int]:
        """Queue ``acts`` (call with the lock held, right after the core call that
        returned it); returns the dpids whose outbox got messages."""
        dpids = set()
        for item in acts.rules:
            if item.dpid in self.datapaths:
                self._outbox.setdefault(item.dpid, deque()).append((item, None))
                dpids.add(item.dpid)
        for push in acts.pushes:
            self._pending[push.host] = push
            self._pending.move_to_end(push.host)
        if acts.pushes:
            self._push_event.set()
        return dpids

    def _queue_msg(self, dpid: int, msg) -> None:
        """Queue a message that is no rule (stats request, packet-out, clear)."""
        self._outbox.setdefault(dpid, deque()).append((None, msg))

    def _core_call(self, fn: Callable[[float], Any]) -> Any:
        """Run ``fn(now)`` (a core call returning Actions, or (x, Actions)) under the
        lock, queue its actions, send them; return its result."""
        with self._lock:
            result = fn(self.now())
            acts = result[1] if isinstance(result, tuple) else result
            dpids = self._enqueue(acts)
        self.flush(dpids)
        return result

    def flush(self, dpids: Iterable[int]) -> None:
        """Drain the outboxes of ``dpids``: one writer per switch.

        A caller that finds another one draining a switch leaves its messages to it
        (they are already queued behind the drainer's, in core order).  Each drained
        batch is sent as: its messages, then one ``OFPBarrierRequest``; its rules
        are recorded pending before anything is sent, so that an error or the
        barrier reply always finds them.
        """
        self._slice_t0 = time.perf_counter()
        for dpid in sorted(dpids):
            lock = self._writing.setdefault(dpid, threading.Lock())
            while self._outbox.get(dpid):
                if not lock.acquire(blocking=False):
                    break  # the holder drains our messages too
                try:
                    while True:
                        box = self._outbox.get(dpid)
                        if not box:
                            break
                        dp = self.datapaths.get(dpid)
                        batch = []
                        while box:
                            batch.append(box.popleft())
                        if dp is not None:
                            self._send_batch(dp, batch)
                            self._pause()
                finally:
                    lock.release()

    def _send_batch(self, dp, batch) -> None:
        idle = self.settings.rule_idle_timeout_s
        msgs, rules = [], []
        todo = sum(1 for _, m in batch if m is None)
        if todo >= self.OFFLOAD_BUILD_MIN and self._offload is not None \
                and self.worker.running:  # a native thread builds them (loop.py)
            built = self._offload_build(ofmsgs.build_messages, dp, batch, idle)
        else:
            built = []
            for n, (item, msg) in enumerate(batch, 1):
                if n % 32 == 0:
                    self._pause()  # built, not sent yet: nothing is half done
                built.append(msg if msg is not None else ofmsgs.message_for(dp, item, idle))
        for (item, _), msg in zip(batch, built):
            xid = dp.set_xid(msg)
            msgs.append(msg)
            if item is not None:
                rules.append((xid, item))
        barrier = None
        if rules:
            self._batches[dp.id] = self._batches.get(dp.id, 0) + 1
            barrier = ofmsgs.barrier_request(dp)
            bx = dp.set_xid(barrier)
            with self._lock:
                self.core.rules_sent(dp.id, bx, rules)
        for msg in msgs:
            dp.send_msg(msg)
        if barrier is not None:
            dp.send_msg(barrier)

    # -- REST facade ------------------------------------------------------------------
    def submit(self, body) -> Dict[str, Any]:
        """``POST /coflows``: validate, write to the database, admit the coflow on its
        ECMP paths at leftover rates (:mod:`.admission`) and queue it for the
        decision worker (:mod:`.worker`); returns its view (``decision``:
        ``provisional``, or ``queued`` when it could not be admitted) without waiting
        for the scheduler.  Without a running worker (the
        app built in-process, never started) the decision is taken here, before
        returning.

        Raises:
            RequestError: 400/413 for bad input (nothing written), 503 when the
            database refuses the write.
        """
        self._slice_t0 = time.perf_counter()  # validated first, without the lock;
        req = self.core.parse_submission(body, self.core.hold_pause)  # then whole
        with self._lock:  # (its pauses keep the lock: .registry.hold_pause)
            c, acts = self.core.submit(body, self.now(), schedule=False, parsed=req)
            # its ECMP paths at once (.admission); not before the restored coflows'
            # decision: their rates are not in force yet, and its pushes would
            # replace the limits the agents keep
            if self.worker.running and self.start_decided:
                acts.extend(self.core.admit(c.coflow_id, self.now()))
            view = self.core.reply_view(c.coflow_id)
            dpids = self._enqueue(acts)  # its admission's rules, or counting rules
        self._flush_soon(dpids)
        if self.worker.running:
            self.worker.put(c.coflow_id)
        else:
            self._decide_batch([c.coflow_id])
            with self._lock:
                view = self.core.reply_view(c.coflow_id)
        return view

    def cancel(self, coflow_id: str) -> Dict[str, Any]:
        """Cancel a coflow (``DELETE``); raises RequestError 404/400."""
        self._core_call(lambda now: self.core.cancel(coflow_id, now))
        with self._lock:
            return self.core.reply_view(coflow_id)

    def flow_done(self, coflow_id: str, index: int) -> Dict[str, Any]:
        """A receiver reports flow ``index`` of ``coflow_id`` complete (``POST
        .../flows/<n>/done``, :meth:`~.progress.ProgressMixin.report_flow_done`);
        returns ``{"finished": bool, "coflow": view}``; raises RequestError 404/400."""
        finished, _ = self._gated(lambda: self._core_call(
            lambda now: self.core.report_flow_done(coflow_id, index, now)))
        with self._lock:
            return {"finished": finished, "coflow": self.core.reply_view(coflow_id)}

    def coflows_page(self, state=None, limit=None, offset=0, flows=False) -> Dict[str, Any]:
        """``GET /coflows`` (:meth:`~.durability.DurabilityMixin.coflows_page`) under
        the lock, yielding between coflows once a stretch ran over :attr:`SLICE_S`:
        a page of summaries keeps the lock there (one snapshot; POSTs wait, ``/health``
        goes on), a page with flows lets it go (decisions and POSTs go on; a coflow
        that left memory meanwhile is left out)."""
        self._slice_t0 = time.perf_counter()
        views = []
        with self._lock:
            page = self.core.page_ids(state, limit, offset)
            for cid in page.pop("ids"):
                try:
                    views.append(self.core.coflow_view(cid, flows))
                except RequestError as exc:
                    if exc.status != 404:
                        raise
                (self._pause_apply if flows else self._pause)()
        return {"coflows": views, **page}

    def observed(self) -> Dict[str, Any]:
        """What Ryu saw: connected switches, discovered links, mismatches, and the
        discovery's view (``discovery``: mode, state, switches, hosts, differences,
        missing links; :meth:`~.fabric.FabricMixin.fabric_view`)."""
        with self._lock:
            names = {d: s for s, d in self.core._dpid.items()}
            return {"connected": sorted(names.get(d, f"dpid={d:#x}") for d in self.datapaths),
                    "missing": missing_switches(self.core.topology, self.datapaths),
                    "links_discovered": len(self.links),
                    "links_down": self.link_state.view(),
                    "mismatches": list(self.mismatches),
                    "discovery": self.core.fabric_view(self.now(), list(self.datapaths),
                                                       self.mismatches)}

    def health(self) -> Dict[str, Any]:
        """``GET /health``: :meth:`~.fabric.FabricMixin.health_view` (``status`` ok,
        discovering or degraded, with the differences from a declared topology)."""
        view = self._health_read(lambda: self.core.health_view(
            self.now(), list(self.datapaths), self.mismatches))
        view["startup"] = STARTUP.view()
        return view

    def _check(self) -> None:
        if self.core.discover_mode:
            return  # nothing declared to check against
        msgs = self.core.check_observed(self.switch_ports, sorted(self.links))
        for m in msgs:
            if m not in self.mismatches:
                LOG.error("topology mismatch: %s", m)
        self.mismatches = msgs

    # -- OpenFlow events ---------------------------------------------------------------
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def switch_features(self, ev):
        """A switch connected: read its counters, clear it, install defaults and its rules."""
        dp = ev.msg.datapath
        if not self.core.is_known_dpid(dp.id) and not self.core.discover_mode:
            LOG.error("topology mismatch: switch dpid=%#x is not in topology %s; it gets "
                      "no rules", dp.id, self.core.topology.name)
            self.switch_ports.setdefault(dp.id, None)
            self._check()
            return
        with self._lock:
            self.datapaths[dp.id] = dp
            rules = self.core.switch_connected(dp.id, counters_first=True)
            box = self._outbox[dp.id] = deque([(None, ofmsgs.flow_stats_request(dp))])
            for msg in ofmsgs.clear_switch(dp):
                box.append((None, msg))
            box.extend((item, None) for item in rules)
            self._reconcile_due.add(dp.id)  # read it back once the install is done
        self.flush([dp.id])
        LOG.info("switch dpid=%#x connected: %d rules/groups sent", dp.id, len(rules))
        STARTUP.mark("first_switch")
        if not missing_switches(self.core.topology, self.datapaths):
            STARTUP.mark("all_switches")

    @set_ev_cls(ofp_event.EventOFPStateChange, [MAIN_DISPATCHER, DEAD_DISPATCHER])
    def state_change(self, ev):
        """Track connected datapaths."""
        dp = ev.datapath
        if ev.state == DEAD_DISPATCHER and dp.id is not None:
            with self._lock:
                if self.datapaths.get(dp.id) is dp:
                    del self.datapaths[dp.id]
                    self._outbox.pop(dp.id, None)
                    self.core.switch_lost(dp.id)
                    LOG.warning("switch dpid=%#x disconnected", dp.id)

    @set_ev_cls(ofp_event.EventOFPBarrierReply, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def barrier_reply(self, ev):
        """A barrier reply: the rules sent before it are installed."""
        dp = ev.msg.datapath
        with self._lock:
            if self.datapaths.get(dp.id) is dp:
                self.core.barrier_reply(dp.id, ev.msg.xid)

    @set_ev_cls(ofp_event.EventOFPFlowRemoved, MAIN_DISPATCHER)
    def flow_removed(self, ev):
        """A coflow rule timed out on its switch: forget it, re-add it if wanted."""
        msg = ev.msg
        ofp = msg.datapath.ofproto
        if msg.reason not in (ofp.OFPRR_IDLE_TIMEOUT, ofp.OFPRR_HARD_TIMEOUT):
            return
        dpid = msg.datapath.id
        LOG.info("switch dpid=%#x: rule cookie=%#x timed out", dpid, msg.cookie)
        self._core_call(lambda now: self.core.rule_expired(
            dpid, msg.priority, ofmsgs.match_tuple(msg.match), msg.cookie))

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev):
        """Proxy ARP, and in discover mode host learning (:meth:`~.fabric.FabricMixin.
        packet_in`): send the frames it returns and the rules of the update."""
        msg = ev.msg
        dp = msg.datapath
        gate = self._gate if self.core.discover_mode else threading.Lock()  # learning waits
        with gate, self._lock:
            acts, outs = self.core.packet_in(dp.id, msg.match["in_port"], bytes(msg.data),
                                             self.now())
            dpids = self._enqueue(acts)
            for o in outs:
                out_dp = self.datapaths.get(o.dpid)
                if out_dp is not None:
                    self._queue_msg(o.dpid, ofmsgs.packet_out(out_dp, o.port, o.data))
                    dpids.add(o.dpid)
        self.flush(dpids)

    @set_ev_cls(ofp_event.EventOFPFlowStatsReply, MAIN_DISPATCHER)
    def flow_stats_reply(self, ev):
        """Collect a multi-part flow-stats reply (a read-back: a whole one), update progress."""
        msg = ev.msg
        dpid = msg.datapath.id
        if dpid in self._reconcile_req and (dpid not in self._stats_parts
                                            or dpid in self._stats_full):
            self._stats_full.setdefault(dpid, []).extend(msg.body)
        parts = self._stats_parts.setdefault(dpid, [])
        parts.extend((s.cookie, s.byte_count, s.packet_count) for s in msg.body)
        if msg.flags & msg.datapath.ofproto.OFPMPF_REPLY_MORE:
            return
        self._stats_arrived(dpid, self._stats_parts.pop(dpid, []))  # after a decision
        if dpid in self._stats_full:
            self.reconcile_reply(dpid, self._stats_full.pop(dpid))
            hub.sleep(0)  # a round's replies come back to back: let REST in between

    def reconcile_reply(self, dpid: int, stats) -> None:
        """The read-back of ``dpid``'s table is complete: repair it (:mod:`.reconcile`) unless
        rules were queued, being built, in flight or sent since (it may predate them:
        retried later)."""
        with self._lock:
            seq = self._reconcile_req.pop(dpid, None)
            if seq is None or self.datapaths.get(dpid) is None:
                return
            writer = self._writing.get(dpid)  # held: a batch taken, not yet sent
            if (seq != self._batches.get(dpid, 0) or self.core.ledger.pending(dpid)
                    or self._outbox.get(dpid) or (writer is not None and writer.locked())):
                self.core.reconcile_counts["skipped"] += 1
                self._reconcile_due.add(dpid)
                return
            _, acts = self.core.reconcile_switch(dpid, stats)
            dpids = self._enqueue(acts)
        self.flush(dpids)

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def error_msg(self, ev):
        """Log OpenFlow errors (a rejected flow or group mod)."""
        msg = ev.msg
        LOG.error("OpenFlow error from dpid=%#x: xid=%s type=%#x code=%#x data=%s",
                  msg.datapath.id or 0, msg.xid, msg.type, msg.code,
                  bytes(msg.data[:64]).hex())
        if msg.datapath.id is not None:
            with self._lock:
                self.core.rule_error(msg.datapath.id, msg.xid)

    # -- topology discovery -------------------------------------------------------------
    @set_ev_cls(topo_event.EventSwitchEnter)
    def switch_enter(self, ev):
        """Ryu discovered a switch: its ports (``curr_speed``, state) go to the
        discovery (:mod:`.discovery`); checked against a declared topology."""
        sw = ev.switch
        self.switch_ports[sw.dp.id] = [p.port_no for p in sw.ports]
        self._check()
        ofp = getattr(sw.dp, "ofproto", None)
        descs = getattr(sw.dp, "ports", None) or {}
        if ofp is not None and descs:  # OFPPort descriptions (OF 1.3 port desc reply)
            ports = [(p.port_no, getattr(p, "curr_speed", 0),
                      not linkmod.port_is_down(ofp, -1, p.state, p.config))
                     for p in descs.values()]
        else:  # Ryu's Port objects only (no speed)
            ports = [(p.port_no, 0, not getattr(p, "is_down", lambda: False)())
                     for p in sw.ports]
        with self._lock:
            self.core.discovery.switch_enter(sw.dp.id, ports, self.now())
        self._fabric_changed()

    @set_ev_cls(topo_event.EventSwitchLeave)
    def switch_leave(self, ev):
        """Ryu lost a switch: its links and hosts are down (:mod:`.discovery`)."""
        with self._lock:
            self.core.discovery.switch_leave(ev.switch.dp.id, self.now())
        self._fabric_changed()

    @set_ev_cls(topo_event.EventLinkAdd)
    def link_add(self, ev):
        """Ryu discovered a link (``--observe-links``): check it; a link that was
        down is up again (:mod:`.links`); the discovery learns it."""
        link = ev.link
        self.links.add((link.src.dpid, link.src.port_no, link.dst.dpid, link.dst.port_no))
        self._check()
        with self._lock:
            self.core.discovery.link_add(link.src.dpid, link.src.port_no, link.dst.dpid,
                                         link.dst.port_no, self.now())
        self._fabric_changed()
        if not self.core.discover_mode:  # discover: missing links, above
            self._links_changed(self.link_state.link_add(link.src.dpid, link.src.port_no))

    @set_ev_cls(topo_event.EventLinkDelete)
    def link_delete(self, ev):
        """Ryu's discovery lost a link (``--observe-links``): it is down."""
        link = ev.link
        self.links.discard((link.src.dpid, link.src.port_no, link.dst.dpid,
                            link.dst.port_no))
        with self._lock:
            self.core.discovery.link_delete(link.src.dpid, link.src.port_no,
                                            link.dst.dpid, link.dst.port_no, self.now())
        self._fabric_changed()
        if not self.core.discover_mode:  # discover: missing links, above
            self._links_changed(self.link_state.link_delete(link.src.dpid, link.src.port_no))

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def port_status(self, ev):
        """A port was added, deleted, went down or came up (``OFPPortStatus``)."""
        msg = ev.msg
        dp, desc = msg.datapath, msg.desc
        down = linkmod.port_is_down(dp.ofproto, msg.reason, desc.state, desc.config)
        LOG.info("switch dpid=%#x port %s %s", dp.id or 0, desc.port_no,
                 "down" if down else "up")
        with self._lock:
            self.core.discovery.port_status(
                dp.id, desc.port_no, not down, self.now(),
                speed_kbps=getattr(desc, "curr_speed", None),
                deleted=msg.reason == dp.ofproto.OFPPR_DELETE)
        self._fabric_changed()
        if not self.core.discover_mode:  # discover: missing links, above
            self._links_changed(self.link_state.port_status(dp.id, desc.port_no, not down))

    def _fabric_changed(self) -> None:
        """Discovery events were fed: bring the graph in force up to date
        (:meth:`~.fabric.FabricMixin.fabric_update`) and send what it returns."""
        self._gated(lambda: self._core_call(self.core.fabric_update))

    def _links_changed(self, changed: bool) -> None:
        """The down-link set changed: default forwarding without the down links,
        then a decision now (flows leave a down link, or may use one that is back)."""
        if not changed:
            return
        LOG.warning("links down: %s", ", ".join(self.link_state.view()) or "none")
        with self._gate, self._lock:
            defaults = self.link_state.reroute_defaults(self.core)
            acts = self.core.reschedule(self.now())
            acts.rules[:0] = defaults
            dpids = self._enqueue(acts)
        self.flush(dpids)

    # -- green threads -----------------------------------------------------------------
    def poll_once(self) -> None:
        """One poller round: flow-stats requests, idle rule, wake-ups, push retries,
        progress writes and retention."""
        with self._lock:
            now = self.now()
            polled = []
            every = self.settings.reconcile_interval_s
            if every and now - self._last_reconcile >= every:
                self._last_reconcile = now
                self._reconcile_due |= set(self.datapaths)
            for dpid in sorted(set(self.core.stats_dpids()) | self._reconcile_due):
                dp = self.datapaths.get(dpid)
                if dp is not None:
                    if dpid in self._reconcile_due and dpid not in self._reconcile_req:
                        self._reconcile_req[dpid] = self._batches.get(dpid, 0)
                        self._stats_full.pop(dpid, None)
                    self._queue_msg(dpid, ofmsgs.flow_stats_request(dp))
                    polled.append(dpid)
            self._reconcile_due.clear()
            busy = self.core.deciding  # progress and the broker wait (loop.py)
            acts = self.core.check_idle(now) if not busy else Actions()
            if not acts.finished and self.core.wakeup_due(now):
                acts = self.core.reschedule(now)
            acts.extend(self._broker_round(now, polled) if not busy else Actions())
            if self.start_decided:  # the restored sets are decided
                acts.extend(self.core.retry_pushes(now))  # exponential backoff per host
            sync = self.settings.agent_reconcile_interval_s
            if sync and now - self._last_agent_sync >= sync and self.start_decided:
                self._last_agent_sync = now
                acts.extend(self.core.push_all())
            if now - self._last_retry > 5.0:
                self._last_retry = now
                if now > 15.0 and not self._reported_missing:
                    missing = missing_switches(self.core.topology, self.datapaths)
                    if missing:
                        LOG.error("topology mismatch: configured switches not connected "
                                  "after 15 s: %s", ", ".join(missing))
                    self._reported_missing = True
            self.core.fabric_state(now)  # logs "fabric stable" once it settles
            dpids = self._enqueue(acts) | set(polled)
            self.core.persist_progress(now)
            self.core.prune(now)
        self.flush(dpids)

    def _broker_round(self, now: float, polled: list) -> Actions:
        """The site broker's part of a poller round (lock held): every
        ``broker_period_s``, port-stats requests to every switch, sent with this
        round's flow-stats requests; one round later, when both replies are in, the
        broker's observation of those counters
        (:meth:`~.coexist.CoexistMixin.broker_tick` at the requests' time)."""
        if self.core.broker_feed is None:
            return Actions()
        acts = Actions()
        if self._broker_asked is not None:
            acts = self.core.broker_tick(now, self._broker_asked)
            self._broker_asked = None
        if now - self._last_broker >= self.settings.broker_period_s:
            self._last_broker = now
            self._broker_asked = now
            for dpid, dp in self.datapaths.items():
                if dp is not None:
                    self._queue_msg(dpid, ofmsgs.port_stats_request(dp))
                    polled.append(dpid)
        return acts

    @set_ev_cls(ofp_event.EventOFPPortStatsReply, MAIN_DISPATCHER)
    def port_stats_reply(self, ev):
        """A port-stats reply: the site broker's port counters (:mod:`.coexist`)."""
        msg = ev.msg
        entries = [(s.port_no, s.rx_bytes, s.tx_bytes) for s in msg.body]
        with self._lock:
            self.core.broker_port_stats(msg.datapath.id, entries, self.now())

    def _poll_loop(self) -> None:
        while True:
            hub.sleep(self.settings.stats_interval_s)
            try:
                self.poll_once()
            except Exception:  # noqa: BLE001 -- the poller must survive
                LOG.exception("poller round failed")
