"""The paper's view when only round 1's hosts are fingerprinted: the price of a lever on the main job's time.

A designed local fleet of five to seven factors visits 16 distinct hosts, 8 a round, and fingerprints each (8
stressors x 1 s: about 130 s of a fresh demo). The designed fleet's verdict reads no fingerprint; only the IRUPs
(the paper's view) do. This bench re-analyses stored demos as if the hosts visited only in round 2 had never been
fingerprinted: for each clone where ``scripts/demo.sh`` ran it copies the store twice, deletes in one copy the
fingerprint measurements of those hosts (``quiho_design_rounds: [1]`` in the calibration's inventory), re-analyses
the demo's profile batch in both copies with this quiho (``quiho profile --batch``) and prints, per copy, the
design's verdict and classes, each IRUP's validity (hosts, leave-one-group-out R²) and the IRUP comparison's verdict
and cpu / memory shares. Nothing is measured; the clones are not changed.

    python bench/fingerprint_round_one.py CLONE [CLONE ...]

About 30 s a clone on 2 vCPUs (two analyses).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
QUIHO = str(REPO / ".venv" / "bin" / "quiho")


def _round_two_hosts(con: sqlite3.Connection) -> list[str]:
    """Hosts the newest calibration's design visits in round 2 only (from the inventory file it generated)."""
    (path,) = con.execute("SELECT inventory FROM fleet_calibrations ORDER BY id DESC LIMIT 1").fetchone()
    hosts = yaml.safe_load(Path(path).read_text())["all"]["children"]["local"]["hosts"]
    return sorted(h for h, v in hosts.items() if list(v.get("quiho_design_rounds", [])) == [1])


def _analyse(clone: Path, store: Path, batch: str, app: str, a: str, b: str, out: Path) -> dict:
    spec = clone / "examples" / app / f"{app}.yml"
    r = subprocess.run([QUIHO, "profile", f"{app}@{a}", f"{app}@{b}", "--spec", str(spec), "--batch", batch,
                        "--store", str(store), "--report", str(out)], cwd=clone, capture_output=True, text=True,
                       check=False)
    if not (out / "report.json").exists():
        raise SystemExit(f"fingerprint_round_one: {clone}: analysis failed (rc {r.returncode}): {r.stderr[-300:]}")
    return json.loads((out / "report.json").read_text())


def _row(name: str, which: str, rep: dict) -> str:
    design = rep.get("design") or {}
    story = design.get("story") or {}
    classes = " → ".join(str((story.get(k) or {}).get("label", "?")) for k in ("a", "b"))
    irup = rep.get("irup") or {}
    vals = []
    for side in ("a", "b"):
        v = ((irup.get(side) or {}).get("validity") or {})
        vals.append(f"{v.get('verdict', 'none')} ({v.get('hosts', '-')} hosts, R² {v.get('r2_group_cv', '-')})")
    comp = irup.get("comparison") or {}
    sh = comp.get("class_shares") or {}
    shares = ", ".join(f"{c} {100 * sh['a'].get(c, 0):.0f} → {100 * sh['b'].get(c, 0):.0f} %"
                       for c in ("cpu", "memory")) if sh else "-"
    return (f"| {name} | {which} | {design.get('verdict', '-')}: {classes} | {vals[0]} | {vals[1]} | "
            f"{comp.get('verdict', '-')} | {shares} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("clones", nargs="+", type=Path)
    args = ap.parse_args()
    print("| clone | fingerprints | design: A → B | IRUP A | IRUP B | IRUP comparison | shares |")
    print("|---|---|---|---|---|---|---|")
    for clone in args.clones:
        src = clone / ".quiho" / "quiho.db"
        with tempfile.TemporaryDirectory(prefix="quiho-round-one-") as d:
            rows = []
            for i, which in enumerate(("all 16 hosts", "round 1's 8")):
                store = Path(d) / f"{i}.db"
                with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as s, sqlite3.connect(store) as t:
                    s.backup(t)
                with sqlite3.connect(store) as con:
                    batch, app, a, b = con.execute("SELECT batch, application, version_a, version_b FROM profiles "
                                                   "ORDER BY id LIMIT 1").fetchone()
                    if i:
                        gone = _round_two_hosts(con)
                        marks = ",".join("?" * len(gone))
                        con.execute(f"DELETE FROM measurements WHERE host_id IN "  # noqa: S608 - placeholders only
                                    f"(SELECT id FROM hosts WHERE name IN ({marks}))", gone)
                rows.append(_row(clone.name, which, _analyse(clone, store, batch, app, a, b, Path(d) / f"report-{i}")))
            print("\n".join(rows), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
