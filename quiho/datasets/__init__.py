"""Seeded generators with known truth for testing and benchmarking quiho's methods.

Submodules: ``irup`` (fleets with a planted bottleneck), ``profile`` (a planted version pair), ``perun`` (Perun-style
model pairs), ``history`` (performance histories with change points), ``perf_history`` (builds with repetitions,
build effects and missing builds; imported on use: it needs ``quiho.history``), ``design`` (a designed fleet with
planted factor effects).
"""

from quiho.datasets import history, perun
from quiho.datasets.design import planted_design, planted_fingerprints
from quiho.datasets.irup import planted_bottleneck
from quiho.datasets.profile import planted_profile

__all__ = ["history", "perun", "planted_bottleneck", "planted_design", "planted_fingerprints", "planted_profile"]
