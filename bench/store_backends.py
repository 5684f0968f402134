"""The same commands on a SQLite store and a PostgreSQL store of the same machine: is a team store fast enough?

Usage:  python bench/store_backends.py [--points 200000] [--series 1000] [--repeat 3] [--url postgresql://...]

Times, in this process (``quiho.cli.main.main``, output to /dev/null), on a fresh store of each backend:

* ``quiho history import`` of one CSV of ``--points`` revisions (one value each), into a new series;
* ``quiho history detect --all --json`` over ``--series`` series of 60 revisions each (written beforehand).

and prints the median wall time of ``--repeat`` runs per backend and PostgreSQL / SQLite. Without ``--url`` the
PostgreSQL server is a throw-away cluster made with Debian's initdb/pg_ctl in a temporary directory (default
settings, so fsync is on as it is for SQLite), on loopback TCP; run as root it runs as the ``postgres`` user.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from quiho.cli.main import main as quiho
from quiho.store import history, open_store


@contextlib.contextmanager
def throwaway_server() -> Iterator[Callable[[str], str]]:
    """A temporary PostgreSQL cluster; yields ``new_db(name) -> URL``."""
    import psycopg

    bindir = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))[-1].parent
    root = Path(tempfile.mkdtemp(prefix="quiho-bench-pg-"))
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_pg:
        subprocess.run(["chown", "postgres:postgres", str(root)], check=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = root / "data"
    subprocess.run([*as_pg, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                    "--locale=C.UTF-8"], check=True, capture_output=True)
    subprocess.run([*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
                    f"-p {port} -c listen_addresses=127.0.0.1 -k {root}", "start"], check=True, capture_output=True)

    def new_db(name: str) -> str:
        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres", autocommit=True) as c:
            c.execute(f"CREATE DATABASE {name}")
        return f"postgresql://postgres@127.0.0.1:{port}/{name}"

    try:
        yield new_db
    finally:
        subprocess.run([*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        subprocess.run(["rm", "-rf", str(root)], check=False)


def timed(argv: list[str]) -> float:
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        t = time.perf_counter()
        rc = quiho(argv)
        dt = time.perf_counter() - t
    if rc not in (0, 3):
        raise SystemExit(f"quiho {' '.join(argv)} exited {rc}")
    return dt


def fill_series(store: str, n: int) -> None:
    rng = np.random.default_rng(0)
    revs = [f"r{i:03d}" for i in range(60)]
    with open_store(store) as st:
        for k in range(n):
            level = np.r_[np.full(40, 100.0), np.full(20, 100.0 + 10 * (k % 3 == 0))]
            values = level + rng.normal(0, 1, 60)
            history.replace_series(st, f"series-{k:04d}", "ms", "bench", {},
                                   [history.StoredRevision(r, i, "ok", None, (float(v),))
                                    for i, (r, v) in enumerate(zip(revs, values, strict=True))])


def run(stores: dict[str, Callable[[str], str]], csv: Path, n_series: int, repeat: int) -> dict[str, dict[str, float]]:
    """Median seconds per (operation, backend); every repetition on fresh stores, after one untimed warm-up.

    The warm-up (a 50-series store of each backend, both commands) keeps first-call costs (imports, compiled
    kernels) out of the first timed backend.
    """
    times: dict[str, dict[str, list[float]]] = {"import": {}, "detect": {}}
    for make in stores.values():
        s = make("warm")
        fill_series(s, 50)
        timed(["history", "detect", "--all", "--json", "--store", s])
        timed(["history", "import", str(csv), "--series", "warm", "--store", s])
    for i in range(repeat):
        for backend, make in stores.items():
            s = make(f"imp{i}")
            times["import"].setdefault(backend, []).append(timed(["history", "import", str(csv), "--series", "big",
                                                                  "--store", s]))
            s = make(f"det{i}")
            fill_series(s, n_series)
            times["detect"].setdefault(backend, []).append(timed(["history", "detect", "--all", "--json",
                                                                  "--store", s]))
    return {op: {b: statistics.median(v) for b, v in per.items()} for op, per in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=200_000)
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--url", help="a PostgreSQL server URL whose user may CREATE DATABASE (default: a throw-away one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d, contextlib.ExitStack() as stack:
        os.environ["QUIHO_STORE_FILES"] = str(Path(d) / "pgfiles")
        csv = Path(d) / "big.csv"
        rng = np.random.default_rng(1)
        csv.write_text("revision,value\n" + "".join(f"r{i:07d},{v!r}\n"
                                                    for i, v in enumerate(rng.normal(100, 1, args.points).tolist())))
        if args.url:
            import sqlalchemy as sa

            base = args.url.rsplit("/", 1)[0]
            engine = sa.create_engine(args.url.replace("postgresql://", "postgresql+psycopg://", 1),
                                      isolation_level="AUTOCOMMIT")

            def new_db(name: str) -> str:
                with engine.connect() as c:
                    c.exec_driver_sql(f"DROP DATABASE IF EXISTS bench_{name}")
                    c.exec_driver_sql(f"CREATE DATABASE bench_{name}")
                return f"{base}/bench_{name}"
        else:
            new_db = stack.enter_context(throwaway_server())
        stores = {"sqlite": lambda name: str(Path(d) / f"{name}.db"), "postgresql": new_db}
        res = run(stores, csv, args.series, args.repeat)
    print(f"{'operation':<44}  {'SQLite s':>9}  {'PostgreSQL s':>12}  {'PG / SQLite':>11}")
    print(f"{'-' * 44}  {'-' * 9}  {'-' * 12}  {'-' * 11}")
    labels = {"import": f"history import, {args.points:,} points",
              "detect": f"history detect --all, {args.series:,} series"}
    for op, label in labels.items():
        a, b = res[op]["sqlite"], res[op]["postgresql"]
        print(f"{label:<44}  {a:>9.2f}  {b:>12.2f}  {b / a:>10.2f}x")
    print(f"(median of {args.repeat} runs each, wall time; this process plus the local server)")


if __name__ == "__main__":
    main()
