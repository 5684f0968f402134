"""Round 5 of the history detector's selection protocol: plain methods and simple ensembles.

Run: ``python bench/history_round5.py [--cache] [--tcpd DIR]``. Prints tables; asserts nothing. The registration
(candidates, complexity order, data, seeds, rule) is ``r5_*`` in bench/history_protocol.py and "Round 5" in
docs/history-protocol.md, committed before the first run.

Data: tcpd-dev (``../shared/data/tcpd-dev``) scored per series (TCPDBench's F1 and covering against all annotators,
margin 5) and out of sample by the protocol's 50 split-halves (nothing in this round is tuned, so a split only shows
how much half of the series moves a score); generated performance histories ``make_perf_suite(20, 200, 2029)``
(per-build means; true changes found within 5 builds, false alarms); the synthetic suite ``history_suite(10, 200,
2029)``; otava-tigerbeetle looked at, not scored. ``--cache`` keeps each candidate's predictions in /tmp, keyed by a
hash of the detector, generator and bench code.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import history_accuracy as H
import history_protocol as P
import numpy as np

from quiho.datasets.history import history_suite
from quiho.datasets.perf_history import NEGATIVE_SHAPES, SHAPES, make_perf_suite
from quiho.history import DETECTORS
from quiho.history.detectors.metrics import covering, f1_margin

CACHE = Path("/tmp/quiho-history-round5")
TIGER = P.TCPD.parent / "otava-tigerbeetle" / "tigerbeetle.csv"


@dataclass
class Run:
    """One candidate's outputs: per-series tcpd-dev scores, predictions on the other sets, CPU seconds."""

    f1: np.ndarray
    cover: np.ndarray
    gen: list[list[int]]
    syn: list[list[int]]
    tiger: list[int]
    seconds: float


def _hash() -> str:
    h = hashlib.sha256(H._code_hash().encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:16]


def run_one(c: P.Candidate, data: list, gen: list, syn: list, tiger: np.ndarray | None, use_cache: bool) -> Run:
    """Run ``c`` on every data set (from the cache when asked and the code is unchanged)."""
    path = CACHE / f"{c.name}-{_hash()}.pkl"
    if use_cache and path.is_file():
        return pickle.loads(path.read_bytes())
    t0 = time.process_time()
    f1, cover = H._tcpd_scores(c, data, {}) if data else ([], [])
    out = Run(np.array(f1), np.array(cover), [c.run(g.history()) for g in gen], [c.run(h.values) for h in syn],
              c.run(tiger) if tiger is not None else [], time.process_time() - t0)
    if use_cache:
        CACHE.mkdir(exist_ok=True)
        path.write_bytes(pickle.dumps(out))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tcpd", type=Path, default=P.TCPD, help="folder of the TCPD-dev series")
    ap.add_argument("--cache", action="store_true", help=f"reuse predictions cached in {CACHE}")
    a = ap.parse_args()
    if not (a.tcpd / "annotations.json").is_file():
        ap.error(f"--tcpd {a.tcpd}: no annotations.json there")
    data = P.load_tcpd(a.tcpd)
    gen = make_perf_suite(P.N_EACH, P.N_BUILDS, random_state=P.R5_GEN_SEED)
    syn = history_suite(n_each=10, n=200, random_state=P.R5_SYN_SEED)
    tiger = np.loadtxt(TIGER, delimiter=",", skiprows=1)[:, 1] if TIGER.is_file() else None
    cands = P.r5_candidates()
    runs = {}
    for c in cands:
        runs[c.name] = run_one(c, data, gen, syn, tiger, a.cache)
        print(f"  {c.name}: {runs[c.name].seconds:.1f} CPU s", file=sys.stderr, flush=True)

    rows = []
    for c in cands:
        r = runs[c.name]
        counts = H._gen_counts(gen, r.gen)
        pos = [v for k, v in counts.items() if k not in NEGATIVE_SHAPES]
        rows.append(P.R5Row(c.name, c.complexity, c.peer, r.f1,
                            sum(v[2] for k, v in counts.items() if k in NEGATIVE_SHAPES),
                            sum(v[0] for v in pos) / max(1, sum(v[1] for v in pos)),
                            sum(len(p) for h, p in zip(syn, r.syn, strict=True) if not h.truth)))
    pick, reason, ci = P.r5_choose(rows)
    default = next(r for r in rows if r.name == "auto")

    print("\n## Round 5: plain methods and simple ensembles (bench/history_protocol.py r5_*, "
          "docs/history-protocol.md)\n")
    n = len(data)
    print(f"### tcpd-dev: {n} series; out of sample = test-half means over {P.N_SPLITS} split-halves "
          f"({n // 2} / {n - n // 2}): mean [IQR] (min-max); 'all {n}' = every series once; F1 - best: paired "
          f"95 % bootstrap over series ({P.R5_RESAMPLES} resamples, seed {P.R5_BOOT_SEED}), eligible candidates\n")
    print(f"| candidate | complexity | F1 out of sample | cover out of sample | all {n} F1 / cover "
          "| F1 - best [95 % CI] |")
    print("|---|---|---|---|---|---|")
    for c in cands:
        r = runs[c.name]
        oos = P.out_of_sample(r.f1[None, :], r.cover[None, :])
        diff = f"{ci[c.name][0]:+.3f} to {ci[c.name][1]:+.3f}" if c.name in ci else "-"
        print(f"| {c.name}{' (peer)' if c.peer else ''} | {c.complexity} | {H._spread(oos.f1)} | "
              f"{H._spread(oos.cover)} | {r.f1.mean():.3f} / {r.cover.mean():.3f} | {diff} |")

    print(f"\n### Generated performance histories: make_perf_suite({P.N_EACH}, {P.N_BUILDS}, {P.R5_GEN_SEED}); "
          "positives: found / true changes, false alarms; negatives: false alarms\n")
    print("| candidate | " + " | ".join(SHAPES) + " | recall | FA negatives |")
    print("|---|" + "---|" * (len(SHAPES) + 2))
    for c, row in zip(cands, rows, strict=True):
        counts = H._gen_counts(gen, runs[c.name].gen)
        cells = [f"{counts[k][2]}" if k in NEGATIVE_SHAPES else f"{counts[k][0]}/{counts[k][1]}, {counts[k][2]}"
                 for k in SHAPES]
        print(f"| {c.name} | " + " | ".join(cells) + f" | {row.recall:.2f} | {row.fa_negatives} |")

    kinds = list(dict.fromkeys(h.name for h in syn))
    print(f"\n### Synthetic suite: history_suite(10, 200, {P.R5_SYN_SEED}), F1 / cover per kind; FA null = false "
          "alarms on its change-free series\n")
    print("| candidate | " + " | ".join(kinds) + " | mean F1 | mean cover | FA null |")
    print("|---|" + "---|" * (len(kinds) + 3))
    for c, row in zip(cands, rows, strict=True):
        pairs = list(zip(syn, runs[c.name].syn, strict=True))
        sc = [(h.name, f1_margin(h.truth, p, P.MARGIN), covering(h.truth, p, h.values.size)) for h, p in pairs]
        cells = [f"{np.mean([f for k, f, _ in sc if k == kind]):.2f} / "
                 f"{np.mean([v for k, _, v in sc if k == kind]):.2f}" for kind in kinds]
        print(f"| {c.name} | " + " | ".join(cells) + f" | {np.mean([f for _, f, _ in sc]):.3f} | "
              f"{np.mean([v for _, _, v in sc]):.3f} | {row.synthetic_fa_null} |")

    if tiger is not None:
        print(f"\n### Looked at, not scored: otava-tigerbeetle ({tiger.size} points, no truth)\n")
        print("| candidate | change indexes |")
        print("|---|---|")
        for c in cands:
            print(f"| {c.name} | {' '.join(map(str, runs[c.name].tiger)) or '-'} |")

    print(f"\n### Rule: eligible = not a peer, not shaped on tcpd-dev, FA on generated negatives <= auto's "
          f"({default.fa_negatives}), recall >= {P.RECALL_MIN}, synthetic null FA <= "
          f"{max(default.synthetic_fa_null, int(P.LEGACY['fa_null']))}; best = highest tcpd-dev F1 among eligible; "
          "pick = the first in the declared order whose paired interval to the best reaches 0\n")
    print("| candidate | complexity | eligible | within the noise of the best |")
    print("|---|---|---|---|")
    for row in rows:
        why = P.r5_guard(row, default)
        within = "-" if row.name not in ci else "yes" if ci[row.name][1] >= 0 else "no"
        print(f"| {row.name} | {row.complexity} | {'yes' if not why else 'no: ' + '; '.join(why)} | {within} |")
    stays = pick == "auto"
    print(f"\n**Round 5 picks {pick}** ({reason}). "
          + ("Today's default stays." if stays else
             f"It does not replace auto (the registry's 'auto' is {DETECTORS['auto'].__name__} with dependence="
             f"{DETECTORS['auto']().get_params()['dependence']}) before the held-out check on other real "
             "performance histories, which is pending."), flush=True)


if __name__ == "__main__":
    main()
