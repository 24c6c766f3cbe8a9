"""The workload options, declared once for every tool that builds a workload.

``rapier-sim`` (:mod:`rapier_app.cli`), ``rapier-check``
(:mod:`rapier_app.sim.check_cli`), ``rapier-emulate`` (:mod:`mininet_tests.emulate`)
and the scripts of ``benchmarks/`` take the same workload options with the same
names, types and parsing:

* :func:`add_workload_options` declares any of them on a parser (or argument group)
  in the order given, each tool overriding only what it means differently (a
  default, a help text, the choices);
* :func:`parse_synthetic` reads ``--synthetic N,WIDTH,INTERARRIVAL_S``;
* :func:`check_workload_options` refuses conflicting or misplaced options and fills
  in the defaults that depend on the workload;
* :func:`workload_from_args` builds ``(topology, coflows, description)`` from the
  parsed options (RAPIER Fig. 1 and Table II scenarios, a coflow-benchmark trace, or
  the Section V-B synthetic workload);
* :func:`apply_goodput` scales a topology's capacities to the payload share of the
  wire rate (``--goodput``).

Units: bytes, bit/s, seconds (``--link-gbps`` in Gbit/s, ``--sizes`` in MB).
"""

from __future__ import annotations

import argparse
from typing import Dict, Tuple, Union

from .core.workload import SCENARIOS
from .errors import RapierError

__all__ = ["DEFAULT_SIZES", "OPTIONS", "PLACEMENTS", "UsageError", "add_workload_options",
           "apply_goodput", "check_workload_options", "fill_workload_defaults",
           "parse_synthetic", "workload_from_args"]

#: Flow sizes of ``--synthetic`` when ``--sizes`` is not given (MB; RAPIER Section V-B).
DEFAULT_SIZES = "uniform:10,100"
#: ``--placement`` values: how trace ports map onto hosts
#: (:func:`rapier_app.core.workload.port_mapping`).
PLACEMENTS = ("auto", "identity", "random")


class UsageError(RapierError, ValueError):
    """Bad command-line input (the message names the option)."""


#: Every workload option: its argparse keywords (``dest`` is the key).  The help
#: texts are ``rapier-sim``'s; other tools override what differs for them.
OPTIONS: Dict[str, dict] = {
    "scenario": dict(choices=sorted(SCENARIOS),
                     help="named scenario: fig1 (RAPIER Fig. 1) or testbed (Table II on the "
                          "3x3 leaf-spine); brings its own topology"),
    "trace": dict(metavar="PATH", help="coflow-benchmark trace file"),
    "synthetic": dict(metavar="N,WIDTH,INTERARRIVAL_S",
                      help="RAPIER V-B workload: N coflows of WIDTH flows, Poisson arrivals "
                           "with the given mean inter-arrival (s)"),
    "topology": dict(metavar="SPEC",
                     help="fattree:K[,HOSTS_PER_EDGE] | vl2:DA,DI[,SERVERS_PER_TOR] | "
                          "leafspine:LEAVES,SPINES,HOSTS_PER_LEAF | bigswitch:N | fig1 "
                          "| file:PATH (a topology file, docs/topology.md) (default for "
                          "traces: bigswitch:<ports>)"),
    "link_gbps": dict(type=float, default=None,
                      help="override the topology's link speed in Gbit/s (a topology "
                           "file: its slowest host link, the others in proportion)"),
    "goodput": dict(type=float, default=1.0, metavar="FACTOR",
                    help="multiply every link capacity by FACTOR in (0, 1]: the payload "
                         "share of the wire rate (TCP/IP/Ethernet headers; the emulation "
                         "uses 1448/1514 = 0.956); default 1, the model's ideal"),
    "sizes": dict(default=None,
                  help="flow sizes of --synthetic in MB: uniform:LO,HI | const:MB | exp:MEAN "
                       f"| pareto:SCALE,SHAPE (default {DEFAULT_SIZES})"),
    "placement": dict(default=None, choices=list(PLACEMENTS),
                      help="--trace ports onto hosts: identity on a big switch, seeded "
                           "random hosts elsewhere (auto, the default)"),
    "limit": dict(type=int, default=None, help="replay only the first N coflows of --trace"),
    "scale": dict(type=float, default=None,
                  help="size factor for --scenario testbed (default 1)"),
    "seed": dict(type=int, default=1,
                 help="workload seed (synthetic draw, trace placement; default 1)"),
}

Target = Union[argparse.ArgumentParser, "argparse._ArgumentGroup"]


def add_workload_options(target: Target, *names: str, bare: bool = False,
                         **overrides: dict) -> Target:
    """Declare the workload options ``names`` (keys of :data:`OPTIONS`, e.g.
    ``"topology"``, ``"link_gbps"``; the flag is ``--`` plus the name with ``-`` for
    ``_``) on ``target``, a parser or an argument group, in the order given.

    Args:
        target: an :class:`argparse.ArgumentParser` or one of its argument groups.
        names: the options to declare.
        bare: declare each option with no default (None) and no help text, the
            type, metavar and choices kept (``rapier-check``: the run's header
            supplies what is not given).
        overrides: per option name, argparse keywords that replace the shared ones
            (``seed=dict(help="base seed; try i uses seed+i")``).

    Returns:
        ``target``.

    Raises:
        KeyError: a name that is not a workload option, or an override for an option
            not in ``names``.
    """
    unknown = [n for n in list(names) + list(overrides) if n not in OPTIONS]
    stray = [n for n in overrides if n not in names]
    if unknown or stray:
        raise KeyError(f"workload options: unknown {unknown} or not declared {stray} "
                       f"(known: {', '.join(OPTIONS)})")
    for name in names:
        spec = dict(OPTIONS[name])
        if bare:
            spec.pop("help", None)
            spec["default"] = None
        spec.update(overrides.get(name, {}))
        target.add_argument("--" + name.replace("_", "-"), **spec)
    return target


def parse_synthetic(text: str) -> Tuple[int, int, float]:
    """``"N,WIDTH,INTERARRIVAL_S"`` -> ``(n, width, interarrival_s)``: coflows,
    flows per coflow, mean inter-arrival in seconds (RAPIER Section V-B).

    Raises:
        UsageError: not three comma-separated numbers (names ``--synthetic``).
    """
    parts = text.split(",")
    try:
        if len(parts) != 3:
            raise ValueError
        return int(parts[0]), int(parts[1]), float(parts[2])
    except ValueError:
        raise UsageError(f"--synthetic: expected N,WIDTH,INTERARRIVAL_S, got {text!r}") from None


def check_workload_options(args) -> None:
    """Refuse conflicting or misplaced workload options of ``args`` (a namespace with
    every attribute of :data:`OPTIONS` but ``goodput`` and ``seed``), then fill in the
    defaults that depend on the workload: ``sizes`` (:data:`DEFAULT_SIZES`),
    ``placement`` (``auto``) and ``scale`` (1).

    Raises:
        UsageError: naming the option, e.g. ``--limit`` without ``--trace``, or
            ``--topology`` missing with ``--synthetic``.
    """
    chosen = [x for x in (args.scenario, args.trace, args.synthetic) if x]
    if len(chosen) != 1:
        raise UsageError("workload: give exactly one of --scenario, --trace, --synthetic")
    only = [("--limit", args.limit, args.trace, "--trace"),
            ("--placement", args.placement, args.trace, "--trace"),
            ("--sizes", args.sizes, args.synthetic, "--synthetic"),
            ("--scale", args.scale, args.scenario == "testbed", "--scenario testbed")]
    if args.synthetic:
        parse_synthetic(args.synthetic)
    for opt, val, ok, needs in only:
        if val is not None and not ok:
            raise UsageError(f"{opt}: applies only to {needs}; it would be ignored here")
    if args.scenario and args.topology:
        raise UsageError("--topology: a --scenario brings its own topology")
    if args.synthetic and not args.topology:
        raise UsageError("--topology: required with --synthetic")


def fill_workload_defaults(args) -> None:
    """Set ``args.sizes``, ``args.placement`` and ``args.scale`` to their defaults
    (:data:`DEFAULT_SIZES`, ``auto``, 1) where they are None."""
    args.sizes = args.sizes or DEFAULT_SIZES
    args.placement = args.placement or "auto"
    args.scale = 1.0 if args.scale is None else args.scale


def workload_from_args(args, seed: int):
    """Build ``(topology, coflows, description)`` for one try from the workload
    options of ``args`` (:data:`OPTIONS`; ``goodput`` is applied by the caller).

    Exactly one of ``args.scenario`` (RAPIER Fig. 1 or the Table II testbed, sizes x
    ``args.scale``), ``args.trace`` (a coflow-benchmark trace, its ports placed onto
    the topology's hosts with ``seed``, the first ``args.limit`` coflows) or
    ``args.synthetic`` (RAPIER Section V-B, drawn with ``seed``).

    Returns:
        (:class:`topologies.Topology`, list of :class:`~rapier_app.core.model.CoflowSpec`,
        a one-line description).

    Raises:
        UsageError: not exactly one workload, ``--topology`` with a scenario or
            missing with ``--synthetic``, a malformed ``--synthetic``.
        rapier_app.core.model.WorkloadError: a trace that does not parse, bad sizes.
        topologies.TopologyError: a bad topology spec.
    """
    from topologies import build_topology

    from .core.workload import port_mapping, read_trace, scenario, synthetic, trace_to_coflows

    chosen = [x for x in (args.scenario, args.trace, args.synthetic) if x]
    if len(chosen) != 1:
        raise UsageError("workload: give exactly one of --scenario, --trace, --synthetic")
    link_bps = None if args.link_gbps is None else args.link_gbps * 1e9
    if args.scenario:
        if args.topology:
            raise UsageError("--topology: a --scenario brings its own topology")
        topo, coflows = scenario(args.scenario, 1.0 if args.scale is None else args.scale)
        if link_bps is not None:
            topo = build_topology(topo.name, link_bps)
        return topo, coflows, f"scenario {args.scenario}"
    if args.trace:
        trace = read_trace(args.trace)
        topo = build_topology(args.topology or f"bigswitch:{trace.ports}", link_bps)
        mapping = port_mapping(trace.ports, topo, seed, args.placement or "auto")
        return topo, trace_to_coflows(trace, mapping, args.limit), f"trace {args.trace}"
    n, width, ia = parse_synthetic(args.synthetic)
    if not args.topology:
        raise UsageError("--topology: required with --synthetic")
    topo = build_topology(args.topology, link_bps)
    sizes = args.sizes or DEFAULT_SIZES
    return topo, synthetic(topo, n, width, ia, sizes, seed), \
        f"synthetic n={n} width={width} interarrival={ia}s sizes={sizes}"


def apply_goodput(topo, factor: float):
    """Multiply every link capacity of ``topo`` by ``factor`` (in place; returns it).

    Models transport overhead in the flow-level simulator: a link of C bit/s carries
    ``factor * C`` bit/s of flow payload (``--goodput``; measured in the emulation as
    1448/1514 for full TCP segments with timestamps).

    Raises:
        UsageError: ``factor`` not in (0, 1] (names ``--goodput``).
    """
    if not 0 < factor <= 1:
        raise UsageError(f"--goodput: must be in (0, 1], got {factor}")
    if factor == 1:
        return topo
    for _u, _v, d in topo.graph.edges(data=True):
        d["capacity_bps"] = float(d["capacity_bps"]) * factor
    topo.capacity = topo.capacity * factor
    return topo
