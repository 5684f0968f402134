"""Ansible's internal poll interval for hosts on this machine: a config file of its own, the user's settings kept.

Ansible's default (1 ms) makes ansible-playbook's strategy loop spin at ~10 % of a CPU while every task runs,
on the CPUs that a local fleet measures with; the interval can only be set in a config file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from quiho.fleet.inventory import tool_path
from quiho.fleet.runner import SHARED_MACHINE_POLL_S, poll_config


def _ansible_sees(cfg: Path) -> str:
    """What ``ansible-config dump --only-changed`` reports under ``cfg``: Ansible's own reading of the file."""
    exe = Path(sys.executable).parent / "ansible-config"
    if not exe.exists():
        pytest.skip(f"ansible-config is not installed beside {sys.executable}")
    env = {**os.environ, "ANSIBLE_CONFIG": str(cfg), "PATH": tool_path(), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run([str(exe), "dump", "--only-changed"], env=env, capture_output=True, text=True,
                          check=True, timeout=120).stdout


def test_without_a_user_config_only_the_interval_is_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ansible.cfg
    if Path("/etc/ansible/ansible.cfg").is_file():
        pytest.skip("/etc/ansible/ansible.cfg exists here: it would be copied")
    cfg = poll_config(tmp_path / "ansible.cfg", SHARED_MACHINE_POLL_S)
    assert cfg is not None
    seen = _ansible_sees(cfg)
    assert f"DEFAULT_INTERNAL_POLL_INTERVAL({cfg}) = {SHARED_MACHINE_POLL_S}" in seen


def test_the_users_settings_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "user.cfg"
    user.write_text("[defaults]\nforks = 7\ninternal_poll_interval = 0.2\n[ssh_connection]\npipelining = True\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(user))
    cfg = poll_config(tmp_path / "ansible.cfg", 0.05)
    assert cfg is not None
    seen = _ansible_sees(cfg)
    assert "DEFAULT_INTERNAL_POLL_INTERVAL" in seen and "= 0.05" in seen
    assert "DEFAULT_FORKS" in seen and "= 7" in seen
    assert "pipelining" in cfg.read_text() and "True" in cfg.read_text()


def test_an_unparsable_user_config_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "user.cfg"
    user.write_text("forks = 7 with no section header\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(user))
    assert poll_config(tmp_path / "ansible.cfg", 0.05) is None
    assert not (tmp_path / "ansible.cfg").exists()
