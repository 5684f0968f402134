"""Wall time of the history commands on large inputs: linear in the input, 200 k points in a few seconds.

Run: ``python bench/history_speed.py [--quick]``. Prints a table; asserts nothing. Each row runs the real
CLI entry point (``quiho.cli.main.main``) in this process on a generated CSV of N rows (one value per
revision, a 10 % step in the middle, noise sd 1 %), so parsing, validation, detection and drawing are all
counted; interpreter start-up and first imports are not (every command runs once on 100 rows first).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
from pathlib import Path

import numpy as np

from quiho.cli.main import main


def write_csv(path: Path, n: int, *, orders: bool = False, spread: int = 1) -> Path:
    rng = np.random.default_rng(0)
    v = np.where(np.arange(n) < n // 2, 1.0, 1.1) + rng.normal(0, 0.01, n)
    with path.open("w") as f:
        f.write("revision,value,order\n" if orders else "revision,value\n")
        for i in range(n):
            f.write(f"r{i},{v[i]:.6f},{i * spread}\n" if orders else f"r{i},{v[i]:.6f}\n")
    return path


def timed(args: list[str]) -> tuple[float, float, int]:
    out, err = io.StringIO(), io.StringIO()
    t0, c0 = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(args)
    return time.perf_counter() - t0, time.process_time() - c0, rc


def main_() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 k rows only")
    a = ap.parse_args()
    sizes = [20_000] if a.quick else [20_000, 200_000]
    # CPU seconds next to wall seconds: on a shared 2-core machine wall time also measures the neighbours
    print("| command | rows | wall s | CPU s | exit |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for n in [100, *sizes]:
            plain = write_csv(tmp / f"p{n}.csv", n)
            ordered = write_csv(tmp / f"o{n}.csv", n, orders=True)
            sparse = write_csv(tmp / f"s{n}.csv", n, orders=True, spread=5000)  # orders up to 1e9
            db = str(tmp / f"q{n}.db")
            rows = [
                ("history detect FILE", ["history", "detect", str(plain)]),
                ("history detect FILE --order-col order", ["history", "detect", str(ordered), "--order-col", "order"]),
                ("history import FILE", ["history", "import", str(plain), "--store", db]),
                ("history detect SERIES (store)", ["history", "detect", plain.stem, "--store", db]),
                ("history plot FILE", ["history", "plot", str(plain), "-o", str(tmp / "p.png")]),
                ("history plot FILE --order-col (orders to 1e9)",
                 ["history", "plot", str(sparse), "--order-col", "order", "-o", str(tmp / "s.png")]),
            ]
            for label, args in rows:
                s, cpu, rc = timed(args)
                if n > 100:  # the 100-row pass only warms up imports
                    print(f"| {label} | {n} | {s:.2f} | {cpu:.2f} | {rc} |", flush=True)


if __name__ == "__main__":
    main_()
