"""Background traffic in the flow-level simulator, seen through the site broker.

RAPIER Section III-B: traffic that is not a scheduled coflow (latency-sensitive
flows, small coflows) goes over ECMP unshaped, and a site broker predicts its load
per link so that coflows are scheduled on the residual capacity.  This module
models both sides at scale:

* :class:`BackgroundLoad` -- what the background sends: a piecewise-constant load
  per directed link (bit/s), from a constant, a trace file, or Poisson small flows
  (:func:`parse_background`, the ``rapier-sim --background SPEC`` option).
* :class:`BackgroundNetwork` -- a scheduler wrapper standing for the network and
  the controller around the scheduler.  Every ``period_s`` it hands the broker
  (:class:`~rapier_app.core.broker.SiteBroker`, the controller's class) the
  cumulative bytes of each link, as port counters would count them (the scheduled
  flows' bytes, which the simulator counts per link in :attr:`link_bytes`, plus the
  background's), and the scheduled flows' bytes; the scheduler only ever sees the
  broker's residual capacity (:class:`~rapier_app.core.broker.ResidualScheduler`).
  The rates it returns are what the network delivers: on a link where the
  scheduled rates plus the true background exceed the capacity (the prediction
  was low), the background keeps its rate and every scheduled flow crossing the
  link is scaled by ``(capacity - background) / scheduled load`` (the smallest
  factor over its links), as unshaped traffic that was there first would hold
  its share of a rate-limited queue.  Decisions also happen at every broker tick
  and at every change of the background.

Background spec strings (all rates in bit/s, sizes in bytes, times in seconds):

* ``const:BPS`` -- every directed link carries ``BPS`` (capped at its capacity);
  ``const:F%`` -- ``F`` percent of each link's capacity.
* ``trace:PATH`` -- a CSV file with lines ``time_s,u,v,bps``: from ``time_s`` on,
  the directed link ``u -> v`` (node names of the topology) carries ``bps``
  (until that link's next line); ``#`` starts a comment.  Before a link's first
  line it carries nothing.
* ``poisson:RATE,BYTES,BPS[,HORIZON_S]`` -- small flows arrive as a Poisson
  process of ``RATE`` per second between uniformly random host pairs (seeded by the
  run's seed), each on one of its pair's ECMP paths, sending ``BYTES`` at ``BPS``
  (so lasting ``BYTES * 8 / BPS`` s), until ``HORIZON_S`` (default 3600 s).  Loads
  of overlapping flows add up (capped at capacity).

Off by default: without ``--background`` nothing here runs.
"""

from __future__ import annotations

import csv
import math
import zlib
from typing import List, Optional, Sequence, Tuple

import numpy as np

from topologies import Topology, TopologyError

from ..core.broker import BrokerSettings, ResidualScheduler, SiteBroker
from ..core.model import Allocation, Schedule
from ..core.wrapper import SchedulerWrapper
from ..errors import RapierError

BITS = 8.0

__all__ = ["BackgroundError", "BackgroundLoad", "BackgroundNetwork", "parse_background"]


class BackgroundError(RapierError, ValueError):
    """A background spec or trace file that does not parse (names the field/line)."""


class BackgroundLoad:
    """A piecewise-constant background load per directed link.

    Args:
        topology: the fabric (its link order and capacities).
        times: (K,) increasing change times in seconds, ``times[0] == 0``.
        loads: (K, L) bit/s; row ``k`` holds from ``times[k]`` until
            ``times[k + 1]``.  Clipped to ``[0, capacity]``.

    Raises:
        BackgroundError: shapes that do not match, or times not increasing from 0.
    """

    def __init__(self, topology: Topology, times, loads):
        self.topology = topology
        t = np.asarray(times, dtype=float)
        ld = np.asarray(loads, dtype=float)
        n = len(topology.capacity)
        if t.ndim != 1 or t.size == 0 or t[0] != 0.0 or np.any(np.diff(t) <= 0):
            raise BackgroundError("times: must start at 0 and increase")
        if ld.shape != (t.size, n):
            raise BackgroundError(f"loads: must be ({t.size}, {n}), got {ld.shape}")
        self.times = t
        self.loads = np.clip(ld, 0.0, np.asarray(topology.capacity, dtype=float))
        # cumulative bytes per link at each change time
        widths = np.diff(t)
        cum = np.zeros_like(self.loads)
        if t.size > 1:
            cum[1:] = np.cumsum(self.loads[:-1] * widths[:, None] / BITS, axis=0)
        self._cum = cum

    def _row(self, t: float) -> int:
        return max(int(np.searchsorted(self.times, t, side="right")) - 1, 0)

    def load_at(self, t: float) -> np.ndarray:
        """(L,) bit/s in force at ``t`` (s)."""
        return self.loads[self._row(t)]

    def next_change(self, t: float) -> float:
        """The first change time after ``t`` (s), or inf."""
        k = int(np.searchsorted(self.times, t, side="right"))
        return float(self.times[k]) if k < self.times.size else math.inf

    def bytes_until(self, t: float) -> np.ndarray:
        """(L,) bytes each link carried from 0 to ``t`` (s)."""
        k = self._row(t)
        return self._cum[k] + self.loads[k] * (max(t, 0.0) - self.times[k]) / BITS

    # -- constructors ----------------------------------------------------------------
    @classmethod
    def constant(cls, topology: Topology, bps: float) -> "BackgroundLoad":
        """Every directed link carries ``bps`` bit/s from time 0."""
        return cls(topology, [0.0], np.full((1, len(topology.capacity)), float(bps)))

    @classmethod
    def fraction(cls, topology: Topology, share: float) -> "BackgroundLoad":
        """Every directed link carries ``share`` (0..1) of its capacity."""
        cap = np.asarray(topology.capacity, dtype=float)
        return cls(topology, [0.0], (cap * float(share))[None, :])

    @classmethod
    def from_changes(cls, topology: Topology,
                     changes: Sequence[Tuple[float, int, float]]) -> "BackgroundLoad":
        """From ``(time_s, link index, bps)`` changes: the link carries ``bps`` from
        ``time_s`` until its next change (0 before its first)."""
        n = len(topology.capacity)
        ts = sorted({0.0} | {float(t) for t, _, _ in changes})
        loads = np.zeros((len(ts), n))
        cur = np.zeros(n)
        by_t: dict = {}
        for t, l, b in sorted(changes, key=lambda c: c[0]):
            by_t.setdefault(float(t), []).append((l, b))
        for k, t in enumerate(ts):
            for l, b in by_t.get(t, ()):
                cur[l] = b
            loads[k] = cur
        return cls(topology, ts, loads)

    @classmethod
    def from_trace(cls, topology: Topology, path: str) -> "BackgroundLoad":
        """Read a ``time_s,u,v,bps`` CSV (module docstring).

        Raises:
            BackgroundError: unreadable file, or a line with a bad field (names the
                file, line and field).
        """
        changes = []
        try:
            fh = open(path, newline="")
        except OSError as exc:
            raise BackgroundError(f"trace: cannot read {path}: {exc.strerror}") from None
        with fh:
            for no, row in enumerate(csv.reader(fh), 1):
                if not row or row[0].strip().startswith("#"):
                    continue
                where = f"{path}:{no}"
                if len(row) != 4:
                    raise BackgroundError(f"{where}: expected time_s,u,v,bps, got {len(row)} "
                                          f"fields")
                try:
                    t = float(row[0])
                except ValueError:
                    raise BackgroundError(f"{where}: time_s: not a number: {row[0]!r}") from None
                try:
                    b = float(row[3])
                except ValueError:
                    raise BackgroundError(f"{where}: bps: not a number: {row[3]!r}") from None
                if not (t >= 0 and math.isfinite(t)):
                    raise BackgroundError(f"{where}: time_s: must be >= 0, got {row[0]!r}")
                if not (b >= 0 and math.isfinite(b)):
                    raise BackgroundError(f"{where}: bps: must be >= 0, got {row[3]!r}")
                link = (row[1].strip(), row[2].strip())
                lid = topology.link_ids.get(link)
                if lid is None:
                    raise BackgroundError(f"{where}: link: {link[0]}->{link[1]} is not a link "
                                          f"of {topology.name}")
                changes.append((t, lid, b))
        return cls.from_changes(topology, changes)

    @classmethod
    def poisson(cls, topology: Topology, rate_per_s: float, size_bytes: float,
                flow_bps: float, horizon_s: float = 3600.0, seed: int = 0) -> "BackgroundLoad":
        """Poisson small flows (module docstring); seeded by ``seed``."""
        rng = np.random.default_rng(seed)
        hosts = topology.hosts
        if len(hosts) < 2:
            raise BackgroundError("poisson: the topology needs at least 2 hosts")
        dur = size_bytes * BITS / flow_bps
        deltas: dict = {}
        t = float(rng.exponential(1.0 / rate_per_s))
        k = 0
        while t < horizon_s:
            i, j = rng.choice(len(hosts), size=2, replace=False)
            src, dst = hosts[int(i)], hosts[int(j)]
            paths = topology.candidate_paths(src, dst)
            h = zlib.crc32(f"{seed}|{src}|{dst}|bg{k}".encode())
            links = topology.path_links(paths[h % len(paths)])
            for when, sign in ((t, 1.0), (t + dur, -1.0)):
                d = deltas.setdefault(when, np.zeros(len(topology.capacity)))
                d[links] += sign * flow_bps
            t += float(rng.exponential(1.0 / rate_per_s))
            k += 1
        ts = sorted({0.0} | set(deltas))
        loads = np.zeros((len(ts), len(topology.capacity)))
        cur = np.zeros(len(topology.capacity))
        for n, when in enumerate(ts):
            if when in deltas:
                cur = cur + deltas[when]
            loads[n] = np.maximum(cur, 0.0)
        return cls(topology, ts, loads)


def parse_background(spec: str, topology: Topology, seed: int = 0) -> BackgroundLoad:
    """The :class:`BackgroundLoad` of a spec string (module docstring).

    Raises:
        BackgroundError: an unknown kind or a bad number, naming the field.
    """
    kind, _, arg = str(spec).partition(":")
    kind = kind.strip().lower()

    def num(text: str, field: str, positive: bool = True) -> float:
        try:
            v = float(text)
        except ValueError:
            raise BackgroundError(f"--background {kind}: {field}: not a number: "
                                  f"{text!r}") from None
        if not math.isfinite(v) or v < 0 or (positive and v == 0):
            raise BackgroundError(f"--background {kind}: {field}: must be "
                                  f"{'> 0' if positive else '>= 0'}, got {text!r}")
        return v

    if kind == "const":
        a = arg.strip()
        if a.endswith("%"):
            share = num(a[:-1], "percent", positive=False)
            if share > 100:
                raise BackgroundError(f"--background const: percent: must be <= 100, got {a}")
            return BackgroundLoad.fraction(topology, share / 100.0)
        return BackgroundLoad.constant(topology, num(a, "bps", positive=False))
    if kind == "trace":
        if not arg:
            raise BackgroundError("--background trace: PATH missing")
        return BackgroundLoad.from_trace(topology, arg)
    if kind == "poisson":
        parts = [p.strip() for p in arg.split(",")]
        if len(parts) not in (3, 4):
            raise BackgroundError("--background poisson: expected RATE,BYTES,BPS[,HORIZON_S]")
        rate = num(parts[0], "RATE")
        size = num(parts[1], "BYTES")
        bps = num(parts[2], "BPS")
        horizon = num(parts[3], "HORIZON_S") if len(parts) == 4 else 3600.0
        return BackgroundLoad.poisson(topology, rate, size, bps, horizon, seed)
    raise BackgroundError(f"--background: unknown kind {kind!r} (const:BPS, const:F%, "
                          f"trace:PATH, poisson:RATE,BYTES,BPS[,HORIZON_S])")


class BackgroundNetwork(SchedulerWrapper):
    """A scheduler run beside background traffic (module docstring).

    Args:
        inner: the scheduler (built for ``topology``).
        topology: the fabric; its capacities are the physical ones.
        load: the :class:`BackgroundLoad`.
        settings: the broker's :class:`~rapier_app.core.broker.BrokerSettings`.

    Attributes:
        broker: the :class:`~rapier_app.core.broker.SiteBroker`.
        link_bytes: (L,) cumulative bytes of scheduled flows per link; the
            simulator adds to it (its per-link counters).
        squeezed: decisions whose rates had to be cut to fit the true background.
    """

    not_forwarded = ("inner", "planner")
    volatile_schedules = False
    work_conserving = None  # a squeezed schedule leaves no room by design

    def __init__(self, inner, topology: Topology, load: BackgroundLoad,
                 settings: Optional[BrokerSettings] = None):
        super().__init__(inner)
        self.topology = topology
        self.load = load
        self.broker = SiteBroker(topology.capacity, settings, topology.links)
        self.planner = ResidualScheduler(inner, self.broker)
        self.link_bytes = np.zeros(len(topology.capacity))
        self._tick = 1  # the next broker tick is _tick * period_s
        self.squeezed = 0

    def _next_tick_s(self) -> float:
        return self._tick * self.broker.settings.period_s

    def next_wakeup(self, now: float) -> Optional[float]:
        """The earliest of the inner scheduler's wake-up, the next broker tick and
        the next change of the background (s)."""
        ts = [self._next_tick_s(), self.load.next_change(now)]
        w = self.inner.next_wakeup(now)
        if w is not None:
            ts.append(w)
        t = min(ts)
        return t if math.isfinite(t) else None

    def observe_until(self, now: float) -> None:
        """Hand the broker every tick up to ``now`` (s): port bytes = scheduled bytes
        (:attr:`link_bytes`) + background bytes, and the scheduled bytes."""
        while self._next_tick_s() <= now * (1 + 1e-12) + 1e-12:
            t = self._next_tick_s()
            self.broker.observe(t, self.link_bytes + self.load.bytes_until(t),
                                self.link_bytes)
            self._tick += 1

    def schedule(self, now: float, states) -> Schedule:
        """The inner scheduler's decision on the broker's residual, squeezed to what
        the links can carry beside the true background (module docstring)."""
        self.observe_until(now)
        sched = self.planner.schedule(now, states)
        return self._squeeze(now, sched)

    def _squeeze(self, now: float, sched: Schedule) -> Schedule:
        topo = self.topology
        bg = self.load.load_at(now)
        if not bg.any():
            return sched
        vec = sched.vectors()
        if vec is not None:
            items = [(f.flow_id, p, r) for f, p, r in zip(vec[0], vec[1], vec[2].tolist())]
        else:
            items = [(fid, a.path, a.rate_bps) for fid, a in sched.allocations.items()]
        cap = np.asarray(topo.capacity, dtype=float)
        load = np.zeros(cap.shape[0])
        links: List[Optional[np.ndarray]] = []
        for _, p, r in items:
            ls = None
            if p is not None and r > 0:
                try:
                    ls = topo.path_links(p)
                except TopologyError:
                    ls = None  # the simulator names the bad path
                if ls is not None:
                    load[ls] += r
            links.append(ls)
        avail = np.maximum(cap - bg, 0.0)
        if not np.any(load > avail * (1 + 1e-9) + 1e-6):
            return sched
        factor = np.ones(cap.shape[0])
        busy = load > 0
        factor[busy] = np.minimum(1.0, avail[busy] / load[busy])
        out = {}
        for (fid, p, r), ls in zip(items, links):
            if p is None:
                continue
            k = float(factor[ls].min()) if ls is not None and ls.size else 1.0
            out[fid] = Allocation(p, r * k)
        self.squeezed += 1
        return Schedule(out, list(sched.order), dict(sched.fallback), dict(sched.info))
