"""The simulator's workloads, scaled for the emulation, and the simulator run beside it.

``rapier-emulate`` runs exactly what ``rapier-sim`` runs (the builders of
:mod:`rapier_app.core.workload`), with every flow size multiplied by ``scale`` and
every link at ``link_mbps``.  The simulator is then run on the same scaled workload
and the same uniform fabric, with each link's capacity multiplied by the goodput
factor (:func:`rapier_app.workload_options.apply_goodput`: the payload share of the wire bytes
that HTB and the links count), so both sides move the same bytes over the same
capacities.

* synthetic (RAPIER Section V-B): :func:`rapier_app.core.workload.synthetic` with the
  same ``N,WIDTH,INTERARRIVAL_S``, ``sizes`` and ``seed``; arrivals unchanged.
* trace (Facebook coflow benchmark): :func:`read_trace` and
  :func:`trace_to_coflows` (one flow per mapper-reducer pair, CoflowSim's split),
  the first ``limit`` coflows.  The simulator places each trace port (rack) on its
  own host (:func:`port_mapping`) and needs as many hosts as the trace has ports
  (150); the emulated fabrics have 16, so only the ports the slice uses are placed:
  a seeded random choice of distinct hosts when they fit (the simulator's ``random``
  placement, over the used ports), else port ``i``-th used -> host ``perm[i % H]``
  (folded).  Flows whose mapper and reducer land on one host never cross the fabric
  and are dropped (counted in the description); the simulator runs the same list.

Every flow gets a TCP destination port unique on its receiving host (5001, 5002, ...
per host, in flow order), which the controller's 5-tuple rules and the receivers
use; flow ids are the controller's ``<coflow>/<n>``.

Units: bytes, bit/s, seconds.
"""

from __future__ import annotations

import random
from typing import Dict, List, Optional, Sequence, Tuple

from rapier_app.core.model import CoflowSpec, FlowSpec, make_coflow
from rapier_app.errors import RapierError

#: First TCP destination port given on each receiving host.
BASE_PORT = 5001
#: Payload share of the wire bytes a full TCP segment takes with the offloads off:
#: 1448 payload bytes in a 1514-byte frame (Ethernet 14 + IPv4 20 + TCP 20 +
#: timestamps 12); HTB and Mininet's link shaping count the 1514.
HEADER_GOODPUT = 1448.0 / 1514.0
#: Most flows one emulation runs (each is two processes inside Mininet hosts).
MAX_FLOWS = 200


class WorkloadUsageError(RapierError, ValueError):
    """A workload option the emulation cannot run (the message names the option)."""


def assign_ports(coflows: Sequence[CoflowSpec], base_port: int = BASE_PORT) -> List[CoflowSpec]:
    """The workload with controller flow ids (``<coflow>/<n>``, n from 0) and a TCP
    destination port per flow unique on its destination host (``base_port``,
    ``base_port + 1``, ... per host, in arrival then flow order).  Flows that already
    carry a ``dst_port`` keep it (it must then be unique, which the runner checks)."""
    nxt: Dict[str, int] = {}
    out = []
    for c in sorted(coflows, key=lambda c: (c.arrival_s, c.coflow_id)):
        flows = []
        for n, f in enumerate(c.flows):
            port = f.dst_port
            if port is None:
                port = nxt.get(f.dst, base_port)
                nxt[f.dst] = port + 1
            flows.append(FlowSpec(f"{c.coflow_id}/{n}", c.coflow_id, f.src, f.dst,
                                  f.size_bytes, port))
        out.append(CoflowSpec(c.coflow_id, c.arrival_s, tuple(flows), c.weight))
    return out


def scale_sizes(coflows: Sequence[CoflowSpec], scale: float) -> List[CoflowSpec]:
    """Every flow size multiplied by ``scale`` and rounded to whole bytes (at least 1).

    Raises:
        WorkloadUsageError: ``scale`` not positive.
    """
    if not scale > 0:
        raise WorkloadUsageError(f"--scale: must be positive, got {scale}")
    out = []
    for c in coflows:
        flows = tuple(FlowSpec(f.flow_id, f.coflow_id, f.src, f.dst,
                               float(max(1, round(f.size_bytes * scale))), f.dst_port)
                      for f in c.flows)
        out.append(CoflowSpec(c.coflow_id, c.arrival_s, flows, c.weight))
    return out


def trace_slice(path: str, topology, limit: int, seed: int = 0) -> Tuple[List[CoflowSpec], str]:
    """The first ``limit`` coflows of a coflow-benchmark trace placed on
    ``topology``'s hosts (module docstring: used ports only, distinct hosts when they
    fit, folded otherwise; same-host flows dropped).

    Returns:
        (coflows with unscaled sizes in bytes, a description naming the placement).

    Raises:
        WorkloadUsageError: ``limit`` < 1, or no flow left that crosses the fabric.
        rapier_app.core.model.WorkloadError: unreadable trace.
    """
    from rapier_app.core.workload import read_trace, trace_to_coflows

    if limit is None or limit < 1:
        raise WorkloadUsageError(f"--limit: must be >= 1 coflow with --trace, got {limit}")
    trace = read_trace(path)
    head = trace.coflows[:limit]
    used = sorted({p for tc in head for p in tc.mappers} | {p for tc in head for p, _ in tc.reducers})
    hosts = list(topology.hosts)
    rng = random.Random(seed)
    if len(used) <= len(hosts):
        chosen = rng.sample(hosts, len(used))
        mapping = {p: chosen[i] for i, p in enumerate(used)}
        how = f"{len(used)} trace ports on distinct random hosts (seed {seed})"
    else:
        perm = rng.sample(hosts, len(hosts))
        mapping = {p: perm[i % len(hosts)] for i, p in enumerate(used)}
        how = f"{len(used)} trace ports folded onto {len(hosts)} hosts (seed {seed})"
    raw = trace_to_coflows(trace, mapping, limit)
    out, dropped = [], 0
    for c in raw:
        kept = [(f.src, f.dst, f.size_bytes) for f in c.flows if f.src != f.dst]
        dropped += len(c.flows) - len(kept)
        if kept:
            out.append(make_coflow(c.coflow_id, c.arrival_s, kept, c.weight))
    if not out:
        raise WorkloadUsageError(f"--trace: the first {limit} coflows have no flow between "
                                 f"two different hosts of {topology.name}")
    return out, (f"trace {path}, first {limit} coflows, {how}, {dropped} same-host "
                 f"flows dropped")


def build_workload(topology, synthetic: Optional[Tuple[int, int, float]] = None,
                   sizes: str = "uniform:10,100", seed: int = 1, trace: Optional[str] = None,
                   limit: Optional[int] = None, scale: float = 0.01,
                   max_flows: int = MAX_FLOWS) -> Tuple[List[CoflowSpec], str]:
    """The scaled workload for the emulation: exactly one of ``synthetic``
    (``(n, width, interarrival_s)``) or ``trace``.

    Returns:
        (coflows with controller flow ids and unique dst ports, description).

    Raises:
        WorkloadUsageError: both or neither workload, bad scale, more than
            ``max_flows`` flows (each flow is two processes in the emulation).
        rapier_app.core.model.WorkloadError: bad synthetic parameters or sizes.
    """
    from rapier_app.core import workload as wl

    if (synthetic is None) == (trace is None):
        raise WorkloadUsageError("workload: give exactly one of --synthetic, --trace, "
                                 "--scenario")
    if synthetic is not None:
        n, width, ia = synthetic
        coflows = wl.synthetic(topology, n, width, ia, sizes, seed)
        desc = f"synthetic n={n} width={width} interarrival={ia}s sizes={sizes} seed={seed}"
    else:
        coflows, desc = trace_slice(trace, topology, limit, seed)
    nflows = sum(len(c.flows) for c in coflows)
    if nflows > max_flows:
        raise WorkloadUsageError(f"workload: {nflows} flows, more than --max-flows "
                                 f"{max_flows} (each flow is a sender and a receiver "
                                 f"process); use fewer or narrower coflows")
    return assign_ports(scale_sizes(coflows, scale)), f"{desc}, sizes x {scale:g}"


def sim_topology(spec: str, link_bps: float, goodput: float):
    """The simulator's fabric for an emulation of ``spec``: every link at ``link_bps``
    times ``goodput`` (bit/s of payload).

    Raises:
        topologies.TopologyError: bad spec.  ValueError: goodput not in (0, 1].
    """
    from rapier_app.workload_options import apply_goodput
    from topologies import build_topology

    return apply_goodput(build_topology(spec, link_bps), goodput)


def simulate(spec: str, coflows: Sequence[CoflowSpec], scheduler: str, link_bps: float,
             goodput: float, seed: int = 0, event_log: Optional[list] = None,
             handoff_delay_s: float = 0.0):
    """Run the flow-level simulator on the emulation's workload and fabric.

    Args:
        spec: topology spec.  coflows: the scaled workload (controller flow ids, so
            ECMP hashes draw the same paths as the controller).  scheduler: registry
            name.  link_bps: emulated link speed.  goodput: payload share
            (:data:`HEADER_GOODPUT` by default in the CLI).  seed: the scheduler seed
            (the controller's ``seed`` setting, 0 by default).  event_log: optional
            list filled with the simulator's EventRecords (for the timelines).
            handoff_delay_s: rate raises take effect this many seconds after the
            decision (:class:`rapier_app.sim.handoff.HandoffDelay`; 0: at once).

    Returns:
        rapier_app.sim.SimResult.
    """
    from rapier_app.scheduling import load_all, make_scheduler
    from rapier_app.sim import Simulator

    load_all()
    topo = sim_topology(spec, link_bps, goodput)
    sched = make_scheduler(scheduler, topo, seed=seed)
    if handoff_delay_s > 0:
        from rapier_app.sim.handoff import HandoffDelay

        sched = HandoffDelay(sched, handoff_delay_s)
    sim = Simulator(topo, coflows, sched, record_flows=True, event_log=event_log)
    return sim.run()


def check_schedulers(names: Sequence[str]) -> List[str]:
    """The scheduler names if every one can drive the emulation.

    Every registered scheduler can (the controller builds it by name, with the
    ``baseline`` run unenforced: ECMP without rate limits).  A ``package.module:Class``
    plugin cannot: it is loaded into the simulator's process only, while the
    controller is a separate ``ryu-manager`` process that builds schedulers from the
    registry by name.

    Raises:
        WorkloadUsageError: naming each scheduler that cannot and why.
    """
    from rapier_app.scheduling import load_all, scheduler_names

    load_all()
    known = set(scheduler_names())
    bad = []
    for n in names:
        if ":" in n:
            bad.append(f"{n} (a plugin class: the controller process, ryu-manager, builds "
                       f"schedulers from its registry by name and cannot load it)")
        elif n not in known:
            bad.append(f"{n} (not a registered scheduler; known: {', '.join(sorted(known))})")
    if bad:
        raise WorkloadUsageError("--schedulers: cannot drive the emulation: " + "; ".join(bad))
    if not names:
        raise WorkloadUsageError("--schedulers: empty")
    return list(names)


#: Share of the shaped link speed the controller plans with (enforcing schedulers).
DEFAULT_HEADROOM = 0.95


def controller_named(coflows: Sequence) -> list:
    """The workload with flow ids as the controller names them: ``<coflow>/<n>``, n from 0.

    ``testbed_workload`` numbers flows as Table II does (``1/1``..``3/7``); the
    controller names a submitted coflow's flows by their index.  ECMP (``baseline``)
    hashes the flow id, so the simulator must use the controller's names to draw the
    same paths as the emulated run.
    """
    out = []
    for c in coflows:
        flows = tuple(FlowSpec(f"{c.coflow_id}/{n}", c.coflow_id, f.src, f.dst, f.size_bytes,
                               f.dst_port) for n, f in enumerate(c.flows))
        out.append(CoflowSpec(c.coflow_id, c.arrival_s, flows, c.weight))
    return out
