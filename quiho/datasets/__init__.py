"""Seeded generators with known truth, for tests, benchmarks and examples."""

from quiho.datasets.irup import planted_bottleneck

__all__ = ["planted_bottleneck"]
