"""Datacenter topologies shared by the simulator, the controller and Mininet.

One definition per fabric (fat-tree, VL2, leaf-spine, big switch, and RAPIER's
Fig. 1 example): see :mod:`topologies.builders` and :class:`topologies.base.Topology`;
any other fabric from a topology file (:mod:`topologies.topofile`, ``file:PATH``).
"""

from .base import HOST, SWITCH_ROLES, Path, Topology, TopologyError
from .builders import (absolute_spec, big_switch, build_topology, fat_tree, fig1, leaf_spine,
                       reference_bps, scale_capacities, vl2)
from .topofile import dump_topology, load_topology, loads_topology, save_topology

__all__ = ["HOST", "SWITCH_ROLES", "Path", "Topology", "TopologyError", "absolute_spec",
           "big_switch", "build_topology", "dump_topology", "fat_tree", "fig1", "leaf_spine",
           "load_topology", "loads_topology", "reference_bps", "save_topology",
           "scale_capacities", "vl2"]
