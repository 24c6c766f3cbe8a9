"""Flow-level simulator and metrics (pure Python)."""

from .simulator import SimResult, SimulationError, Simulator, simulate

__all__ = ["SimResult", "SimulationError", "Simulator", "simulate"]
