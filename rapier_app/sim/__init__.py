"""Flow-level simulator and metrics (pure Python)."""

from .simulator import EventRecord, SimResult, SimulationError, Simulator, simulate

__all__ = ["EventRecord", "SimResult", "SimulationError", "Simulator", "simulate"]
