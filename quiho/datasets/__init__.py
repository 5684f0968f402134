"""Seeded generators with known truth for testing and benchmarking quiho's methods.

Submodules: ``irup`` (fleets with a planted bottleneck), ``perun`` (Perun-style
model pairs), ``history`` (performance histories with change points).
"""

from quiho.datasets import history, perun
from quiho.datasets.irup import planted_bottleneck

__all__ = ["history", "perun", "planted_bottleneck"]
