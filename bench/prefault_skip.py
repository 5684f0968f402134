"""Is the local fleet's prefault needed before a run that follows another within 50 ms, or only after a gap?

The wrapper every measured command runs in (``qh_join``, playbooks/vars/emulation.yml) faults in and frees
``quiho_prefault_mib`` (512 MiB) first, ~0.2-0.3 s a run. Free page reporting hands memory idle for ~2 s back to
the hypervisor, and a visit's runs follow each other 50 ms apart, so only a visit's first run might need it.
This measures the stream example (both versions alternating, 8 runs after a 3-s idle gap, as ``quiho_runs``
runs a visit) in one emulated host, with the prefault before every run (``every``, what the fleet does) and
before the first run only (``first``), the two orders alternating block by block. Prints per setting the
nadds1/nadds30 ``time_s`` (the first two runs of a block left out, as the fleet's warm-ups are), and the wall
of a block of 8 runs.

    sudo .venv/bin/python bench/prefault_skip.py --thp never --blocks 12
    sudo .venv/bin/python bench/prefault_skip.py --thp always --blocks 8

Needs root (cgroup v1 cpu controller, THP), gcc. Stores nothing; about 20 s a block.
"""

from __future__ import annotations

import argparse
import re
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from quiho.fleet.local.probes import _join_script  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--thp", choices=("never", "always"), default="never")
    ap.add_argument("--blocks", type=int, default=8, help="blocks of 8 runs per setting")
    ap.add_argument("--mib", type=int, default=512, help="the prefault (inventories/local.yml: 512)")
    args = ap.parse_args()
    join = _join_script()
    emu = REPO / "playbooks" / "files" / "quiho-emulate.sh"
    cg = f"/sys/fs/cgroup/cpu/qhbench-prefault-{args.thp}"
    res: dict[str, dict[str, list[float]]] = {m: {"nadds1": [], "nadds30": [], "wall": []} for m in ("every", "first")}
    with tempfile.TemporaryDirectory() as d:
        for v, n in (("nadds1", 1), ("nadds30", 30)):
            subprocess.run(["gcc", "-O2", f"-DNADDS={n}", "-o", f"{d}/{v}", str(REPO / "examples/stream/stream.c")],
                           check=True)
        subprocess.run(["sh", str(emu), "start", cg, "100", "none", "3600", args.thp, "20000", "0", "0", "0"],
                       check=True)
        try:
            for b in range(args.blocks):
                for mode in (("every", "first") if b % 2 == 0 else ("first", "every")):
                    time.sleep(3)  # the idle gap before a visit's runs (Ansible's tasks)
                    t0 = time.monotonic()
                    for i in range(8):
                        v = "nadds1" if i % 2 == 0 else "nadds30"
                        mib = str(args.mib) if mode == "every" or i == 0 else "0"
                        out = subprocess.run(["sh", "-c", join, "sh", cg, mib, "timeout", "60", f"{d}/{v}", "10"],
                                             capture_output=True, text=True, check=True).stdout
                        if i >= 2:
                            res[mode][v].append(float(re.search(r"time_s: ([0-9.]+)", out).group(1)))  # type: ignore[union-attr]
                    res[mode]["wall"].append(time.monotonic() - t0)
        finally:
            subprocess.run(["sh", str(emu), "stop", cg], check=False)
    print(f"THP {args.thp}, {args.blocks} blocks of 8 runs per setting, prefault {args.mib} MiB\n")
    print("| prefault | nadds1 median (s) | CV | max | nadds30 median (s) | CV | wall of 8 runs (s) |")
    print("|---|---|---|---|---|---|---|")
    for mode, r in res.items():
        cv = {v: 100 * st.pstdev(r[v]) / st.mean(r[v]) for v in ("nadds1", "nadds30")}
        print(f"| {'every run' if mode == 'every' else 'first run only'} | {st.median(r['nadds1']):.4f} | "
              f"{cv['nadds1']:.1f} % | {max(r['nadds1']):.4f} | {st.median(r['nadds30']):.4f} | "
              f"{cv['nadds30']:.1f} % | {st.mean(r['wall']):.2f} |")


if __name__ == "__main__":
    main()
