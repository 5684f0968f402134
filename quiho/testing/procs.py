"""Where a process is, read from /proc: deterministic waits for tests that signal a running quiho."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["has_open"]


def has_open(pid: int, path: str | os.PathLike[str]) -> bool:
    """Whether process ``pid`` has ``path`` open (False once it is gone or /proc cannot say)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(Path(path)):
                return True
        except OSError:
            continue
    return False
