#!/usr/bin/env python3
"""Two pyperf benchmarks (the fixture of quiho history import --format pyperf)."""
import pyperf

runner = pyperf.Runner()
runner.timeit(name="sort a sorted list", stmt="sorted(s)", setup="s = list(range(1000))")
runner.timeit(name="join strings", stmt="''.join(parts)", setup="parts = ['x'] * 200")
