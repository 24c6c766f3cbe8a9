"""Philae: pilot-flow sampling (Jajoo, Hu, Lin; seed 001), Sections 2-3: registered
as ``philae``.  Non-clairvoyant.

Units: bytes for sizes, bit/s for rates, seconds for times.  Built on
:class:`.aalo.Aalo`'s queues and weighted passes (:mod:`.base`); readings where
the paper is silent: the class docstring and ``docs/seed-schedulers.md``.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ...core.model import CoflowState
from .aalo import Aalo
from ..base import SchedulerError
from ..registry import register
from .group import _Group
from .passes import MIB

@register("philae")
class Philae(Aalo):
    """Philae: sampling-based non-clairvoyant coflow scheduling (seed 001).

    Source: Philae (Jajoo, Hu, Lin), Section 2 ("pre-schedules sampled flows, called
    pilot flows, of each coflow and uses their measured sizes to estimate the coflow
    size.  It then resorts to SJF"), Section 2.1 (pilot flows on the least-busy
    ports; one out of the flows of each sender; fewer than 1% of the flows of wide
    coflows), Section 2.3 / Table 1 (size estimated once, on the completion of all
    pilot flows; reordering on coflow arrival/completion and, for the contention
    policy, on contention changes), abstract ("shortest is determined using the
    learned coflow sizes and coflow contention").

    Algorithm as implemented:

    1. Pilots.  When a coflow of n flows first appears,
       p = min(#distinct senders, max(1, floor(pilot_fraction * n))) pilot flows are
       chosen (``pilot_fraction`` = 0.01: "the number of pilot flows is never larger
       than 1% of the total number of flows", Section 2.2; "fewer than 1% for
       coflows with many flows", Section 2.1), at most one per sender ("one out of
       multiple flows from each sender", Section 2.1).  A coflow of fewer than 100
       flows gets one pilot: sampling needs at least one, and the paper's 1 % is
       stated for coflows with many flows.  Senders are taken in increasing
       contention of their uplink (number of other live coflows with an active flow
       on it), and each takes its flow whose receiver downlink has the least
       contention, preferring receivers no other pilot uses; ties by flow order.
    2. Piloting coflows' pilot flows are served first, strict priority, FIFO among
       piloting coflows, max-min among a coflow's pilots; their other flows wait.
    3. When all pilots have finished, the mean pilot size s (bytes, now known) is the
       estimate of the coflow's flow size; the coflow's estimated remaining size is
       s * (number of unfinished flows).
    4. Estimated coflows are ordered shortest-first by ``metric``: ``"size"`` (the
       estimated remaining bytes) or ``"contention"`` (estimated remaining bytes
       times the number of live coflows, itself included, that share an access
       link with it).  Default: ``"contention"``, the abstract's policy.
    5. Starvation freedom (the mechanism's text is lost in the seed): the estimated
       coflows are grouped in K exponentially spaced classes of the metric (Q1hi, E as
       Aalo's) served with weighted sharing (class weight ``weight_base ** (K-i)``,
       i.e. the public simulator's time-split factor 10), shortest-first within a
       class; every class gets a non-zero share, so no coflow starves.

    Args:
        metric: ``"contention"`` or ``"size"``.
        pilot_fraction: the largest share of a coflow's flows sampled as pilots
            (0 < pilot_fraction <= 1; default 0.01, Section 2.2).
        pilot_rule: ``"fraction"`` (default, the rule above) or ``"min-ports"``:
            min(#senders, #receivers) pilots, the public simulator's
            ``minMapRedPilotFlows`` and this module's earlier reading (more
            than 1 % of the flows whenever a side has fewer than 100 ports).
        K, E, q1_hi: classes of the metric as in :class:`Aalo` (bytes).
        weight_base: ratio of consecutive class weights (> 1).
        rounds: weighted rounds (``None``: until saturated, as :class:`Aalo`).
        decision_interval: seconds (default 0.010, Aalo's Delta: Philae runs in the
            same coordinator framework, Section 3, with scheduling intervals delta,
            Section 4.3 and Table 4); rate calculation is "event triggered" (Table 1):
            an interval in which a flow completed recalculates the rates at its end
            (the first multiple of the interval at or after the completion), and
            one without events keeps the rates ("did not have to flush rates in 66%
            of the intervals", Section 4.3).  Arrivals and class changes are acted
            on at once.  ``0``: at every flow completion (see :class:`Aalo`).

    Raises:
        SchedulerError: unknown metric or pilot_rule, or bad numbers.
    """

    clairvoyant = False
    #: pilots, estimates and contention need completions and endpoints only: no
    #: byte counters of unfinished flows
    reads_progress = False
    #: not work conserving: a piloting coflow's other flows wait for its pilots
    #: even on idle links (Section 2, step 2 of the class docstring)
    work_conserving = None

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None,
                 metric: str = "contention", K: int = 10, E: float = 10.0,
                 q1_hi: float = 10 * MIB, weight_base: float = 10.0,
                 rounds: Optional[int] = None, pilot_fraction: float = 0.01,
                 pilot_rule: str = "fraction", decision_interval: float = 0.010):
        super().__init__(topology, seed, max_paths, K=K, E=E, q1_hi=q1_hi, delta=0.0,
                         rounds=rounds, decision_interval=decision_interval)
        if metric not in ("contention", "size"):
            raise SchedulerError(f"metric: must be 'contention' or 'size', got {metric!r}")
        if not weight_base > 1:
            raise SchedulerError(f"weight_base: must be > 1, got {weight_base!r}")
        if not 0 < pilot_fraction <= 1:
            raise SchedulerError(f"pilot_fraction: must be in (0, 1], got {pilot_fraction!r}")
        if pilot_rule not in ("fraction", "min-ports"):
            raise SchedulerError(f"pilot_rule: must be 'fraction' or 'min-ports', got "
                                 f"{pilot_rule!r}")
        self.pilot_rule = pilot_rule
        self.metric = metric
        self.pilot_fraction = float(pilot_fraction)
        self.weight_base = float(weight_base)
        self._pilots: Dict[str, set] = {}       # coflow_id -> pilot flow ids
        #: coflow_id -> its pilots' FlowStates in flow order (from ``_pilots``)
        self._pilot_flows: Dict[str, list] = {}
        #: _contention's last (coflow ids, per coflow (group, ports row), result)
        self._cont: Optional[tuple] = None
        self._estimate: Dict[str, float] = {}   # coflow_id -> mean flow size (bytes)

    def weight(self, q: int) -> float:
        """Weight of 0-based class q: ``weight_base ** (K - 1 - q)``."""
        return float(self.weight_base ** (self.K - 1 - q))

    def next_wakeup(self, now: float) -> Optional[float]:
        """None: Philae is event triggered (Table 1), it needs no periodic call."""
        return None  # Philae is event triggered (Table 1): no periodic work

    @staticmethod
    def _ports(g: _Group, i: int) -> Tuple[int, int]:
        return int(g.ports[0][i]), int(g.ports[1][i])

    def pilot_count(self, n_flows: int, n_senders: int) -> int:
        """Number of pilots for a coflow of ``n_flows`` flows from ``n_senders``
        distinct senders: min(n_senders, max(1, floor(pilot_fraction * n_flows)))
        (step 1 of the class docstring; Philae Sections 2.1-2.2)."""
        return min(n_senders, max(1, math.floor(self.pilot_fraction * n_flows + 1e-9)))

    def choose_pilots(self, c: CoflowState, live: Sequence[CoflowState]) -> set:
        """Pick ``c``'s pilot flow ids (step 1 of the class docstring)."""
        g = self.group(c)
        busy: Dict[int, int] = {}
        for o in live:
            if o.coflow_id == c.coflow_id:
                continue
            og = self.group(o)
            for l in np.unique(og.P[og.P < self._L]):
                busy[int(l)] = busy.get(int(l), 0) + 1
        by_sender: Dict[str, List[int]] = {}
        for i, f in enumerate(g.flows):
            by_sender.setdefault(f.src, []).append(i)
        if self.pilot_rule == "fraction":
            p = self.pilot_count(len(c.flows), len(by_sender))
        else:
            p = max(1, min(len(by_sender), len({f.dst for f in g.flows})))
        senders = sorted(by_sender, key=lambda s: (busy.get(self._ports(g, by_sender[s][0])[0], 0),
                                                   by_sender[s][0]))
        chosen, used_rx = set(), set()
        for s in senders[:p]:
            cand = sorted(by_sender[s], key=lambda i: (g.flows[i].dst in used_rx,
                                                       busy.get(self._ports(g, i)[1], 0), i))
            i = cand[0]
            chosen.add(g.flows[i].flow_id)
            used_rx.add(g.flows[i].dst)
        return chosen

    def _contention(self, coflows: Sequence[CoflowState]) -> Dict[str, int]:
        """Per coflow, the number of live coflows (itself included) sharing an
        access link (first or last link of a path) with one of its active flows.

        The access-link row of a coflow is rebuilt only when its group changed,
        and the counts are reused when the coflows and every row are those of the
        last call: the same 0/1 matrix, so the same counts."""
        if not coflows:
            return {}
        ids = [c.coflow_id for c in coflows]
        last = self._cont
        prev = last[1] if last is not None else {}
        rows = {}
        same = last is not None and last[0] == ids
        for c in coflows:
            g = self.group(c)
            e = prev.get(c.coflow_id)
            if e is not None and e[0] is g:
                rows[c.coflow_id] = e
                continue
            r = np.zeros(self._L + 1, dtype=np.float32)
            r[g.ports[0]] = 1.0
            r[g.ports[1]] = 1.0
            if same and e is not None and not np.array_equal(r, e[1]):
                same = False
            rows[c.coflow_id] = (g, r)
        if same:
            self._cont = (ids, rows, last[2])
            return dict(last[2])
        M = np.stack([rows[cid][1] for cid in ids])
        share = (M @ M.T) > 0
        out = {cid: int(n) for cid, n in zip(ids, share.sum(axis=1))}
        self._cont = (ids, rows, out)
        return dict(out)

    def _pilots_of(self, c: CoflowState) -> list:
        """``c``'s pilot FlowStates in flow order (kept per coflow: the piloting
        checks then cost O(pilots), not O(flows), per decision point)."""
        pil = self._pilots[c.coflow_id]
        pf = self._pilot_flows.get(c.coflow_id)
        if pf is None or len(pf) != len(pil):
            pf = self._pilot_flows[c.coflow_id] = [f for f in c.flows if f.flow_id in pil]
        return pf

    def plan(self, now, coflows, rates):
        live_ids = {c.coflow_id for c in coflows}
        for d in (self._pilots, self._estimate, self._pilot_flows):
            for cid in [k for k in d if k not in live_ids]:
                del d[cid]
        arrival = sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id))
        for c in arrival:
            if c.coflow_id not in self._pilots and c.coflow_id not in self._estimate:
                self._pilots[c.coflow_id] = self.choose_pilots(c, coflows)
        piloting, estimated = [], []
        for c in arrival:
            pil = self._pilots.get(c.coflow_id)
            if pil is not None:
                done = [f for f in self._pilots_of(c) if f.done]
                if len(done) == len(pil):
                    self._estimate[c.coflow_id] = float(np.mean([f.size_bytes for f in done]))
                    del self._pilots[c.coflow_id]
                    self._pilot_flows.pop(c.coflow_id, None)
                else:
                    piloting.append(c)
                    continue
            estimated.append(c)
        res = self.fresh_residual()
        pilot_groups = []
        for c in piloting:
            g = self.group(c)
            # the unfinished pilots, found in the group by their order (bisection)
            live_pil = [f for f in self._pilots_of(c) if not f.done]
            pos = self._positions(g, live_pil) if live_pil else np.zeros(0, np.int64)
            if pos is None:  # not all in the group: look at every flow
                pil = self._pilots[c.coflow_id]
                mask = np.array([f.flow_id in pil for f in g.flows], dtype=bool)
            else:
                mask = np.zeros(g.n, dtype=bool)
                mask[pos] = True
            pilot_groups.append((g, mask))
        self.strict_pass(pilot_groups, res, rates)
        cont = self._contention(coflows) if self.metric == "contention" else {}
        key = {}
        for c in estimated:
            v = self._estimate[c.coflow_id] * len(c.active_flows())
            key[c.coflow_id] = v * cont.get(c.coflow_id, 1)
        estimated.sort(key=lambda c: (key[c.coflow_id], c.arrival_s, c.coflow_id))
        byq: List[List[CoflowState]] = [[] for _ in range(self.K)]
        for c in estimated:
            byq[self.queue_of(key[c.coflow_id])].append(c)
        queues = [(self.weight(q), [(self.group(c), None)
                                    for c in byq[q]]) for q in range(self.K) if byq[q]]
        self.weighted_pass(queues, res, rates, self.rounds)
        order = [c.coflow_id for c in piloting] + [c.coflow_id for q in byq for c in q]
        return order, {"piloting": [c.coflow_id for c in piloting]}
