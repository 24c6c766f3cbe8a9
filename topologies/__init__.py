"""Datacenter topologies shared by the simulator, the controller and Mininet.

One definition per fabric (fat-tree, VL2, leaf-spine, big switch, and RAPIER's
Fig. 1 example): see :mod:`topologies.builders` and :class:`topologies.base.Topology`.
"""

from .base import HOST, SWITCH_ROLES, Path, Topology, TopologyError
from .builders import big_switch, build_topology, fat_tree, fig1, leaf_spine, vl2

__all__ = ["HOST", "SWITCH_ROLES", "Path", "Topology", "TopologyError", "big_switch",
           "build_topology", "fat_tree", "fig1", "leaf_spine", "vl2"]
