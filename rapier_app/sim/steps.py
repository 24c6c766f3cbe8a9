"""The phases of one simulator event.

:class:`~rapier_app.sim.Simulator` runs a loop of events (coflow
arrivals, flow completions, a scheduler's wake-ups).  At each one it

1. admits the coflows that arrived (:func:`admit`), then syncs the positions of
   the active flows (:func:`sync_positions`) and hands the scheduler what it
   reads (:func:`hand_over`);
2. asks the scheduler for a schedule and turns it into an :class:`Interval`, the
   rates and paths in force until the next event, with one of two steps:
   :func:`dense_step` (every active flow, every event) or :func:`sparse_step`
   (sending flows only: sticky-path schedulers with few senders);
3. checks link capacities (:func:`check_capacity`), finds the next event
   (:func:`next_event`), counts the bytes each link carries until then for a
   scheduler that asks (:func:`count_link_bytes`) and advances every sending flow
   to it (:func:`advance`), dropping the flows that finished.

All of it works on one :class:`~rapier_app.sim.state.SimState` (the run's
shared state: clock, active flows and their positions, per-flow arrays, kept
link loads).

Every step does the same sums in the same order whichever variant runs (dense or
sparse, compiled kernels or numpy), so all give the same results bit for bit
(``tests/test_sparse_step.py``, ``tests/test_kernels.py``).

A broken invariant raises :class:`StepError`, which
:meth:`Simulator.run <rapier_app.sim.simulator.Simulator.run>` turns into its
``SimulationError`` (this module does not import the simulator).

Units: bytes, bit/s, seconds.  Source: RAPIER Section V-B (a flow-level
simulator driven by flow arrival and departure events).
"""

from __future__ import annotations

import math
import operator
from collections import deque
from itertools import compress, repeat
from typing import Dict, List, Optional, Sequence

import numpy as np

from topologies import TopologyError

from ..core.model import CoflowSpec, CoflowState, FlowState, hide_sizes
from ..errors import RapierError
from ..kernels import sim as _ksim
from ..scheduling import Scheduler
from .state import Interval, SimState, flow_index, link_load, store_links

BITS = 8.0
_UNSET = object()  # "no validated path yet" (a path may legitimately be None)
_NO_HINT = np.zeros(0, dtype=np.int64)
#: block size of :func:`_changed`
_BLOCK = 256


class StepError(RapierError, RuntimeError):
    """A schedule broke an invariant (bad path or rate, link over capacity,
    deadlock).  Raised by the steps; ``Simulator.run`` raises it again as
    ``SimulationError`` with the same message, so it never reaches a caller."""


def _changed(new: list, old: list, m: int) -> np.ndarray:
    """(m,) bool mask: True at positions where ``new[j] is not old[j]``, except in
    blocks of :data:`_BLOCK` positions whose slices compare equal (``==``: the same
    or equal paths, which validate to the same links).  Both lists have length m."""
    look = np.zeros(m, dtype=bool)
    is_ = operator.is_
    for a in range(0, m, _BLOCK):
        b = a + _BLOCK
        if new[a:b] != old[a:b]:
            look[a:min(b, m)] = ~np.fromiter(map(is_, new[a:b], old[a:b]), dtype=bool,
                                             count=min(b, m) - a)
    return look


def admit(st: SimState, arrivals: Sequence[CoflowSpec]) -> None:
    """Admit every coflow of ``arrivals`` (sorted) due by ``st.now``: give its flows
    global indices and append them to the active positions."""
    while st.ai < len(arrivals) and arrivals[st.ai].arrival_s <= st.now:
        spec = arrivals[st.ai]
        cs = CoflowState(hide_sizes(spec) if st.hidden else spec, st.policy)
        st.active[spec.coflow_id] = cs
        if st.reads_coflow:
            cs._sent = 0.0
        k = len(cs.flows)
        n = st.n_glob
        if n + k > st.size.shape[0]:
            st.grow(n + k)
        st.cof_of[n:n + k] = st.ai
        if st.sparse:
            st.alive8[n:n + k] = 1
            np.add.at(st.bcnt, np.arange(n, n + k) >> 6, 1)
        for j, f in enumerate(cs.flows):
            f._sim_idx = n + j
        st.size[n:n + k] = [f.size_bytes for f in spec.flows]  # the true sizes
        st.sent[n:n + k] = [f.bytes_sent for f in cs.flows]
        if not st.sticky:  # sticky schedulers' paths are checked by glob_len
            st.cur_paths.extend([_UNSET] * k)
        st.new_idx.extend(range(n, n + k))
        st.act_flows.extend(cs.active_flows())
        st.n_glob = n + k
        st.act_dirty = True
        st.arrived = True
        st.ai += 1


def sync_positions(st: SimState) -> None:
    """Append the newly arrived flows to the position arrays (dense step only)."""
    if not st.act_dirty:
        return
    if st.new_idx:
        if not st.sparse:  # (the sparse step reads flows' _sim_idx instead)
            st.act_idx = np.concatenate([st.act_idx, np.array(st.new_idx, dtype=np.int64)])
            st.rate_prev = np.concatenate([st.rate_prev, np.zeros(len(st.new_idx))])
        st.new_idx = []
    st.posmap_ok = False  # refreshed on first use (schedules not in our order)
    st.act_dirty = False


def hand_over(st: SimState, scheduler: Scheduler) -> None:
    """Before a decision: write or bind what the scheduler reads of the progress."""
    if (st.reads_on_arrival and st.arrived) or (st.reads_on_cevent and (
            st.arrived or st.cevent or st.woke)):
        # the scheme reads byte counters only when coflows arrive (or complete)
        deque(map(setattr, st.act_flows, repeat("bytes_sent"),
                  st.sent[st.active_globals()].tolist()), 0)
    st.arrived = False
    st.cevent = False
    st.woke = False
    if st.reads_vector and st.bound is not st.sent:
        scheduler.bind_counters(st.sent)
        st.bound = st.sent
    if st.bind_act is not None and st.bound_act is not st.act_flows:
        st.bind_act(st.act_flows)
        st.bound_act = st.act_flows


def _per_position(st: SimState, sched, iv: Interval) -> Optional[np.ndarray]:
    """Fill ``iv.path_pos`` and ``iv.rate_pos`` from the schedule (its vectors when
    it has them, else its allocations by flow id); returns the schedule's nonzero
    positions when it gives them and they are ours (sparse step only), else None."""
    m = iv.m
    act_flows = st.act_flows
    vec = sched.vectors() if hasattr(sched, "vectors") else None
    nz_hint = sched.nonzero_hint() if st.sparse and vec is not None else None
    if vec is None:
        alloc = sched.allocations
        path_pos = [None] * m
        rate_list = [0.0] * m
        for j, f in enumerate(act_flows):
            a = alloc.get(f.flow_id)
            if a is not None:
                p = a.path
                path_pos[j] = p if type(p) is tuple else tuple(p)
                rate_list[j] = a.rate_bps
        iv.path_pos, iv.rate_pos = path_pos, np.array(rate_list, dtype=float)
        return nz_hint
    vflows, vpaths, vrates = vec
    # FlowState compares by identity, so list == is the identity check at C speed
    # (a tuple never equals a list: the general branch) (the scheduler may hand
    # back the list of bind_active itself)
    if vflows is act_flows or \
            (len(vflows) == m and (vflows == act_flows if type(vflows) is list
                                   else all(map(operator.is_, vflows, act_flows)))):
        iv.path_pos, iv.rate_pos = vpaths, vrates
        return nz_hint
    g = np.fromiter(map(flow_index, vflows), dtype=np.int64, count=len(vflows))
    pos = np.full(len(vflows), -1, dtype=np.int64)
    ok = (g >= 0) & (g < st.n_glob)
    if not st.posmap_ok:
        st.posmap[st.active_globals()] = np.arange(m)
        st.posmap_ok = True
    pos[ok] = st.posmap[g[ok]]
    path_pos = [None] * m
    rate_pos = np.zeros(m)
    for k in np.flatnonzero(pos >= 0).tolist():
        j = int(pos[k])
        if act_flows[j] is vflows[k]:
            path_pos[j] = vpaths[k]
            rate_pos[j] = vrates[k]
    iv.path_pos, iv.rate_pos = path_pos, rate_pos
    return None  # its positions are the schedule's, not ours


def _links_of(f: FlowState, p: tuple, path_links) -> list:
    """Flow ``f``'s path ``p`` as link indices; StepError when it does not join the
    flow's endpoints or does not exist."""
    if p[0] != f.src or p[-1] != f.dst:
        raise StepError(f"path: flow {f.flow_id} ({f.src}->{f.dst}) got "
                        f"path {'-'.join(p)} with wrong endpoints")
    try:
        return path_links(p)
    except TopologyError as exc:
        raise StepError(f"flow {f.flow_id}: {exc}") from None


def _bad_rate(st: SimState, iv: Interval, j: int) -> StepError:
    return StepError(f"rate_bps: flow {st.act_flows[j].flow_id} got rate {iv.rate_pos[j]}")


def sparse_step(st: SimState, sched) -> Interval:
    """The step over the sending positions only (sticky paths, compiled kernels):
    the link loads are kept for the senders (``prev_g``, ``prev_rate``) instead of
    for every live flow, with the dense step's sums in the same order.

    Raises:
        StepError: a sender's path or rate is bad (names the flow).
    """
    iv = Interval()
    iv.m = len(st.act_flows)
    nz_hint = _per_position(st, sched, iv)
    path_pos, rate_pos = iv.path_pos, iv.rate_pos
    # the sending positions: from the schedule's nonzero positions when it gives
    # them (Schedule.from_vectors(nonzero=...)), else one scan, with their rates and
    # global indices (increasing, as positions are)
    sel_arr, gsel, rate_arr, look_k = _ksim.sim_senders_kernel(
        rate_pos, _NO_HINT if nz_hint is None else nz_hint,
        nz_hint is not None, st.alive8, st.bcnt, st.glob_len)
    none = []
    for j in sel_arr[look_k].tolist():
        # a sending flow without a validated path (never counted in the loads: it
        # never sent)
        p = path_pos[j]
        if p is None:
            none.append(j)  # no allocation: it waits
            continue
        f = st.act_flows[j]
        st.glob_P = store_links(st.glob_P, st.glob_len, f._sim_idx,
                                 _links_of(f, p, st.path_links))
    if none:
        keep_s = ~np.isin(sel_arr, none)
        sel_arr = sel_arr[keep_s]
        gsel = gsel[keep_s]
        rate_arr = rate_arr[keep_s]
    (iv.sent_g, iv.ttf, bad_k,
     iv.ttf_min) = _ksim.sim_sparse_kernel(gsel, rate_arr, st.size, st.sent, st.glob_P,
                                              st.glob_len, st.prev_g, st.prev_rate,
                                              st.load_inc)
    if bad_k >= 0:
        raise _bad_rate(st, iv, int(sel_arr[bad_k]))
    iv.sel_arr, iv.gsel, iv.rate_arr = sel_arr, gsel, rate_arr
    iv.n_sel = sel_arr.shape[0]
    iv.pos_mask = iv.w = None
    if st.reads:
        rate_clean = np.zeros(iv.m)
        rate_clean[sel_arr] = rate_arr
        _publish(st, rate_clean, path_pos)
    st.prev_g, st.prev_rate = gsel, rate_arr
    return iv


def dense_step(st: SimState, sched) -> Interval:
    """The step over every active position: find the paths to validate
    (:func:`_look_sticky` or :func:`_look_changed`), validate them, then select the
    senders and update the kept link loads (:func:`_select_compiled` or
    :func:`_select_numpy`).

    Raises:
        StepError: a sending flow's path or rate is bad (names the flow).
    """
    iv = Interval()
    iv.m = len(st.act_flows)
    _per_position(st, sched, iv)
    look = _look_sticky(st, iv) if st.sticky else _look_changed(st, iv)
    if look is not None:
        _validate(st, iv, look.tolist())
    (_select_compiled if st.compiled else _select_numpy)(st, iv)
    if st.reads:
        _publish(st, np.where(iv.pos_mask, iv.rate_pos, 0.0), iv.path_pos)
    st.rate_prev = iv.w
    return iv


def _look_sticky(st: SimState, iv: Interval) -> Optional[np.ndarray]:
    """Sticky paths: each flow keeps its first path, so only never-validated flows
    that send need a look (a waiting flow's path is not yet its own).  Sets
    ``iv.pos_mask``; returns the positions to look at (None: none)."""
    if st.compiled:  # one pass
        iv.pos_mask, look_pos = _ksim.sim_look_kernel(iv.rate_pos, st.act_idx,
                                                         st.glob_len)
        return look_pos if look_pos.shape[0] else None
    iv.pos_mask = ~(iv.rate_pos <= 0)
    look = iv.pos_mask & ~(st.glob_len[st.act_idx] > 0)
    return np.flatnonzero(look) if look.any() else None


def _look_changed(st: SimState, iv: Interval) -> Optional[np.ndarray]:
    """Paths may change: look at the positions whose path is not the validated one.
    Sets ``iv.pos_mask``; returns the positions to look at (None: none)."""
    path_pos, cur_paths, m = iv.path_pos, st.cur_paths, iv.m
    if type(path_pos) is list and path_pos == cur_paths:
        # every path is (the same object as, or equal to) the validated one
        look = None
    elif type(path_pos) is list and m > 4 * _BLOCK:
        # a few paths changed (work conservation moving waiting flows): find them
        # block by block, each block one C-speed list comparison
        look = _changed(path_pos, cur_paths, m)
    else:
        # waiting flows' paths are looked at too (and remembered when valid): then
        # the next event's list comparison above passes at C speed
        look = ~np.fromiter(map(operator.is_, path_pos, cur_paths), dtype=bool, count=m)
    iv.pos_mask = ~(iv.rate_pos <= 0)
    return None if look is None else np.flatnonzero(look)


def _validate(st: SimState, iv: Interval, look: List[int]) -> None:
    """Validate the paths at positions ``look`` and record their links.  A flow
    without a path stops sending; a bad path of a waiting flow is ignored (checked
    again when it comes to send); a re-routed flow's old rate leaves its old links.

    Raises:
        StepError: a sending flow's path is bad.
    """
    sticky, path_pos, pos_mask = st.sticky, iv.path_pos, iv.pos_mask
    for j in look:
        p = path_pos[j]
        if p is None:
            pos_mask[j] = False
            if not sticky:
                st.cur_paths[j] = None
            continue
        f = st.act_flows[j]
        try:
            ls = _links_of(f, p, st.path_links)
        except StepError:
            if not pos_mask[j]:
                continue  # never used: checked again if it comes to send
            raise
        if not sticky:
            st.cur_paths[j] = p if type(p) is tuple else _UNSET
        g = int(st.act_idx[j])
        if st.rate_prev[j] != 0.0:  # its old links lose its old rate
            st.load_inc[st.glob_P[g, :st.glob_len[g]]] -= st.rate_prev[j]
            st.rate_prev[j] = 0.0
        st.glob_P = store_links(st.glob_P, st.glob_len, g, ls)


def _select_compiled(st: SimState, iv: Interval) -> None:
    """:func:`_select_numpy` in one compiled pass (same values, same sums)."""
    (iv.sel_arr, iv.rate_arr, iv.gsel, iv.sent_g, iv.ttf, iv.w, bad,
     iv.ttf_min) = _ksim.sim_select_kernel(iv.pos_mask, iv.rate_pos, st.act_idx,
                                              st.size, st.sent, st.glob_P, st.glob_len,
                                              st.rate_prev, st.load_inc)
    if bad >= 0:
        raise _bad_rate(st, iv, bad)
    iv.n_sel = iv.sel_arr.shape[0]


def _select_numpy(st: SimState, iv: Interval) -> None:
    """The senders (``iv.sel_arr``...), their times to finish, and the kept loads
    updated where a position's rate changed.

    Raises:
        StepError: the first sending flow (position order) with a non-finite rate.
    """
    pos_mask, rate_pos = iv.pos_mask, iv.rate_pos
    sel_arr = np.flatnonzero(pos_mask)
    rate_arr = rate_pos[sel_arr]
    fine = np.isfinite(rate_arr)
    if not fine.all():
        raise _bad_rate(st, iv, int(sel_arr[np.flatnonzero(~fine)[0]]))
    n_sel = sel_arr.shape[0]
    gsel = st.act_idx[sel_arr]
    # per position, the rate it sends at (0: waiting)
    w = rate_pos.copy() if n_sel == iv.m else np.where(pos_mask, rate_pos, 0.0)
    ch = np.flatnonzero(w != st.rate_prev)
    if ch.size:
        st.load_inc += link_load(st.glob_P, st.glob_len, st.act_idx[ch],
                                  w[ch] - st.rate_prev[ch], st.n_links)
    sent_g = st.sent[gsel]  # bytes sent before this interval (one gather)
    remaining = np.maximum(st.size[gsel] - sent_g, 0.0)
    ttf = remaining * BITS / rate_arr
    iv.sel_arr, iv.rate_arr, iv.gsel, iv.sent_g, iv.ttf, iv.w = (sel_arr, rate_arr, gsel,
                                                                 sent_g, ttf, w)
    iv.n_sel = n_sel
    iv.ttf_min = float(ttf.min()) if n_sel else math.inf


def _publish(st: SimState, rate_clean: np.ndarray, path_pos) -> None:
    """Write each active flow's rate (0: waiting) and path for the scheduler."""
    deque(map(setattr, st.act_flows, repeat("rate_bps"), rate_clean.tolist()), 0)
    deque(map(setattr, st.act_flows, repeat("path"), path_pos), 0)


def check_capacity(st: SimState, iv: Interval, res, scheduler_name: str) -> None:
    """No link above ``cap_limit``: from the kept loads, summed exactly every
    ``exact_every`` events and whenever the kept loads say a link is over.  Raises
    ``res.max_link_utilisation`` (a SimResult) to the largest load/capacity seen.

    Raises:
        StepError: a link over capacity (names it, its load and the time).
    """
    if not iv.n_sel:
        return
    cap, cap_limit = st.cap, st.cap_limit
    util = st.load_inc / cap
    worst = int(np.argmax(util))
    st.exact_in -= 1
    if st.exact_in <= 0 or st.load_inc[worst] > cap_limit[worst]:
        st.exact_in = st.exact_every
        # every position's links, waiting flows weighted 0: the senders' loads bit
        # for bit
        st.load_inc = (link_load(st.glob_P, st.glob_len, iv.gsel, iv.rate_arr, st.n_links)
                       if st.sparse else
                       link_load(st.glob_P, st.glob_len, st.act_idx, iv.w, st.n_links))
        util = st.load_inc / cap
        worst = int(np.argmax(util))
    load = st.load_inc
    res.max_link_utilisation = max(res.max_link_utilisation, float(util[worst]))
    if load[worst] > cap_limit[worst]:
        u, v = st.links[worst]
        raise StepError(f"capacity: link {u}->{v} carries {load[worst]:.6g} bit/s over its "
                        f"capacity {cap[worst]:.6g} bit/s at t={st.now:.9g} s "
                        f"(scheduler {scheduler_name})")


def _first_coflow_end(st: SimState, iv: Interval) -> float:
    """Seconds from ``st.now`` to the next coflow completion at the interval's rates:
    the coflow whose last active flow finishes first (flows without bandwidth never
    finish: inf)."""
    tf_all = np.full(iv.m, math.inf)
    tf_all[iv.sel_arr] = iv.ttf
    cofs = st.cof_of[st.act_idx]
    starts = np.flatnonzero(np.r_[True, cofs[1:] != cofs[:-1]])
    return float(np.maximum.reduceat(tf_all, starts).min())


def next_event(st: SimState, iv: Interval, arrivals: Sequence[CoflowSpec],
               scheduler: Scheduler) -> float:
    """The time (s) of the next event: the first flow completion (with
    ``by_coflow``, the first coflow completion when one can happen; with a
    scheduler's ``decision_interval`` d > 0, the first multiple of d at or after the
    first flow completion, or the first coflow completion if earlier), the next
    arrival or the scheduler's wake-up, whichever comes first.

    Raises:
        StepError: no event is pending while flows are left without bandwidth.
    """
    now = st.now
    t_next = now + (float(iv.ttf_min) if iv.n_sel else math.inf)
    if st.interval > 0 and not st.by_coflow and math.isfinite(t_next):
        # the scheduler acts on flow completions at its next interval boundary
        # (its decision_interval): the first multiple of it at or after the first
        # completion, unless a coflow completes before; flows that finish before it
        # finish at their own times
        t_tick = math.ceil(t_next / st.interval - 1e-9) * st.interval
        if t_tick > t_next:
            t_next = min(t_tick, now + _first_coflow_end(st, iv))
    if st.by_coflow and iv.n_sel:
        t_cof = _first_coflow_end(st, iv)
        if math.isfinite(t_cof):
            t_next = now + t_cof
    if st.ai < len(arrivals):
        t_next = min(t_next, arrivals[st.ai].arrival_s)
    wake = scheduler.next_wakeup(now)
    if wake is not None and wake > now:
        t_next = min(t_next, wake)
        # "coflow-events+wakeups": the scheduler's own wake-up reads byte counters
        st.woke = st.reads_on_wake and wake <= t_next
    if not math.isfinite(t_next):
        raise StepError(f"deadlock: scheduler {scheduler.name} left {iv.m} flows without "
                        f"bandwidth at t={now:.9g} s and no event is pending")
    return t_next


def count_link_bytes(st: SimState, iv: Interval, t_next: float) -> None:
    """Add the bytes each link carries until ``t_next`` to the scheduler's per-link
    counters, when it keeps them (``link_bytes``: the site broker's background
    wrapper, :mod:`rapier_app.sim.background`)."""
    if st.link_bytes is not None and iv.n_sel:
        st.link_bytes += st.load_inc * ((t_next - st.now) / BITS)


def _finished(dt: float) -> float:
    """A flow whose time to finish is at most this finishes in an interval of dt
    seconds (relative and absolute slack for the rounding of its bytes)."""
    return dt * (1 + 1e-9) + 1e-12


def event_fields(st: SimState, iv: Interval, t_next: float) -> tuple:
    """The fields of the decision's ``EventRecord`` (in its order): what was in
    force from ``st.now`` to ``t_next``."""
    now, m = st.now, iv.m
    act_idx = st.act_idx
    rem_all = np.maximum(st.size[act_idx] - st.sent[act_idx], 0.0)
    fin_all = np.full(m, math.inf)
    if iv.n_sel:
        # flows that finish in the interval end at min(own time, t_next); the others
        # stay inf (np.minimum first: inf must survive it)
        ends = np.minimum(now + iv.ttf, t_next)
        ends[iv.ttf > _finished(t_next - now)] = math.inf
        fin_all[iv.sel_arr] = ends
    return (now, t_next, [f.flow_id for f in st.act_flows], list(iv.path_pos),
            np.where(iv.pos_mask, iv.rate_pos, 0.0), rem_all, fin_all)


def advance(st: SimState, iv: Interval, t_next: float) -> Dict[str, List[FlowState]]:
    """Advance every sender's byte counter to ``t_next``; the flows that finish get
    their finish time and leave the positions and the kept loads.  Returns the
    finished flows by coflow id (empty: none finished)."""
    if not iv.n_sel:
        return {}
    dt = t_next - st.now
    sel_arr, gsel, rate_arr, sent_g, ttf = iv.sel_arr, iv.gsel, iv.rate_arr, iv.sent_g, iv.ttf
    if st.compiled:
        # counters advanced and written to sent[gsel] in one pass
        new_sent, fin = _ksim.sim_advance_kernel(gsel, rate_arr, sent_g, ttf, st.size,
                                                    st.sent, dt, _finished(dt))
    else:
        finished = ttf <= _finished(dt)
        new_sent = sent_g + rate_arr * dt / BITS
        fin = np.flatnonzero(finished)
        if fin.size:
            new_sent[fin] = st.size[gsel[fin]]
    if st.reads_coflow:
        if st.compiled:
            _ksim.coflow_sent_kernel(st.cof_of, gsel, new_sent, sent_g, st.cof_sent)
        else:
            st.cof_sent += np.bincount(st.cof_of[gsel], weights=new_sent - sent_g,
                                       minlength=st.cof_sent.shape[0])
    if not st.compiled:
        st.sent[gsel] = new_sent
    if st.reads_bytes:
        senders = (map(st.act_flows.__getitem__, sel_arr.tolist()) if st.sparse
                   else compress(st.act_flows, iv.pos_mask.tolist()))
        deque(map(setattr, senders, repeat("bytes_sent"), new_sent.tolist()), 0)
    elif fin.size:
        for j, b in zip(sel_arr[fin].tolist(), new_sent[fin].tolist()):
            st.act_flows[j].bytes_sent = b
    if not fin.size:
        return {}
    return _drop_finished(st, iv, fin, t_next)


def _drop_finished(st: SimState, iv: Interval, fin: np.ndarray,
                   t_next: float) -> Dict[str, List[FlowState]]:
    """Flows ``iv.sel_arr[fin]`` finished by ``t_next``: set their finish times, tell
    the scheduler's ``flows_finished``, drop them from the positions and their rates
    from the kept loads; returns them by coflow id."""
    fin_pos = iv.sel_arr[fin]
    m = iv.m
    small = fin_pos.shape[0] <= 32
    if st.compiled and small:
        keep = None  # not needed: one-pass drops and in-place deletes
    else:
        keep = np.ones(m, dtype=bool)
        keep[fin_pos] = False
    if st.by_coflow or st.interval > 0:
        # between decisions flows finish at their own times
        fin_t = np.minimum(st.now + iv.ttf[fin], t_next).tolist()
    else:
        fin_t = repeat(t_next)
    fin_by: Dict[str, List[FlowState]] = {}
    act_flows = st.act_flows
    for j, tf in zip(fin_pos.tolist(), fin_t):
        f = act_flows[j]
        f.finish_s = tf
        fin_by.setdefault(f.coflow_id, []).append(f)
    if st.fin_hook is not None:
        st.fin_hook([act_flows[j] for j in fin_pos.tolist()])
    if st.sparse:
        gfin = iv.gsel[fin]
        rfin = iv.rate_arr[fin]
        st.alive8[gfin] = 0
        np.subtract.at(st.bcnt, gfin >> 6, 1)
        # the senders that go on (global indices do not move)
        alive = np.ones(iv.n_sel, dtype=bool)
        alive[fin] = False
        st.prev_g = iv.gsel[alive]
        st.prev_rate = iv.rate_arr[alive]
    else:
        gfin = st.act_idx[fin_pos]
        rfin = st.rate_prev[fin_pos]
    st.posmap[gfin] = -1
    if st.sparse:
        pass  # no per-position arrays
    elif keep is None:  # compacted in place (nothing else holds them)
        st.act_idx = st.act_idx[:_ksim.drop_positions_kernel(st.act_idx, fin_pos)]
        st.rate_prev = st.rate_prev[:_ksim.drop_positions_kernel(st.rate_prev, fin_pos)]
    else:
        st.act_idx = st.act_idx[keep]
        st.rate_prev = st.rate_prev[keep]
    if small:
        # a few finishes: deleting in place (a C memmove each) beats rebuilding the
        # lists from a mask
        for j in fin_pos[::-1].tolist():
            del act_flows[j]
            if not st.sticky:
                del st.cur_paths[j]
    else:
        kl = keep.tolist()
        st.act_flows = list(compress(act_flows, kl))
        if not st.sticky:
            st.cur_paths = list(compress(st.cur_paths, kl))
    # the finished flows' rates leave their links
    st.load_inc -= link_load(st.glob_P, st.glob_len, gfin, rfin, st.n_links)
    st.act_dirty = True
    return fin_by


def share_coflow_bytes(st: SimState, states: List[CoflowState]) -> None:
    """``reads_progress="coflow"``: each coflow's total bytes sent, for the scheduler
    (a coflow's serial is ``cof_of`` of any of its flows)."""
    ser = st.cof_of[[c.flows[0]._sim_idx for c in states]]
    for c, v in zip(states, st.cof_sent[ser].tolist()):
        c._sent = v
