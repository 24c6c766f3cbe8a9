"""Workloads: the coflow-benchmark trace reader and writer, RAPIER's synthetic generator and
the paper's named scenarios.

Sizes are bytes, times seconds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from topologies import Topology, build_topology

from .model import CoflowSpec, FlowSpec, WorkloadError, make_coflow

MIB = 1024 * 1024
MBIT = 1e6 / 8  # bytes in one megabit (decimal, as in RAPIER Fig. 1)
GB = 1e9  # RAPIER Table II volumes: decimal gigabytes


# ---------------------------------------------------------------------------------
# coflow-benchmark trace
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TraceCoflow:
    """One trace line: arrival in ms, mapper ports, reducer (port, MB) pairs."""

    coflow_id: str
    arrival_ms: float
    mappers: tuple
    reducers: tuple  # ((port, megabytes), ...)


@dataclass(frozen=True)
class Trace:
    """A parsed coflow-benchmark trace: ``ports`` ports and its coflows."""

    ports: int
    coflows: tuple

    @property
    def total_bytes(self) -> float:
        """Total shuffle volume in bytes, as :func:`trace_to_coflows` splits it."""
        return sum(sum(_split_reducer(mb, len(c.mappers)) * len(c.mappers)
                       for _, mb in c.reducers) for c in self.coflows)


def _split_reducer(mb: float, n_mappers: int) -> float:
    """Bytes per mapper->reducer flow: MB * 2^20 / mappers, at least 1 MiB (CoflowSim)."""
    return max(mb * MIB / n_mappers, float(MIB))


def read_trace(path: str) -> Trace:
    """Parse a coflow-benchmark trace file (the format of ``FB2010-1Hr-150-0.txt``).

    Line 1: ``<ports> <coflows>``; then one coflow per line:
    ``<id> <arrival ms> <m> <mapper port> x m <r> <reducer port>:<MB> x r``.

    Raises:
        WorkloadError: a line that does not parse, naming the file, the line
            number and the field; a port out of range; a coflow count that does not
            match the header; a duplicate coflow id.
    """
    try:
        with open(path) as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise WorkloadError(f"trace: cannot read {path}: {exc.strerror}") from None
    body = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip()]
    if not body:
        raise WorkloadError(f"trace: {path} is empty")
    ln_no, header = body[0]
    parts = header.split()
    if len(parts) != 2:
        raise WorkloadError(f"{path}:{ln_no}: header must be '<ports> <coflows>', got {header!r}")
    try:
        ports, n = int(parts[0]), int(parts[1])
    except ValueError:
        raise WorkloadError(f"{path}:{ln_no}: header fields must be integers, got {header!r}") from None
    if ports < 1 or n < 0:
        raise WorkloadError(f"{path}:{ln_no}: ports must be >= 1 and coflows >= 0")
    out = []
    seen = set()
    for ln_no, line in body[1:]:
        out.append(_parse_trace_line(path, ln_no, line, ports))
        if out[-1].coflow_id in seen:
            raise WorkloadError(f"{path}:{ln_no}: coflow id: duplicate id {out[-1].coflow_id}")
        seen.add(out[-1].coflow_id)
    if len(out) != n:
        raise WorkloadError(f"{path}: header announces {n} coflows, file has {len(out)}")
    return Trace(ports, tuple(out))


def _parse_trace_line(path: str, ln_no: int, line: str, ports: int) -> TraceCoflow:
    tok = line.split()
    where = f"{path}:{ln_no}"

    def need(i: int, field: str) -> str:
        if i >= len(tok):
            raise WorkloadError(f"{where}: {field}: line ends early: {line!r}")
        return tok[i]

    def port(text: str, field: str) -> int:
        try:
            p = int(text)
        except ValueError:
            raise WorkloadError(f"{where}: {field}: not an integer port: {text!r}") from None
        if not 0 <= p < ports:
            raise WorkloadError(f"{where}: {field}: port {p} outside 0..{ports - 1}")
        return p

    cid = need(0, "coflow id")
    try:
        arrival = float(need(1, "arrival ms"))
        m = int(need(2, "mapper count"))
    except ValueError:
        raise WorkloadError(f"{where}: arrival ms / mapper count: not a number: {line!r}") from None
    if arrival < 0 or m < 1:
        raise WorkloadError(f"{where}: arrival ms must be >= 0 and mapper count >= 1")
    mappers = tuple(port(need(3 + i, "mapper port"), "mapper port") for i in range(m))
    try:
        r = int(need(3 + m, "reducer count"))
    except ValueError:
        raise WorkloadError(f"{where}: reducer count: not an integer: {tok[3 + m]!r}") from None
    if r < 1:
        raise WorkloadError(f"{where}: reducer count must be >= 1")
    reducers = []
    for i in range(r):
        item = need(4 + m + i, "reducer port:MB")
        p, sep, mb = item.partition(":")
        if not sep:
            raise WorkloadError(f"{where}: reducer port:MB: expected 'port:MB', got {item!r}")
        try:
            mbv = float(mb)
        except ValueError:
            raise WorkloadError(f"{where}: reducer MB: not a number: {item!r}") from None
        if not mbv > 0:
            raise WorkloadError(f"{where}: reducer MB: must be positive: {item!r}")
        reducers.append((port(p, "reducer port"), mbv))
    if len(tok) != 4 + m + r:
        raise WorkloadError(f"{where}: {len(tok) - 4 - m - r} extra fields after the reducers")
    return TraceCoflow(cid, arrival, mappers, tuple(reducers))


def _exact_decimal(target: float, back: Callable[[float], float], guess: float) -> float:
    """A float x near ``guess`` with ``back(x) == target`` exactly (searching up to 64
    ulps either side), else ``guess``: the value to write so that the reader's
    arithmetic gives back ``target`` bit for bit."""
    import math

    if back(guess) == target:
        return guess
    lo = hi = guess
    for _ in range(64):
        lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
        for x in (lo, hi):
            if back(x) == target:
                return x
    return guess


def coflows_to_trace(coflows: Sequence[CoflowSpec], hosts: Sequence[str],
                     reshape: bool = False) -> Tuple[Trace, List[str]]:
    """The coflow-benchmark trace of a workload (the inverse of
    :func:`trace_to_coflows` with port p = ``hosts[p]``).

    A coflow is *trace-shaped* when its flows are exactly the pairs of (distinct
    senders) x (distinct receivers), each once, every flow into one receiver of the
    same size, at least 1 MiB: it is written losslessly (mappers and reducers in
    order of first appearance; a reducer's MB chosen so that the reader's
    ``MB * 2^20 / mappers`` gives back the flow size bit for bit).  Any other coflow
    (e.g. RAPIER's synthetic ones, which take only the first WIDTH pairs and draw a
    size per flow) cannot be expressed in the format; with ``reshape`` it is written
    as its senders x its receivers with each receiver's total bytes (the reader then
    spreads them evenly over the senders), otherwise it is an error.  Arrival
    times are written in whole milliseconds (CoflowSim parses them as integers), so
    an arrival is kept exactly only when it is a whole number of ms.

    Args:
        coflows: the workload (sizes in bytes, arrivals in seconds).
        hosts: the hosts, port p being ``hosts[p]`` (e.g. ``topology.hosts``); the
            header announces ``len(hosts)`` ports.
        reshape: write non-trace-shaped coflows approximately instead of failing.

    Returns:
        ``(trace, ids of the reshaped coflows)``.

    Raises:
        WorkloadError: a flow on a host not in ``hosts``; a coflow id with
            whitespace; a non-trace-shaped coflow without ``reshape``.
    """
    port = {h: p for p, h in enumerate(hosts)}
    out, reshaped = [], []
    for c in coflows:
        if not c.coflow_id or any(ch.isspace() for ch in c.coflow_id):
            raise WorkloadError(f"coflow id: {c.coflow_id!r} is empty or has whitespace "
                                f"(a trace field)")
        for f in c.flows:
            for h in (f.src, f.dst):
                if h not in port:
                    raise WorkloadError(f"coflow {c.coflow_id}: host {h!r} of flow "
                                        f"{f.flow_id} is not one of the trace's hosts")
        senders = list(dict.fromkeys(f.src for f in c.flows))
        receivers = list(dict.fromkeys(f.dst for f in c.flows))
        m = len(senders)
        size = {}
        for f in c.flows:
            size.setdefault((f.src, f.dst), []).append(f.size_bytes)
        per_recv = {r: {size.get((s_, r), [None])[0] for s_ in senders} for r in receivers}
        shaped = (len(c.flows) == m * len(receivers) and len(size) == len(c.flows)
                  and all(len(v) == 1 and None not in v and next(iter(v)) >= MIB
                          for v in per_recv.values()))
        if not shaped and not reshape:
            raise WorkloadError(f"coflow {c.coflow_id}: not expressible as a trace line "
                                f"(needs every sender x receiver pair once, equal sizes "
                                f"per receiver, >= 1 MiB); pass reshape=True to write "
                                f"per-receiver totals")
        reducers = []
        for r in receivers:
            if shaped:
                fs = next(iter(per_recv[r]))
                mb = _exact_decimal(fs, lambda x: _split_reducer(x, m), fs * m / MIB)
            else:
                mb = sum(f.size_bytes for f in c.flows if f.dst == r) / MIB
            reducers.append((port[r], mb))
        if not shaped:
            reshaped.append(c.coflow_id)
        out.append(TraceCoflow(c.coflow_id, float(round(c.arrival_s * 1000.0)),
                               tuple(port[s_] for s_ in senders), tuple(reducers)))
    return Trace(len(hosts), tuple(out)), reshaped


def write_trace(path: str, trace: Trace) -> None:
    """Write ``trace`` in the coflow-benchmark format that :func:`read_trace` (and
    CoflowSim) reads: ``<ports> <coflows>``, then per coflow ``<id> <arrival ms>
    <m> <mapper ports> <r> <port>:<MB>...``.  Arrival ms are written as integers
    (rounded), MB as Python's shortest round-trip ``repr`` (``648.0``, as in
    ``FB2010-1Hr-150-0.txt``), so
    ``read_trace(path) == trace`` whenever every arrival is a whole ms.

    Raises:
        WorkloadError: the file cannot be written.
    """
    lines = [f"{trace.ports} {len(trace.coflows)}"]
    for c in trace.coflows:
        red = " ".join(f"{p}:{float(mb)!r}" for p, mb in c.reducers)
        lines.append(f"{c.coflow_id} {int(round(c.arrival_ms))} {len(c.mappers)} "
                     f"{' '.join(str(p) for p in c.mappers)} {len(c.reducers)} {red}")
    try:
        with open(path, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    except OSError as exc:
        raise WorkloadError(f"write-trace: cannot write {path}: {exc.strerror}") from None


def port_mapping(trace_ports: int, topology: Topology, seed: int = 0,
                 placement: str = "auto") -> Dict[int, str]:
    """Map trace ports (racks) onto topology hosts.

    * On a big switch with at least as many ports: identity, port p -> ``h{p+1}``.
    * Elsewhere (``placement="random"``): a seeded random choice of ``trace_ports``
      distinct hosts, port p -> the p-th chosen host, so each trace rack is one host
      of the fabric and the fabric's own oversubscription applies.

    Raises:
        WorkloadError: the topology has fewer hosts than the trace has ports.
    """
    hosts = topology.hosts
    if len(hosts) < trace_ports:
        raise WorkloadError(f"topology: {topology.name} has {len(hosts)} hosts, the trace "
                            f"needs {trace_ports} (one per port)")
    if placement == "auto":
        placement = "identity" if topology.name.startswith("bigswitch") else "random"
    if placement == "identity":
        return {p: hosts[p] for p in range(trace_ports)}
    if placement != "random":
        raise WorkloadError(f"placement: unknown placement {placement!r}")
    rng = random.Random(seed)
    chosen = rng.sample(hosts, trace_ports)
    return {p: chosen[p] for p in range(trace_ports)}


def trace_to_coflows(trace: Trace, mapping: Dict[int, str],
                     limit: Optional[int] = None) -> List[CoflowSpec]:
    """Expand trace coflows into flows, CoflowSim's reading.

    One flow per (mapper, reducer) pair; a reducer's bytes (MB * 2^20) are split
    evenly over the coflow's mappers, no flow smaller than 1 MiB; arrival ms -> s.
    ``limit`` keeps the first N coflows.

    Raises:
        WorkloadError: ``limit`` below 1.
    """
    if limit is not None and limit < 1:
        raise WorkloadError(f"limit: must be at least 1 coflow, got {limit}")
    out = []
    for tc in trace.coflows[:limit]:
        flows = []
        for rp, mb in tc.reducers:
            size = _split_reducer(mb, len(tc.mappers))
            for mp in tc.mappers:
                flows.append((mapping[mp], mapping[rp], size))
        out.append(make_coflow(tc.coflow_id, tc.arrival_ms / 1000.0, flows))
    return out


# ---------------------------------------------------------------------------------
# synthetic workloads (RAPIER Section V-B)
# ---------------------------------------------------------------------------------
def size_sampler(spec: str) -> Callable[[random.Random], float]:
    """Flow-size distribution from a spec string; sizes in bytes.

    * ``uniform:LO,HI`` (MB, decimal), e.g. ``uniform:10,100``
    * ``const:MB``
    * ``exp:MEAN_MB``
    * ``pareto:SCALE_MB,SHAPE`` (heavy tail)

    Raises:
        WorkloadError: unknown distribution or bad parameters.
    """
    kind, _, args = spec.partition(":")
    try:
        vals = [float(x) for x in args.split(",") if x]
    except ValueError:
        raise WorkloadError(f"sizes: bad numbers in {spec!r}") from None
    mb = 1e6
    if kind == "uniform" and len(vals) == 2 and 0 < vals[0] <= vals[1]:
        return lambda rng: rng.uniform(vals[0], vals[1]) * mb
    if kind == "const" and len(vals) == 1 and vals[0] > 0:
        return lambda rng: vals[0] * mb
    if kind == "exp" and len(vals) == 1 and vals[0] > 0:
        return lambda rng: max(rng.expovariate(1.0 / vals[0]), 1e-3) * mb
    if kind == "pareto" and len(vals) == 2 and vals[0] > 0 and vals[1] > 0:
        return lambda rng: vals[0] * rng.paretovariate(vals[1]) * mb
    raise WorkloadError(f"sizes: unknown or invalid distribution {spec!r} (uniform:LO,HI, "
                        f"const:MB, exp:MEAN_MB, pareto:SCALE_MB,SHAPE)")


def synthetic(topology: Topology, n_coflows: int, width: int, mean_interarrival_s: float,
              sizes: str = "uniform:10,100", seed: int = 0) -> List[CoflowSpec]:
    """RAPIER Section V-B workload: n coflows of ``width`` flows, Poisson arrivals.

    Each coflow is many-to-many: it picks s = ceil(sqrt(width)) random senders and
    ceil(width / s) random receivers (distinct hosts where possible) and takes the
    first ``width`` (sender, receiver) pairs of their cross product, skipping pairs of
    the same host.  Inter-arrival gaps are exponential with mean
    ``mean_interarrival_s`` (0: all arrive at t=0).  Sizes come from
    :func:`size_sampler`.  Seeded: the same arguments give the same workload.

    Raises:
        WorkloadError: n_coflows or width < 1, negative interarrival, too few hosts.
    """
    if n_coflows < 1:
        raise WorkloadError(f"n_coflows: must be >= 1, got {n_coflows}")
    if width < 1:
        raise WorkloadError(f"width: must be >= 1, got {width}")
    if mean_interarrival_s < 0:
        raise WorkloadError(f"mean_interarrival_s: must be >= 0, got {mean_interarrival_s}")
    hosts = topology.hosts
    if len(hosts) < 2:
        raise WorkloadError("topology: needs at least 2 hosts")
    draw = size_sampler(sizes)
    rng = random.Random(seed)
    out = []
    t = 0.0
    s = max(1, int(round(width ** 0.5)))
    r = -(-width // s)
    if s * r - min(s, r) < width:
        r += 1
    for i in range(n_coflows):
        if i > 0 and mean_interarrival_s > 0:
            t += rng.expovariate(1.0 / mean_interarrival_s)
        senders = rng.sample(hosts, min(s, len(hosts)))
        receivers = rng.sample(hosts, min(r, len(hosts)))
        pairs = [(a, b) for a in senders for b in receivers if a != b]
        while len(pairs) < width:  # tiny topologies: allow repeated pairs
            pairs += pairs
        flows = [(a, b, draw(rng)) for a, b in pairs[:width]]
        out.append(make_coflow(f"c{i + 1}", t, flows))
    return out


# ---------------------------------------------------------------------------------
# named scenarios
# ---------------------------------------------------------------------------------
#: RAPIER Table II (testbed): (coflow, flow, source, destination, volume GB).
TABLE_II = [
    (1, 1, "M1", "M4", 3.17), (1, 2, "M2", "M5", 5.29), (1, 3, "M3", "M9", 5.29),
    (2, 4, "M8", "M6", 10.6), (2, 5, "M6", "M5", 5.29),
    (3, 6, "M7", "M4", 17.9), (3, 7, "M9", "M6", 10.6),
]

#: RAPIER Table II measured average CCTs (s) on the paper's testbed.
TABLE_II_AVG_CCT = {"rapier": 117.5, "routing-only": 163.7, "baseline": 228.6}


def fig1_workload() -> List[CoflowSpec]:
    """RAPIER Fig. 1: coflow a (40 Mb, 100 Mb) and b (60 Mb, 100 Mb), S->D, at t=0.

    Flow ids: a/0 = f_a1, a/1 = f_a2, b/0 = f_b1, b/1 = f_b2.
    """
    return [make_coflow("a", 0.0, [("S", "D", 40 * MBIT), ("S", "D", 100 * MBIT)]),
            make_coflow("b", 0.0, [("S", "D", 60 * MBIT), ("S", "D", 100 * MBIT)])]


def testbed_workload(scale: float = 1.0, base_port: int = 5001) -> List[CoflowSpec]:
    """RAPIER Table II: 3 coflows, 7 flows on the 3x3 leaf-spine, all at t=0.

    Host Mi is ``h{i}`` of :func:`topologies.leaf_spine` (3, 3, 3) (M1-M3 on leaf 1,
    M4-M6 on leaf 2, M7-M9 on leaf 3).  Volumes are decimal GB times ``scale``.  Each
    flow gets TCP destination port ``base_port + flow number - 1``.
    """
    if not scale > 0:
        raise WorkloadError(f"scale: must be positive, got {scale}")
    by: Dict[int, list] = {}
    for cid, fid, s, d, gb in TABLE_II:
        by.setdefault(cid, []).append((fid, "h" + s[1:], "h" + d[1:], gb * GB * scale))
    out = []
    for cid, fl in sorted(by.items()):
        specs = tuple(FlowSpec(f"{cid}/{fid}", str(cid), s, d, v, base_port + fid - 1)
                      for fid, s, d, v in fl)
        out.append(CoflowSpec(str(cid), 0.0, specs))
    return out


SCENARIOS = {
    "fig1": ("fig1", fig1_workload),
    "testbed": ("leafspine:3,3,3", testbed_workload),
}


def scenario(name: str, scale: float = 1.0):
    """Return ``(topology, coflows)`` of a named scenario (``fig1`` or ``testbed``).

    Raises:
        WorkloadError: unknown scenario name.
    """
    if name not in SCENARIOS:
        raise WorkloadError(f"scenario: unknown scenario {name!r}; known: "
                            f"{', '.join(sorted(SCENARIOS))}")
    spec, fn = SCENARIOS[name]
    topo = build_topology(spec)
    return topo, (fn(scale) if name == "testbed" else fn())
