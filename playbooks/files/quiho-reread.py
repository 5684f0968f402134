"""The memory-capacity knob's probe: reread a file larger than the page cache the knob allows.

    python3 quiho-reread.py FILE MIB PASSES

Makes FILE (MIB MiB, written and synced once), drops its pages from the page cache and reads it once unmeasured,
so its pages are charged to the caller's memory cgroup; then reads it PASSES times and prints the seconds those
took. Unthrottled, the passes come from the page cache; under the knob's allowance, from the disk.
Exit 2 on bad arguments, 1 when the file cannot be made or read.
"""

from __future__ import annotations

import mmap
import os
import sys
import time

CHUNK = 1 << 20


def make(path: str, mib: int) -> None:
    """Write ``mib`` MiB of incompressible bytes to ``path`` (kept for the next probes) unless it has that size."""
    try:
        if os.path.getsize(path) == mib * CHUNK:
            return
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "wb") as fh:
        for _ in range(mib):
            fh.write(os.urandom(CHUNK))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_all(fd: int, buf: mmap.mmap) -> None:
    """Read the whole file behind ``fd`` from its start into ``buf``, chunk by chunk."""
    os.lseek(fd, 0, os.SEEK_SET)
    view = memoryview(buf)
    while os.readv(fd, [view]):
        pass


def main(argv: list[str]) -> int:
    try:
        path, mib, passes = argv[0], int(argv[1]), int(argv[2])
        if mib <= 0 or passes <= 0:
            raise ValueError
    except (IndexError, ValueError):
        print("quiho-reread: usage: quiho-reread.py FILE MIB PASSES", file=sys.stderr)
        return 2
    try:
        make(path, mib)
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        print(f"quiho-reread: {path}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        # page-aligned: on some CPUs a copy to just past a page boundary (a fresh bytearray) is several times
        # slower, and cached passes would time like evicted ones (bench/reread_buffer.py)
        buf = mmap.mmap(-1, CHUNK)
        read_all(fd, buf)
        t0 = time.perf_counter()
        for _ in range(passes):
            read_all(fd, buf)
        print(f"{time.perf_counter() - t0:.6f}")
    except OSError as exc:
        print(f"quiho-reread: {path}: {exc.strerror}", file=sys.stderr)
        return 1
    finally:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
