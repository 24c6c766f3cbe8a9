"""Shared machinery of the seed papers' schedulers (Aalo, Philae, Sincronia, OPTAS, FIFO).

:class:`_SeedScheduler` routes every flow by sticky ECMP (a flow keeps the path
:meth:`Scheduler.ecmp_path` hashes it to), as the seed papers assume a big switch or
ECMP fabric, caches each coflow's padded link matrix (:class:`_Group`), and offers
the allocation passes the families build on: :meth:`_SeedScheduler.strict_pass`
(strict priority, max-min fair inside a coflow) and
:meth:`_SeedScheduler.weighted_pass` (Aalo Pseudocode 1's weighted sharing across
queues), from the vectorised primitives :func:`waterfill` (progressive filling,
Bertsekas and Gallager, Data Networks, Section 6.5.2) and :func:`greedy_rates`
(Sincronia Algorithm 2).  The controller enforces rates, not priorities, so priority
disciplines are turned into rates by these passes.

One module per family: :mod:`.fifo`, :mod:`.aalo`, :mod:`.philae`,
:mod:`.sincronia`, :mod:`.optas`.

Units: bytes for sizes and counters, bit/s for rates and capacities, seconds for
times.

Information model: the non-clairvoyant classes set ``clairvoyant = False``; they read
only endpoints, ``bytes_sent``, completions and (after completion) sizes.  The
:class:`~rapier_app.core.model.FlowState` guard raises ``InformationError`` if they
ask for anything else.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, is_
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ... import kernels
from ...core.model import CoflowState, FlowState, Schedule
from ...kernels import alloc as kalloc
from ...kernels import weighted as kweighted
from ..base import ECMP_MEMO_MAX, Scheduler, SchedulerError
from ..pathcache import pad_rows
from .group import _aligned, _ConcatPaths, _Group
from .passes import (_IN_PLACE_MAX, MAX_WEIGHTED_ROUNDS, REL_TOL, _compact, _distinct,
                     _row_all, greedy_groups, greedy_rates, nonzero_positions, waterfill)
from .stack import keep_memo, restack, stack_csr, stack_memo, stack_rows, unstack


_FINISH = attrgetter("finish_s")


_SENT = attrgetter("bytes_sent")


_IDX = attrgetter("_sim_idx")


_ORD = attrgetter("_ord")


class _SeedScheduler(Scheduler):
    """Shared machinery: sticky ECMP routes, cached per-coflow link matrices, the
    allocation passes (strict, weighted multi-queue) and the Schedule output.

    Subclasses implement :meth:`plan`, which returns per-coflow flow rates.
    """

    #: the schemes read bytes sent (queue demotion, size estimates, remaining
    #: bytes), never a flow's current rate or path: they keep their own routes
    reads_progress = "bytes"
    #: a flow's path is chosen once (sticky ECMP) and emitted as the same object
    sticky_paths = True

    def __init__(self, topology: Topology, seed: int = 0, max_paths: Optional[int] = None):
        super().__init__(topology, seed, max_paths)
        cap = np.asarray(topology.capacity, dtype=float)
        self._L = cap.shape[0]
        self._cap = np.concatenate([cap, [np.inf]])
        self._tol = np.concatenate([REL_TOL * np.maximum(cap, 1.0), [0.0]])
        self._width = self._path_width(topology)
        self._routes: Dict[str, tuple] = {}
        self._rows: Dict[str, np.ndarray] = {}
        #: path tuple -> its padded row (flows on one path share it: rows are only
        #: read, stacked into copies)
        self._path_rows: Dict[tuple, np.ndarray] = {}
        self._routed: Dict[str, List[str]] = {}  # coflow_id -> flow ids routed
        self._groups: Dict[str, _Group] = {}
        self._last_rates: Dict[str, float] = {}  # coflow_id -> total bit/s last given
        #: coflow_id -> flows reported finished (:meth:`flows_finished`) since the
        #: coflow's group was last filtered
        self._finished: Dict[str, List[FlowState]] = {}
        #: id(group) -> (the group it was filtered from, positions dropped), since the
        #: last emit(); and that emit's (groups, flows list, paths list)
        self._drops: Dict[int, Tuple[_Group, np.ndarray]] = {}
        #: during :meth:`schedule`: (its groups, the vector their rates are slices of,
        #: the slices, the array the vector is the head of)
        self._rbuf: Optional[tuple] = None
        #: between calls of a volatile caller: (the last rate vector's array, the
        #: positions it holds a nonzero bit pattern at): zeroing those makes it all
        #: zeros again, reused instead of a fresh O(flows) np.zeros
        self._zb: Optional[tuple] = None
        #: per compiled pass ("weighted", "strict", "joint"), the stacked inputs of
        #: its last call (:meth:`_stacked`): [groups, P, gptr, lptrs, rows_all, memo
        #: arrays or None, links]
        self._stacks: Dict[str, list] = {}
        #: weighted passes that hit MAX_WEIGHTED_ROUNDS (expected 0) and the most
        #: rounds one pass needed (diagnostics of :meth:`weighted_pass`)
        self.rounds_capped = 0
        self.rounds_max = 0
        #: weighted passes whose rounds reached a fixed point before the cap (a round
        #: in which no flow could grow: every queue's share on some link of each of
        #: its growable flows is within tolerance of 0); they end with the strict pass
        #: at once, with the rates the cap would give
        self.rounds_stalled = 0
        #: rows whose round-1 filling the compiled weighted pass reused from its memo,
        #: and rows it filled afresh (diagnostics of
        #: :func:`~rapier_app.kernels.weighted.weighted_kernel`)
        self.memo_rows = [0, 0]

    def capacity_changed(self) -> None:
        """New link capacities (:meth:`Scheduler.set_capacity`): the capacity and
        tolerance vectors are recomputed and Sincronia's cached demand rows (bits /
        capacity) dropped."""
        super().capacity_changed()
        cap = np.asarray(self.topology.capacity, dtype=float)
        self._cap = np.concatenate([cap, [np.inf]])
        self._tol = np.concatenate([REL_TOL * np.maximum(cap, 1.0), [0.0]])
        if isinstance(self.__dict__.get("_dcache"), dict):
            self._dcache = {}

    @staticmethod
    def _path_width(topology: Topology) -> int:
        import networkx as nx

        g = topology.graph.to_undirected()
        if len(g) == 0:  # an empty fabric (a controller discovering it): no path yet
            return 2
        try:
            d = nx.diameter(g) if nx.is_connected(g) else len(g)
        except nx.NetworkXError:
            d = len(g)
        return max(2, int(d))

    # -- routes and rows --------------------------------------------------------
    def route(self, flow: FlowState) -> tuple:
        """The flow's sticky ECMP path (chosen once, kept for the flow's life)."""
        p = self._routes.get(flow.flow_id)
        if p is None:
            p = self.ecmp_path(flow)
            self._routes[flow.flow_id] = p
            self._routed.setdefault(flow.coflow_id, []).append(flow.flow_id)
            row = self._path_rows.get(p)
            if row is None:
                links = self.topology.path_links(p)
                if len(links) > self._width:
                    raise SchedulerError(f"path: flow {flow.flow_id} path longer than "
                                         f"the topology diameter {self._width}")
                # one row of the padded contract of pathcache, at the fixed width
                row = pad_rows([links], self._L, self._width)[0]
                if len(self._path_rows) >= ECMP_MEMO_MAX:
                    self._path_rows.clear()  # a pure function of the path
                self._path_rows[p] = row
            self._rows[flow.flow_id] = row
        return p

    def group(self, c: CoflowState) -> _Group:
        """Cached :class:`_Group` of ``c``'s active flows.  A coflow's flow set never
        grows, so when flows finish the cached group is filtered, not rebuilt."""
        g = self._groups.get(c.coflow_id)
        act = c.active_flows()
        if g is None:
            self._finished.pop(c.coflow_id, None)
            paths = [self.route(f) for f in act]
            P = (np.stack([self._rows[f.flow_id] for f in act]) if act
                 else np.zeros((0, self._width), dtype=np.int64))
            done_max = max((f.bytes_sent for f in c.flows if f.finish_s is not None),
                           default=0.0)
            g = _Group(act, paths, P, self._L,
                       np.fromiter(map(_IDX, act), np.int64, len(act)), done_max)
            self._groups[c.coflow_id] = g
        elif g.n != len(act):
            # the active list is the cached flows without the finished ones, in order
            fin = self._finished.pop(c.coflow_id, None)
            pos = self._positions(g, fin) if fin and len(fin) == g.n - len(act) else None
            if pos is None:  # finished flows not reported by the hook: scan them all
                m = np.fromiter(map(is_, map(_FINISH, g.flows), repeat(None)), bool, g.n)
                done_max = max(g.done_max, max(map(_SENT, compress(g.flows, (~m).tolist())),
                                               default=0.0))
                paths = list(compress(g.paths, m.tolist()))
            else:
                pos = np.sort(pos)
                if len(pos) > 1 and not (pos[1:] > pos[:-1]).all():
                    pos = None  # a flow reported twice: scan (never seen)
                if pos is None:
                    m = np.fromiter(map(is_, map(_FINISH, g.flows), repeat(None)), bool,
                                    g.n)
                    done_max = max(g.done_max, max(map(_SENT, compress(
                        g.flows, (~m).tolist())), default=0.0))
                    paths = list(compress(g.paths, m.tolist()))
                else:
                    done_max = max(g.done_max, max(map(_SENT, fin)))
            old = g
            if pos is None:
                g = _Group(act, paths, old.P[m], self._L, old.idx[m], done_max)
                g.sizes = None if old.sizes is None else old.sizes[m]
                g.ords = None if old.ords is None else old.ords[m]
                pos = np.flatnonzero(~m)
                g._first = old._first  # a superset of the survivors' first links
                if old._ports is not None:
                    g._ports = (old._ports[0][m], old._ports[1][m])
                if old._csr is not None:
                    g._csr = kalloc.csr_drop(old._csr[0], old._csr[1],
                                             pos.astype(np.int64), old.n)
            else:
                # the old group is dropped: its arrays and path list are compacted in
                # place (a memmove of each tail) instead of copied through a mask
                paths = old.paths
                if len(pos) <= _IN_PLACE_MAX:
                    for p in pos[::-1].tolist():
                        del paths[p]
                else:
                    keep = np.ones(old.n, dtype=bool)
                    keep[pos] = False
                    paths = list(compress(paths, keep.tolist()))
                g = _Group(act, paths, _compact(old.P, pos), self._L,
                           _compact(old.idx, pos), done_max)
                if old._csr is not None:  # carried over: one pass, no counting sort
                    g._csr = kalloc.csr_drop(old._csr[0], old._csr[1],
                                             pos.astype(np.int64), old.n)
                g.sizes = None if old.sizes is None else _compact(old.sizes, pos)
                g.ords = None if old.ords is None else _compact(old.ords, pos)
                if old._ports is not None:
                    g._ports = (_compact(old._ports[0], pos), _compact(old._ports[1], pos))
                g._first = old._first  # a superset of the survivors' first links
                # what is left of old must not be read: only its size (emit) is
                old.P = old.idx = old.sizes = old.ords = old.paths = None
                old._index = old._ports = old._csr = old._memo = old._first = None
            # for emit(): g is old without these positions
            self._drops[id(g)] = (old, pos)
            self._groups[c.coflow_id] = g
        return g

    def coflows_changed(self, coflow_ids: Sequence[str]) -> None:
        """Hook (:meth:`Scheduler.coflows_changed`): flows were added to these
        coflows or their sizes changed; :meth:`group` assumes a coflow's flow set
        never grows, so their cached groups (and Sincronia's demand rows) are
        dropped and rebuilt at the next decision (sticky routes stay)."""
        super().coflows_changed(coflow_ids)
        cache = self.__dict__.get("_dcache")
        for cid in coflow_ids:
            self._groups.pop(cid, None)
            self._finished.pop(cid, None)
            if isinstance(cache, dict):
                cache.pop(cid, None)

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Hook (:meth:`Scheduler.flows_finished`): remember which flows finished,
        per coflow, so :meth:`group` drops them from the cached group without
        reading every flow's ``finish_s`` (O(finished) instead of O(active) Python
        work per decision)."""
        self.group_finished(self._finished, flows)

    @staticmethod
    def _positions(g: _Group, fin: List[FlowState]) -> Optional[np.ndarray]:
        """Positions in ``g.flows`` of the flows ``fin`` (found by bisection on the
        flows' order in their coflow, ``FlowState._ord``), or None when one of them
        is not there (then the caller scans)."""
        ords = g.ords
        if ords is None:
            ords = g.ords = np.fromiter(map(_ORD, g.flows), np.int64, g.n)
        return _SeedScheduler.finished_positions(ords, g.flows, fin)

    def flow_sent(self, g: _Group) -> np.ndarray:
        """Bytes sent by each of ``g``'s active flows (float array): read from the
        simulator's array when one is bound (``reads_progress = "vector"``), else
        from the flows' own counters."""
        arr = self._sent_arr
        if arr is not None:
            return arr[g.idx]
        return np.fromiter(map(_SENT, g.flows), float, g.n)

    def _forget(self, live: Sequence[CoflowState]) -> None:
        ids = {c.coflow_id for c in live}
        for cid in [k for k in self._groups if k not in ids]:
            self._groups.pop(cid)
            for fid in self._routed.pop(cid, []):
                self._routes.pop(fid, None)
                self._rows.pop(fid, None)
            self._last_rates.pop(cid, None)
        for cid in [k for k in self._finished if k not in ids]:
            del self._finished[cid]

    def fresh_residual(self) -> np.ndarray:  # noqa: D401
        """Full capacities (bit/s) plus the dummy ``inf`` entry."""
        return self._cap.copy()

    # -- allocation passes ------------------------------------------------------
    def strict_pass(self, groups: Sequence[Tuple[_Group, np.ndarray]], residual: np.ndarray,
                    rates: Dict[str, np.ndarray]) -> None:
        """Strict priority in the given order: each coflow's eligible flows get max-min
        fair rates on what earlier coflows left (``mask`` selects eligible flows; ``None``
        selects all of them).  The engine: compiled (:meth:`_strict_compiled`) when
        the kernels are on and every flow is eligible, else numpy
        (:meth:`_strict_numpy`); the same rates bit for bit."""
        if kernels.ENABLED and all(m is None for _, m in groups) and _distinct(groups):
            self._strict_compiled([g for g, _ in groups], residual, rates)
        else:
            self._strict_numpy(groups, residual, rates)

    def _strict_compiled(self, gs: List[_Group], residual: np.ndarray,
                         rates: Dict[int, np.ndarray]) -> None:
        """:meth:`strict_pass` with every flow of ``gs`` eligible, in one compiled call
        (:func:`~rapier_app.kernels.alloc.strict_kernel`) on the stacked groups."""
        P, gptr, lptrs, rows_all, _ = self._stacked("strict", gs, residual.shape[0])
        acc = np.concatenate([rates[id(g)] for g in gs]) if gs else np.zeros(0)
        if kalloc.strict_kernel(P, gptr, residual, self._tol, acc, lptrs, rows_all) < 0:
            self._stacks.pop("strict", None)
            raise SchedulerError("waterfill: a flow crosses no link")
        unstack(gs, acc, rates)

    def _strict_numpy(self, groups: Sequence[Tuple[_Group, Optional[np.ndarray]]],
                      residual: np.ndarray, rates: Dict[int, np.ndarray]) -> None:
        """:meth:`strict_pass` coflow by coflow (:func:`waterfill` per group)."""
        for g, mask in groups:
            if g.n == 0:
                continue
            if mask is not None:  # None selects every flow (no per-call mask checks)
                if not mask.any():
                    continue
                if mask.all():
                    mask = None
            if mask is None:
                r = waterfill(g.P, residual, self._tol, g.link_index(residual.shape[0]))
            else:
                r = waterfill(g.P[mask], residual, self._tol)
            acc = rates[id(g)]
            if mask is None:
                acc += r
            else:
                acc[mask] += r

    def joint_pass(self, groups: Sequence[_Group], residual: np.ndarray,
                   rates: Dict[int, np.ndarray], alloc) -> None:
        """All active flows of ``groups`` in one allocation: ``alloc(P, residual,
        tol)`` (:func:`waterfill` or :func:`greedy_rates`) over their stacked link rows,
        flows in group order then flow order; each group's share (bit/s) is added to
        ``rates[id(group)]`` and ``residual`` is reduced in place.  The engine:
        compiled (:func:`~.passes.greedy_groups`, :meth:`_joint_waterfill_compiled`) when the
        kernels are on, else ``alloc`` on the stacked rows; the same rates bit for
        bit."""
        if kernels.ENABLED and alloc is greedy_rates and groups:
            greedy_groups(groups, residual, rates, self._tol)
            return
        if kernels.ENABLED and alloc is waterfill and groups:
            r = self._joint_waterfill_compiled(groups, residual)
        else:
            r = alloc(np.concatenate([g.P for g in groups]), residual, self._tol)
        o = 0
        for g in groups:
            rates[id(g)] += r[o:o + g.n]
            o += g.n

    def _joint_waterfill_compiled(self, groups: Sequence[_Group],
                                  residual: np.ndarray) -> np.ndarray:
        """:func:`waterfill` over the groups' stacked rows, compiled
        (:func:`~rapier_app.kernels.alloc.joint_kernel`) on the groups' kept link
        indexes instead of one counting sort over every live flow: the rates (bit/s)
        in group then flow order."""
        P, gptr, lptrs, rows_all, _ = self._stacked("joint", list(groups), residual.shape[0])
        r = np.zeros(P.shape[0])
        if kalloc.joint_kernel(P, gptr, residual, self._tol, r, lptrs, rows_all) < 0:
            self._stacks.pop("joint", None)
            raise SchedulerError("waterfill: a flow crosses no link")
        return r

    def weighted_pass(self, queues: Sequence[Tuple[float, Sequence[Tuple[_Group, np.ndarray]]]],
                      residual: np.ndarray, rates: Dict[str, np.ndarray],
                      rounds: Optional[int] = None) -> int:
        """Weighted max-min sharing across queues, strict order inside each queue
        (Aalo Pseudocode 1, lines 2-14, on a network of links).

        One round: on every link the capacity still free is split among the queues
        that have a flow able to grow across it (every link of the flow's path still
        free), in proportion to the queue weights ("Q_i.share = Q_i.weight / W",
        line 13); inside its share a queue serves its coflows in the given order
        (FIFO for Aalo, lines 3-4), each coflow's flows max-min fair (line 6).  The
        share a queue could not use is offered in the next round to the queues that
        can still grow, again in proportion to their weights ("Distribute unused
        Q_i.share using E(.)", line 8, with E = "Max-Min among Q_{j != i}", line 14;
        Section 4.4: "Excess share of any queue is divided among unsaturated queues in
        proportion to their weights using max-min fairness").  Rounds repeat "while
        Fabric is not saturated" (line 2): until no queue has a flow whose links all
        have free capacity, so the result is work conserving.

        Args:
            queues: (weight > 0, [(group, mask or None), ...]) per non-empty queue,
                coflows in service order.
            residual: free capacity per link plus the dummy entry (bit/s), reduced in
                place.
            rates: ``rates[id(group)]`` (bit/s per active flow), increased in place.
            rounds: ``None`` (default) runs rounds until the fabric is saturated, at
                most :data:`MAX_WEIGHTED_ROUNDS`; an int runs at most that many.  In
                both cases capacity still usable after the last round is handed out
                by a :meth:`strict_pass` in queue order (with ``None`` reached only
                when the safety cap is hit, counted in ``self.rounds_capped``, or
                when a round leaves every rate and residual as it was, counted in
                ``self.rounds_stalled``).

        A round in which no flow can grow is a fixed point: the next scan sees the
        same free links and the same queues, so every later round repeats it until
        the cap.  Such a pass goes to the final strict pass at once, with the rates
        and residuals the cap would give, bit for bit.  It happens when a link's
        free capacity R is above the tolerance but each queue's share of it, R *
        w / W, is not (for example two equal queues and tol < R <= 2 tol); on the
        Facebook hour about 4 % of Aalo's passes end so, after 40-46 rounds (they
        ran the 200-round cap before).

        The engine: compiled (:meth:`_weighted_compiled`) when the kernels are on and
        every flow is eligible, else numpy (:meth:`_weighted_numpy`); the same rates,
        residuals and round counts bit for bit.

        Returns:
            The number of rounds run.
        """
        cap = MAX_WEIGHTED_ROUNDS if rounds is None else int(rounds)
        if (kernels.ENABLED and all(m is None for _, groups in queues for _, m in groups)
                and _distinct([gm for _, groups in queues for gm in groups])):
            return self._weighted_compiled(queues, residual, rates, cap, rounds)
        return self._weighted_numpy(queues, residual, rates, cap, rounds)

    def _weighted_compiled(self, queues, residual: np.ndarray, rates: Dict[int, np.ndarray],
                           cap: int, rounds: Optional[int]) -> int:
        """:meth:`weighted_pass` in one compiled call
        (:func:`~rapier_app.kernels.weighted.weighted_kernel`) on the stacked groups,
        with their weighted-pass records (``cap``: the round limit)."""
        tol = self._tol
        gs = [g for _, groups in queues for g, _ in groups]
        P, gptr, lptrs, rows_all, memo = self._stacked("weighted", gs, residual.shape[0],
                                                       True)
        acc = (np.concatenate([rates[id(g)] for g in gs]) if gs else np.zeros(0))
        qptr = np.zeros(len(queues) + 1, dtype=np.int64)
        np.cumsum([len(groups) for _, groups in queues], out=qptr[1:])
        wts = np.array([float(w) for w, _ in queues])
        out = np.zeros(4, dtype=np.int64)
        if kweighted.weighted_kernel(P, gptr, qptr, wts, residual, tol, acc, cap, out,
                                     lptrs, rows_all, *memo) < 0:
            self._stacks.pop("weighted", None)
            raise SchedulerError("waterfill: a flow crosses no link")
        unstack(gs, acc, rates)
        keep_memo(gs, gptr, memo)
        self.memo_rows[0] += int(out[2])
        self.memo_rows[1] += int(out[3])
        done = int(out[0])
        self.rounds_max = max(self.rounds_max, done)
        if out[1] == 2:
            self.rounds_stalled += 1
        elif out[1] and rounds is None:
            self.rounds_capped += 1
        return done

    def _weighted_numpy(self, queues, residual: np.ndarray, rates: Dict[int, np.ndarray],
                        cap: int, rounds: Optional[int]) -> int:
        """:meth:`weighted_pass` round by round in numpy (each queue's share by a
        :meth:`strict_pass`; ``cap``: the round limit)."""
        L = self._L
        tol = self._tol
        done = 0
        stalled = False
        while True:
            W = np.zeros(L + 1)
            present = []
            free = residual > tol
            for w, groups in queues:
                # links on which the queue has a flow that can grow (a mark per link:
                # cheaper than np.unique's sort)
                mark = np.zeros(L + 1, dtype=bool)
                found = False
                for g, mask in groups:
                    if g.n == 0 or (mask is not None and not mask.any()):
                        continue
                    P = g.P if mask is None else g.P[mask]
                    ok = _row_all(free, P)
                    if ok.all():
                        mark[P] = True
                        found = True
                    elif ok.any():
                        mark[P[ok]] = True
                        found = True
                if found:
                    mark[L] = False
                    W[mark] += w
                present.append(found)
            if not any(present):
                return done  # saturated: no queue can grow
            if done >= cap:
                break
            done += 1
            if done > self.rounds_max:
                self.rounds_max = done
            used = np.zeros(L + 1)
            base = residual.copy()
            for (w, groups), pres in zip(queues, present):
                if not pres:
                    continue
                share = np.zeros(L + 1)
                m = W[:L] > 0
                share[:L][m] = base[:L][m] * (w / W[:L][m])
                share[L] = np.inf
                start = share.copy()
                self.strict_pass(groups, share, rates)
                used[:L] += start[:L] - share[:L]
            residual[:L] -= used[:L]
            np.maximum(residual, 0.0, out=residual)
            if done >= 2 and not used[:L].any():
                # a fixed point (no flow could grow in this round): every later round
                # would repeat it until the cap, so hand out the rest now, bit for bit
                # as at the cap (see kweighted.weighted_kernel)
                stalled = True
                break
        if stalled:
            self.rounds_stalled += 1
        elif rounds is None:
            self.rounds_capped += 1
        self.strict_pass([gm for _, groups in queues for gm in groups], residual, rates)
        return done

    def _stacked(self, kind: str, gs: List[_Group], nl: int, memo: bool = False) -> tuple:
        """A compiled pass's inputs for the groups ``gs`` over ``nl`` links (the dummy
        included): (P, gptr, lptrs, rows_all, memo), as :func:`~.stack.stack_rows`,
        :func:`~.stack.stack_csr` and, with ``memo`` (the weighted pass), :func:`~.stack.stack_memo`
        build them (memo None without).  ``kind`` names the pass ("weighted",
        "strict", "joint"): each keeps its own.

        Kept from the last call and updated in place when ``gs`` are the last
        call's groups or their filtered successors (flows finished, recorded by
        :meth:`group` in ``_drops``), in the same order: a filtered group's rows,
        link index and row of the link-index table are written at its new offset,
        its memo record is dropped (flag 0, levels 0.0, as :meth:`_stack_memo` gives
        a new group), and the unchanged groups after it move up (one slice copy per
        array for each run of them up to the next filtered group, not one per group);
        the unchanged groups keep their rows and the records the last pass wrote.  The
        arrays are then those a full rebuild gives, bit for bit, without copying
        every live flow's rows at every decision point (on the Facebook hour's
        giants, 99 % of the rows passed are in calls that find their groups so).
        Otherwise they are rebuilt."""
        c = self._stacks.get(kind)
        if c is not None and c[6] == nl and len(c[0]) == len(gs) and \
                (c[5] is not None) == memo:
            got = restack(c, gs, nl, self._drops)
            if got is not None:
                return got
        P, gptr, _ = self._stack(gs, None, False)
        lptrs, rows_all = self._stack_csr(gs, nl)
        rec = self._stack_memo(gs, gptr, nl) if memo else None
        self._stacks[kind] = [gs, P, gptr, lptrs, rows_all, rec, nl]
        return P, gptr, lptrs, rows_all, rec

    def _stack(self, groups: Sequence[_Group], rates: Optional[Dict[int, np.ndarray]],
               with_rates: bool = True) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`~.stack.stack_rows` with this scheduler's path width."""
        return stack_rows(groups, rates, with_rates, self._width)

    @staticmethod
    def _stack_csr(groups: Sequence[_Group], nl: int) -> Tuple[np.ndarray, np.ndarray]:
        """:func:`~.stack.stack_csr`."""
        return stack_csr(groups, nl)

    @staticmethod
    def _stack_memo(groups: Sequence[_Group], gptr: np.ndarray, nl: int) -> tuple:
        """:func:`~.stack.stack_memo`."""
        return stack_memo(groups, gptr, nl)

    # -- output -------------------------------------------------------------------
    def emit(self, coflows: Sequence[CoflowState], rates: Dict[int, np.ndarray],
             order: List[str], info: Optional[dict] = None) -> Schedule:
        """Build the :class:`Schedule`: every active flow gets its path and a rate.

        Returned in vector form (:meth:`Schedule.from_vectors`), flows in coflow order
        then flow order, so the simulator applies it without per-flow lookups.  When
        the caller's schedules are volatile (``volatile_schedules``: the simulator)
        and its bound active list (:meth:`Scheduler.bind_active`) is the groups'
        flows in this order (:func:`_aligned`), that list itself is the schedule's
        flows and the paths are read through the groups' lists
        (:class:`_ConcatPaths`): no per-flow list is built or edited, and the
        simulator skips its flow-by-flow check (600,000 live flows in the all-at-0
        hour).  Otherwise both lists are built."""
        gs = [self.group(c) for c in coflows]
        rs = [rates.get(id(g)) for g in gs]
        rb = self._rbuf
        vec = None
        if rb is not None and len(rb[0]) == len(gs) and all(map(is_, rb[0], gs)) and \
                all(map(is_, rb[2], rs)):
            # the slices of :meth:`schedule`'s vector, in order (still its views): the
            # vector is their concatenation
            vec = rb[1]
        if rb is not None and vec is rb[1] and not self.few_senders:
            # most flows send: a sum per coflow, and no nonzero positions (the
            # simulator's dense step scans the rates itself)
            nz = None
            last = {c.coflow_id: float(r.sum()) for c, r in zip(coflows, rs)}
        elif rb is not None and vec is rb[1]:
            # a coflow's total is its slice's sum; a slice without a nonzero entry
            # sums to 0.0 (one C pass finds them instead of a sum per coflow: most
            # coflows wait while hundreds are live)
            # (entries with any bit set: -0.0 too, so that they are cleared before the
            # array is reused; np.flatnonzero is 10x slower on floats)
            bits = vec.view(np.int64)
            nz = nonzero_positions(bits)
            if self.volatile_schedules:
                self._zb = (rb[3], nz, vec.shape[0])
            ends = np.cumsum([g.n for g in gs])
            has = np.diff(np.searchsorted(nz, ends), prepend=0) > 0
            last = {c.coflow_id: (float(r.sum()) if h else 0.0)
                    for c, r, h in zip(coflows, rs, has.tolist())}
        else:
            nz = None
            rs = [np.zeros(g.n) if r is None else r for g, r in zip(gs, rs)]
            last = {c.coflow_id: float(r.sum()) for c, r in zip(coflows, rs)}
            vec = np.concatenate(rs) if rs else np.zeros(0)
        self._last_rates = last
        act = self._active_list
        if act is not None and self.volatile_schedules and _aligned(gs, act):
            # the caller's own active list is this schedule's flow order: hand it
            # back, with the groups' path lists read through (no per-flow lists)
            flows, paths = act, _ConcatPaths(gs)
        else:
            flows = []
            paths = []
            for g in gs:
                flows.extend(g.flows)
                paths.extend(g.paths)
        self._drops.clear()
        return Schedule.from_vectors(flows, paths, vec, order=order, info=info or {},
                                     tuple_paths=True, nonzero=nz)

    def schedule(self, now: float, coflows: Sequence[CoflowState]) -> Schedule:
        """Paths (sticky ECMP) and rates (bit/s) for every active flow at ``now`` (s);
        the discipline is the subclass's :meth:`plan`."""
        self._forget(coflows)
        live = [c for c in coflows if c.active_flows()]
        gs = [self.group(c) for c in live]
        # every group's rates are a slice of one zeroed vector, in emit's order, so
        # emit hands that vector out instead of concatenating the groups' arrays
        m = sum(g.n for g in gs)
        zb, self._zb = self._zb, None
        if zb is not None and self.volatile_schedules and zb[0].shape[0] >= m:
            full = zb[0]
            # the caller is done with the last vector: clear its nonzero entries
            # (all of its head when most were: one memset beats the scatter)
            if 8 * zb[1].shape[0] > zb[2]:
                full[:zb[2]] = 0.0
            else:
                full[zb[1]] = 0.0
        else:
            full = np.zeros(m)
        buf = full[:m]
        rates = {}
        views = []
        o = 0
        for g in gs:
            v = rates[id(g)] = buf[o:o + g.n]
            views.append(v)
            o += g.n
        self._rbuf = (gs, buf, views, full)
        try:
            order, info = self.plan(now, live, rates)
            return self.emit(live, rates, order, info)
        finally:
            self._rbuf = None

    def plan(self, now: float, coflows: List[CoflowState],
             rates: Dict[int, np.ndarray]) -> Tuple[List[str], dict]:
        """Fill ``rates[id(group)]`` (bit/s per active flow); return (order, info)."""
        raise NotImplementedError

    @staticmethod
    def all_mask(g: _Group) -> np.ndarray:
        """Boolean mask selecting every active flow of ``g``."""
        return np.ones(g.n, dtype=bool)
