"""Shared fixtures and the rule for tests that need privileges or tools.

A test marked ``root``, ``netns``, ``bpftrace``, ``stressng`` or ``chromium``
skips with the missing requirement named when the machine lacks it. In CI
(``CI=true``) such a skip is an error instead: CI runs as root with every
tool installed by ``.ci/run``, so a skip there would hide a missing test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
POPPER_RESULTS = SHARED_DATA / "quiho-popper" / "pipelines" / "single-node" / "datapackage" / "quiho" / "results.csv"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _is_root() -> bool:
    return os.geteuid() == 0


def _has_netns() -> bool:
    if not _is_root() or shutil.which("ip") is None or not os.path.exists("/usr/sbin/sshd"):
        return False
    return subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0


def _has_bpftrace() -> bool:
    return _is_root() and shutil.which("bpftrace") is not None


_REQUIREMENTS = {
    "root": (_is_root, "needs root (run as root, as CI does)"),
    "netns": (_has_netns, "needs root, iproute2 'ip netns' and /usr/sbin/sshd (apt-get install openssh-server)"),
    "bpftrace": (_has_bpftrace, "needs root and bpftrace (apt-get install bpftrace)"),
    "stressng": (lambda: shutil.which("stress-ng") is not None, "needs stress-ng (apt-get install stress-ng)"),
    "chromium": (lambda: shutil.which("chromium") is not None, "needs chromium (apt-get install chromium)"),
}
_cache: dict[str, bool] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers():
        req = _REQUIREMENTS.get(mark.name)
        if req is None:
            continue
        check, why = req
        if mark.name not in _cache:
            _cache[mark.name] = bool(check())
        if not _cache[mark.name]:
            if IN_CI:
                pytest.fail(f"CI must run this test but the machine lacks it: {why}")
            pytest.skip(why)


@pytest.fixture(scope="session")
def popper_csv() -> Path:
    if not POPPER_RESULTS.exists():
        msg = f"quiho-popper data not found at {POPPER_RESULTS} (shared/ must sit beside the repo)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return POPPER_RESULTS
