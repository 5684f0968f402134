"""Install, inspect and remove the scheduled fingerprint (systemd timer, or cron without systemd).

The installed entry runs ``python -m quiho schedule run ...`` with absolute
paths and an argv-quoted command line; ``schedule run`` takes the
measurement lock (skipping with a message if a profile or another fingerprint
holds it), marks runs left behind by a crashed holder, and fingerprints the
inventory into the store.

Every path is below ``root`` (default ``/``) so the whole install can be
exercised in a sandbox directory; ``fire_schedule`` runs the installed command
exactly as the timer would.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from quiho.errors import QuihoError, UsageError

__all__ = ["Schedule", "install_schedule", "schedule_status", "remove_schedule", "fire_schedule", "parse_every",
           "detect_backend", "ScheduleError"]

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MARKER = "# installed by quiho schedule install"


class ScheduleError(QuihoError):
    """A schedule cannot be installed, read or removed."""


@dataclass(frozen=True)
class Schedule:
    """An installed schedule: backend, cadence, command and the files that make it."""

    name: str
    backend: str
    every: str
    command: tuple[str, ...]
    files: tuple[Path, ...]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready mapping."""
        return {"name": self.name, "backend": self.backend, "every": self.every, "command": list(self.command),
                "files": [str(f) for f in self.files]}


def parse_every(every: str) -> tuple[str, str]:
    """``daily`` or a number of hours → (cron spec, systemd OnCalendar spec).

    Raises
    ------
    UsageError
        Anything else.
    """
    e = every.strip().lower()
    if e in ("daily", "day", "24", "24h"):
        return "17 3 * * *", "*-*-* 03:17:00"
    m = re.fullmatch(r"(\d{1,2})h?", e)
    if not m or not 1 <= int(m.group(1)) <= 23:
        raise UsageError(f"--every takes DAILY or a number of hours from 1 to 23, not {every!r}")
    n = int(m.group(1))
    return f"7 */{n} * * *", f"*-*-* 00/{n}:07:00"


def detect_backend(root: Path) -> str:
    """``systemd`` when systemd runs this machine (and root is /), else ``cron``."""
    if root == Path("/") and Path("/run/systemd/system").is_dir() and shutil.which("systemctl"):
        return "systemd"
    return "cron"


def _paths(name: str, backend: str, root: Path) -> tuple[Path, ...]:
    if backend == "systemd":
        base = root / "etc/systemd/system"
        return base / f"{name}.service", base / f"{name}.timer"
    return (root / "etc/cron.d" / name,)


def _command(store: Path, inventory: Path | None, battery: str, log: Path) -> tuple[str, ...]:
    argv = [sys.executable, "-m", "quiho", "schedule", "run", "--store", str(store.resolve()), "--battery", battery,
            "--if-busy", "skip", "--log", str(log.resolve())]
    if inventory is not None:
        argv += ["-i", str(Path(inventory).resolve())]
    return tuple(argv)


def install_schedule(
    *,
    store: Path,
    inventory: Path | None = None,
    every: str = "daily",
    battery: str = "default",
    name: str = "quiho-fingerprint",
    root: Path = Path("/"),
    backend: str = "auto",
    activate: bool = True,
) -> Schedule:
    """Write the timer (or cron entry) that fingerprints the fleet on a schedule.

    Over 80 lines only by its parameters and their documentation (the code is 41 lines).

    Parameters
    ----------
    store : Path
        Store the scheduled runs write to (made absolute).
    inventory : Path, optional
        Ansible inventory; default the local fleet.
    every : str, default "daily"
        ``daily`` or a number of hours (1-23).
    battery : str, default "default"
        Fingerprint battery.
    name : str, default "quiho-fingerprint"
        Unit / cron file name (letters, digits, ``._-``).
    root : Path, default /
        Install below this directory (a sandbox for tests).
    backend : {"auto", "systemd", "cron"}
        ``auto`` picks systemd when it runs the machine, else cron.
    activate : bool, default True
        With systemd at ``/``, run ``systemctl daemon-reload`` and ``enable --now`` the timer.

    Returns
    -------
    Schedule

    Raises
    ------
    UsageError
        Bad name or cadence.
    ScheduleError
        Already installed, or the files cannot be written.
    """
    if not _NAME.match(name):
        raise UsageError(f"schedule name {name!r} may only have letters, digits, '.', '_' and '-'")
    cron_spec, calendar = parse_every(every)
    be = detect_backend(root) if backend == "auto" else backend
    if be not in ("systemd", "cron"):
        raise UsageError(f"backend must be auto, systemd or cron, not {backend!r}")
    files = _paths(name, be, root)
    if any(f.exists() for f in files):
        raise ScheduleError(f"schedule {name!r} is already installed ({files[0]}); remove it first")
    log = Path(str(store) + f".{name}.log")
    argv = _command(Path(store), inventory, battery, log)
    cmdline = shlex.join(argv)
    try:
        for f in files:
            f.parent.mkdir(parents=True, exist_ok=True)
        if be == "cron":
            files[0].write_text(
                f"{MARKER}\n# every: {every}\nSHELL=/bin/sh\nPATH=/usr/sbin:/usr/bin:/sbin:/bin\n"
                f"{cron_spec} root {cmdline}\n"
            )
            os.chmod(files[0], 0o644)  # cron ignores group/world-writable files
        else:
            files[0].write_text(
                f"{MARKER}\n[Unit]\nDescription=quiho scheduled fleet fingerprint\n\n[Service]\nType=oneshot\n"
                f"ExecStart={cmdline}\n"
            )
            files[1].write_text(
                f"{MARKER}\n# every: {every}\n[Unit]\nDescription=quiho fingerprint every {every}\n\n[Timer]\n"
                f"OnCalendar={calendar}\nPersistent=true\nUnit={name}.service\n\n[Install]\n"
                "WantedBy=timers.target\n"
            )
    except OSError as exc:
        for f in files:
            f.unlink(missing_ok=True)
        raise ScheduleError(f"cannot write {exc.filename}: {exc.strerror}") from exc
    if be == "systemd" and activate and root == Path("/"):
        for args in (["daemon-reload"], ["enable", "--now", f"{name}.timer"]):
            r = subprocess.run(["systemctl", *args], capture_output=True, text=True)
            if r.returncode != 0:
                raise ScheduleError(f"systemctl {' '.join(args)} failed: {r.stderr.strip()}")
    return Schedule(name, be, every, argv, files)


def schedule_status(*, name: str = "quiho-fingerprint", root: Path = Path("/")) -> Schedule | None:
    """The installed schedule ``name``, or None."""
    for be in ("systemd", "cron"):
        files = _paths(name, be, root)
        if not files[0].exists():
            continue
        text = files[0].read_text()
        if MARKER not in text:
            raise ScheduleError(f"{files[0]} exists but was not written by quiho; leaving it alone")
        every = "?"
        meta = files[-1].read_text()
        m = re.search(r"^# every: (.+)$", meta, re.M)
        if m:
            every = m.group(1)
        if be == "cron":
            line = [ln for ln in text.splitlines() if ln and not ln.startswith(("#", "SHELL", "PATH"))][0]
            cmd = line.split(None, 6)[6]
        else:
            cmd = re.search(r"^ExecStart=(.+)$", text, re.M).group(1)  # type: ignore[union-attr]
        return Schedule(name, be, every, tuple(shlex.split(cmd)), files)
    return None


def remove_schedule(*, name: str = "quiho-fingerprint", root: Path = Path("/")) -> list[Path]:
    """Remove schedule ``name``; returns the files removed (empty if none was installed)."""
    sched = schedule_status(name=name, root=root)
    if sched is None:
        return []
    if sched.backend == "systemd" and root == Path("/") and shutil.which("systemctl"):
        subprocess.run(["systemctl", "disable", "--now", f"{name}.timer"], capture_output=True)
    for f in sched.files:
        f.unlink(missing_ok=True)
    if sched.backend == "systemd" and root == Path("/") and shutil.which("systemctl"):
        subprocess.run(["systemctl", "daemon-reload"], capture_output=True)
    return list(sched.files)


def fire_schedule(sched: Schedule, *, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed command now, as the timer would (argv, no shell)."""
    return subprocess.run(list(sched.command), capture_output=True, text=True, timeout=timeout)
