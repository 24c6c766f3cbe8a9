"""The fabrics of the evaluation.  RAPIER (Section V-B) names them only by server
count ("512-server Fattree and VL2", "8192-server Fattree"); the layouts below are
this project's choices, documented in docs/evaluation.md with a sensitivity run.

All capacities in bit/s.
"""

from __future__ import annotations

from typing import Callable, Dict, Tuple

from topologies import Topology, fat_tree, vl2

GBPS = 1e9

#: name -> (builder, one-line description).  Every builder returns a fresh topology.
FABRICS: Dict[str, Tuple[Callable[[], Topology], str]] = {
    "fattree512": (lambda: fat_tree(8, hosts_per_edge=16, link_bps=GBPS),
                   "k=8 fat-tree, 16 servers per edge switch (512 servers), all links "
                   "1 Gbit/s: 8 pods x 4 edge + 4 aggregation, 16 cores, 4:1 "
                   "oversubscribed at the edge, 16 equal-cost paths between pods"),
    "fattree512-nb": (lambda: fat_tree(16, hosts_per_edge=4, link_bps=GBPS),
                      "k=16 fat-tree with 4 servers per edge switch (512 servers), 1 Gbit/s: "
                      "16 pods x 8 edge + 8 aggregation, 64 cores, no oversubscription, "
                      "64 equal-cost paths between pods (sensitivity variant)"),
    "vl2-512": (lambda: vl2(8, 16, servers_per_tor=16, server_bps=GBPS, fabric_bps=10 * GBPS),
                "VL2 with D_A=8, D_I=16: 32 ToRs x 16 servers (512), 16 aggregation, "
                "4 intermediate switches; servers 1 Gbit/s, ToR uplinks and core "
                "10 Gbit/s (16 Gbit/s down, 20 Gbit/s up per ToR: no oversubscription), "
                "16 equal-cost paths between ToRs of different aggregation pairs"),
    "vl2-512-os": (lambda: vl2(8, 16, servers_per_tor=16, server_bps=GBPS, fabric_bps=4 * GBPS),
                   "as vl2-512 but 4 Gbit/s fabric links (8 Gbit/s up per ToR: 2:1 "
                   "oversubscribed; sensitivity variant)"),
    "fattree8192": (lambda: fat_tree(32, link_bps=GBPS),
                    "standard k=32 fat-tree (8192 servers, 1 Gbit/s, no oversubscription, "
                    "256 equal-cost paths between pods)"),
}

_CACHE: Dict[str, Topology] = {}


def fabric(name: str) -> Topology:
    """The topology called ``name`` in :data:`FABRICS` (built once per process, so
    its candidate-path caches are shared by every run).

    Raises:
        KeyError: unknown fabric name (the message lists the known ones).
    """
    if name not in FABRICS:
        raise KeyError(f"fabric: unknown fabric {name!r}; known: {', '.join(sorted(FABRICS))}")
    if name not in _CACHE:
        _CACHE[name] = FABRICS[name][0]()
    return _CACHE[name]
