"""Helpers for fleet tests: watch processes, act on them mid-run, check nothing is left behind.

The suite runs with --import-mode=importlib, so test files reach these through the ``ptools`` fixture."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from quiho.fleet.local.emulate import CGROUP_CPU


@dataclass
class Proc:
    pid: int
    comm: str
    state: str
    cwd: str
    cmdline: str


def procs() -> list[Proc]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                cwd = ""
        except (OSError, IndexError):
            continue
        out.append(Proc(int(entry), comm, state, cwd, cmd))
    return out


def live(pred: Callable[[Proc], bool]) -> list[Proc]:
    """Processes matching ``pred`` that are not zombies (this VM's PID 1 does not reap them)."""
    return [p for p in procs() if p.state != "Z" and pred(p)]


@dataclass
class Watcher:
    """Polls until ``pred`` matches some process, then calls ``action`` once with the matches."""

    pred: Callable[[Proc], bool]
    action: Callable[[list[Proc]], None]
    fired_at: float | None = None
    matched: list[Proc] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.is_set():
            m = live(self.pred)
            if m:
                self.matched = m
                self.fired_at = time.monotonic()
                self.action(m)
                return
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()


def start_watcher(pred: Callable[[Proc], bool], action: Callable[[list[Proc]], None]) -> Watcher:
    """Start polling in a daemon thread; call ``.stop()`` when done."""
    w = Watcher(pred, action)
    threading.Thread(target=w.run, daemon=True).start()
    return w


def qtest_cgroups() -> list[str]:
    return sorted(d.name for d in CGROUP_CPU.glob("qtest-*")) if CGROUP_CPU.is_dir() else []


@pytest.fixture
def ptools() -> SimpleNamespace:
    """``live``, ``start_watcher``, ``qtest_cgroups`` and ``procs`` for tests."""
    return SimpleNamespace(live=live, start_watcher=start_watcher, qtest_cgroups=qtest_cgroups, procs=procs, ours=ours)


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private $QUIHO_RUN_DIR: every ansible/ssh process of this test's runs names it in its command line."""
    d = tmp_path / "runs"
    monkeypatch.setenv("QUIHO_RUN_DIR", str(d))
    return d


def ours(run_dir: Path) -> Callable[[Proc], bool]:
    """Matches ansible-playbook/worker processes (private dir) and ssh mux masters (control dir) of our runs."""
    import hashlib

    tag = "qhcp-" + hashlib.sha1(str(run_dir).encode()).hexdigest()[:8]
    return lambda p: str(run_dir) in p.cmdline or tag in p.cmdline
