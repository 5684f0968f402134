"""The controller-side safety net of the local fleet: a changed THP policy is put back (no root needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from quiho.fleet.inventory import load_inventory
from quiho.fleet.local.emulate import restore_thp

REPO = Path(__file__).resolve().parents[3]


def test_restore_thp_puts_back_the_saved_policy_once(tmp_path: Path) -> None:
    target = tmp_path / "enabled"
    save = tmp_path / "thp.orig"
    target.write_text("always\n")
    assert restore_thp(save, target) is None  # nothing saved: nothing touched
    assert target.read_text() == "always\n"
    save.write_text("madvise\n")
    assert restore_thp(save, target) == "madvise"
    assert target.read_text() == "madvise\n" and not save.exists()
    save.write_text("rm -rf /\n")  # never written anywhere
    assert restore_thp(save, target) is None and target.read_text() == "madvise\n"


def test_emulate_script_refuses_bad_arguments_before_touching_anything(tmp_path: Path) -> None:
    script = REPO / "playbooks" / "files" / "quiho-emulate.sh"
    for args, why in (
        (["start", "/tmp/x", "50", "none", "10", "keep"], "refusing cgroup path"),
        (["start", "/sys/fs/cgroup/cpu/qh-none", "50", "none", "10", "sometimes"], "unknown THP policy"),
        (["start", "/sys/fs/cgroup/cpu/qh-none", "5o", "none", "10"], "bad quota"),
    ):
        r = subprocess.run(["sh", str(script), *args], capture_output=True, text=True, check=False)
        assert r.returncode == 2 and why in r.stderr, (args, r.stderr)
    assert not Path("/sys/fs/cgroup/cpu/qh-none").exists()


def test_the_embedded_local_fleet_crosses_speed_and_memory_axes() -> None:
    inv = load_inventory(REPO / "inventories" / "local.yml")
    hosts = inv.hosts
    assert len(hosts) >= 6 and all(h.connection == "local" and h.emulated for h in hosts)
    quotas = {h.cpu_quota_pct for h in hosts}
    # every quota level has both page sizes: the two axes are crossed, not confounded
    assert len(quotas) >= 3
    for q in quotas:
        assert {h.thp for h in hosts if h.cpu_quota_pct == q} == {"never", "always"}
