"""Cost of the integrity check a store runs before its first write (``Store.check``: SQLite ``quick_check``).

Usage:  python bench/store_check.py [--sizes 4,32,128] [--repeat 3]

Builds stores of roughly the given sizes (MB) from synthetic fingerprint runs (real SQLite files in a temporary
folder) and prints, per size, the file size and the median wall time of ``Store.check()`` over ``--repeat``
calls (the file is in the page cache after the first). Backs the ``QUICK_CHECK_MAX_BYTES`` cap in
``quiho/store/_db.py``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from quiho.datasets.fleet import fingerprint_history, store_fingerprint_history
from quiho.store import open_store


def build(path: Path, mb: float) -> None:
    with open_store(path) as st:
        run = 0
        while path.stat().st_size < mb * 1e6:
            h = fingerprint_history(n_hosts=20, n_runs=10, reps=3, random_state=run)
            h["run"] += run
            store_fingerprint_history(st, h)
            run += 10
            st.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4,32,128", help="approximate store sizes in MB (default 4,32,128)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'target MB':>9}  {'file MB':>8}  {'check s':>8}  {'ms per MB':>9}")
    print(f"{'-' * 9}  {'-' * 8}  {'-' * 8}  {'-' * 9}")
    with tempfile.TemporaryDirectory() as d:
        for mb in (float(x) for x in args.sizes.split(",")):
            path = Path(d) / f"s{mb:g}.db"
            build(path, mb)
            with open_store(path) as st:
                times = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    st.check()
                    times.append(time.perf_counter() - t)
            size = path.stat().st_size / 1e6
            med = statistics.median(times)
            print(f"{mb:>9g}  {size:>8.1f}  {med:>8.3f}  {1000 * med / size:>9.1f}")


if __name__ == "__main__":
    main()
