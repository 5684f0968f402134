"""Local-fleet diversity: do the emulated hosts differ, and do memory- and cpu-class stressors vary independently?

Fingerprints the embedded local fleet (inventories/local.yml, 6 hosts: CPU quota x co-runner) with the
``diversity`` battery, then prints (markdown):
  1. per-host medians relative to the unconstrained host, real-time rate and usr+sys-time rate;
  2. per-class variation across hosts (CoV of the host medians, per stressor and class mean);
  3. Spearman correlation across hosts between every pair of stressors, and the mean within-class
     and cross-class correlation (memory-class vs cpu-class).
Needs root, cgroup v1 and stress-ng. Takes ~6-10 min. Usage:
    python bench/local_fleet_diversity.py [--store PATH] [--seconds S] [--repetitions R] [--run BATCH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from quiho.fingerprint import FingerprintPlan, fingerprint
from quiho.fingerprint.catalog import load_catalog
from quiho.store import open_store

CPU = ["cpu", "vecmath", "hash", "matrix", "fp"]
MEM = ["stream", "memrate", "vm", "memcpy", "cache"]


def md(df: pd.DataFrame) -> str:
    """A DataFrame as a markdown table (no tabulate dependency)."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join([""] + cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for idx, row in df.iterrows():
        lines.append("| " + " | ".join([str(idx)] + [f"{v:g}" if isinstance(v, float) else str(v) for v in row]) + " |")
    return "\n".join(lines)


def mean_off(corr: pd.DataFrame, a_: list[str], b_: list[str]) -> float:
    vals = [corr.loc[x, y] for x in a_ for y in b_ if x != y]
    return float(sum(vals) / len(vals)) if vals else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", default="/tmp/quiho-bench/diversity.db")
    ap.add_argument("--inventory", default=None)
    ap.add_argument("--seconds", type=int, default=None)
    ap.add_argument("--repetitions", type=int, default=None)
    ap.add_argument("--run", default=None, help="analyse an existing run (batch) instead of measuring")
    ap.add_argument("--out", default=None, help="also write the report here (markdown)")
    a = ap.parse_args()
    Path(a.store).parent.mkdir(parents=True, exist_ok=True)
    store = open_store(a.store)
    t0 = time.monotonic()
    if a.run is None:
        run = fingerprint(a.inventory, store=store, on_event=lambda e: e.kind in ("done", "failed", "unreachable")
                          and print(f"  {e.host}: {e.kind} {e.message or ''}", file=sys.stderr),
                          plan=FingerprintPlan(battery="diversity", seconds=a.seconds, repetitions=a.repetitions))
        batch, run_id = run.batch, run.run_id
        print(f"fingerprint {batch}: {run.status}, {time.monotonic() - t0:.0f} s wall", file=sys.stderr)
    else:
        row = store.conn.execute("SELECT id, batch FROM fingerprint_runs WHERE batch=?", (a.run,)).fetchone()
        batch, run_id = row["batch"], row["id"]
    rows = store.conn.execute(
        "SELECT h.name AS host, m.repetition, m.stressor, m.value, m.status, m.extra_json FROM measurements m "
        "JOIN hosts h ON h.id=m.host_id WHERE m.run_id=?",
        (run_id,),
    ).fetchall()
    df = pd.DataFrame([dict(r) for r in rows])
    df["usr_sys"] = [json.loads(x).get("rate_usr_sys") for x in df["extra_json"]]
    df["busy"] = [json.loads(x).get("machine_busy_share") for x in df["extra_json"]]
    ok = df[df.status == "ok"]
    failed = df[df.status == "failed"]
    report = [f"# Local-fleet diversity ({batch})", ""]
    report.append(f"{len(ok)} ok values, {len(failed)} failed; machine busy share during jobs: "
                  f"median {ok.busy.median():.2f} (1.0 = both vCPUs busy)")
    if len(failed):
        reasons = store.conn.execute(
            "SELECT h.name, m.repetition, m.stressor, m.reason FROM measurements m JOIN hosts h ON h.id=m.host_id "
            "WHERE m.run_id=? AND m.status='failed'",
            (run_id,),
        ).fetchall()
        report.append("failed: " + "; ".join(f"{r[0]}/rep{r[1]}/{r[2]}: {r[3]}" for r in reasons))
    med = ok.pivot_table(index="host", columns="stressor", values="value", aggfunc="median")
    med_us = ok.pivot_table(index="host", columns="stressor", values="usr_sys", aggfunc="median")
    order = [c for c in CPU + MEM if c in med.columns]
    base = next((h for h in ("local-q100-4k", "local-q100-none") if h in med.index), med.index[0])
    for title, m in (("real-time rate (the fingerprint value)", med), ("usr+sys-time rate", med_us)):
        report += ["", f"## Host medians relative to {base}: {title}", ""]
        rel = (m[order] / m.loc[base, order]).round(2)
        report.append(md(rel))
    cat = load_catalog()
    report += ["", "## Variation across hosts (CoV of the host medians)", ""]
    cov = (med[order].std(ddof=0) / med[order].mean()).round(3)
    cov_us = (med_us[order].std(ddof=0) / med_us[order].mean()).round(3)
    report.append(md(pd.DataFrame({"class": [cat.primary(s) for s in order], "real-time": cov[order],
                                   "usr+sys": cov_us[order]})))
    report.append("")
    for name, c in (("real-time", cov), ("usr+sys", cov_us)):
        report.append(f"mean CoV ({name}): cpu-class {c[[x for x in CPU if x in c]].mean():.3f}, "
                      f"memory/cache-class {c[[x for x in MEM if x in c]].mean():.3f}")
    for title, m in (("real-time rate", med), ("usr+sys-time rate (CPU share removed)", med_us)):
        corr = m[order].corr(method="spearman").round(2)
        report += ["", f"## Spearman correlation across {len(m)} hosts: {title}", "", md(corr), ""]
        cpu = [c for c in CPU if c in corr]
        mem = [c for c in MEM if c in corr]
        report.append(f"mean correlation: within cpu {mean_off(corr, cpu, cpu):.2f}, "
                      f"within memory {mean_off(corr, mem, mem):.2f}, cpu x memory {mean_off(corr, cpu, mem):.2f}")
    # Rank correlations with 8 hosts are blunt: the quota moves every class, so ranks agree whenever its step is
    # larger than the other axis's effect. The question "does this stressor carry variation the cpu class does
    # not?" is answered directly by regressing its log host median on the log cpu-class host median and
    # comparing what is left over with the stressor's own repetition noise.
    cpu_cols = [c for c in CPU if c in med.columns]
    speed = np.log(med[cpu_cols]).mean(axis=1)
    noise = ok.groupby(["host", "stressor"])["value"].agg(lambda v: v.std(ddof=1) / v.mean() if len(v) > 1
                                                         else np.nan).groupby("stressor").median()
    rows_ = []
    for c in order:
        y = np.log(med[c])
        slope, icept = np.polyfit(speed, y, 1)
        resid = y - (slope * speed + icept)
        r2 = 1 - float((resid ** 2).sum() / ((y - y.mean()) ** 2).sum())
        sd = float(np.exp(resid.std(ddof=2)) - 1)
        rows_.append((c, cat.primary(c), round(r2, 2), round(sd, 3), round(float(noise.get(c, np.nan)), 3),
                      round(sd / float(noise.get(c, np.nan)), 1) if noise.get(c) else float("nan")))
    report += ["", "## Variation a stressor has beyond the cpu class (log host median ~ log cpu-class median)", "",
               md(pd.DataFrame([r[1:] for r in rows_], index=[r[0] for r in rows_],
                               columns=["class", "R² on cpu class", "residual sd", "repetition CoV",
                                        "residual / noise"])), "",
               "residual / noise well above 1: the stressor moves across hosts in a way the cpu class does not "
               "(an independent axis), beyond its own measurement noise"]
    text = "\n".join(report)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    import signal

    def _term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # unwind through the runs' cleanup

    signal.signal(signal.SIGTERM, _term)
    sys.exit(main())
