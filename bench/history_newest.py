"""The newest revision on a rotating runner: false alerts and catches of the CI check, raw and normalised. Prints
tables; rerun with `python bench/history_newest.py` (CloudLab pool, stored data only).

The protocol is docs/hardware-protocol.md, "The newest revision on a rotating runner" (registered before this
script ran): round 1 (`--new-machine predict --seed-offset 3000`), round 2 (the defaults, seeds 3200-3399) and
round 3 (`--runners hosted --seed-offset 3400`: every revision a fresh VM whose kind, its hardware type, is known).
Per seed the pool's hosts are permuted and a quarter of them (at least one) held out as *new runners*.
Per benchmark, a history of ``--revisions`` revisions is drawn on random hosts from the others (``--runs`` of the
host's repetitions each), then one newest revision on

``seen``
    a host drawn from the history's hosts;
``new``
    a held-out host (a runner type the history has never seen);
``fixed-host``
    the control: every revision, the newest too, on one host whose fingerprint is re-measured per revision (a
    random repetition of its fingerprint, a distinct key), so normalising could only fit noise.

Each newest revision is checked unchanged and with ``--shift`` planted in it (runtime × 1.1, rate ÷ 1.1). Raw is
:func:`quiho.history.check_newest` on the raw series, its baseline from the raw history's change points;
normalised is :func:`quiho.history.normalise.check_newest_normalised` (which falls back to the raw check where it
cannot normalise, and is counted as it decides). A false alert is a regression or improvement verdict on an
unchanged newest revision; caught is a regression verdict on a planted one.

The rule, per pool: normalised false alerts not significantly above α (exact one-sided binomial p ≥ 0.01) in every
row; caught at least raw's in ``seen`` (and in ``new`` with ``--new-machine predict``); on the fixed host never
worse than raw.

Pools as bench/history_normalised.py: ``--pool cloudlab`` (the paper's data) or ``--pool store --store PATH`` (a
local-fleet store measured with that script's commands).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history_normalised import Pool, _history, pool_from_arguments  # noqa: E402

from quiho.history import History, check_newest, detect  # noqa: E402
from quiho.history.normalise import MachineFingerprint, NormaliseOptions, check_newest_normalised  # noqa: E402
from quiho.history.normalise import _detect as normalise  # noqa: E402  (_fit_once patches its detect_normalised)

KINDS = ("seen", "new", "fixed-host")


def _fit_once() -> None:
    """The unchanged and the planted check share the revisions before the newest: fit their effect once (the same
    result, half the time; hosted runners' leave-one-machine-out holds out every job)."""
    fit, memo = normalise.detect_normalised, {}

    def once(h: History, machines: list, opts: NormaliseOptions | None = None):  # type: ignore[no-untyped-def]
        key = (h.revisions, tuple(s.tobytes() for s in h.samples), opts,
               tuple(None if m is None else (m.key, m.kind, m.values.to_numpy().tobytes()) for m in machines))
        if key not in memo:
            memo.clear()
            memo[key] = fit(h, machines, opts)
        return memo[key]

    normalise.detect_normalised = once


def _keyed(machines: list[MachineFingerprint], kind: str, runners: str, first: int = 0) -> list[MachineFingerprint]:
    """On hosted runners each revision is a fresh VM (its own key) of a kind (the pool's host)."""
    if runners != "hosted":
        return machines
    return [replace(m, key=f"vm{first + i}", kind=m.key.rsplit("#", 1)[0]) for i, m in enumerate(machines)]


def run(pool: Pool, args: argparse.Namespace) -> bool:
    """Print the tables; whether the protocol's rule holds on this pool."""
    opts = NormaliseOptions(method=args.method, min_size=args.min_size, alpha=args.alpha)
    benches = list(pool.values)
    # (kind, mode) → [false alerts, unchanged checks, caught, planted checks]
    tally: dict[tuple[str, str], list[int]] = {}
    magnitude: dict[tuple[str, str], list[float]] = {}
    width: dict[tuple[str, str], list[float]] = {}
    decided: Counter[str] = Counter()
    listed: list[str] = []
    n = args.revisions
    for seed in range(args.seed_offset, args.seed_offset + args.seeds):
        rng = np.random.default_rng(seed)
        order = [str(h) for h in rng.permutation(pool.hosts)]
        k = max(1, len(order) // 4)
        new_hosts, old_hosts = order[:k], order[k:]
        for kind in KINDS:
            if kind == "fixed-host":
                one = str(rng.choice(pool.hosts))
                hosts, rows = [one] * (n + 1), [int(x) for x in rng.integers(0, 1000, size=n + 1)]
            else:
                hosts = [str(h) for h in rng.choice(old_hosts, size=n)]
                hosts.append(str(rng.choice(old_hosts if kind == "seen" else new_hosts)))
                # hosted: each revision a fresh VM of its type, its fingerprint one repetition of the type's
                rows = [int(x) for x in rng.integers(0, 1000, size=n + 1)] if args.runners == "hosted" else None
            for b in benches:
                before, machines = _history(pool, b, hosts[:n], None if rows is None else rows[:n], 1.0, n, rng,
                                            args.runs)
                machines = _keyed(machines, kind, args.runners)
                newest_state = rng.bit_generator.state
                for planted in (False, True):
                    rng.bit_generator.state = newest_state  # the same runs, unchanged and planted
                    last, ms = _history(pool, b, hosts[n:], None if rows is None else rows[n:],
                                        1 + args.shift if planted else 1.0, 0, rng, args.runs)
                    (m,) = _keyed(ms, kind, args.runners, first=n)
                    h = History(b, (*before.revisions, f"r{n:03d}"), np.arange(n + 1), (*before.samples, *last.samples))
                    d = detect(before, args.method, min_size=args.min_size, alpha=args.alpha)
                    raw = check_newest(h, alpha=args.newest_alpha, min_size=args.min_size, detection=d,
                                       test_within="pooled")
                    nn = check_newest_normalised(h, [*machines, m], opts, alpha=args.newest_alpha,
                                                 new_machine=args.new_machine)
                    why = (nn.reason.replace(nn.machine, "M") if nn.machine else nn.reason).split(" (")[0].split(": ")
                    decided[f"{kind}: {why[0]}" + (f" ({why[1]})" if not nn.normalised and len(why) > 1
                                                   else "")] += 1
                    for mode, chk in (("raw", raw), ("normalised", nn.check)):
                        t = tally.setdefault((kind, mode), [0, 0, 0, 0])
                        alert = chk.verdict in ("regression", "improvement")
                        if planted:
                            t[2] += int(chk.verdict == "regression")
                            t[3] += 1
                            if np.isfinite(chk.magnitude):
                                magnitude.setdefault((kind, mode), []).append(chk.magnitude)
                                width.setdefault((kind, mode), []).append(chk.ci[1] - chk.ci[0])
                        else:
                            t[0] += int(alert)
                            t[1] += 1
                            if alert and args.list_alerts:
                                listed.append(f"{kind} {mode}: seed {seed} {b} on {m.key}: {chk.verdict} "
                                              f"{chk.magnitude:+.1%} [{chk.ci[0]:+.1%}, {chk.ci[1]:+.1%}], "
                                              f"p = {chk.p_value:.1e}")
    print(f"detector {args.method}; newest α {args.newest_alpha}; new machines: {args.new_machine}; seeds "
          f"{args.seed_offset}-{args.seed_offset + args.seeds - 1}; {len(benches)} benchmarks ({', '.join(benches)}); "
          f"{n} revisions before the newest; {len(pool.hosts)} hosts, a quarter held out as new; runners "
          f"{args.runners}; "
          f"planted {args.shift:+.0%}")
    print(f"{'newest on':<11} {'mode':<11} {'false alerts':>18} {'p (> α)':>9} {'caught':>12} "
          f"{'magnitude (median)':>18} {'interval width (median)':>23}")
    ok = True
    for kind in KINDS:
        for mode in ("raw", "normalised"):
            if (kind, mode) not in tally:
                continue
            fa, checks, caught, planted_n = tally[(kind, mode)]
            p = binomtest(fa, checks, args.newest_alpha, alternative="greater").pvalue
            mags, ws = magnitude.get((kind, mode), []), width.get((kind, mode), [])
            print(f"{kind:<11} {mode:<11} {fa:>6}/{checks:<5} {fa / checks:>6.2%} {p:>9.3g} "
                  f"{caught:>5}/{planted_n:<6} {np.median(mags) if mags else float('nan'):>+18.1%} "
                  f"{np.median(ws) if ws else float('nan'):>23.1%}")
        if (kind, "raw") not in tally:
            continue
        (rfa, _, rc, _), (nfa, nchecks, nc, _) = tally[(kind, "raw")], tally[(kind, "normalised")]
        p_ok = binomtest(nfa, nchecks, args.newest_alpha, alternative="greater").pvalue >= 0.01
        ruled = kind != "new" or args.new_machine == "predict"  # round 2 refuses new machines: caught not ruled on
        held = p_ok and (nc >= rc or not ruled) and (kind != "fixed-host" or nfa <= rfa)
        ok &= held
        print(f"  {kind}: rule {'holds' if held else 'does not hold'} (normalised false alerts not above α: "
              f"{'yes' if p_ok else 'no'}; caught {nc} vs raw {rc}{'' if ruled else ', not ruled on'}"
              + (f"; false alerts {nfa} vs raw {rfa}" if kind == "fixed-host" else "") + ")")
    print(f"the protocol's rule on this pool: {'holds' if ok else 'does not hold'}")
    print("what the normalised check decided (checks):")
    for k, v in sorted(decided.items()):
        print(f"  {v:>5}  {k}")
    if listed:
        print("false alerts (--list-alerts):")
        print("\n".join(f"  {line}" for line in listed))
    return ok


def draw_arguments(ap: argparse.ArgumentParser, seed_offset: int, seed_help: str) -> None:
    """The pool and the draw of histories and newest revisions (shared with bench/history_gate_normalised.py)."""
    ap.add_argument("--pool", choices=("cloudlab", "store"), default="cloudlab")
    ap.add_argument("--store", type=Path, help="store of --pool store")
    ap.add_argument("--targets", default=None, help="targets (default as bench/history_normalised.py)")
    ap.add_argument("--batch", default=None)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--seed-offset", type=int, default=seed_offset, help=seed_help)
    ap.add_argument("--revisions", type=int, default=40, help="revisions before the newest")
    ap.add_argument("--shift", type=float, default=0.10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--list-alerts", action="store_true", help="list every false alert")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    draw_arguments(ap, 3200, "first seed (registered runs: round 1 3000 with --new-machine predict, round 2 3200)")
    ap.add_argument("--method", default="auto")
    ap.add_argument("--min-size", type=int, default=5)
    ap.add_argument("--alpha", type=float, default=0.01, help="change points' level")
    ap.add_argument("--newest-alpha", type=float, default=0.001, help="the newest revision's level")
    ap.add_argument("--new-machine", choices=("refuse", "predict"), default="refuse",
                    help="a newest machine the history has not seen (round 1: predict; round 2 and default: refuse)")
    ap.add_argument("--runners", choices=("named", "hosted"), default="named",
                    help="named: a pool of hosts (rounds 1-2); hosted: every revision a fresh VM of a known type "
                         "(round 3, --seed-offset 3400)")
    args = ap.parse_args()
    _fit_once()
    run(pool_from_arguments(ap, args), args)


if __name__ == "__main__":
    main()
