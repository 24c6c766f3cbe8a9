"""Work conservation between coflow events, shared by RAPIER and Varys.

RAPIER's Algorithm 1 (Section IV-C) and Varys's coordinator (Varys Section 5) are
re-run "whenever a new coflow comes or an existing coflow finishes".  Between those
events single flows finish too; the bandwidth a finished flow frees must go to
someone at once, or a link with a waiting flow on it sits idle until the next coflow
event (the defect measured on the Facebook hour: 2,000 s of port capacity idle on the
Facebook hour).

:class:`WorkConservation` keeps what the last full pass decided (every flow's path,
rate and the scheme's work-conservation visiting order).  When only flows finished
(the same live coflows as at the last call), :meth:`WorkConservation.flow_event`

1. drops the finished flows; the survivors keep their paths and their rates (the
   Algorithm 1 / SEBF+MADD rates plus whatever work conservation gave them);
2. computes the residual capacity R = capacity - load of the survivors (bit/s);
3. runs the scheme's own greedy work-conservation pass on R, visiting only the
   flows that have room now, i.e. flows crossing a link that freed capacity (every
   other flow already had a saturated link on its path): Algorithm 3's order for
   RAPIER, SEBF order for Varys.  A flow with a fixed path takes the bottleneck
   residual along it; a *flexible* flow (RAPIER: a flow of an unscheduled coflow
   that has no rate yet) takes the candidate path with the most residual bandwidth
   (Algorithm 3's AssignBandwidth) and keeps it from then on.

After the pass every surviving flow has a link at capacity on its path (flexible
flows: on every candidate path, or they got bandwidth), the work-conservation
invariant that ``tests/test_work_conservation.py`` checks between events.

Cost per flow event: the residual and each flow's room are updated on the links
whose load changed since the last event only (bit-identical to recomputing them),
plus a few boolean passes over the flows, the output lists, and Python
work only for the flows that have room.  Units: rates and capacities in bit/s.
"""

from __future__ import annotations

from itertools import chain, compress
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from .. import kernels
from ..core.model import CoflowState, FlowState, Schedule
from ..kernels import conserve as kconserve

#: Residual capacity below this fraction of a link's capacity counts as none
#: (floating-point noise of cap - sum(rates) must not create work).
REL_TOL = 1e-9


def best_candidate(paths: Sequence[tuple], links: Sequence[Sequence[int]],
                   residual: List[float]) -> Tuple[Optional[tuple], Optional[Sequence[int]],
                                                   float]:
    """AssignBandwidth's choice (RAPIER Algorithm 3, lines 10-20): among candidate
    ``paths`` (with their link indices ``links``), the first with the largest
    bottleneck residual (bit/s).  Returns (path, its links, bandwidth), or
    (None, None, 0.0) when no path has residual capacity on every link."""
    best, best_ls, best_bw = None, None, 0.0
    get = residual.__getitem__
    for p, ls in zip(paths, links):
        bw = min(map(get, ls))
        if bw > best_bw:
            best, best_ls, best_bw = p, ls, bw
    return best, best_ls, best_bw


class WorkConservation:
    """The last full decision of a centralised scheduler, for flow-completion events.

    Args:
        capacity: per link capacity in bit/s (the topology's).
        coflows: the live coflows of the full pass, in the schedule's output order.
        flows, paths, links, rates: per flow of those coflows (concatenated in the
            same order): the FlowState, its path (tuple of node names), its path's
            link indices (int sequence) and its rate in bit/s after the full pass.
        visit: flow indices in the scheme's work-conservation order (every flow
            once).
        flexible: optional per-flow bool: the flow may still choose among its
            candidate paths (it has no rate yet); ``candidates(j)`` then gives flow
            j's candidate paths and their link indices (called only for flexible
            flows that are visited).
        order, fallback, info: copied into every :class:`Schedule` it returns.
        access: optional ``access(host) -> (uplinks, downlinks)`` (link indices of
            the host's outgoing and incoming links): a flexible flow is visited
            while one of its source's uplinks and one of its destination's downlinks
            has room.  Without it the flow's current first and last link are used,
            exact only where every host has one access link (fat-tree, VL2,
            leaf-spine, big switch; not Fig. 1's dual-homed hosts).
        volatile: the caller reads a returned schedule only until the next
            :meth:`flow_event` (the scheduler's ``volatile_schedules``): the
            schedule then holds the live survivor lists, not copies.

    Raises:
        ValueError: the per-flow sequences differ in length.

    Source: RAPIER Algorithm 3 (DistributeBandwidth) and Varys Section 5.3 (work
    conservation), applied at every flow completion.
    """

    def __init__(self, capacity: np.ndarray, coflows: Sequence[CoflowState],
                 flows: List[FlowState], paths: list, links: Sequence[Sequence[int]],
                 rates: np.ndarray, visit: Sequence[int],
                 flexible: Optional[np.ndarray] = None,
                 candidates: Optional[Callable[[int], Tuple[list, list]]] = None,
                 order: Optional[List[str]] = None, fallback: Optional[dict] = None,
                 info: Optional[dict] = None,
                 access: Optional[Callable[[str], Tuple[Sequence[int], Sequence[int]]]]
                 = None, volatile: bool = False):
        n = len(flows)
        if not (len(paths) == len(links) == len(rates) == n):
            raise ValueError(f"WorkConservation: {n} flows, {len(paths)} paths, "
                             f"{len(links)} link lists and {len(rates)} rates")
        self.cap = np.asarray(capacity, dtype=float)
        self.tol = REL_TOL * np.maximum(self.cap, 1.0)
        self.key = tuple(c.coflow_id for c in coflows)
        self.coflows = list(coflows)
        self.flows = list(flows)
        self.paths = list(paths)
        # tuples of Python ints (the shared path-link cache gives them already)
        self.links = [ls if type(ls) is tuple and (not ls or type(ls[0]) is int)
                      else tuple(int(x) for x in ls) for ls in links]
        self.lens = np.fromiter(map(len, self.links), np.int64, n)
        self.lidx = (np.fromiter(chain.from_iterable(self.links), np.int64,
                                 int(self.lens.sum())) if n else np.zeros(0, np.int64))
        self.starts = np.zeros(n, dtype=np.int64)
        if n:
            np.cumsum(self.lens[:-1], out=self.starts[1:])
        self.rates = np.asarray(rates, dtype=float).copy()
        self.visit = np.asarray(visit, dtype=np.int64)
        self.flexible = (np.zeros(n, dtype=bool) if flexible is None
                         else np.asarray(flexible, dtype=bool) & (self.rates <= 0))
        if self.flexible.any() and candidates is None:
            raise ValueError("WorkConservation: flexible flows need candidates")
        self.candidates = candidates
        self.access = access
        self.volatile = bool(volatile)
        self._ends: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None
        self.alive = np.ones(n, dtype=bool)
        self._gidx = {id(f): i for i, f in enumerate(self.flows)}
        # the survivors in output order (compacted as flows finish) and their
        # global indices
        self.out_flows = list(self.flows)
        self.out_paths = list(self.paths)
        self.out_idx = np.arange(n, dtype=np.int64)
        self._pending: List[int] = []  # global indices reported finished
        # per coflow: its slice of the flows, the active list seen last, alive count
        self._slices = []
        o = 0
        for c in self.coflows:
            act = c.active_flows()
            k = len(act)
            self._slices.append([c, o, o + k, act, k])
            o += k
        if o != n:
            raise ValueError(f"WorkConservation: the coflows have {o} active flows, "
                             f"{n} were given")
        self._slice_of = np.repeat(np.arange(len(self._slices)),
                                   [sl[2] - sl[1] for sl in self._slices]).astype(np.int64)
        self.order = list(order or [])
        self.fallback = dict(fallback or {})
        self.info = dict(info or {})
        self.passes = 0
        self.visited = 0
        # Incremental state (see _update): the residual and the per-flow "room" of
        # the last flow event, and the links whose load changed since (finished
        # flows, flows given bandwidth).  None: not computed yet.
        self._res: Optional[np.ndarray] = None
        self._rx: Optional[np.ndarray] = None  # _res plus an inf sentinel entry
        self._room: Optional[np.ndarray] = None
        self._dirty: set = set()
        self._vpos = np.empty(n, dtype=np.int64)
        self._vpos[self.visit] = np.arange(self.visit.shape[0], dtype=np.int64)
        self._csr: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None
        self._PT: Optional[np.ndarray] = None  # P transposed, contiguous (hops x flows)
        self._tol_list = self.tol.tolist()
        # link -> its CSR flows and the flows _set_links moved onto it, sorted (what
        # np.unique(concatenate(...)) of the two gives); empty while no flow moved
        self._merged: dict = {}

    def matches(self, coflows: Sequence[CoflowState]) -> bool:
        """True when ``coflows`` are the live coflows of the last full pass (so only
        flows finished since: a flow event)."""
        return tuple(c.coflow_id for c in coflows) == self.key

    def flows_finished(self, flows: Sequence[FlowState]) -> None:
        """Note that ``flows`` finished (the simulator's and the controller's hook):
        the next :meth:`flow_event` then needs no scan of the coflows' flows."""
        g = self._gidx
        for f in flows:
            i = g.get(id(f))
            if i is not None and self.flows[i] is f:
                self._pending.append(i)

    def _refresh_alive(self) -> None:
        dead = []
        for i in self._pending:
            if self.alive[i]:
                self.alive[i] = False
                self._slices[int(self._slice_of[i])][4] -= 1
                dead.append(i)
        self._pending = []
        # safety net: a coflow whose active list shrank more than was reported
        for sl in self._slices:
            c, a, b, act, k = sl
            now_act = c.active_flows()
            if now_act is act:
                continue
            sl[3] = now_act
            if len(now_act) == k:
                continue
            for i in range(a, b):
                if self.alive[i] and self.flows[i].finish_s is not None:
                    self.alive[i] = False
                    dead.append(i)
            sl[4] = len(now_act)
        if not dead:
            return
        dirty = self._dirty
        links = self.links
        rates = self.rates
        for i in dead:
            if rates[i] > 0:  # only flows with a rate load links
                dirty.update(links[i])
        if len(dead) <= 32:
            # out_idx holds exactly the flows alive before, ascending: the dead
            # flows' output positions by bisection
            drop = np.searchsorted(self.out_idx, np.sort(np.array(dead, dtype=np.int64)))
            for j in reversed(drop.tolist()):
                del self.out_flows[j]
                del self.out_paths[j]
            self.out_idx = np.delete(self.out_idx, drop)
        else:
            keep = self.alive[self.out_idx]
            kl = keep.tolist()
            self.out_flows = list(compress(self.out_flows, kl))
            self.out_paths = list(compress(self.out_paths, kl))
            self.out_idx = self.out_idx[keep]

    def residual(self) -> np.ndarray:
        """Residual capacity (bit/s, >= 0; noise below the tolerance cut to 0) left by
        the surviving flows at their current rates."""
        alive = self.alive
        ent = np.repeat(alive & (self.rates > 0), self.lens)
        load = np.bincount(self.lidx[ent], weights=np.repeat(self.rates, self.lens)[ent],
                           minlength=len(self.cap))
        res = self.cap - load
        res[res <= self.tol] = 0.0
        return res

    def _link_flows(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lptr, lflows, P): per link l, ``lflows[lptr[l]:lptr[l + 1]]`` are the flows
        whose links at construction cross l, ascending (int64); ``P`` is the
        flows' links as a padded ``(flows x hops)`` matrix, padding = the sentinel
        link ``len(capacity)`` (kept current by :meth:`_set_links`).  Built once."""
        if self._csr is None:
            L = len(self.cap)
            n = len(self.links)
            owner = np.repeat(np.arange(n, dtype=np.int64), self.lens)
            order = np.argsort(self.lidx, kind="stable")  # ascending flows per link
            lptr = np.zeros(L + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.lidx, minlength=L), out=lptr[1:])
            W = int(self.lens.max()) if n else 1
            P = np.full((n, W), L, dtype=np.int64)
            if n:
                col = np.arange(self.lidx.shape[0], dtype=np.int64) - \
                    np.repeat(self.starts, self.lens)
                P[owner, col] = self.lidx
            self._csr = (lptr, owner[order], P)
            self._PT = np.ascontiguousarray(P.T)
        return self._csr

    def _update(self) -> Tuple[np.ndarray, np.ndarray]:
        """The residual (as :meth:`residual`) and per flow whether every link of its
        path has residual capacity, updated on the links whose load changed since
        the last call (``_dirty``) only.

        Bit-identical to recomputing: a link's load is the sum of the rates of the
        live flows with a rate crossing it, added in flow order (as ``np.bincount``
        adds in :meth:`residual`), and only the links in ``_dirty`` can have a
        different set of such flows or rates.  Returns (residual, room), arrays the
        caller may read but not keep across events."""
        if self._res is None:
            # the residual lives in the first L entries of an array whose last entry
            # (the sentinel link of the padded matrix) is inf
            rx = np.empty(len(self.cap) + 1)
            rx[-1] = np.inf
            rx[:-1] = self.residual()
            self._rx = rx
            res = rx[:-1]
            n = len(self.links)
            room = (np.minimum.reduceat(res[self.lidx], self.starts) > 0 if n
                    else np.zeros(0, dtype=bool))
            self._res, self._room = res, room
            self._dirty = set()
            return res, room
        res, room = self._res, self._room
        if not self._dirty:
            return res, room
        lptr, lflows, P = self._link_flows()
        D = sorted(self._dirty)
        self._dirty = set()
        parts = []
        merged = self._merged
        added = bool(merged)  # some flow left its construction path
        for l in D:
            fl = merged.get(l)
            if fl is None:
                fl = lflows[lptr[l]:lptr[l + 1]]
            parts.append(fl)
        F = np.concatenate(parts)
        if kernels.ENABLED:
            self._update_dirty_compiled(D, parts, F, P, added, room)
        else:
            self._update_dirty_numpy(D, parts, F, P, added, res, room)
        return res, room

    def _update_dirty_compiled(self, D: list, parts: list, F: np.ndarray, P: np.ndarray,
                               added: bool, room: np.ndarray) -> None:
        """:meth:`_update_dirty_numpy` compiled
        (:func:`~rapier_app.kernels.conserve.wc_update_kernel`, writing the residual
        through ``self._rx``): the same residuals and room bit for bit."""
        kconserve.wc_update_kernel(np.array(D, dtype=np.int64),
                                   np.fromiter((x.shape[0] for x in parts), np.int64,
                                               len(parts)),
                                   F, P, added, self.alive, self.rates, self.cap,
                                   self.tol, self._rx, room)

    def _update_dirty_numpy(self, D: list, parts: list, F: np.ndarray, P: np.ndarray,
                            added: bool, res: np.ndarray, room: np.ndarray) -> None:
        """Recompute, in place, the residual ``res`` (bit/s) of the dirty links ``D``
        from the alive flows' rates and the ``room`` of the flows crossing them
        (``parts``: per dirty link its flows, ``F`` their concatenation; ``P`` the
        padded path matrix; ``added``: some flow moved, so a listed flow may no
        longer cross its link)."""
        Lk = np.repeat(np.array(D, dtype=np.int64), [x.shape[0] for x in parts])
        # the flow still crosses the link (moved flows keep their old CSR entries)
        on = (P[F] == Lk[:, None]).any(axis=1) if added else np.ones(F.shape[0], bool)
        rates = self.rates
        use = on & self.alive[F] & (rates[F] > 0)
        Dl = np.array(D, dtype=np.int64)
        load = np.bincount(Lk[use], weights=rates[F[use]], minlength=len(self.cap))[Dl]
        r = self.cap[Dl] - load
        r[r <= self.tol[Dl]] = 0.0
        res[Dl] = r
        # room of every flow crossing a dirty link (min is exact: any order; a flow
        # crossing several dirty links is set several times to the same value)
        G = F[on & self.alive[F]]
        if G.size:
            # per hop column: a vectorised min across the flows (same values as a
            # row-wise min: min is exact)
            PT = self._PT
            rx = self._rx
            m = rx[PT[0, G]]
            for k in range(1, PT.shape[0]):
                np.minimum(m, rx[PT[k, G]], out=m)
            room[G] = m > 0

    def flow_event(self) -> Schedule:
        """Hand the capacity freed by finished flows to the survivors (module
        docstring) and return the new :class:`Schedule` (survivors only, same
        order, fallback and info as the full pass).

        Per event the work is O(flows on the links whose load changed) for the
        residual and the flows' room (:meth:`_update`), plus a few boolean passes
        over the flows and Python work for the visited flows only."""
        self.passes += 1
        self._refresh_alive()
        alive = self.alive
        res, room = self._update()
        flex = self.flexible & alive
        any_flex = bool(flex.any())
        if any_flex:
            # every candidate path of a flow leaves its source over one of the
            # source host's uplinks and enters its destination over one of its
            # downlinks: if all of either are full, no candidate has room
            fi, up, down = self._access_ends()
            ok = (res[up].max(axis=1) > 0) & (res[down].max(axis=1) > 0)
            flex[fi[~ok]] = False
            any_flex = bool(flex.any())
        wi = np.flatnonzero((room | flex) & alive)
        if wi.size:
            # Algorithm 3's visiting order among the flows that want bandwidth
            sel = wi[np.argsort(self._vpos[wi])]
            dirty = self._dirty
            if any_flex:
                hot = None  # a flexible flow may use any candidate link
            else:
                # links with room that a visited flow can use: once all are full, stop
                _, _, P = self._link_flows()
                mark = np.zeros(len(self.cap) + 1, dtype=bool)
                mark[P[wi]] = True  # the last entry: the padding sentinel
                hot = np.flatnonzero(mark[:-1] & (res > 0))
            r = res.tolist()
            left = -1 if hot is None else len(hot)
            tol = self._tol_list
            hot_set = set() if hot is None else set(hot.tolist())
            rates = self.rates
            links = self.links
            for j in sel.tolist():
                if left == 0:
                    break
                self.visited += 1
                if self.flexible[j]:
                    best, best_ls, best_bw = best_candidate(*self.candidates(j), r)
                    if best is None:
                        continue
                    self.paths[j] = best
                    k = int(np.searchsorted(self.out_idx, j))
                    self.out_paths[k] = best
                    self._set_links(j, best_ls)
                    self.flexible[j] = False
                    rates[j] += best_bw
                    for l in best_ls:
                        r[l] -= best_bw
                    dirty.update(self.links[j])
                    continue
                ls = links[j]
                bw = min([r[l] for l in ls])
                if bw > 0.0:
                    rates[j] += bw
                    dirty.update(ls)
                    for l in ls:
                        x = r[l] - bw
                        r[l] = x
                        if x <= tol[l] and l in hot_set:
                            left -= 1
                            hot_set.discard(l)
        # copies unless volatile: the lists are compacted in place at the next
        # event, and a caller may keep this schedule (the controller's last_schedule)
        if self.volatile:
            return Schedule.from_vectors(self.out_flows, self.out_paths,
                                         self.rates[self.out_idx],
                                         order=self.order, fallback=self.fallback,
                                         info=self.info, tuple_paths=True)
        return Schedule.from_vectors(list(self.out_flows), list(self.out_paths),
                                     self.rates[self.out_idx],
                                     order=self.order, fallback=self.fallback, info=self.info,
                                     tuple_paths=True)

    def _access_ends(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the flows flexible at construction: their indices (int64, shape (m,))
        and padded matrices of their source host's uplinks and destination host's
        downlinks (link indices, shape (m, a); rows padded by repeating their first
        entry).  Without an ``access`` callable a flow's current first and last link
        stand for them (exact on fabrics whose hosts have one access link)."""
        if self._ends is not None:
            return self._ends
        fi = np.flatnonzero(self.flexible)
        if self.access is None:
            up = self.lidx[self.starts[fi]][:, None]
            down = self.lidx[(self.starts + self.lens - 1)[fi]][:, None]
        else:
            # per host its row (numbered in order of first use), then one gather
            memo: dict = {}
            rows: list = []
            flows = self.flows
            fl = fi.tolist()
            si = np.empty(len(fl), dtype=np.int64)
            di = np.empty(len(fl), dtype=np.int64)
            for t, j in enumerate(fl):
                f = flows[j]
                for host, out in ((f.src, si), (f.dst, di)):
                    h = memo.get(host)
                    if h is None:
                        h = memo[host] = len(rows)
                        rows.append(tuple(tuple(int(x) for x in v)
                                          for v in self.access(host)))
                    out[t] = h

            def pad(pick: int, idx: np.ndarray) -> np.ndarray:
                # rows padded by repeating their first entry, then one row per flow
                w = max((len(r[pick]) for r in rows), default=1)
                m = np.empty((len(rows), w), dtype=np.int64)
                for i, r in enumerate(rows):
                    a = r[pick]
                    m[i, :len(a)] = a
                    m[i, len(a):] = a[0]
                return m[idx] if len(fl) else np.empty((0, w), dtype=np.int64)
            up, down = pad(0, si), pad(1, di)
        self._ends = (fi, up, down)
        return self._ends

    def _set_links(self, j: int, ls: Sequence[int]) -> None:
        """Flow ``j`` takes a path with links ``ls`` (same hop count as before in every
        fabric we build; otherwise the flat arrays are rebuilt)."""
        ls = tuple(int(x) for x in ls)
        if self._csr is not None:
            lptr, lflows, _ = self._csr
            merged = self._merged
            for l in ls:  # for _update: j now crosses l (unless it did at construction)
                seg = lflows[lptr[l]:lptr[l + 1]]
                k = int(np.searchsorted(seg, j))
                if k == seg.shape[0] or seg[k] != j:
                    cur = merged.get(l, seg)
                    k = int(np.searchsorted(cur, j))
                    if k == cur.shape[0] or cur[k] != j:
                        merged[l] = np.insert(cur, k, j)
        if len(ls) == self.lens[j]:
            a = int(self.starts[j])
            self.lidx[a:a + len(ls)] = ls
            self.links[j] = ls
            if self._csr is not None:
                self._csr[2][j, :len(ls)] = ls
                self._PT[:len(ls), j] = ls
            return
        self._csr = None  # rebuilt from the new flat arrays on next use
        self._merged = {}
        self.links[j] = ls
        self.lens = np.fromiter(map(len, self.links), np.int64, len(self.links))
        self.lidx = np.fromiter((l for s in self.links for l in s), np.int64,
                                int(self.lens.sum()))
        self.starts = np.zeros(len(self.links), dtype=np.int64)
        np.cumsum(self.lens[:-1], out=self.starts[1:])
