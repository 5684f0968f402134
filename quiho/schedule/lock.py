"""The measurement lock: one fingerprint or profile at a time per store.

SQLite (WAL, ``BEGIN IMMEDIATE``) already keeps concurrent writers from
corrupting the store; this lock is about the *measurements*: a scheduled
fingerprint running while a profile measures the same machines would distort
both. The lock is an ``flock`` on ``<store>.lock``, released by the kernel when
its holder dies (also on ``kill -9``), so a stale lock cannot outlive a crash.
Whoever takes the lock next marks fingerprint runs left ``running`` by a dead
holder as ``partial`` (resumable with ``quiho fingerprint --resume``).
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
from quiho.store._db import Store, utcnow

__all__ = ["Busy", "measurement_lock", "lock_path", "mark_interrupted_runs"]


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
        The lock is held and ``wait`` is False or the timeout expired.
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
                time.sleep(0.5)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "what": what, "since": utcnow()}).encode())
        os.fsync(fd)
        yield path
    finally:
        os.close(fd)  # closing releases the flock


def mark_interrupted_runs(store: Store) -> list[int]:
    """Mark fingerprint runs left ``running`` as ``partial``; call only while holding the lock.

    Holding the lock proves no live quiho process is measuring into this
    store, so a ``running`` row was left by a process that died (``kill -9``,
    power loss). Returns the ids marked.
    """
    rows = store.conn.execute("SELECT id, params_json FROM fingerprint_runs WHERE status = 'running'").fetchall()
    if not rows:
        return []
    with store.transaction() as c:
        for r in rows:
            params = json.loads(r["params_json"] or "{}")
            params["interrupted"] = f"found running with no live holder at {utcnow()}; resumable"
            c.execute("UPDATE fingerprint_runs SET status = 'partial', params_json = ? WHERE id = ?",
                      (json.dumps(params, sort_keys=True), r["id"]))
    return [int(r["id"]) for r in rows]
