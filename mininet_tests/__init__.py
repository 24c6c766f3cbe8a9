"""Mininet emulation of RAPIER: topologies, runner and the rapier-emulate command."""
