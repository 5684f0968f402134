"""Which rows and which formula should a profile's IRUP use? Prints one table; rerun with
`python bench/irup_rows_formula.py --store A.db [--store B.db ...]`.

For every local-fleet profile batch in the given stores that ran both versions (default
``stream@nadds1`` and ``stream@nadds30``, i.e. ``quiho profile stream@nadds1 stream@nadds30``),
one row per

- rows: ``host-median`` (every run of a host gets its host's median fingerprint, what
  ``quiho profile`` does) or ``per-rep`` (fingerprint repetition *i* paired with run *i*, the
  paper's rule);
- formula: ``classic`` or ``permutation``;

with the leave-one-group-out R² and validity verdict of each version's IRUP, the memory and
cpu class shares A → B, the profile-shift test's p (``--permutations``, default 200 as in the
product) and the product's verdict (:func:`quiho.irup.compare_runs`). ``self diff`` is the
same comparison on split-half self-pairs (each version's runs split per host into two random
halves, ``--splits`` per version): nothing changed there, so every ``different`` is a false
alarm. nadds1 is memory-bound and nadds30 compute-bound by construction: the expected answer is
``different`` with memory share down and cpu share up.

Everything is the product's code on stored runs (no fleet time); the store is opened read-only
in spirit (nothing is written: IRUPs are not saved).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from irup_calibration import split_halves  # same folder: run as `python bench/irup_rows_formula.py`

from quiho.errors import QuihoError
from quiho.irup import ShiftSettings, TargetData, compare_runs, compute_irup, load_target
from quiho.irup.compare import class_shares
from quiho.profile.analysis import _host_median_rows
from quiho.store import open_store

ROWS = {"host-median": _host_median_rows, "per-rep": lambda d: d}


def profile_batches(path: Path, application: str, versions: tuple[str, str]) -> list[str]:
    """Batches of ``path`` holding runs of both versions of ``application``."""
    st = open_store(path, create=False)
    q = ("SELECT batch FROM app_runs WHERE application = ? AND version IN (?, ?) GROUP BY batch "
         "HAVING COUNT(DISTINCT version) = 2 ORDER BY MIN(id)")
    return [r[0] for r in st.conn.execute(q, (application, *versions))]


def judge(a: TargetData, b: TargetData, formula: str, args: argparse.Namespace, seed: int) -> dict:
    """The product's comparison of ``a`` and ``b``: IRUPs, validity, class shares, p, verdict."""
    ia = compute_irup(a, importance=formula, seeds=args.seeds, random_state=seed, n_jobs=args.jobs)
    ib = compute_irup(b, importance=formula, seeds=args.seeds, random_state=seed, n_jobs=args.jobs)
    settings = ShiftSettings(permutations=args.permutations, random_state=seed, n_jobs=args.jobs)
    c, note = compare_runs(ia, ib, a, b, settings)
    sa, sb = class_shares(ia), class_shares(ib)
    return {"verdict": c.verdict, "p": c.p_value if c.p_value is not None else float("nan"),
            "r2": (ia.validity.r2_group_cv, ib.validity.r2_group_cv),
            "valid": (ia.validity.verdict, ib.validity.verdict),
            "mem": (sa.get("memory", 0.0), sb.get("memory", 0.0)), "cpu": (sa.get("cpu", 0.0), sb.get("cpu", 0.0)),
            "note": note}


SHORT = {"meaningful": "M", "weak": "w", "not-meaningful": "n"}
HEAD = (f"{'batch':<34} {'rows':<11} {'formula':<11} {'R2 A':>5} {'R2 B':>5} {'valid':>5} {'memory A>B':>11} "
        f"{'cpu A>B':>11} {'p':>6} {'verdict':<13} {'self diff':>9} {'self p<.05':>10} {'s':>4}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, action="append", required=True, help="a quiho store (repeatable)")
    ap.add_argument("--application", default="stream")
    ap.add_argument("--versions", default="nadds1,nadds30", help="A,B as stored (default nadds1,nadds30)")
    ap.add_argument("--permutations", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=10, help="IRUP seeds (the profile's default)")
    ap.add_argument("--splits", type=int, default=3, help="split-half self-pairs per version")
    ap.add_argument("--jobs", type=int, default=-1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    va, vb = args.versions.split(",")
    print(f"cores: {os.cpu_count()}, permutations: {args.permutations}, seeds: {args.seeds}, self-pairs: "
          f"{args.splits} per version, load average before: {os.getloadavg()[0]:.2f}")
    print(f"A = {args.application}@{va}, B = {args.application}@{vb}; valid: A/B validity (M meaningful, w weak, "
          "n not meaningful); self: split-half self-pairs of A and of B (different / pairs)")
    print(HEAD)
    totals: dict[tuple[str, str], list[int]] = {}
    for path in args.store:
        batches = profile_batches(path, args.application, (va, vb))
        if not batches:
            print(f"{path}: no batch with runs of both {va} and {vb}")
        st = open_store(path, create=False)
        for batch in batches:
            try:
                raw = {v: load_target(st, f"{args.application}@{v}", batch=batch) for v in (va, vb)}
            except QuihoError as exc:
                print(f"{batch}: {exc}")
                continue
            for rows_name, prep in ROWS.items():
                for formula in ("classic", "permutation"):
                    t0 = time.perf_counter()
                    da, db = prep(raw[va]), prep(raw[vb])
                    rng = np.random.default_rng(args.seed)
                    try:
                        r = judge(da, db, formula, args, args.seed)
                    except QuihoError as exc:
                        print(f"{batch:<34} {rows_name:<11} {formula:<11} {exc}")
                        continue
                    selfs, skipped = [], []
                    for d in (da, db):
                        for _ in range(args.splits):
                            h1, h2 = split_halves(d, rng)
                            try:
                                selfs.append(judge(h1, h2, formula, args, int(rng.integers(1 << 30))))
                            except QuihoError as exc:  # e.g. a half with too few hardware groups
                                skipped.append(str(exc))
                    n_diff = sum(s["verdict"] == "different" for s in selfs)
                    n_rej = sum(s["p"] < 0.05 for s in selfs)
                    tot = totals.setdefault((rows_name, formula), [0, 0, 0, 0])
                    tot[0] += r["verdict"] == "different"
                    tot[1] += 1
                    tot[2] += n_diff
                    tot[3] += len(selfs)
                    valid = "/".join(SHORT.get(v, "?") for v in r["valid"])
                    print(f"{batch:<34} {rows_name:<11} {formula:<11} {r['r2'][0]:>5.2f} {r['r2'][1]:>5.2f} "
                          f"{valid:>5} {r['mem'][0]:>5.0%}>{r['mem'][1]:<5.0%} {r['cpu'][0]:>5.0%}>{r['cpu'][1]:<5.0%} "
                          f"{r['p']:>6.3f} {r['verdict']:<13} {n_diff:>5}/{len(selfs):<3} "
                          f"{n_rej:>6}/{len(selfs):<3} {time.perf_counter() - t0:>4.0f}", flush=True)
                    if r["note"]:
                        print(f"  note: {r['note']}")
                    for why in sorted(set(skipped)):
                        print(f"  self-pair skipped ({skipped.count(why)}x): {why}")
    print("\nper choice over all profiles: A vs B 'different' / profiles; self-pairs 'different' / pairs")
    for (rows_name, formula), (d, n, sd, sn) in totals.items():
        print(f"  {rows_name:<11} {formula:<11} {d}/{n} different   self-pairs {sd}/{sn} different")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
