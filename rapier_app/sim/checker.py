"""An independent checker of simulated schedules.

Given the topology, the workload (:class:`~rapier_app.core.model.CoflowSpec` list) and
the simulator's event log (one :class:`~rapier_app.sim.EventRecord`, or the
equivalent JSON object, per decision point), :func:`check_schedule` recomputes from
scratch everything a correct run must satisfy and returns every violation it finds.
It shares no accounting with the simulator: it does not import the simulator's load,
rate or byte code, indexes the links itself from ``topology.graph`` (its own order,
not :attr:`Topology.link_ids`), walks paths hop by hop on the graph, integrates the
logged rates itself and rebuilds every flow's and coflow's finish time from that
integral.  The log is only trusted for what the scheduler decided (paths and rates
between two decision instants).

Checks (``Violation.kind``):

* ``capacity``: a link carries more than ``capacity * (1 + 1e-9)`` bit/s at some
  instant (sum of the rates of the flows whose path crosses it).
* ``path``: a sending flow's path does not start at its source host, end at its
  destination host, follow links of the topology, visit only switches in between,
  or it visits a node twice; or a flow sends with no path.
* ``rate``: a rate that is negative or not finite.
* ``log``: the log is not a valid timeline (records out of order or overlapping, a
  gap while flows wait, a flow id not in the workload, a flow logged before its
  coflow arrived, an unfinished arrived flow missing from a record is *not* an error:
  it waits at rate 0).
* ``bytes``: bytes are not conserved.  The logged bytes left at a decision differ from
  size minus the integral of the flow's logged rates so far (relative 1e-6 of the
  size plus 1e-6 byte); a logged finish time differs from the instant at which the
  integral reaches the size; a flow sends after that instant; a flow never delivers
  its size.
* ``flow-bound``: a flow finishes (own integral, or the logged finish) less than
  ``size * 8 / B`` seconds after its coflow arrived, B the largest bottleneck
  capacity (bit/s) among the paths it used.
* ``coflow-bound``: a coflow finishes before its isolation bound: the largest of
  (bits its flows send from host h) / (capacity out of h), (bits they send to h) /
  (capacity into h) over hosts h, and the flow bounds above with B the best
  bottleneck among the pair's candidate paths.  On a big switch this is the time of
  its most loaded port at line rate (Varys's Gamma with nothing else running); in
  general a cut bound (every byte crosses its host's access links).
* ``cct``: a completion time reported by the simulator (``ccts`` argument) differs
  from the recomputed one (relative 1e-9 plus 1e-9 s).
* ``idle``: for a work-conserving scheduler (``level``), capacity idles while a flow
  could use it.  Each logged interval is cut at the recomputed flow finishes; on
  each piece the residual of link l is ``capacity - load``; l is *free* when its
  residual exceeds ``sat_tol * capacity`` (default 1e-6).  A flow with bytes left
  (sending or waiting, logged or missing from the record) violates

  - level ``"path"`` (each flow has one path, chosen by the scheme): every link of
    its path is free (it could send faster on its own path).  A waiting flow logged
    without a path is judged on the path it has in the other records (its first
    logged path: the schemes declaring this level keep one path per flow);
  - level ``"candidates"`` (the scheme may give a waiting flow any candidate path,
    RAPIER Algorithm 3's AssignBandwidth): a sending flow as for ``"path"``; a
    waiting flow (rate 0 or no path) when some candidate path of its pair (the ECMP
    set capped at ``max_paths``) has every link free.

  Pieces shorter than ``1e-9 * max(1, t)`` seconds are not judged.  A scheduler
  with a decision interval d > 0 (``decision_interval``, recorded in the run's
  header: it acts on flow completions at the next multiple of d, so a finished
  flow's bandwidth idles until then) is judged on each interval's first piece only
  (from the decision to the first finish in it), and an interval in which a flow
  finishes must end at most d after that finish (else ``idle``).

Schedulers declare their level with the class attribute ``work_conserving`` (see
:class:`~rapier_app.scheduling.Scheduler`); :func:`declared_level` reads it.

Units: bytes, bit/s, seconds.  Source: the work-conservation invariant of
RAPIER Algorithm 3 and Varys Section 5.3 (no bandwidth a waiting flow could use
idles), the isolation bound of Varys Section 5.1 (Gamma).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from itertools import repeat
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology

from ..core.model import CoflowSpec
from ..errors import RapierError

BITS = 8.0
LEVELS = (None, "path", "candidates")
#: relative over-capacity allowed ("more than 1e-9 relative")
CAP_TOL = 1e-9


class CheckError(RapierError, ValueError):
    """The checker's input is malformed (names the field / record)."""


@dataclass
class Violation:
    """One broken invariant.

    Attributes:
        kind: ``capacity``, ``path``, ``rate``, ``log``, ``bytes``, ``flow-bound``,
            ``coflow-bound``, ``cct`` or ``idle`` (see the module docstring).
        t_s: when (seconds of simulated time; the start of the piece for ``idle``).
        subject: the flow id, coflow id or link ``"u->v"`` concerned.
        detail: the numbers, in words.
    """

    kind: str
    t_s: float
    subject: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.kind}] t={self.t_s:.9g} s {self.subject}: {self.detail}"


@dataclass
class CheckReport:
    """What :func:`check_schedule` found.

    Attributes:
        violations: up to ``max_violations`` :class:`Violation` (first found first).
        counts: number of violations per kind (all of them, listed or not).
        records: number of log records read.
        flow_finish_s: recomputed finish time per flow id (s; absent: never finished).
        coflow_finish_s: recomputed finish time per coflow id (s).
        idle_s: total duration (s) of the pieces with at least one ``idle`` violation.
        max_utilisation: the largest load / capacity seen on any link.
    """

    violations: List[Violation] = field(default_factory=list)
    counts: Dict[str, int] = field(default_factory=dict)
    records: int = 0
    flow_finish_s: Dict[str, float] = field(default_factory=dict)
    coflow_finish_s: Dict[str, float] = field(default_factory=dict)
    idle_s: float = 0.0
    max_utilisation: float = 0.0

    @property
    def ok(self) -> bool:
        """True when no violation was found."""
        return not self.counts

    def kinds(self) -> set:
        """The kinds of violation found."""
        return set(self.counts)

    def summary(self, limit: int = 5) -> str:
        """One line per kind (count) and the first ``limit`` violations."""
        if self.ok:
            return f"ok: {self.records} records, max utilisation {self.max_utilisation:.9g}"
        head = ", ".join(f"{k}: {n}" for k, n in sorted(self.counts.items()))
        lines = [f"{sum(self.counts.values())} violations ({head}); idle {self.idle_s:.6g} s"]
        lines += [f"  {v}" for v in self.violations[:limit]]
        return "\n".join(lines)


def declared_level(scheduler) -> Optional[str]:
    """The work-conservation level a scheduler (instance or class) declares through
    its ``work_conserving`` attribute: None, ``"path"`` or ``"candidates"``.

    Raises:
        CheckError: the attribute holds another value.
    """
    lvl = getattr(scheduler, "work_conserving", None)
    if lvl is False:
        lvl = None
    if lvl not in LEVELS:
        raise CheckError(f"work_conserving: {getattr(scheduler, 'name', scheduler)!r} declares "
                         f"{lvl!r}; must be one of {LEVELS}")
    return lvl


def declared_interval(scheduler, reschedule_on: Optional[str] = None) -> float:
    """The decision interval (seconds) a scheduler's run is judged with: its
    ``decision_interval`` attribute (0 when it has none), 0 when the run decides at
    coflow events only (``reschedule_on="coflow"``: the simulator does not apply the
    interval then).  See :func:`check_schedule` and
    :func:`rapier_app.sim.steps.next_event`."""
    if reschedule_on == "coflow":
        return 0.0
    return float(getattr(scheduler, "decision_interval", 0.0) or 0.0)


class _Fabric:
    """The topology seen by the checker: its own link index and path walker."""

    def __init__(self, topology: Topology, max_paths: Optional[int]):
        g = topology.graph
        self.topology = topology
        self.max_paths = max_paths
        self.edges = sorted(g.edges())
        self.lid = {e: i for i, e in enumerate(self.edges)}
        self.cap = np.array([float(g.edges[e]["capacity_bps"]) for e in self.edges])
        self.host = {n: d.get("role") == "host" for n, d in g.nodes(data=True)}
        self.out_cap: Dict[str, float] = {}
        self.in_cap: Dict[str, float] = {}
        for (u, v), c in zip(self.edges, self.cap.tolist()):
            self.out_cap[u] = self.out_cap.get(u, 0.0) + c
            self.in_cap[v] = self.in_cap.get(v, 0.0) + c
        self._links: Dict[tuple, object] = {}
        self._cands: Dict[tuple, List[np.ndarray]] = {}

    def links(self, path: tuple, src: str, dst: str):
        """Link indices (int array) of ``path`` from ``src`` to ``dst``, or a string
        saying why it is not a path of the topology joining them."""
        key = (path, src, dst)
        got = self._links.get(key)
        if got is None:
            got = self._walk(path, src, dst)
            self._links[key] = got
        return got

    def _walk(self, path: tuple, src: str, dst: str):
        if len(path) < 3:
            return f"path {'-'.join(map(str, path))} has fewer than 3 nodes"
        if path[0] != src or path[-1] != dst:
            return f"path {'-'.join(path)} does not join {src} to {dst}"
        inner = path[1:-1]
        for n in inner:
            if n not in self.host:
                return f"path {'-'.join(path)}: unknown node {n}"
            if self.host[n]:
                return f"path {'-'.join(path)}: host {n} forwards"
        if len(set(inner)) != len(inner) or (src != dst and src in inner + (dst,)) \
                or (src != dst and dst in inner):
            return f"path {'-'.join(path)} visits a node twice"
        out = []
        for a, b in zip(path, path[1:]):
            i = self.lid.get((a, b))
            if i is None:
                return f"path {'-'.join(path)}: no link {a}->{b}"
            out.append(i)
        return np.array(out, dtype=np.int64)

    def candidates(self, src: str, dst: str) -> List[np.ndarray]:
        """Link arrays of the pair's candidate paths (the ECMP set the schedulers
        choose from, capped at ``max_paths``), walked by :meth:`links`."""
        key = (src, dst)
        got = self._cands.get(key)
        if got is None:
            got = []
            for p in self.topology.candidate_paths(src, dst, self.max_paths):
                ls = self.links(tuple(p), src, dst)
                if isinstance(ls, str):
                    raise CheckError(f"candidate path of {src}->{dst}: {ls}")
                got.append(ls)
            self._cands[key] = got
        return got

    def name(self, link: int) -> str:
        """``"u->v"`` of link index ``link``."""
        u, v = self.edges[link]
        return f"{u}->{v}"


class _PathTable:
    """Interned (path, host pair) -> id, with each id's links (walked by
    :meth:`_Fabric.links`) as rows of a matrix padded with the dummy link L, or the
    reason the path is not one of the topology joining the pair."""

    def __init__(self, fab: _Fabric):
        self.fab = fab
        self.ids: Dict[tuple, int] = {}
        self.links: List[np.ndarray] = []
        self.err: List[Optional[str]] = []
        self.paths: List[tuple] = []
        self._mat = None
        self._bad = None

    def pid(self, path: tuple, src: str, dst: str, q: int) -> int:
        """The id of ``path`` for a flow from ``src`` to ``dst`` (pair id ``q``)."""
        key = (path, q)
        i = self.ids.get(key)
        if i is None:
            i = len(self.links)
            ls = self.fab.links(tuple(path), src, dst)
            self.err.append(ls if isinstance(ls, str) else None)
            self.links.append(np.zeros(0, np.int64) if isinstance(ls, str) else ls)
            self.paths.append(tuple(path))
            self.ids[key] = i
            self._mat = self._bad = None
        return i

    def matrix(self) -> np.ndarray:
        """(ids + 1) x width int matrix of link indices, padded with L; the last row
        (index -1) is all padding."""
        if self._mat is None:
            L = self.fab.cap.shape[0]
            w = max([len(x) for x in self.links] + [1])
            m = np.full((len(self.links) + 1, w), L, dtype=np.int64)
            for i, ls in enumerate(self.links):
                m[i, :len(ls)] = ls
            self._mat = m
        return self._mat

    def invalid(self) -> np.ndarray:
        """Per id (plus a trailing False), True when the path is not valid."""
        if self._bad is None:
            self._bad = np.array([e is not None for e in self.err] + [False], dtype=bool)
        return self._bad

    def text(self, i: int) -> str:
        """The path of id ``i`` as ``a-b-c``."""
        return "-".join(self.paths[i])


def _label(rec, k: int) -> str:
    """``record k``, with its line in the event file when it was read from one."""
    line = rec.get("_line") if isinstance(rec, dict) else None
    return f"record {k}" + (f" (line {line})" if line else "")


def _records(events: Iterable) -> Iterable[tuple]:
    """(t, t_next, flow_ids, paths, rates, remaining, finish) from EventRecords or
    JSON objects (keys ``t_s``, ``t_next_s``, ``flow_ids``, ``paths``, ``rates_bps``,
    ``remaining_bytes``, ``finish_s``; ``null`` finish = none)."""
    for k, r in enumerate(events):
        if isinstance(r, dict):
            try:
                fin = [math.inf if x is None else float(x) for x in r["finish_s"]]
                yield (float(r["t_s"]), float(r["t_next_s"]), list(r["flow_ids"]),
                       [None if p is None else tuple(p) for p in r["paths"]],
                       np.asarray(r["rates_bps"], dtype=float),
                       np.asarray(r["remaining_bytes"], dtype=float), np.asarray(fin))
            except KeyError as exc:
                raise CheckError(f"{_label(r, k)}: missing field {exc.args[0]!r}") from None
            except (TypeError, ValueError) as exc:
                raise CheckError(f"{_label(r, k)}: malformed field: {exc}") from None
        else:
            yield (float(r.t_s), float(r.t_next_s), list(r.flow_ids),
                   [None if p is None else tuple(p) for p in r.paths],
                   np.asarray(r.rates_bps, dtype=float),
                   np.asarray(r.remaining_bytes, dtype=float),
                   np.asarray(r.finish_s, dtype=float))


def isolation_bound(fab_or_topology, coflow: CoflowSpec, max_paths: Optional[int] = None) -> float:
    """The coflow's isolation bound in seconds (module docstring, ``coflow-bound``):
    max over hosts of its bits out of / into the host over the host's access capacity,
    and over flows of size * 8 / the best candidate-path bottleneck (bit/s)."""
    fab = fab_or_topology if isinstance(fab_or_topology, _Fabric) else _Fabric(
        fab_or_topology, max_paths)
    out: Dict[str, float] = {}
    inn: Dict[str, float] = {}
    best = 0.0
    for f in coflow.flows:
        bits = f.size_bytes * BITS
        out[f.src] = out.get(f.src, 0.0) + bits
        inn[f.dst] = inn.get(f.dst, 0.0) + bits
        bott = max(float(fab.cap[ls].min()) for ls in fab.candidates(f.src, f.dst))
        best = max(best, bits / bott)
    for h, b in out.items():
        best = max(best, b / fab.out_cap[h])
    for h, b in inn.items():
        best = max(best, b / fab.in_cap[h])
    return best


def check_schedule(topology: Topology, coflows: Sequence[CoflowSpec], events: Iterable,
                   level: Optional[str] = None, max_paths: Optional[int] = None,
                   ccts: Optional[Dict[str, float]] = None, sat_tol: float = 1e-6,
                   bytes_rtol: float = 1e-6, max_violations: int = 200,
                   decision_interval: float = 0.0) -> CheckReport:
    """Check a run (module docstring) and return a :class:`CheckReport`.

    Args:
        topology: the fabric the run used.
        coflows: the workload (sizes in bytes, arrivals in s).
        events: the event log, in time order: EventRecords or dicts (JSON lines).
        level: work-conservation level to check: None (no idle check), ``"path"`` or
            ``"candidates"`` (see :func:`declared_level`).
        max_paths: the scheduler's cap on candidate paths (None: the ECMP set).
        ccts: optional coflow id -> CCT (s) reported by the simulator, compared with
            the recomputed ones.
        sat_tol: a link whose residual is at most ``sat_tol * capacity`` is full.
        bytes_rtol: relative tolerance on bytes (of the flow size).
        max_violations: how many violations to keep in the list (all are counted).
        decision_interval: seconds; > 0: the scheduler's decision interval (module
            docstring, ``idle``), 0: every flow completion is a decision point.

    Raises:
        CheckError: ``level`` unknown, ``decision_interval`` negative, duplicate
            flow ids, or a malformed record.
    """
    if level not in LEVELS:
        raise CheckError(f"level: must be one of {LEVELS}, got {level!r}")
    if not decision_interval >= 0:
        raise CheckError(f"decision_interval: must be >= 0 s, got {decision_interval!r}")
    fab = _Fabric(topology, max_paths)
    rep = CheckReport()
    cap = fab.cap
    L = cap.shape[0]
    capx = np.append(cap, np.inf)  # padding link L: never the bottleneck

    def bad(kind, t, subject, detail):
        rep.counts[kind] = rep.counts.get(kind, 0) + 1
        if len(rep.violations) < max_violations:
            rep.violations.append(Violation(kind, float(t), str(subject), detail))

    specs = [f for c in coflows for f in c.flows]
    gid: Dict[str, int] = {}
    for g, f in enumerate(specs):
        if f.flow_id in gid:
            raise CheckError(f"flow_id: duplicate flow id {f.flow_id}")
        gid[f.flow_id] = g
    N = len(specs)
    size = np.array([f.size_bytes for f in specs], dtype=float)
    arr = np.array([c.arrival_s for c in coflows for _ in c.flows], dtype=float)
    pair_of: Dict[tuple, int] = {}
    pair = np.array([pair_of.setdefault((f.src, f.dst), len(pair_of)) for f in specs],
                    dtype=np.int64)
    pairs = list(pair_of)
    sent = np.zeros(N)                 # bytes delivered so far (own integral)
    finish = np.full(N, math.inf)      # own finish time (s)
    used_bott = np.zeros(N)            # best bottleneck (bit/s) among paths sent on
    live = np.zeros(N, dtype=bool)     # arrived and unfinished
    order = np.lexsort((np.arange(N), arr))
    nxt = 0
    events = list(events)
    recs = list(_records(events))
    rep.records = len(recs)
    paths_db = _PathTable(fab)
    gks = []
    home = np.full(N, -1, dtype=np.int64)  # first logged valid path id ("path" level)
    seen = np.zeros(N, dtype=bool)
    for r in recs:
        g_all = np.fromiter(map(gid.get, r[2], repeat(-1)), np.int64, len(r[2]))
        gks.append(g_all)
        if level == "path":
            ok = g_all >= 0
            for j in np.flatnonzero(ok & ~seen[np.where(ok, g_all, 0)]).tolist():
                p = r[3][j]
                g = int(g_all[j])
                if p is not None and not seen[g]:
                    pid = paths_db.pid(p, specs[g].src, specs[g].dst, int(pair[g]))
                    if paths_db.err[pid] is None:
                        home[g] = pid
                        seen[g] = True
    last_obj = np.full(N, None, dtype=object)  # per flow: last logged path object
    last_pid = np.full(N, -1, dtype=np.int64)  # and its id (-1: none)
    prev_end = 0.0
    for k, (t0, t1, fids, paths, rates, rem, fin_log) in enumerate(recs):
        n = len(fids)
        if not (len(paths) == n == rates.shape[0] == rem.shape[0] == fin_log.shape[0]):
            raise CheckError(f"{_label(events[k], k)}: fields of different lengths")
        eps_t = 1e-9 * max(1.0, abs(t0), abs(t1) if math.isfinite(t1) else 0.0)
        if t1 < t0 or t0 < prev_end - eps_t:
            bad("log", t0, _label(events[k], k),
                f"interval [{t0:.9g}, {t1:.9g}) overlaps or runs backwards (previous "
                f"ended {prev_end:.9g})")
        if t0 > prev_end + eps_t and live.any():
            bad("log", prev_end, _label(events[k], k),
                f"no decision covers [{prev_end:.9g}, {t0:.9g}) while flows wait")
        while nxt < N and arr[order[nxt]] <= t0 + eps_t:
            live[order[nxt]] = True
            nxt += 1
        prev_end = max(prev_end, t1)
        g_all = gks[k]
        for j in np.flatnonzero(g_all < 0).tolist():
            bad("log", t0, fids[j], "flow id not in the workload")
        known = g_all >= 0
        gk = np.where(known, g_all, 0)
        for j in np.flatnonzero(known & (arr[gk] > t0 + eps_t)).tolist():
            bad("log", t0, fids[j], f"logged before its coflow arrives at {arr[gk[j]]:.9g} s")
        done = known & np.isfinite(finish[gk])
        left = size[gk] - sent[gk]
        off = known & ~done & (np.abs(rem - left) > bytes_rtol * size[gk] + 1e-6)
        for j in np.flatnonzero(off).tolist():
            bad("bytes", t0, fids[j], f"log says {rem[j]:.9g} bytes left, the rates so far "
                                      f"leave {left[j]:.9g}")
        badr = known & ~(np.isfinite(rates) & (rates >= 0))
        for j in np.flatnonzero(badr).tolist():
            bad("rate", t0, fids[j], f"rate {rates[j]!r} bit/s")
        pos = known & ~badr & (rates > 0)
        for j in np.flatnonzero(pos & done).tolist():
            bad("bytes", t0, fids[j], f"sends {rates[j]:.6g} bit/s after finishing at "
                                      f"{finish[gk[j]]:.9g} s")
        pos &= ~done
        # path ids: only entries whose path object changed since the flow's last
        # record are looked up (an identity / equality test per entry, in C)
        pobj = np.fromiter(paths, dtype=object, count=n)
        changed = np.flatnonzero(known & ~(pobj == last_obj[gk]))
        for j in changed.tolist():
            p = paths[j]
            g = int(gk[j])
            last_obj[g] = p
            last_pid[g] = -1 if p is None else paths_db.pid(p, specs[g].src, specs[g].dst,
                                                          int(pair[g]))
        pid = np.where(known, last_pid[gk], -1)
        nopath = pos & (pid < 0)
        for j in np.flatnonzero(nopath).tolist():
            bad("path", t0, fids[j], f"sends {rates[j]:.6g} bit/s with no path")
        pos &= ~nopath
        invalid = paths_db.invalid()
        wrong = pos & invalid[np.maximum(pid, 0)]
        for j in np.flatnonzero(wrong).tolist():
            bad("path", t0, fids[j], paths_db.err[pid[j]])
        pos &= ~wrong
        sj = np.flatnonzero(pos)
        sg = gk[sj]
        sr = rates[sj]
        rows = paths_db.matrix()[pid[sj]]  # (sending flows x width), padded with L
        if sj.size:
            np.maximum.at(used_bott, sg, capx[rows].min(axis=1))
        # A flow finishes where its integral reaches its size: clearly inside the
        # interval, or within eps_t of its end when the log agrees (the simulator
        # may carry a sub-nanosecond remainder to the next decision instead).
        end = t0 + np.maximum(size[sg] - sent[sg], 0.0) * BITS / sr if sj.size else np.zeros(0)
        lf = fin_log[sj]
        fin_here = (end < t1 - eps_t) | ((end <= t1 + eps_t) & np.isfinite(lf))
        own_end = np.where(fin_here, np.minimum(end, t1), math.inf)
        mism = np.isfinite(lf) & (np.abs(lf - np.minimum(end, t1)) > 10 * eps_t)
        for i in np.flatnonzero(mism).tolist():
            bad("bytes", t0, fids[sj[i]], f"log finishes it at {lf[i]:.12g} s, its rates "
                                              f"deliver its size at {end[i]:.12g} s")
        late = ~np.isfinite(lf) & (end < t1 - eps_t)
        for i in np.flatnonzero(late).tolist():
            bad("bytes", t0, fids[sj[i]], f"its rates deliver its size at {end[i]:.12g} s, "
                                              f"the log keeps it running to {t1:.12g} s")
        # pieces between recomputed finishes
        cuts = sorted({t0} | {e for e in own_end[fin_here].tolist() if t0 < e < t1})
        ends = cuts[1:] + [t1]
        if level is not None and decision_interval > 0 and len(cuts) > 1:
            late_s = t1 - cuts[1] - decision_interval
            if late_s > 1e-9 * max(1.0, abs(t1)):
                bad("idle", cuts[1], "-", f"a flow finished at {cuts[1]:.12g} s and the "
                                          f"next decision came {late_s:.6g} s after the "
                                          f"decision interval {decision_interval:.6g} s")
        W = rows.shape[1]
        for a, b in zip(cuts, ends):
            run = own_end > a
            load = np.bincount(rows.ravel(), weights=np.repeat(np.where(run, sr, 0.0), W),
                               minlength=L + 1)[:L]
            if L:
                rep.max_utilisation = max(rep.max_utilisation, float((load / cap).max()))
            if a == t0:
                for l in np.flatnonzero(load > cap * (1 + CAP_TOL)).tolist():
                    bad("capacity", a, fab.name(l), f"carries {load[l]:.12g} bit/s over its "
                                                    f"capacity {cap[l]:.12g} bit/s")
            if level is None or b - a <= 1e-9 * max(1.0, abs(b)):
                continue
            if decision_interval > 0 and a != t0:
                continue  # a finished flow's bandwidth idles until the next decision
            free = np.append((cap - load) > sat_tol * cap, True)  # padding: free
            n_idle = 0
            ri = np.flatnonzero(run)
            idle = free[rows[ri]].all(axis=1)
            for i in ri[idle].tolist():
                j = int(sj[i])
                n_idle += 1
                bad("idle", a, fids[j], f"sends {rates[j]:.9g} bit/s on {'-'.join(paths[j])} "
                                        f"whose links all have room, for {b - a:.6g} s")
            wait = live.copy()
            wait[sg[run]] = False
            wait[sg[~run]] = False  # finished by ``a``
            wg = np.flatnonzero(wait)
            if level == "path":
                wg = wg[home[wg] >= 0]
                idle_w = free[paths_db.matrix()[home[wg]]].all(axis=1)
                for g in wg[idle_w].tolist():
                    n_idle += 1
                    bad("idle", a, specs[g].flow_id, f"waits beside its free path "
                                                     f"{paths_db.text(home[g])} for "
                                                     f"{b - a:.6g} s")
            elif wg.size:
                open_pairs = {}
                for q in np.unique(pair[wg]).tolist():
                    cl = fab.candidates(*pairs[q])
                    ok = [ls for ls in cl if free[ls].all()]
                    if ok:
                        open_pairs[q] = ok[0]
                for g in wg.tolist():
                    ls = open_pairs.get(int(pair[g]))
                    if ls is not None:
                        n_idle += 1
                        bad("idle", a, specs[g].flow_id,
                            f"waits while a candidate path "
                            f"({'-'.join(fab.edges[l][0] for l in ls.tolist())}-"
                            f"{specs[g].dst}) has room on every link, for {b - a:.6g} s")
            if n_idle:
                rep.idle_s += b - a
        # integrate
        if sj.size:
            dt = np.where(fin_here, 0.0, t1 - t0)
            sent[sg] += sr * dt / BITS
            fg = sg[fin_here]
            sent[fg] = size[fg]
            finish[fg] = own_end[fin_here]
            live[fg] = False
    for g in order.tolist():
        f = specs[g]
        if not math.isfinite(finish[g]):
            bad("bytes", prev_end, f.flow_id, f"delivered {sent[g]:.9g} of "
                                              f"{f.size_bytes:.9g} bytes")
            continue
        fct = finish[g] - arr[g]
        need = f.size_bytes * BITS / used_bott[g]
        if fct < need * (1 - 1e-9):
            bad("flow-bound", finish[g], f.flow_id, f"finishes {fct:.9g} s after arrival; its "
                                                    f"bytes need {need:.9g} s at its bottleneck")
    rep.flow_finish_s = {specs[g].flow_id: float(finish[g]) for g in range(N)
                         if math.isfinite(finish[g])}
    o = 0
    for c in coflows:
        fe = finish[o:o + len(c.flows)]
        o += len(c.flows)
        if not np.isfinite(fe).all():
            continue
        done = float(fe.max())
        rep.coflow_finish_s[c.coflow_id] = done
        iso = isolation_bound(fab, c)
        got = [("recomputed", done - c.arrival_s)]
        if ccts is not None:
            if c.coflow_id not in ccts:
                bad("cct", done, c.coflow_id, "no CCT reported")
            else:
                rc = float(ccts[c.coflow_id])
                if abs(rc - (done - c.arrival_s)) > 1e-9 * max(1.0, done) + 1e-9:
                    bad("cct", done, c.coflow_id, f"reported CCT {rc:.12g} s, recomputed "
                                                  f"{done - c.arrival_s:.12g} s")
                got.append(("reported", rc))
        for what, cct in got:
            if cct < iso * (1 - 1e-9):
                bad("coflow-bound", done, c.coflow_id, f"{what} CCT {cct:.9g} s beats its "
                                                       f"isolation bound {iso:.9g} s")
    return rep


# -- JSON lines ------------------------------------------------------------------------
def _num(x: float):
    return None if not math.isfinite(x) else x


def event_to_json(rec) -> dict:
    """One EventRecord as a JSON-ready dict (``kind: "event"``; inf finish -> null)."""
    return {"kind": "event", "t_s": rec.t_s, "t_next_s": _num(rec.t_next_s),
            "flow_ids": list(rec.flow_ids),
            "paths": [None if p is None else list(p) for p in rec.paths],
            "rates_bps": np.asarray(rec.rates_bps, dtype=float).tolist(),
            "remaining_bytes": np.asarray(rec.remaining_bytes, dtype=float).tolist(),
            "finish_s": [_num(x) for x in np.asarray(rec.finish_s, dtype=float).tolist()]}


def write_run(fh, header: dict, log: Sequence, ccts: Dict[str, float]) -> None:
    """Append one run to an open text file as JSON lines: a ``header`` object (the
    caller's dict plus ``kind``), one ``event`` object per record, a ``result`` object
    with the simulator's CCT per coflow id (s)."""
    fh.write(json.dumps({"kind": "header", **header}) + "\n")
    for rec in log:
        fh.write(json.dumps(event_to_json(rec)) + "\n")
    fh.write(json.dumps({"kind": "result", "ccts": ccts}) + "\n")


def read_runs(path: str) -> List[Tuple[dict, List[dict], Optional[dict]]]:
    """The runs of a JSON-lines event file: (header, event dicts, ccts or None).

    Raises:
        CheckError: a line that is not JSON, or events before any header.
    """
    runs: List[list] = []
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CheckError(f"{path}:{n}: not JSON: {exc}") from None
            if not isinstance(obj, dict):
                raise CheckError(f"{path}:{n}: expected a JSON object, got "
                                 f"{type(obj).__name__}")
            kind = obj.get("kind")
            obj["_line"] = n
            if kind == "header":
                runs.append([obj, [], None])
            elif not runs:
                raise CheckError(f"{path}:{n}: {kind} line before any header")
            elif kind == "event":
                if obj.get("t_next_s") is None:
                    obj["t_next_s"] = math.inf
                runs[-1][1].append(obj)
            elif kind == "result":
                runs[-1][2] = obj.get("ccts")
            else:
                raise CheckError(f"{path}:{n}: unknown kind {kind!r}")
    return [tuple(r) for r in runs]
