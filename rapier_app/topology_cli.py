"""``rapier-topology``: write a fabric as a topology file, and check one.

::

    rapier-topology export fattree:4 -o fattree4.yaml     # any spec, to a file
    rapier-topology export leafspine:3,3,3                # to stdout
    rapier-topology check configs/topologies/two-speeds.yaml
    rapier-topology pin -o fabric.yaml                    # what the controller discovered

``export SPEC`` writes the fabric ``topologies.build_topology(SPEC)`` gives (its
switches, dpids, hosts, IPs, MACs, ports and capacities) as a topology file
(:mod:`topologies.topofile`, docs/topology.md); reading it back
(``file:FILE``) gives the same graph.  ``check FILE`` reads and validates a file and
prints one line: switches, hosts, links, link speeds and candidate-path slack.
``pin`` asks a running controller for the topology in force (``GET
/rapier/v1/topology/file``; with ``topology = discover``, what it discovered) and
writes it as a topology file, to pin the fabric (``topology = file:FILE``); it refuses
a discovered fabric that is not stable yet unless ``--any-state``.

Exit status: 0 done; 2 bad arguments or a file that does not parse or validate
(the error on stderr names the file, the line, the element and the field), or a
controller that does not answer, answers an error or is not stable (``pin``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from topologies import TopologyError, build_topology, dump_topology
from topologies.base import describe

from .cli_common import add_common_arguments




def build_parser() -> argparse.ArgumentParser:
    """The ``rapier-topology`` argument parser."""
    ap = argparse.ArgumentParser(prog="rapier-topology",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="write a fabric (any topology spec) as a topology file")
    ex.add_argument("spec", help="fattree:K, vl2:DA,DI[,T], leafspine:L,S,H, bigswitch:N, "
                                 "fig1 or file:PATH")
    ex.add_argument("-o", "--output", default=None, metavar="FILE",
                    help="output file (default: stdout)")
    ex.add_argument("--link-bps", type=float, default=None, metavar="BPS",
                    help="link speed in bit/s (as build_topology's link_bps; default the "
                         "spec's)")
    ex.add_argument("--path-slack", type=int, default=None, metavar="HOPS",
                    help="candidate paths up to HOPS hops longer than the shortest, "
                         "written into the file (default: the spec's, 0)")
    ck = sub.add_parser("check", help="read and validate a topology file")
    ck.add_argument("file", help="topology file (YAML)")
    pn = sub.add_parser("pin", help="write the topology a running controller has in force "
                                    "(discovered) as a topology file")
    pn.add_argument("--controller", default="http://127.0.0.1:8080", metavar="URL",
                    help="the controller's REST base URL (default http://127.0.0.1:8080)")
    pn.add_argument("-o", "--output", default=None, metavar="FILE",
                    help="output file (default: stdout)")
    pn.add_argument("--any-state", action="store_true",
                    help="write a discovered fabric that is not stable yet too")
    pn.add_argument("--timeout", type=float, default=10.0, metavar="S",
                    help="REST timeout in seconds (default 10)")
    add_common_arguments(ap)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``rapier-topology``; exit status 0, or 2 for bad arguments or a
    bad topology file (the error on stderr)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        if args.command == "export":
            if args.link_bps is not None and not args.link_bps > 0:
                raise TopologyError(f"--link-bps: must be positive, got {args.link_bps:g}")
            topo = build_topology(args.spec, args.link_bps)
            if args.path_slack is not None:
                topo.set_path_slack(args.path_slack)
            text = dump_topology(topo, header=f"RAPIER topology file (docs/topology.md), "
                                              f"written by: rapier-topology export "
                                              f"{args.spec}")
            if args.output:
                from topologies import save_topology

                save_topology(topo, args.output, header=text.splitlines()[0][2:])
            else:
                sys.stdout.write(text)
            return 0
        if args.command == "pin":
            return _pin(args)
        spec = args.file if args.file.startswith("file:") else f"file:{args.file}"
        print(f"{args.file}: ok: {describe(build_topology(spec))}")
        return 0
    except TopologyError as exc:
        print(f"rapier-topology: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"rapier-topology: {exc}", file=sys.stderr)
        return 2


def _pin(args) -> int:
    """``rapier-topology pin``: GET /rapier/v1/topology/file, check, write."""
    import os

    from enforcement.client import request
    from topologies.topofile import loads_topology

    try:
        st, saved = request(args.controller, "GET", "/rapier/v1/topology/file",
                            timeout=args.timeout)
    except (OSError, ValueError) as exc:
        raise TopologyError(f"--controller: {args.controller}: {exc}") from None
    if st != 200 or not isinstance(saved, dict) or not isinstance(saved.get("file"), str):
        raise TopologyError(f"--controller: {args.controller}: GET /rapier/v1/topology/file "
                            f"answered {st}: {str(saved)[:200]}")
    if saved.get("state") not in ("stable", "declared") and not args.any_state:
        raise TopologyError(f"state: the controller's fabric is {saved.get('state')}, not "
                            f"stable yet (wait, or --any-state)")
    topo = loads_topology(saved["file"], f"{args.controller} topology/file")
    if args.output:
        tmp = f"{args.output}.tmp"
        with open(tmp, "w") as fh:
            fh.write(saved["file"])
        os.replace(tmp, args.output)
        print(f"{args.output}: {describe(topo)}", file=sys.stderr)
    else:
        sys.stdout.write(saved["file"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
