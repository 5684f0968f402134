"""The measurement lock: one fingerprint, run or profile at a time per store.

SQLite (WAL, ``BEGIN IMMEDIATE``) already keeps concurrent writers from
corrupting the store; this lock is about the *measurements*: a scheduled
fingerprint running while a profile measures the same machines would distort
both. The lock is an ``flock`` on ``<store>.lock``, released by the kernel when
its holder dies (also on ``kill -9``), so a stale lock cannot outlive a crash.
Whoever takes the lock marks fingerprint runs left ``running`` by a dead holder
as ``partial`` (resumable with ``quiho fingerprint --resume``).

The lock itself is not re-entrant (two holders in one process exclude each other,
as two processes do); :func:`quiho.fleet.session.measuring` is, so ``quiho
profile`` can hold it around the fingerprint it starts.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from quiho.errors import QuihoError
from quiho.store import utcnow

__all__ = ["Busy", "measurement_lock", "lock_path"]


class Busy(QuihoError):
    """Another quiho measurement holds the lock (and the caller chose not to wait)."""


def lock_path(store_path: str | os.PathLike[str]) -> Path:
    """Path of the lock file that belongs to a store."""
    return Path(str(store_path) + ".lock")


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "another quiho process"
    return f"pid {info.get('pid', '?')} ({info.get('what', '?')}, since {info.get('since', '?')})"


@contextmanager
def measurement_lock(
    store_path: str | os.PathLike[str], *, what: str, wait: bool = True, timeout: float | None = None
) -> Iterator[Path]:
    """Hold the measurement lock of ``store_path`` for the duration of the block.

    Waiting polls every 0.2 s in Python, so Ctrl-C (or SIGTERM under
    :func:`quiho.fleet.shutdown.interruptible`) ends a wait at once.

    Parameters
    ----------
    store_path : path-like
        The store whose measurements are serialised.
    what : str
        Written into the lock file so a waiting process can say who holds it.
    wait : bool, default True
        Wait for the holder to finish; False raises :class:`Busy` at once.
    timeout : float, optional
        With ``wait``, give up (raise :class:`Busy`) after this many seconds.

    Raises
    ------
    Busy
        The lock is held elsewhere and ``wait`` is False or the timeout expired.
    """
    path = lock_path(store_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not wait or (deadline is not None and time.monotonic() >= deadline):
                    raise Busy(f"another measurement is running on this store: {_holder(path)}") from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "what": what, "since": utcnow()}).encode())
        os.fsync(fd)
        yield path
    finally:
        os.close(fd)  # closing releases the flock
