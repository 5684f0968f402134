"""A memory-bound toy application: STREAM-like triad a = b + s*c over 3 x 64 MiB arrays, argv[1] times."""

import json
import sys
import time

import numpy as np

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
n = 8 * 1024 * 1024  # 64 MiB of float64 per array
b = np.ones(n)
c = np.full(n, 2.0)
a = np.empty(n)
t0 = time.perf_counter()
for _ in range(reps):
    np.multiply(c, 3.0, out=a)
    np.add(a, b, out=a)
dt = time.perf_counter() - t0
print(json.dumps({"kernel_s": dt, "gb_per_s": 3 * 8 * n * reps / dt / 1e9}))
