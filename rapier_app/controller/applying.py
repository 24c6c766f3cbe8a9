"""The rule-apply step: a schedule -> rule changes and agent pushes, at the cost of
what changed.

Part of :class:`.core.ControllerCore` (as :class:`ApplyMixin`).  After every
decision (:meth:`~.decisions.DecisionMixin.end_decision`, on the event loop under
the shell's lock) the core turns the scheduler's answer into rules for the switches
and rate limits for the host agents.  With 20 coflows of 1,000 flows, redoing that
for every live flow held the event loop for a quarter of a second per decision, so:

* :meth:`ApplyMixin.plan_apply` runs in the decision's worker thread, right after
  the scheduler call (:meth:`~.decisions.DecisionMixin.run_decision`): it compares
  each live flow's allocation (path, rate) with the one applied last, and keeps the
  flows whose allocation changed, with their new agent limit entry prepared;
* :meth:`ApplyMixin._apply` then handles only those flows, plus every flow of a
  coflow whose mode changed (fallback, held by a cut decision, background, or new)
  and the flows that left (finished, cancelled: noted when that happened,
  :meth:`ApplyMixin.note_left`).  A flow whose path is unchanged and only its rate
  moved costs a rate and a limit entry, no rule work.  Agent pushes go only to the
  hosts whose set changed (:meth:`.pushes.PushBook.update_changed`).

Its result is what a full pass over every live flow gives (the *full* mode, still
used when the records cannot be trusted: the first apply, a replaced topology or
default forwarding, a desired table given from outside, or
:attr:`ApplyMixin.apply_incremental` off); ``tests/test_controller_apply.py``
compares both on random event sequences.  :attr:`ApplyMixin.apply_counts` counts
the flows handled (``flows``: path and rules re-examined; ``rates``: the rate
alone), so that tests assert what a decision touched.

Units: rates in bit/s.  Pure: no Ryu import.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..core.model import Allocation, CoflowState, Schedule
from .coexist import BACKGROUND
from .pushes import flow_limit
from .rules import Actions, FlowRule

#: a flow with no record (never applied)
_NONE = object()

#: ``plan_apply``'s entry of one flow: (flow, its allocation as (path tuple, rate
#: bit/s) or None, its limit entry at that rate or None, its path's rules when the
#: path changed and is usable, else None)
PlanEntry = Tuple[Any, Optional[Tuple[tuple, float]], Optional[Dict[str, Any]],
                  Optional[List[FlowRule]]]


def _input(a: Optional[Allocation]) -> Optional[Tuple[tuple, float]]:
    """An allocation as a comparable record: (path as a tuple, rate as a float)."""
    return None if a is None else (tuple(a.path), float(a.rate_bps))


class ApplyMixin:
    """The rule-apply step of :class:`.core.ControllerCore` (module docstring).

    Uses the core's ``_desired``, ``_rule_cache``, ``_pushes``, ``tracks``,
    ``flow_by_cookie``, ``decision``, ``settings``, ``topology``, ``_defaults``,
    ``_dpid``, ``_flow_rules``, ``_valid_path``, ``ip`` and ``_log``.
    """

    #: False: every apply is a full pass over the live flows (the reference)
    apply_incremental = True
    #: called every :attr:`PAUSE_EVERY` flows handled by an incremental apply (None:
    #: never): the shell lets the event loop serve ``/health``, reads, POSTs and
    #: DELETEs there (``app._pause_apply``); the core is consistent at those points
    #: (each flow is handled whole; a coflow cancelled meanwhile leaves at the end)
    apply_pause: Optional[Callable[[], None]] = None
    PAUSE_EVERY = 256

    def setup_apply(self) -> None:
        """The records of the last apply (called by the core's constructor)."""
        #: flow id -> its allocation (path, rate) as last applied (None: none)
        self._applied_in: Dict[str, Optional[Tuple[tuple, float]]] = {}
        #: coflow id -> (fallback, held) as last applied
        self._applied_mode: Dict[str, Tuple[bool, bool]] = {}
        #: flows that may have left since the last apply (finished, cancelled)
        self._left_notes: Dict[str, None] = {}
        #: what the records were made against (a change forces a full pass)
        self._applied_ctx: Optional[tuple] = None
        #: the next apply is a full pass (set when the desired table is replaced)
        self._apply_full = False
        #: flows handled by the apply step so far: ``flows`` (path and rules
        #: re-examined), ``rates`` (only the rate and the limit), ``full`` (passes)
        self.apply_counts: Dict[str, int] = {"flows": 0, "rates": 0, "full": 0}

    def note_left(self, flow_ids) -> None:
        """Flows ``flow_ids`` finished or their coflow ended: the next apply removes
        their rules and limits (unless they are live again)."""
        self._left_notes.update(dict.fromkeys(flow_ids))

    def _limit_entry(self, f, rate: float) -> Dict[str, Any]:
        tr = self.tracks[f.flow_id]
        r = rate if rate > 0 else self.settings.min_rate_bps
        return flow_limit(f.flow_id, self.ip(f.src), self.ip(f.dst), f.dst_port, r,
                          tr.proto, tr.src_port)

    def plan_apply(self, sched: Schedule, coflows: Sequence[CoflowState]
                   ) -> Dict[str, List[PlanEntry]]:
        """The flows of ``coflows`` whose allocation in ``sched`` differs from the one
        applied last (or that were never applied), per coflow id, in flow order.

        Reads the records of the last apply and the coflows' flows, changes nothing
        of the core, so it runs in the decision's worker thread (no apply runs
        meanwhile: decisions and progress are serialised by the decision gate,
        :mod:`.loop`); it also builds ``sched.allocations`` there.  A flow whose
        allocation changed gets its limit entry prepared (:func:`.pushes.flow_limit`),
        and, when its path changed to a usable one, that path's rules.

        Returns:
            ``{coflow id: [(flow, (path, rate) or None, limit entry or None, rules or
            None), ...]}`` (:data:`PlanEntry`).
        """
        alloc = sched.allocations
        applied = self._applied_in
        out: Dict[str, List[PlanEntry]] = {}
        for c in coflows:
            mine = None
            for f in c.active_flows():
                fid = f.flow_id
                a = alloc.get(fid)
                inp = None if a is None else (tuple(a.path), float(a.rate_bps))
                was = applied.get(fid, _NONE)
                if was == inp:
                    continue
                entry = rules = None
                if inp is not None:
                    entry = self._limit_entry(f, inp[1])
                    if (was is _NONE or was is None or was[0] != inp[0]) \
                            and self._valid_path(f, inp[0]):
                        rules = self._path_rules(f, inp[0])  # a new path: its rules
                if mine is None:
                    mine = out[c.coflow_id] = []
                mine.append((f, inp, entry, rules))
        return out

    def _apply(self, sched: Schedule, active: Sequence[CoflowState], keep=(),
               hold=(), partial: bool = False,
               changed: Optional[Dict[str, List[PlanEntry]]] = None) -> Actions:
        """Turn ``sched`` into rule changes and agent pushes for the flows of
        ``active``, changing :attr:`desired` in place: only the flows that moved,
        arrived or left give rule changes (adds and modifies first, in flow order,
        then deletes: the new path is ready before the old one goes), as
        :func:`~.rules.diff_rules` of the old and new tables.  Rules of flows neither
        in ``active`` nor in ``keep`` (flow ids) are deleted; the flows of the
        coflows in ``hold`` (ids) keep their path and rate.  ``partial`` (a slice of
        a cut Algorithm 1 pass, :mod:`.decisions`): the rate limits of flows not in
        ``active`` are kept as they are, not dropped (in the incremental step they
        always are; only a full pass rebuilds them).

        Args:
            changed: :meth:`plan_apply`'s answer for ``sched`` (the flows whose
                allocation changed); None: found here.  Either way only those
                flows, the flows of coflows whose mode (fallback, held, new) changed
                and the flows that left are handled, unless a full pass is due
                (module docstring).
        """
        ctx = (self.topology, self._defaults)
        if self._applied_ctx is None and not self._desired and not self._applied_in:
            self._applied_ctx, self._apply_full = ctx, False  # nothing applied yet
        full = (not self.apply_incremental or self._apply_full
                or self._applied_ctx is None or self._applied_ctx[0] is not ctx[0]
                or self._applied_ctx[1] is not ctx[1])
        if not full and changed is None:
            changed = self.plan_apply(sched, active)
        acts = Actions()
        desired = self._desired
        pushes = self._pushes
        changes: List[FlowRule] = []
        deletes: List[FlowRule] = []
        counts = self.apply_counts
        if full:
            counts["full"] += 1
            applied: Dict[str, Any] = {}
            modes: Dict[str, Tuple[bool, bool]] = {}
            if not partial:
                pushes.limits = {}
        else:
            applied, modes = self._applied_in, self._applied_mode
        alloc = sched.allocations
        # a full pass rebuilds the limits from nothing: it never pauses half way
        pause, done = (None if full else self.apply_pause), 0
        ids = set()
        for c in active:
            cid = c.coflow_id
            ids.add(cid)
            fb = cid in sched.fallback or self.decision.get(cid) == BACKGROUND
            held = cid in hold
            mode = (fb, held)
            if full or modes.get(cid) != mode:
                modes[cid] = mode
                todo = [(f, _input(alloc.get(f.flow_id)), None, None)
                        for f in c.active_flows()]
            else:
                todo = changed.get(cid, ())
            for f, inp, entry, built in todo:
                done += 1
                if pause is not None and done % self.PAUSE_EVERY == 0:
                    pause()
                fid = f.flow_id
                was = applied.get(fid, _NONE)
                applied[fid] = inp
                if entry is not None and was is not _NONE and was is not None \
                        and was[0] == inp[0]:  # same path, new rate: no rule changes
                    counts["rates"] += 1
                    if not fb and not (held and f.path):
                        f.rate_bps = inp[1]
                        pushes.want(f.src, entry)
                    continue
                counts["flows"] += 1
                a = Allocation(f.path, f.rate_bps) if held and f.path else \
                    None if inp is None else Allocation(inp[0], inp[1])
                path = tuple(a.path) if a is not None else None
                if built is not None and not fb and a.path is inp[0]:
                    self.tracks[fid].first_dpid = self._dpid[path[1]]
                    key, rules = self._flow_rules(f, path, built)  # built off the loop
                    f.path = path
                    f.rate_bps = float(a.rate_bps)
                elif fb or path is None or not self._valid_path(f, path):
                    if path is not None and not fb and not self._valid_path(f, path):
                        self._log("error", "flow %s: scheduler gave unusable path %s; "
                                  "default forwarding", fid, "-".join(path))
                    key, rules = self._flow_rules(f, None)
                    f.path = None
                    f.rate_bps = float(a.rate_bps) if (a is not None and not fb) else 0.0
                else:
                    self.tracks[fid].first_dpid = self._dpid[path[1]]
                    key, rules = self._flow_rules(f, path)
                    f.path = path
                    f.rate_bps = float(a.rate_bps)
                mine = desired._by_flow.get(fid)
                if mine is None or len(mine) != len(rules) or \
                        any(mine.get((r.dpid, fid)) is not r for r in rules):
                    old = dict(mine or {})
                    for k in old:
                        del desired[k]
                    for r in rules:
                        k = (r.dpid, fid)
                        o = old.pop(k, None)
                        if o is None:
                            changes.append(r)
                        elif o.actions != r.actions:
                            changes.append(r.with_command("modify"))
                        desired[k] = r
                    deletes.extend(o.with_command("delete") for o in old.values())
                if fb:
                    pushes.unwant(fid)
                elif entry is not None and f.rate_bps == inp[1]:
                    pushes.want(f.src, entry)
                else:
                    pushes.want(f.src, self._limit_entry(f, f.rate_bps))
        keep = set(keep)
        notes, self._left_notes = self._left_notes, {}
        if full:  # every flow with rules that is neither live nor kept
            left = [x for x in desired._by_flow if x not in applied and x not in keep]
        else:  # the flows noted (finished, cancelled) and those of coflows that ended
            gone = [cid for cid in modes if cid not in ids and self.state.get(cid) != "active"]
            left = dict(notes)
            for cid in gone:
                del modes[cid]
                c = self.coflows.get(cid)
                if c is not None:
                    left.update(dict.fromkeys(f.flow_id for f in c.flows))
            left = [fid for fid in left if fid not in keep and not self._live(fid, ids)]
        # a kept flow noted (a held coflow's finished flow) waits for the next apply
        self._left_notes = {fid: None for fid in notes if fid in keep}
        for fid in left:  # flows that left
            deletes.extend(o.with_command("delete") for o in desired.of_flow(fid))
            for k in list(desired._by_flow.get(fid, ())):
                del desired[k]
            self._rule_cache.pop(fid, None)
            applied.pop(fid, None)
            pushes.unwant(fid)
        if full:
            self._applied_in, self._applied_mode = applied, modes
            self._apply_full = False
            self._applied_ctx = ctx
        acts.rules.extend(changes)
        acts.rules.extend(deletes)
        # Agent pushes: every host whose set changed (hosts that lost all flows get []).
        acts.pushes.extend(pushes.update_changed(push=bool(self.settings.agent_url)))
        return acts

    def _live(self, fid: str, ids) -> bool:
        """True when flow ``fid`` is unfinished and its coflow is among ``ids`` and
        still active (a cancel during a pause of the apply makes it leave)."""
        tr = self.tracks.get(fid)
        f = None if tr is None else self.flow_by_cookie.get(tr.cookie)
        return f is not None and not f.done and f.coflow_id in ids \
            and self.state.get(f.coflow_id) == "active"


__all__ = ["ApplyMixin", "PlanEntry"]
