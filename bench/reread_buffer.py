"""How fast a cached file is reread into a bytearray and into a page-aligned buffer (the memory-capacity probe's).

    python3 bench/reread_buffer.py [--mib 128] [--passes 5]

The memory-capacity knob's probe (``playbooks/files/quiho-reread.py``) times passes over a file that stays in the
page cache without the knob and comes from the disk with it. If copying from the page cache is slow, both cells
measure alike. On an AMD EPYC VM (family 25, model 1) a pass into a buffer 16 bytes past a page boundary (where a
fresh process's malloc'd ``bytearray`` of 1 MiB starts) took ~4-5x as long as into a page-aligned one. Prints
seconds per pass for the probe's old buffer (here, after this script's own allocations, it may start elsewhere)
and for buffers at fixed offsets from a page boundary, the file cached, then one pass with the file dropped.
No root needed.
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import statistics
import tempfile
import time

CHUNK = 1 << 20
#: Destination offsets from a page boundary: a malloc'd buffer starts 16 bytes past one.
OFFSETS = (0, 16, 64, 640, 2048)


def one_pass(fd: int, view: memoryview) -> float:
    os.lseek(fd, 0, os.SEEK_SET)
    t0 = time.perf_counter()
    while os.readv(fd, [view]):
        pass
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=128)
    ap.add_argument("--passes", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="quiho-reread-buffer-") as d:
        path = os.path.join(d, "f.bin")
        with open(path, "wb") as fh:
            for _ in range(a.mib):
                fh.write(os.urandom(CHUNK))
            fh.flush()
            os.fsync(fh.fileno())
        fd = os.open(path, os.O_RDONLY)
        try:
            ba = bytearray(CHUNK)
            region = mmap.mmap(-1, CHUNK + 4096)
            addr = ctypes.addressof(ctypes.c_char.from_buffer(ba))
            views = {"bytearray (as the probe had it)": (memoryview(ba), addr)}
            views |= {f"page-aligned + {off} B": (memoryview(region)[off:off + CHUNK], off) for off in OFFSETS}
            print(f"| buffer | address mod 4096 | cached: s per {a.mib} MiB pass (median of {a.passes}) | "
                  "first pass after the file is dropped (disk) |")
            print("|---|---|---|---|")
            for name, (view, at) in views.items():
                one_pass(fd, view)  # the file back in the cache, the buffer faulted in
                cached = statistics.median(one_pass(fd, view) for _ in range(a.passes))
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                disk = one_pass(fd, view)
                print(f"| {name} | {at % 4096} | {cached:.4f} | {disk:.4f} |")
        finally:
            os.close(fd)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
