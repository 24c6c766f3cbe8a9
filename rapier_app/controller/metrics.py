"""Prometheus metrics of the controller (``GET /metrics``), every one declared here.

Pure core: imports ``prometheus_client`` only (no Ryu).  Each
:class:`~.core.ControllerCore` owns a :class:`CoreMetrics` with its own
``CollectorRegistry`` (never the process-wide default, so several in-process cores do
not clash).  Two kinds of metric:

* read from the core's state at scrape time by :class:`CoreCollector` (no double
  bookkeeping): coflows and flows by state, rules installed and pending, rules
  repaired by reconciliation, decisions over budget, per-link capacity, scheduled
  rate, background estimate and residual, switches connected, links down;
* updated where the event happens (:class:`CoreMetrics` attributes): coflow
  completion time, decision latency, coflows sent to default forwarding and why,
  agent pushes, failures and push latency.

Units: seconds, bit/s (names end ``_seconds`` and ``_bps``).  Names and help texts
are listed in ``docs/operations.md`` (Metrics).
"""

from __future__ import annotations

from typing import Dict, Iterator, Optional

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

#: Coflow states always exported (0 when none): registry.ACTIVE, DONE, CANCELLED.
COFLOW_STATES = ("active", "done", "cancelled")
#: Decisions of ``rapier_coflows_decision`` (active coflows; :mod:`.admission`).
COFLOW_DECISIONS = ("queued", "provisional", "scheduled", "fallback", "background")
#: Reasons of ``rapier_coflows_fallback_total`` (see :func:`fallback_reason`).
FALLBACK_REASONS = ("budget", "scheduler_error", "scheduler", "background")
#: Coflow completion time buckets (s): CCTs of the emulations run 0.1 s .. minutes.
CCT_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
               1000.0, float("inf"))
#: Decision latency buckets (s): ``decision_budget_s`` defaults to well under 1 s.
DECISION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                    2.5, 5.0, 10.0, float("inf"))
#: Agent push latency buckets (s).
PUSH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0, float("inf"))


def fallback_reason(message: str) -> str:
    """The ``reason`` label of a coflow sent to default forwarding, from the message
    the core records in ``core.fallback``: ``budget`` (kept for continuity: a decision over
    ``decision_budget_s`` is now applied, no coflow falls back for it), ``scheduler_error`` (the scheduler raised, e.g. an LP
    failure), else ``scheduler`` (the scheduler itself reported the coflow in
    ``Schedule.fallback``, e.g. RAPIER's LP time-out).  ``background`` (below
    ``small_coflow_bytes``) is counted by the core directly."""
    if message.startswith("decision budget exceeded"):
        return "budget"
    if message.startswith("scheduler ") and " failed: " in message:
        return "scheduler_error"
    return "scheduler"


class CoreCollector:
    """A ``prometheus_client`` custom collector reading a core's state when scraped.

    Args:
        core: the :class:`~.core.ControllerCore` (read only: ``state``, ``coflows``,
            ``ledger``, ``installed``, ``reconcile_counts``, ``budget_exceeded``,
            ``topology``, ``last_schedule``, ``broker_feed``, ``link_state``).
    """

    def __init__(self, core):
        self.core = core

    def describe(self):
        """Nothing up front (the registry then does not call :meth:`collect` at
        registration)."""
        return []

    def collect(self) -> Iterator:
        """The scrape-time metric families (see the module docstring)."""
        core = self.core
        by_state: Dict[str, int] = {s: 0 for s in COFLOW_STATES}
        for s in core.state.values():
            by_state[s] = by_state.get(s, 0) + 1
        g = GaugeMetricFamily("rapier_coflows", "Coflows known to the controller, by state "
                              "(active, done, cancelled).", labels=["state"])
        for s, n in sorted(by_state.items()):
            g.add_metric([s], n)
        yield g

        by_decision: Dict[str, int] = {d: 0 for d in COFLOW_DECISIONS}
        for cid, s in core.state.items():
            if s == "active":
                d = core.decision.get(cid, "scheduled")
                by_decision[d] = by_decision.get(d, 0) + 1
        g = GaugeMetricFamily("rapier_coflows_decision", "Active coflows by decision: queued "
                              "(no rules yet), provisional (admitted on ECMP paths at "
                              "leftover rates, not yet placed by the scheduler), scheduled, "
                              "fallback (default forwarding), background.",
                              labels=["decision"])
        for d, n in sorted(by_decision.items()):
            g.add_metric([d], n)
        yield g

        flows = {"active": 0, "done": 0}
        for cid, c in core.coflows.items():
            for f in c.flows:
                flows["done" if f.done else "active"] += 1
        g = GaugeMetricFamily("rapier_flows", "Flows of the known coflows: done (every byte "
                              "received) or not yet (active).", labels=["state"])
        for s, n in sorted(flows.items()):
            g.add_metric([s], n)
        yield g

        yield CounterMetricFamily("rapier_decisions_over_budget", "Decisions whose wall-clock "
                                  "time exceeded decision_budget_s (applied all the same).",
                                  value=core.budget_exceeded)
        yield GaugeMetricFamily("rapier_rules_installed", "Coflow rules confirmed on their "
                                "switch by a barrier reply.", value=len(core.installed))
        yield GaugeMetricFamily("rapier_rules_pending", "Rules sent to switches and awaiting "
                                "their barrier reply.", value=core.ledger.pending_total())
        c = CounterMetricFamily("rapier_rules_repaired", "Rules repaired by reconciliation "
                                "against the switches' flow tables, by kind (missing, wrong, "
                                "stale).", labels=["kind"])
        for k in ("missing", "wrong", "stale"):
            c.add_metric([k], core.reconcile_counts.get(k, 0))
        yield c
        yield CounterMetricFamily("rapier_rule_errors", "OpenFlow errors the switches "
                                  "answered to rules.", value=core.ledger.failed)
        yield GaugeMetricFamily("rapier_switches_connected", "Switches connected (their "
                                "tables known to the controller).",
                                value=len(core.ledger.confirmed))
        ls = core.link_state
        yield GaugeMetricFamily("rapier_links_down", "Directed links down or missing (a "
                                "cable counts twice); no schedule uses them.",
                                value=0 if ls is None else len(ls.all_down()))
        yield from self._links()

    def _links(self) -> Iterator:
        """Per directed link ``(src, dst)``: capacity, scheduled rate, background
        estimate and residual (bit/s)."""
        core = self.core
        topo = core.topology
        links = list(topo.links)
        cap = [float(x) for x in topo.capacity]
        sched = [0.0] * len(links)
        s = core.last_schedule
        if s is not None and s.allocations:
            live = {f.flow_id for c in core.active() for f in c.active_flows()}
            ids = topo.link_ids
            for fid, a in s.allocations.items():
                if fid not in live:
                    continue
                p = list(a.path)
                for e in zip(p, p[1:]):
                    i = ids.get(e)
                    if i is not None:
                        sched[i] += float(a.rate_bps)
        bg: Optional[list] = None
        feed = getattr(core, "broker_feed", None)
        if feed is not None:
            pred = feed.broker.prediction_bps
            if len(pred) == len(links):
                bg = [float(x) for x in pred]
        fams = {
            "cap": GaugeMetricFamily("rapier_link_capacity", "Link capacity of the topology "
                                     "in force.", labels=["src", "dst"], unit="bps"),
            "sched": GaugeMetricFamily("rapier_link_scheduled", "Sum of the scheduled rates "
                                       "of unfinished flows crossing the link.",
                                       labels=["src", "dst"], unit="bps"),
            "res": GaugeMetricFamily("rapier_link_residual", "Capacity minus scheduled rate "
                                     "minus the background estimate (negative: "
                                     "overcommitted).", labels=["src", "dst"], unit="bps"),
        }
        if bg is not None:
            fams["bg"] = GaugeMetricFamily("rapier_link_background", "The site broker's "
                                           "background traffic estimate (its prediction).",
                                           labels=["src", "dst"], unit="bps")
        for i, (u, v) in enumerate(links):
            lab = [str(u), str(v)]
            b = bg[i] if bg is not None else 0.0
            fams["cap"].add_metric(lab, cap[i])
            fams["sched"].add_metric(lab, sched[i])
            fams["res"].add_metric(lab, cap[i] - sched[i] - b)
            if bg is not None:
                fams["bg"].add_metric(lab, b)
        yield from fams.values()


class CoreMetrics:
    """The metrics of one controller core, on its own ``CollectorRegistry``.

    Attributes (updated by the core and the Ryu app where the event happens):
        cct: histogram ``rapier_coflow_completion_seconds`` (observed when a coflow
            completes: its CCT, s).
        decision: histogram ``rapier_decision_seconds`` (every scheduler decision, its
            wall-clock time, s; 0 when the core has no ``wall_clock``).
        fallback: counter ``rapier_coflows_fallback_total{reason}`` (a coflow sent to
            default forwarding, counted when its reason first appears or changes).
        pushes / push_failures: counters ``rapier_agent_pushes_total`` and
            ``rapier_agent_push_failures_total``.
        push_latency: histogram ``rapier_agent_push_seconds`` (one agent ``PUT``, s).
    """

    def __init__(self, core):
        self.registry = CollectorRegistry(auto_describe=False)
        r = self.registry
        self.cct = Histogram("rapier_coflow_completion_seconds", "Coflow completion time "
                             "(last byte of its last flow minus its arrival), observed when "
                             "the coflow completes.", buckets=CCT_BUCKETS, registry=r)
        self.decision = Histogram("rapier_decision_seconds", "Wall-clock time of one "
                                  "scheduler decision (all active coflows).",
                                  buckets=DECISION_BUCKETS, registry=r)
        self.fallback = Counter("rapier_coflows_fallback", "Coflows sent to default "
                                "forwarding, by reason (budget, scheduler_error, scheduler, "
                                "background).", ["reason"], registry=r)
        for reason in FALLBACK_REASONS:
            self.fallback.labels(reason)
        self.pushes = Counter("rapier_agent_pushes", "Rate sets pushed to host agents and "
                              "acknowledged.", registry=r)
        self.push_failures = Counter("rapier_agent_push_failures", "Agent pushes that "
                                     "failed (unreachable or refused; retried).", registry=r)
        self.push_latency = Histogram("rapier_agent_push_seconds", "Wall-clock time of one "
                                      "agent push (PUT /v1/flows), successful or not.",
                                      buckets=PUSH_BUCKETS, registry=r)
        r.register(CoreCollector(core))

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric (``generate_latest``)."""
        return generate_latest(self.registry)


__all__ = ["CoreMetrics", "CoreCollector", "fallback_reason", "COFLOW_STATES",
           "FALLBACK_REASONS"]
