"""Do system calls fail beside an allocating process on a memory-capacity host? Now against an earlier revision.

At a cgroup v1 memory limit (OOM killer off) only a page fault waits; a charge from a system call fails: a pipe
buffer (ENOMEM), a read's copy into memory not yet faulted in (EFAULT). Each run puts, in one memory-capacity group
(``quiho-emulate.sh start ... MEM_MIB``), a process that allocates ``--alloc`` MiB at once four times beside one
that writes a pipe for 2.4 s and one that reads it into fresh buffers (a file reader beside them gave reclaim its
page cache and hid the failures: 0 of 10 runs at c52e7c0). Per revision of ``playbooks/files/quiho-emulate.sh``
(``--rev``, default the working tree) it prints runs, runs with a failed call, the failed calls, runs in which a
process died, runs the watcher counted a limit meeting in (revisions that count them), and failed calls in runs it
did not count: the silent ones, which must be 0.

    sudo .venv/bin/python bench/memory_knob_syscalls.py --rev c52e7c0 --rev WORKTREE [--runs 10] [--alloc 600]
        [--thp always] [--co-runner stream]

Needs root, a cgroup v1 memory controller, stress-ng for a co-runner. About 3 s per run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = r"""
import errno, os, sys, time
alloc = int(sys.argv[1])
if os.fork() == 0:
    for _ in range(4):
        time.sleep(0.3); b = bytearray(alloc << 20); time.sleep(0.2); del b
    os._exit(0)
def count(fn):
    bad, end = 0, time.monotonic() + 2.4
    while time.monotonic() < end:
        try:
            fn()
        except OSError as exc:
            if exc.errno not in (errno.ENOMEM, errno.EFAULT): raise
            bad += 1
    return bad
r, w = os.pipe()
if os.fork() == 0:  # the pipe's reader, into a fresh 1 MiB buffer each time
    os.close(w)
    try:
        while os.read(r, 1 << 20): pass
    except OSError:
        os._exit(3)
    os._exit(0)
os.close(r)
print("pipe", count(lambda: os.write(w, b"x" * 65536)), flush=True)
os.close(w)
codes = [os.wait()[1] for _ in range(2)]
print("children", sum(c != 0 for c in codes), flush=True)
"""


def script_of(rev: str, tmp: Path) -> Path:
    """``quiho-emulate.sh`` at ``rev`` (WORKTREE: as checked out now)."""
    if rev == "WORKTREE":
        return REPO / "playbooks" / "files" / "quiho-emulate.sh"
    text = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:playbooks/files/quiho-emulate.sh"],
                          capture_output=True, text=True, check=True).stdout
    out = tmp / f"emulate-{rev}.sh"
    out.write_text(text)
    return out


def runs_of(script: Path, args: argparse.Namespace) -> list[tuple[int, bool, bool]]:
    """(failed calls, a child failed, the watcher counted a meeting) per run, in one emulated host."""
    join = yaml.safe_load((REPO / "playbooks" / "vars" / "emulation.yml").read_text())["qh_join"]
    cg = Path(f"/sys/fs/cgroup/cpu/quiho-bench-memsys-{os.getpid()}")
    events = Path(f"/run/quiho-memcap-{cg.name}.events")
    subprocess.run(["sh", str(script), "start", str(cg), "100", args.co_runner, str(30 + 5 * args.runs), args.thp,
                    "20000", "0", str(args.mem_mib), "0"], check=True)
    out = []
    try:
        for _ in range(args.runs):
            before = int(events.read_text()) if events.exists() else 0
            r = subprocess.run(["sh", "-c", join, "sh", str(cg), "0", sys.executable, "-c", WORKLOAD,
                                str(args.alloc)], capture_output=True, text=True, timeout=120, check=False)
            met = events.exists() and int(events.read_text()) > before
            fields = dict(line.split() for line in r.stdout.splitlines() if len(line.split()) == 2)
            failed = int(fields.get("pipe", 0))
            out.append((failed, r.returncode != 0 or fields.get("children", "1") != "0", met))
    finally:
        subprocess.run(["sh", str(script), "stop", str(cg)], check=False)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", action="append", help="revision of quiho-emulate.sh (repeatable; WORKTREE: as is)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--alloc", type=int, default=600, help="MiB allocated at once, four times a run")
    ap.add_argument("--mem-mib", type=int, default=32, help="the knob's page-cache allowance")
    ap.add_argument("--thp", default="always", choices=("keep", "always", "never"))
    ap.add_argument("--co-runner", default="stream", choices=("none", "stream", "cpu"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        tmp = Path(d)
        print(f"alloc {args.alloc} MiB x4 per run, allowance {args.mem_mib} MiB, THP {args.thp}, "
              f"co-runner {args.co_runner}")
        print("| revision | runs | runs with a failed call | failed calls | a process died "
              "| runs with a meeting counted | failed calls not counted |")
        print("|---|---|---|---|---|---|---|")
        for rev in args.rev or ["WORKTREE"]:
            res = runs_of(script_of(rev, tmp), args)
            silent = sum(f for f, _, met in res if not met)
            print(f"| {rev} | {len(res)} | {sum(f > 0 for f, _, _ in res)} | {sum(f for f, _, _ in res)} | "
                  f"{sum(c for _, c, _ in res)} | {sum(m for _, _, m in res)} | {silent} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
