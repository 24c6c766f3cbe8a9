"""The state one simulator run shares between its events.

:class:`SimState` is what :mod:`rapier_app.sim.steps` reads and updates at every
event (clock, active flows, per-flow arrays, kept link loads); :class:`Interval` is
one step's outcome, what a decision puts in force until the next event.

A flow gets a global index (``FlowState._sim_idx``) when its coflow arrives;
per-flow ("global") arrays are indexed by it and only grow.  The active flows also
have a *position* (coflow arrival order, then flow order) that moves only when
flows finish; a schedule's rates and paths are read per position.

Units: bytes, bit/s, seconds.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Dict, List, Sequence

import numpy as np

from topologies import Topology

from ..core.model import CoflowState, FlowState, InfoPolicy
from .. import kernels as _kernels
from ..scheduling import Scheduler

#: a FlowState's global index
flow_index = attrgetter("_sim_idx")


def link_load(glob_P: np.ndarray, glob_len: np.ndarray, gi: np.ndarray,
              rates_bps: np.ndarray, n_links: int) -> np.ndarray:
    """(n_links,) bit/s: flow ``gi[k]`` (a row of the padded link matrix ``glob_P``
    with ``glob_len[gi[k]]`` valid entries) adding ``rates_bps[k]`` on each of its
    links.  Sums run in ``gi`` order, then hop order (row-major selection)."""
    lens = glob_len[gi]
    return np.bincount(glob_P[gi][np.arange(glob_P.shape[1]) < lens[:, None]],
                       weights=np.repeat(rates_bps, lens), minlength=n_links)


def store_links(glob_P: np.ndarray, glob_len: np.ndarray, g: int,
                links: Sequence[int]) -> np.ndarray:
    """Record flow ``g``'s validated link indices as row ``g`` of the padded matrix
    ``glob_P`` (widened when the path is longer than any before) and its length in
    ``glob_len`` (in place); returns the matrix, a new one when it was widened."""
    nl = len(links)
    if nl > glob_P.shape[1]:
        glob_P = np.concatenate([glob_P, np.zeros(
            (glob_P.shape[0], nl - glob_P.shape[1]), dtype=np.int64)], axis=1)
    glob_P[g, :nl] = links
    glob_len[g] = nl
    return glob_P


class SimState:
    """Everything one run's events share (built once per run, updated in place).

    Args:
        topology: the fabric.
        scheduler: the scheduler; its ``reads_progress``, ``sticky_paths``,
            ``bind_active``, ``flows_finished``, ``bind_counters`` and ``link_bytes``
            are read here.
        n_coflows: the workload's size.
        by_coflow: decisions only at coflow events (``reschedule_on="coflow"``).
        The scheduler's ``decision_interval`` (s, default 0) is kept as ``interval``:
        when > 0, a flow completion is acted on at the first multiple of it (see
        :func:`~rapier_app.sim.steps.next_event`).
        sparse: run :func:`sparse_step` (else :func:`dense_step`).
        cap_limit: (n_links,) bit/s, the load above which a link is over capacity.
        exact_every: the capacity check sums every link's load exactly at least once
            per this many events (kept loads in between).

    Attributes, by group (arrays are numpy; "global" ones are indexed by a flow's
    ``_sim_idx`` and grow by doubling, "position" ones follow the active flows):

    * clock and workload: ``now`` (s), ``ai`` (next arrival), ``active``
      (coflow id -> CoflowState), ``arrived`` / ``cevent`` (a coflow arrived /
      completed since the last decision).
    * what the scheduler reads (``Scheduler.reads_progress``): ``reads`` (bytes,
      rates and paths at every event), ``reads_bytes``, ``reads_on_arrival``,
      ``reads_on_cevent``, ``reads_vector`` (this run's ``sent`` array, bound by
      :func:`hand_over`), ``reads_coflow`` (per-coflow totals in ``cof_sent``).
    * global: ``size``/``sent`` (bytes), ``cof_of`` (coflow serial), ``posmap``
      (position, valid when ``posmap_ok``), ``glob_P``/``glob_len`` (validated link
      indices, a padded matrix), ``alive8``/``bcnt`` (live flags and live counts per
      64 indices: the sparse step's rank-select).
    * positions: ``act_flows`` (FlowState list), ``act_idx`` (global indices),
      ``rate_prev`` (bit/s counted in ``load_inc``), ``cur_paths`` (last validated
      path; not kept for sticky paths), ``new_idx`` (arrived, not yet positioned).
    * loads: ``load_inc`` (n_links,) bit/s kept up to date between exact sums;
      ``exact_in`` (events to the next exact sum); ``prev_g``/``prev_rate`` (the
      sparse step's senders and the rates counted for them).
    """

    __slots__ = (
        "now", "ai", "active", "arrived", "cevent", "policy", "reads_on_wake", "woke",
        "hidden",
        "by_coflow", "interval", "sticky", "sparse", "compiled", "reads", "reads_bytes",
        "reads_on_arrival", "reads_on_cevent", "reads_vector", "reads_coflow",
        "bound", "bind_act", "bound_act", "fin_hook", "link_bytes",
        "cap", "cap_limit", "n_links", "links", "path_links", "exact_every",
        "n_glob", "size", "sent", "posmap", "posmap_ok", "cof_of", "cof_sent",
        "glob_len", "glob_P", "alive8", "bcnt",
        "act_idx", "act_flows", "act_dirty", "new_idx", "cur_paths", "rate_prev",
        "load_inc", "exact_in", "prev_g", "prev_rate")

    def __init__(self, topology: Topology, scheduler: Scheduler, n_coflows: int,
                 policy: InfoPolicy, by_coflow: bool, sparse: bool,
                 cap_limit: np.ndarray, exact_every: int):
        self.now = 0.0
        self.ai = 0
        self.active: Dict[str, CoflowState] = {}
        self.arrived = False
        self.cevent = False
        self.policy = policy
        rp = getattr(scheduler, "reads_progress", True)
        self.by_coflow = by_coflow
        self.interval = float(getattr(scheduler, "decision_interval", 0.0) or 0.0)
        self.sticky = bool(getattr(scheduler, "sticky_paths", False))
        self.sparse = sparse
        self.compiled = _kernels.ENABLED
        self.reads = rp is True
        self.reads_bytes = self.reads or rp == "bytes"
        self.reads_on_arrival = rp == "arrivals"
        self.reads_on_cevent = rp in ("coflow-events", "coflow-events+wakeups")
        self.reads_on_wake = rp == "coflow-events+wakeups"
        self.woke = False  # the scheduler's wake-up is the next decision point
        self.hidden = False  # the coflows' sizes are hidden from the scheduler
        self.reads_vector = rp == "vector"
        self.reads_coflow = rp == "coflow"
        self.bound = None
        self.bind_act = getattr(scheduler, "bind_active", None)
        self.bound_act = None  # the list last given to bind_act
        # the scheduler's flows_finished hook, when it has one of its own
        self.fin_hook = (scheduler.flows_finished
                         if type(scheduler).flows_finished is not Scheduler.flows_finished
                         else None)
        # per-link byte counters of a scheduler that asks for them (the site
        # broker's background wrapper, rapier_app.sim.background): bytes carried
        self.link_bytes = getattr(scheduler, "link_bytes", None)
        self.cap = topology.capacity
        self.cap_limit = cap_limit
        self.n_links = len(self.cap)
        self.links = topology.links
        self.path_links = topology.path_links
        self.exact_every = exact_every
        self.n_glob = 0
        self.size = np.zeros(1024)
        self.sent = np.zeros(1024)
        self.posmap = np.full(1024, -1, dtype=np.int64)
        self.posmap_ok = True
        self.cof_of = np.zeros(1024, dtype=np.int64)
        self.cof_sent = np.zeros(n_coflows)
        self.glob_len = np.zeros(1024, dtype=np.int64)
        self.glob_P = np.zeros((1024, 1), dtype=np.int64)
        self.alive8 = np.zeros(1024, dtype=np.uint8)
        self.bcnt = np.zeros(1024 // 64 + 1, dtype=np.int64)
        self.act_idx = np.zeros(0, dtype=np.int64)
        self.act_flows: List[FlowState] = []
        self.act_dirty = False
        self.new_idx: List[int] = []
        self.cur_paths: List[object] = []
        self.rate_prev = np.zeros(0)
        self.load_inc = np.zeros(self.n_links)
        self.exact_in = 0
        self.prev_g = np.zeros(0, dtype=np.int64)  # global indices, increasing
        self.prev_rate = np.zeros(0)

    def grow(self, need: int) -> None:
        """Widen every global array to at least ``need`` flows (doubling)."""
        n = self.size.shape[0]
        grow = max(2 * n, need)
        self.size = np.concatenate([self.size, np.zeros(grow - n)])
        self.sent = np.concatenate([self.sent, np.zeros(grow - self.sent.shape[0])])
        self.posmap = np.concatenate([self.posmap, np.full(grow - self.posmap.shape[0], -1,
                                                           dtype=np.int64)])
        self.cof_of = np.concatenate([self.cof_of, np.zeros(grow - self.cof_of.shape[0],
                                                            dtype=np.int64)])
        self.glob_len = np.concatenate([self.glob_len, np.zeros(
            grow - self.glob_len.shape[0], dtype=np.int64)])
        self.glob_P = np.concatenate([self.glob_P, np.zeros(
            (grow - self.glob_P.shape[0], self.glob_P.shape[1]), dtype=np.int64)])
        self.alive8 = np.concatenate([self.alive8, np.zeros(grow - self.alive8.shape[0],
                                                            dtype=np.uint8)])
        self.bcnt = np.concatenate([self.bcnt, np.zeros(grow // 64 + 1 - self.bcnt.shape[0],
                                                        dtype=np.int64)])

    def active_globals(self) -> np.ndarray:
        """(m,) the active positions' global indices (the sparse step keeps no
        ``act_idx``: read from the flows)."""
        if not self.sparse:
            return self.act_idx
        return np.fromiter(map(flow_index, self.act_flows), dtype=np.int64,
                           count=len(self.act_flows))


class Interval:
    """What one decision puts in force until the next event (one step's outcome).

    Attributes:
        m: the number of active positions.
        path_pos, rate_pos: per position, the schedule's path (or None) and rate
            (bit/s, unchecked).
        pos_mask: (m,) bool, the sending positions (None in the sparse step).
        sel_arr, gsel: the sending positions and their global indices (increasing).
        rate_arr: (n_sel,) their rates, bit/s.
        sent_g, ttf: (n_sel,) bytes they had sent before the interval; seconds each
            needs to finish at its rate.  ttf_min: the least of ttf (inf: none).
        w: (m,) per position the rate counted in the loads (dense step; None sparse).
    """

    __slots__ = ("m", "path_pos", "rate_pos", "pos_mask", "sel_arr", "gsel", "rate_arr",
                 "sent_g", "ttf", "ttf_min", "n_sel", "w")
