"""How long the analysis of a stored profile takes (the seconds after a main job's last visit), per store.

    python bench/analysis_time.py CLONE [CLONE ...]      # CLONE: a clone where `bash scripts/demo.sh` ran

Each store's first profile batch (stream@nadds1 -> @nadds30) is analysed again in this process with the profile's
default options (`quiho.profile.analysis.analyse_profile`: the metric change, both IRUPs, their comparison, the
fleet-size advice, the designed fleet's effects), on a copy of the store, so nothing is written to it. One row per
store: both IRUPs' validity (the advice runs only for one that is not meaningful) and the analysis's wall seconds,
the first row's imports and numba loads excluded by a warm-up analysis of the first store.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path


def _copy(src: Path, into: Path) -> Path:
    db = into / "quiho.db"
    con = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    con.execute("VACUUM INTO ?", (str(db),))
    con.close()
    return db


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("clones", type=Path, nargs="+", help="clones the demo ran in (their .quiho/quiho.db)")
    a = ap.parse_args()
    from quiho.profile.analysis import analyse_profile
    from quiho.store import open_store

    dbs = [c / ".quiho" / "quiho.db" for c in a.clones]
    missing = [str(d) for d in dbs if not d.is_file()]
    if missing:
        print(f"analysis_time: no store at {', '.join(missing)}", file=sys.stderr)
        return 2
    print("| store | IRUP validity A / B | analysis s |")
    print("|---|---|---|")
    for i, db in enumerate([dbs[0], *dbs]):
        tmp = Path(tempfile.mkdtemp(prefix="qh-analysis-"))
        try:
            copy = _copy(db, tmp)
            con = sqlite3.connect(copy)
            row = con.execute("SELECT batch FROM app_runs WHERE source = 'profile' ORDER BY id LIMIT 1").fetchone()
            con.close()
            if row is None:
                print(f"| {db.parent.parent.name} | no profile runs | – |")
                continue
            with open_store(copy) as st:
                t0 = time.perf_counter()
                r = analyse_profile(st, "stream", "nadds1", "nadds30", row[0])
                wall = time.perf_counter() - t0
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if i == 0:  # the warm-up: imports, numba's cached kernels, joblib's workers
            continue
        va = r.irup_a.validity.verdict if r.irup_a else "none"
        vb = r.irup_b.validity.verdict if r.irup_b else "none"
        print(f"| {db.parent.parent.name} | {va} / {vb} | {wall:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
