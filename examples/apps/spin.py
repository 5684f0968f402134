"""A CPU-bound toy application: an xorshift loop of N million steps (argv[1], default 5)."""

import sys

n = int(float(sys.argv[1]) * 1_000_000) if len(sys.argv) > 1 else 5_000_000
x = 88172645463325252
for _ in range(n):
    x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 7
    x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
print(x & 0xFFFF)
