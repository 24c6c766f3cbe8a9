"""The site broker: the load on each link that is not a scheduled coflow, and the
residual capacity the schedulers plan on.

Source: RAPIER Section III-B ("latency-sensitive individual flows and small coflows
are treated as background traffic ... routed over the network using ECMP.  A site
broker periodically predicts the usage of background traffic in each link, and
derives the residual bandwidth for coflow scheduling") and Section III-A ("Ensure
coexistence").  The paper names no estimator; this module uses an exponentially
weighted moving average.

Pure: no Ryu, no clock.  The controller's Ryu shell polls port counters every
``period_s`` and the simulator reads its own per-link counters; both hand
cumulative byte counters to :meth:`SiteBroker.observe`.

Measurement (per directed link ``l``, between two observations ``dt`` seconds
apart)::

    sample_l = (port_bytes_l delta - coflow_bytes_l delta) * 8 / dt   bit/s

``port_bytes_l`` counts every byte the link carried (switch port counters);
``coflow_bytes_l`` the bytes of scheduled coflow flows routed over ``l`` (their
own rules' counters).  A link whose counter is unknown (NaN) or went backwards (a
switch that reconnected) gives no sample; its prediction is kept.  A sample may
be negative: when the coflow counters lag the port counters (Open vSwitch moves
its datapath's counts into the OpenFlow rules' counters every few hundred
milliseconds, while port counters are current), a window in which a scheduled
flow slowed down or ended counts too little of it and the next window too much;
averaging the signed samples cancels the two, where clipping each at 0 would
leave the first as phantom background.  Steady windows only: a link gives no sample
in a window where its port rate or its scheduled flows' rate (bytes x 8 / dt)
moved by more than ``steady_fraction`` of its capacity since the window before (a
flow started, ended or changed rate: the lag puts part of the change in the wrong
window); such a change skips that window and the next, and the prediction follows
a step of the background one window later.  ``steady_fraction = 0`` takes every
window.

Estimator (the EWMA, weight ``w`` on the newest sample)::

    ewma_l <- sample_l                          (first sample)
    ewma_l <- w * sample_l + (1 - w) * ewma_l   (afterwards)
    prediction_l = max(0, ewma_l)

Residual capacity (what the schedulers see as link capacity), with ``C_l`` the
link's capacity, ``r`` = ``reserve_fraction`` (a share of every link always left
to background) and ``m`` = ``min_fraction`` (coflows never get less)::

    residual_l = min(C_l * (1 - r), max(C_l * m, C_l - prediction_l))

The residual in force (:attr:`SiteBroker.in_force_bps`) of a link changes only when
its residual moved by more than ``change_fraction * C_l`` since that link's
residual in force was set: small fluctuations (the ACKs of scheduled flows, a few
per cent of a link) do not re-plan every coflow.  :attr:`version`
counts those changes.

Units: bytes, bit/s, seconds.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import RapierError
from .wrapper import SchedulerWrapper

BITS = 8.0

__all__ = ["BrokerError", "BrokerSettings", "ResidualScheduler", "SiteBroker",
           "residual_capacity"]


class BrokerError(RapierError, ValueError):
    """A bad broker setting or counter array (the message names the field)."""


@dataclass(frozen=True)
class BrokerSettings:
    """The broker's parameters (module docstring for the formulas).

    Attributes:
        period_s: seconds between two observations (port-counter polls).
        weight: EWMA weight of the newest sample, in (0, 1].
        reserve_fraction: share of each link's capacity always left to background,
            in [0, 1).
        min_fraction: share of each link's capacity coflows always get, in
            [0, 1 - reserve_fraction].
        change_fraction: a link's residual must move by more than this share of its
            capacity for its residual in force to change, >= 0.
        steady_fraction: a window whose port or scheduled rate on a link moved by
            more than this share of its capacity since the window before gives no
            sample on that link, >= 0 (0: every window is taken).
    """

    period_s: float = 1.0
    weight: float = 0.5
    reserve_fraction: float = 0.0
    min_fraction: float = 0.1
    change_fraction: float = 0.1
    steady_fraction: float = 0.05

    def validate(self) -> "BrokerSettings":
        """Return self.  Raises :class:`BrokerError` naming the first bad field."""
        def num(name):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise BrokerError(f"{name}: must be a finite number, got {v!r}")
            return float(v)

        if not num("period_s") > 0:
            raise BrokerError(f"period_s: must be > 0 seconds, got {self.period_s!r}")
        if not 0 < num("weight") <= 1:
            raise BrokerError(f"weight: must be in (0, 1], got {self.weight!r}")
        if not 0 <= num("reserve_fraction") < 1:
            raise BrokerError(f"reserve_fraction: must be in [0, 1), got "
                              f"{self.reserve_fraction!r}")
        if not 0 <= num("min_fraction") <= 1 - self.reserve_fraction:
            raise BrokerError(f"min_fraction: must be in [0, 1 - reserve_fraction = "
                              f"{1 - self.reserve_fraction:g}], got {self.min_fraction!r}")
        if not num("change_fraction") >= 0:
            raise BrokerError(f"change_fraction: must be >= 0, got {self.change_fraction!r}")
        if not num("steady_fraction") >= 0:
            raise BrokerError(f"steady_fraction: must be >= 0, got {self.steady_fraction!r}")
        return self


def residual_capacity(capacity_bps: np.ndarray, prediction_bps: np.ndarray,
                      reserve_fraction: float = 0.0, min_fraction: float = 0.0) -> np.ndarray:
    """Per link: ``min(C (1 - reserve_fraction), max(C min_fraction, C - prediction))``.

    Args:
        capacity_bps: (L,) link capacities, bit/s.
        prediction_bps: (L,) predicted background load, bit/s (>= 0).
        reserve_fraction, min_fraction: see :class:`BrokerSettings`.

    Returns:
        (L,) float array, bit/s.
    """
    cap = np.asarray(capacity_bps, dtype=float)
    pred = np.asarray(prediction_bps, dtype=float)
    return np.minimum(cap * (1.0 - reserve_fraction),
                      np.maximum(cap * min_fraction, cap - pred))


class SiteBroker:
    """Background prediction and residual capacity per directed link.

    Args:
        capacity_bps: (L,) link capacities in bit/s, in the topology's link order
            (``Topology.capacity``).
        settings: :class:`BrokerSettings` (validated here).
        links: optional (L,) link names ``(u, v)`` for :meth:`view`.

    Attributes:
        sample_bps: (L,) the last measured background load (NaN: none yet; may be
            negative, see the module docstring).
        ewma_bps: (L,) the EWMA of the samples (0 until a link's first sample).
        prediction_bps: (L,) ``max(0, ewma_bps)``, the predicted background.
        in_force_bps: (L,) the residual capacity the schedulers plan on.
        version: increments each time :attr:`in_force_bps` changes.
        observations: number of :meth:`observe` calls that measured something.

    Raises:
        BrokerError: a bad setting, or capacities that are not positive.
    """

    def __init__(self, capacity_bps, settings: Optional[BrokerSettings] = None,
                 links: Optional[Sequence[Tuple[str, str]]] = None):
        self.settings = (settings or BrokerSettings()).validate()
        self.capacity_bps = np.array(capacity_bps, dtype=float)
        if self.capacity_bps.ndim != 1 or not np.all(self.capacity_bps > 0):
            raise BrokerError("capacity_bps: must be a 1-D array of positive bit/s")
        n = self.capacity_bps.shape[0]
        self.links = list(links) if links is not None else None
        self.sample_bps = np.full(n, np.nan)
        self.ewma_bps = np.zeros(n)
        s = self.settings
        self.in_force_bps = residual_capacity(self.capacity_bps, self.prediction_bps,
                                              s.reserve_fraction, s.min_fraction)
        self.version = 0
        self.observations = 0
        self._seen = np.zeros(n, dtype=bool)
        self._last: Optional[Tuple[float, np.ndarray, np.ndarray]] = None
        #: (port, scheduled) bit/s of each link's last window (NaN: none)
        self._rates = (np.full(n, np.nan), np.full(n, np.nan))
        #: per link, samples skipped as unsteady
        self.skipped = np.zeros(n, dtype=np.int64)
        self.last_observe_s: Optional[float] = None

    @property
    def prediction_bps(self) -> np.ndarray:
        """(L,) the predicted background load, bit/s: ``max(0, ewma_bps)``."""
        return np.maximum(self.ewma_bps, 0.0)

    @property
    def residual_bps(self) -> np.ndarray:
        """(L,) the residual from the current prediction (bit/s); equals
        :attr:`in_force_bps` except for changes below ``change_fraction``."""
        s = self.settings
        return residual_capacity(self.capacity_bps, self.prediction_bps,
                                 s.reserve_fraction, s.min_fraction)

    def observe(self, now: float, port_bytes, coflow_bytes) -> bool:
        """One observation of cumulative counters at ``now`` (s).

        Args:
            now: time of the counters (s); must grow between calls (a call at the
                same time or earlier only re-bases the counters).
            port_bytes: (L,) cumulative bytes each link carried (NaN: unknown).
            coflow_bytes: (L,) cumulative bytes of scheduled coflow flows on each
                link (NaN: unknown).

        Returns:
            True when the residual in force changed (:attr:`version` grew): the
            caller should ask its scheduler for a new decision.

        Raises:
            BrokerError: an array of the wrong length.
        """
        n = self.capacity_bps.shape[0]
        pb = np.array(port_bytes, dtype=float)
        cb = np.array(coflow_bytes, dtype=float)
        for name, a in (("port_bytes", pb), ("coflow_bytes", cb)):
            if a.shape != (n,):
                raise BrokerError(f"{name}: must have {n} entries (one per link), got "
                                  f"shape {a.shape}")
        last = self._last
        self._last = (float(now), pb, cb)
        self.last_observe_s = float(now)
        if last is None or not now > last[0]:
            return False
        dt = float(now) - last[0]
        dp = pb - last[1]
        dc = cb - last[2]
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(dp) & np.isfinite(dc) & (dp >= 0) & (dc >= 0)
        pr, cr = dp * BITS / dt, dc * BITS / dt
        thr = self.settings.steady_fraction
        if thr > 0:
            lim = thr * self.capacity_bps
            with np.errstate(invalid="ignore"):
                moved = ok & ((np.abs(pr - self._rates[0]) > lim)
                              | (np.abs(cr - self._rates[1]) > lim))
            self._rates = (np.where(ok, pr, np.nan), np.where(ok, cr, np.nan))
            self.skipped += moved
            ok &= ~moved
        if not ok.any():
            return False
        sample = (dp[ok] - dc[ok]) * BITS / dt
        self.sample_bps[ok] = sample
        w = self.settings.weight
        first = ok.copy()
        first[ok] = ~self._seen[ok]
        again = ok & ~first
        self.ewma_bps[first] = self.sample_bps[first]
        self.ewma_bps[again] = (w * self.sample_bps[again] + (1.0 - w) * self.ewma_bps[again])
        self._seen |= ok
        self.observations += 1
        return self._refresh()

    def _refresh(self) -> bool:
        new = self.residual_bps
        move = np.abs(new - self.in_force_bps) > self.settings.change_fraction * self.capacity_bps
        if np.any(move):
            self.in_force_bps = np.where(move, new, self.in_force_bps)
            self.version += 1
            return True
        return False

    def view(self) -> List[Dict[str, object]]:
        """Per link, JSON-ready: ``link`` ("u-v" when names were given, else the
        index), ``capacity_bps``, ``sample_bps`` (None before the first sample),
        ``prediction_bps``, ``residual_bps`` (from the current prediction) and
        ``in_force_bps`` (what the schedulers plan on)."""
        res = self.residual_bps
        out = []
        for i in range(self.capacity_bps.shape[0]):
            s = float(self.sample_bps[i])
            out.append({
                "link": (f"{self.links[i][0]}-{self.links[i][1]}" if self.links is not None
                         else i),
                "capacity_bps": float(self.capacity_bps[i]),
                "sample_bps": None if math.isnan(s) else s,
                "prediction_bps": float(self.prediction_bps[i]),
                "residual_bps": float(res[i]),
                "in_force_bps": float(self.in_force_bps[i])})
        return out


class ResidualScheduler(SchedulerWrapper):
    """A scheduler that plans on the broker's residual capacity.

    Wraps any scheduler of :mod:`rapier_app.scheduling` as the controller's
    :class:`~rapier_app.controller.links.LinkAwareScheduler` does
    (:class:`~rapier_app.core.wrapper.SchedulerWrapper`); every attribute other than
    :meth:`schedule` is the wrapped one's.
    Before each decision, when :attr:`SiteBroker.version` changed since the last
    one, the wrapped scheduler gets :attr:`SiteBroker.in_force_bps` through
    :meth:`~rapier_app.scheduling.base.Scheduler.set_capacity` (its own copy of the
    topology with those capacities; the shared topology is not modified).

    Args:
        inner: the scheduler.
        broker: the :class:`SiteBroker` of the same topology (its link order).
    """

    def __init__(self, inner, broker: SiteBroker):
        super().__init__(inner)
        self.broker = broker
        self._applied = 0  # version 0: the full-capacity residual the inner starts with
        if np.any(broker.in_force_bps != np.asarray(inner.topology.capacity, dtype=float)):
            self._applied = -1  # a floor below the capacity: apply it before deciding

    def schedule(self, now: float, coflows):
        """The wrapped scheduler's decision at ``now`` (s) on the residual capacity."""
        b = self.broker
        if b.version != self._applied:
            self.inner.set_capacity(b.in_force_bps)
            self._applied = b.version
        return self.inner.schedule(now, coflows)


def private_topology(topology):
    """A shallow copy of ``topology`` whose ``capacity`` array can be replaced
    without touching ``topology`` (graph, link index and path caches shared)."""
    view = copy.copy(topology)
    view.capacity = np.array(topology.capacity, dtype=float)
    return view
