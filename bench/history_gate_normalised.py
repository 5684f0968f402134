"""The CI gate on a runner pool, raw and normalised: false alerts and catches of ``history detect --all
[--normalise]``. Prints one table; rerun with `python bench/history_gate_normalised.py` (CloudLab pool, stored data
only, about 30 minutes for 200 seeds).

The protocol is docs/hardware-protocol.md, "The gate on a runner pool" (registered before this script ran). Histories
are drawn as bench/history_newest.py draws them (its ``seen``, ``new`` and ``fixed-host`` newest revisions, each
unchanged and with ``--shift`` planted); each is saved alone in a fresh SQLite store and the gate runs once on it,
as a CI job would after that build: :func:`quiho.history.run_gate` with the default :class:`GateOptions`, raw, and
with ``view=normalised_view(...)``.

Counted per check: a **false alert** is any alert the gate raises on an unchanged history (on the newest revision or
on a change point: nothing changed); **caught** is an alert whose first bad revision is the planted newest one;
**unjudged** a newest revision the normalised gate answers "not meaningful" (a machine the history has not
measured). The rule: the normalised gate's false alerts on ``seen`` and ``new`` are not above the raw gate's on the
fixed host (where machines do not rotate: the gate's null rate), one-sided Fisher exact p ≥ 0.01; caught on
``seen`` at least raw's; on the fixed host never worse than raw (false alerts ≤, caught ≥).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.stats import fisher_exact

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history_newest import KINDS, _fit_once, _keyed, draw_arguments  # noqa: E402
from history_normalised import _history, pool_from_arguments  # noqa: E402

from quiho.history import GateOptions, History, run_gate, save_history  # noqa: E402
from quiho.history.normalise import MachineFingerprint, NormaliseOptions, normalised_view  # noqa: E402
from quiho.store import open_store  # noqa: E402

MODES = ("raw", "normalised")


def _gate(where: Path, h: History, machines: list[MachineFingerprint], mode: str,
          nopts: NormaliseOptions, gate: GateOptions) -> tuple[str, str]:
    """(what the gate did, its newest verdict) on ``h`` alone in a fresh store: ``raised@first_bad`` or ``""``."""
    view = None if mode == "raw" else normalised_view(nopts, machines_of=lambda st, x: machines[:len(x)])
    with open_store(where) as st:
        save_history(st, h, "bench")
        (v,) = run_gate(st, gate, view=view).verdicts
    return (f"raised@{v.alert.first_bad}" if v.event == "raised" and v.alert is not None else ""), v.newest.verdict


def run(pool: object, args: argparse.Namespace) -> bool:
    """Print the table; whether the protocol's rule holds on this pool."""
    gate = GateOptions(location=args.location)
    nopts = NormaliseOptions(min_size=gate.min_size, alpha=gate.alpha)
    benches = list(pool.values)  # type: ignore[attr-defined]
    tally: dict[tuple[str, str], Counter[str]] = {}
    listed: list[str] = []
    n, t0 = args.revisions, time.time()
    with tempfile.TemporaryDirectory() as tmp:
        k_store = 0
        for seed in range(args.seed_offset, args.seed_offset + args.seeds):
            rng = np.random.default_rng(seed)
            order = [str(h) for h in rng.permutation(pool.hosts)]  # type: ignore[attr-defined]
            k = max(1, len(order) // 4)
            new_hosts, old_hosts = order[:k], order[k:]
            for kind in KINDS:
                if kind == "fixed-host":
                    one = str(rng.choice(pool.hosts))  # type: ignore[attr-defined]
                    hosts, rows = [one] * (n + 1), [int(x) for x in rng.integers(0, 1000, size=n + 1)]
                else:
                    hosts = [str(h) for h in rng.choice(old_hosts, size=n)]
                    hosts.append(str(rng.choice(old_hosts if kind == "seen" else new_hosts)))
                    rows = None
                for b in benches:
                    before, machines = _history(pool, b, hosts[:n], None if rows is None else rows[:n], 1.0, n,
                                                rng, args.runs)
                    machines = _keyed(machines, kind, "named")
                    state = rng.bit_generator.state
                    for planted in (False, True):
                        rng.bit_generator.state = state  # the same runs, unchanged and planted
                        last, ms = _history(pool, b, hosts[n:], None if rows is None else rows[n:],
                                            1 + args.shift if planted else 1.0, 0, rng, args.runs)
                        h = History(b, (*before.revisions, f"r{n:03d}"), np.arange(n + 1),
                                    (*before.samples, *last.samples), "s" if not pool.higher_is_better[b]  # type: ignore[attr-defined]
                                    else "ops/s")
                        for mode in MODES:
                            k_store += 1
                            did, verdict = _gate(Path(tmp) / f"g{k_store}.db", h, [*machines, *ms], mode, nopts,
                                                 gate)
                            c = tally.setdefault((kind, mode), Counter())
                            c["planted" if planted else "unchanged"] += 1
                            c["unjudged"] += int(verdict == "not meaningful")
                            if planted:
                                c["caught"] += int(did == f"raised@r{n:03d}")
                            elif did:
                                c["false"] += 1
                                if args.list_alerts:
                                    listed.append(f"{kind} {mode}: seed {seed} {b} on {hosts[n]}: {did} "
                                                  f"(newest {verdict})")
                            (Path(tmp) / f"g{k_store}.db").unlink()
    print(f"gate {gate}; seeds {args.seed_offset}-{args.seed_offset + args.seeds - 1}; "
          f"{len(benches)} benchmarks ({', '.join(benches)}); {n} revisions before the newest, {args.runs} runs each; "
          f"{len(pool.hosts)} hosts, a quarter held out as new; planted {args.shift:+.0%}; "  # type: ignore[attr-defined]
          f"{time.time() - t0:.0f} s")
    print(f"{'newest on':<11} {'gate':<11} {'false alerts':>16} {'caught':>14} {'unjudged':>10}")
    for kind in KINDS:
        for mode in MODES:
            c = tally[(kind, mode)]
            print(f"{kind:<11} {mode:<11} {c['false']:>5}/{c['unchanged']:<4} {c['false'] / c['unchanged']:>5.1%} "
                  f"{c['caught']:>5}/{c['planted']:<4} {c['caught'] / c['planted']:>4.0%} {c['unjudged']:>10}")
    null = tally[("fixed-host", "raw")]
    ok = True
    for kind in KINDS:
        nc, rc = tally[(kind, "normalised")], tally[(kind, "raw")]
        if kind == "fixed-host":
            held = nc["false"] <= rc["false"] and nc["caught"] >= rc["caught"]
            why = f"false alerts {nc['false']} vs raw {rc['false']}, caught {nc['caught']} vs raw {rc['caught']}"
        else:
            p = fisher_exact([[nc["false"], nc["unchanged"] - nc["false"]],
                              [null["false"], null["unchanged"] - null["false"]]], alternative="greater").pvalue
            held = p >= 0.01 and (kind != "seen" or nc["caught"] >= rc["caught"])
            why = (f"false alerts {nc['false']} vs the fixed host's raw {null['false']}: p = {p:.3g}; caught "
                   f"{nc['caught']} vs raw {rc['caught']}{'' if kind == 'seen' else ' (not ruled on)'}")
        ok &= held
        print(f"  {kind}: {'holds' if held else 'does not hold'} ({why})")
    print(f"the protocol's rule on this pool: {'holds' if ok else 'does not hold'}")
    if listed:
        print("false alerts (--list-alerts):")
        print("\n".join(f"  {line}" for line in listed))
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    draw_arguments(ap, 3600, "first seed (round 1: 3600; round 2: 3800)")
    ap.add_argument("--location", default=GateOptions().location,
                    help="each revision's value in the gate (round 1: the default, min; round 2: min and rounds)")
    args = ap.parse_args()
    _fit_once()
    run(pool_from_arguments(ap, args), args)


if __name__ == "__main__":
    main()
