"""The local fleet's knobs: the keep/drop rule on planted probe times, and each mechanism on this machine.

The rule (:func:`quiho.fleet.local.knobs.decide_knob`) is pure and tested on planted responses. The mechanisms
are real: stress-ng probes in the blkio group, the seccomp filter, the shaped network namespace, the compute
co-runner and the memory group whose limit follows the application that ``quiho-emulate.sh`` sets up, and a
cleanup that leaves nothing behind after a kill -9.
"""

from __future__ import annotations

import errno
import math
import os
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from quiho.fleet.inventory import repo_root
from quiho.fleet.local.emulate import CGROUP_CPU, CGROUP_KNOBS, MEM_EVENTS_DIR, NETNS_DIR, cleanup_emulation
from quiho.fleet.local.knobs import (
    KNOBS,
    LAST_LOOK_SE,
    REPROBE_BATCHES,
    decide_knob,
    knob_cells,
    screen_knobs,
    write_disk,
)
from quiho.fleet.local.probes import ProbeRunner

BY = {k.name: k for k in KNOBS}


def _times(base: float, factor: float, noise: float, n: int = 5, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [base * factor * math.exp(rng.gauss(0, noise)) for _ in range(n)]


def test_a_knob_that_slows_its_probe_and_not_compute_is_kept_with_its_effect() -> None:
    off = {"fsync": _times(0.1, 1, 0.03, seed=1), "cpu": _times(0.3, 1, 0.03, seed=2)}
    on = {"fsync": _times(0.1, 3, 0.03, seed=3), "cpu": _times(0.3, 1, 0.03, seed=4)}
    e = decide_knob(BY["storage"], "254:0:500", on, off)
    assert e.kept and e.level == "254:0:500"
    assert e.effect_probe is not None and abs(math.exp(e.effect_probe) - 3) < 0.3
    assert "fsync probe" in e.reason and "CPU probe" in e.reason


def test_a_knob_within_the_noise_is_dropped_and_says_what_it_needed() -> None:
    off = {"syscall": _times(0.3, 1, 0.2, seed=5), "cpu": _times(0.3, 1, 0.2, seed=6)}
    on = {"syscall": _times(0.3, 1.1, 0.2, seed=7), "cpu": _times(0.3, 1, 0.2, seed=8)}
    e = decide_knob(BY["kernel-entry"], "4000", on, off)
    assert not e.kept and e.level == "" and "needs > 5 % and > 3 SE" in e.reason
    # the printed SEs are the rule's: the log effect over its SE, not a log SE beside a relative change
    m = re.search(r"syscall probe ([+-][0-9.]+)% \(([0-9.]+) SE\)", e.reason)
    assert m and float(m.group(2)) == pytest.approx(abs(e.effect_probe) / e.se_probe, abs=0.05)
    assert float(m.group(1)) == pytest.approx(100 * math.expm1(e.effect_probe), abs=0.05)


def test_a_knob_that_slows_everything_alike_is_a_speed_knob_and_dropped() -> None:
    off = {"network": _times(0.2, 1, 0.02, seed=9), "cpu": _times(0.3, 1, 0.02, seed=10)}
    on = {"network": _times(0.2, 1.5, 0.02, seed=11), "cpu": _times(0.3, 1.5, 0.02, seed=12)}
    e = decide_knob(BY["network"], "rate:1000", on, off)
    assert not e.kept and "a speed knob" in e.reason


def test_core_sharing_is_judged_on_the_cpu_probe_alone() -> None:
    off = {"cpu": _times(0.3, 1, 0.03, seed=13)}
    kept = decide_knob(BY["core-sharing"], "cpu", {"cpu": _times(0.3, 1.4, 0.03, seed=14)}, off)
    assert kept.kept and "share a core" in kept.reason
    apart = decide_knob(BY["core-sharing"], "cpu", {"cpu": _times(0.3, 1.0, 0.03, seed=15)}, off)
    assert not apart.kept


def test_the_first_round_is_a_transient_and_does_not_decide() -> None:
    off = {"fsync": [0.1] * 5, "cpu": [0.3] * 5}
    on = {"fsync": [0.1, 0.2, 0.2, 0.2, 0.2], "cpu": [0.3] * 5}
    e = decide_knob(BY["storage"], "x", {"fsync": [f * (1 + 0.001 * i) for i, f in enumerate(on["fsync"])],
                                         "cpu": on["cpu"]}, off)
    assert e.kept and abs(math.exp(e.effect_probe or 0) - 2) < 0.02


class _Rounds:
    """A probe runner replaying planted times: every knob's cell slows its own probe 3x, the compute co-runner's
    cell slows the CPU probe by ``sharing`` (cycled within each batch); every batch is recorded."""

    def __init__(self, sharing: list[float]) -> None:
        self.sharing, self.asked = sharing, []
        self.on_step = lambda _m: None

    def rounds(self, cells, probes, probes_of=None):  # noqa: ANN001, ANN201 - the runner's signature
        self.asked.append([(c.corunner, n) for c, n in cells])
        out = []
        for (c, n), ps in zip(cells, probes_of or [probes] * len(cells), strict=True):
            res = {}
            for p in ps:
                own = (c.syscall_rules and p == "syscall") or (c.net != "0" and p == "network")
                res[p] = ([0.2 * self.sharing[i % len(self.sharing)] for i in range(n)]
                          if c.corunner == "cpu" and p == "cpu" else [0.2 * (3 if own else 1)] * n)
            out.append(res)
        return out


def test_a_knob_a_noisy_minute_leaves_undecided_is_probed_again_and_kept_at_the_last_look() -> None:
    # compute co-runner rounds alternate +30 % and -7 % (a ~+11 % effect in a busy minute): < 3 SE on one batch
    runner = _Rounds([1.30, 0.93])
    out = screen_knobs(runner, "/proc", vcpus=2, reps=5)  # type: ignore[arg-type]
    by = {e["name"]: e for e in out["knobs"]}
    assert out["reprobed"] == ["core-sharing"]
    # the fsync base, the first batch, then REPROBE_BATCHES batches of the reference and the one undecided knob
    assert len(runner.asked) == 2 + REPROBE_BATCHES
    assert all(batch == [("none", 5), ("cpu", 5)] for batch in runner.asked[2:])
    sharing = by["core-sharing"]
    assert sharing["kept"] and "kept at the last re-probe look's 2 SE; 3 SE before it" in sharing["reason"]
    assert LAST_LOOK_SE < sharing["effect_probe"] / sharing["se_probe"] < 3
    # the knobs decided at once were not measured again, and their rounds stay as they were
    assert by["kernel-entry"]["kept"] and len(out["cells"][0]["cpu"]) == 5 * (1 + REPROBE_BATCHES)
    assert [len(c["cpu"]) for c in out["cells"][1:]] == [5 * (1 + REPROBE_BATCHES)] + [5] * (len(out["cells"]) - 2)


def test_a_knob_whose_rounds_rule_out_five_percent_is_not_probed_again() -> None:
    runner = _Rounds([1.01, 0.99])
    out = screen_knobs(runner, "/proc", vcpus=2, reps=5)  # type: ignore[arg-type]
    assert out["reprobed"] == [] and len(runner.asked) == 2
    assert not next(e for e in out["knobs"] if e["name"] == "core-sharing")["kept"]


def test_a_knob_without_an_effect_is_not_kept_by_its_last_look() -> None:
    # scatter of +-20 % around none: probed again up to the cap, then dropped at 2 SE too
    runner = _Rounds([1.2, 0.83, 1.18, 0.85])
    out = screen_knobs(runner, "/proc", vcpus=2, reps=5)  # type: ignore[arg-type]
    sharing = next(e for e in out["knobs"] if e["name"] == "core-sharing")
    assert out["reprobed"] == ["core-sharing"] and len(runner.asked) == 2 + REPROBE_BATCHES
    assert not sharing["kept"] and "needs > 5 % and > 2 SE" in sharing["reason"]


def test_core_sharing_is_not_probed_beside_a_kept_stream_co_runner_and_says_so() -> None:
    # both co-runners take the other CPU: the compute one could not be a factor, so its rounds are not spent
    runner = _Rounds([1.30, 0.93])
    out = screen_knobs(runner, "/proc", vcpus=2, reps=5, stream_kept=True)  # type: ignore[arg-type]
    assert all(corunner != "cpu" for batch in runner.asked for corunner, _n in batch)
    assert "core-sharing" not in {e["name"] for e in out["knobs"]} and out["reprobed"] == []
    assert [n for n in out["notes"] if n.startswith("core-sharing: not probed: the stream co-runner, kept")]
    probed = screen_knobs(_Rounds([1.30, 0.93]), "/proc", vcpus=2, reps=5)  # type: ignore[arg-type]
    assert "core-sharing" in {e["name"] for e in probed["knobs"]}


def test_a_directory_on_no_block_device_has_no_storage_knob_and_says_so() -> None:
    assert write_disk("/proc") is None
    cells, notes = knob_cells("/proc", vcpus=1)
    names = {k.name for k, _ in cells}
    assert "storage" not in names and "core-sharing" not in names and "memory-capacity" not in names
    assert any(n.startswith("storage:") and "no block device" in n for n in notes)
    assert any(n.startswith("memory-capacity:") for n in notes)  # no block device, or no memory controller
    assert any(n.startswith("core-sharing:") for n in notes)


@pytest.mark.root
def test_the_emulation_refuses_bad_knob_levels_before_touching_anything() -> None:
    script = repo_root() / "playbooks" / "files" / "quiho-emulate.sh"
    cg = str(CGROUP_CPU / f"quiho-badknob-{os.getpid()}")
    for iops, mem, net in (("254:0", "0", "0"), ("a:b:c", "0", "0"), ("0", "x", "0"), ("0", "0", "rate:"),
                           ("0", "0", "delay:1;reboot")):
        r = subprocess.run(["sh", str(script), "start", cg, "100", "none", "5", "keep", "20000", iops, mem, net],
                           capture_output=True, text=True, check=False)
        assert r.returncode == 2 and "quiho-emulate: bad" in r.stderr
        assert not Path(cg).exists()
    r = subprocess.run(["sh", str(script), "start", cg, "100", "stream", "5", "keep", "20000", "0", "0", "0", "0.5"],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "quiho-emulate: bad settle" in r.stderr and not Path(cg).exists()


@pytest.mark.root
@pytest.mark.stressng
def test_every_knob_this_machine_can_set_moves_its_probe_on_this_machine(tmp_path: Path) -> None:
    """The kept/dropped result is the machine's; what must hold anywhere: every knob is measured or said."""
    runner = ProbeRunner(f"quiho-knobtest-{os.getpid()}", 512, workdir=str(tmp_path))
    try:
        out = screen_knobs(runner, str(tmp_path), vcpus=os.cpu_count() or 1, reps=3)
    finally:
        runner.cleanup()
    said = {e["name"] for e in out["knobs"]} | {n.split(":")[0] for n in out["notes"]}
    assert {k.name for k in KNOBS} <= said
    by = {e["name"]: e for e in out["knobs"]}
    # storage and kernel entry act on every Linux VM quiho runs on: seconds, not percent
    assert by["storage"]["kept"] and math.expm1(by["storage"]["effect_probe"]) > 1.0
    assert by["kernel-entry"]["effect_probe"] > math.log(1.3)
    if "memory-capacity" in by:  # its verdict is the machine's: kept on its rule's evidence, or says what it needed
        mem = by["memory-capacity"]
        if mem["kept"]:
            assert mem["effect_probe"] > math.log(1.05) and mem["effect_probe"] > 3 * mem["se_probe"], mem
        else:
            assert "needs > 5 % and > 3 SE" in mem["reason"], mem
    for e in out["knobs"]:
        assert e["reason"] and (e["effect_probe"] is not None)
    assert not [d for root in (CGROUP_CPU, *CGROUP_KNOBS) for d in root.iterdir() if "quiho-knobtest" in d.name]


@pytest.mark.root
def test_a_kill_9_mid_run_leaves_nothing_once_cleaned(tmp_path: Path) -> None:
    """Groups, the namespace and the co-runner of a host whose controller was killed are undone by the cleanup."""
    prefix = f"quiho-kill-{os.getpid()}"
    cg = str(CGROUP_CPU / f"{prefix}-1")
    disk = write_disk(tmp_path) or "0"
    iops = f"{disk}:300" if disk != "0" else "0"
    script = repo_root() / "playbooks" / "files" / "quiho-emulate.sh"
    # start every knob from a child that is then killed without running 'stop'
    child = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time; subprocess.run(['sh', sys.argv[1], 'start', sys.argv[2], '80', 'cpu', '60',"
        " 'keep', '20000', sys.argv[3], '256', 'rate:500'], check=True); time.sleep(60)"), str(script), cg, iops])
    name = cg.rsplit("/", 1)[1]
    def started() -> bool:  # mid-run, not mid-start: the co-runner and the memory watcher are both in place
        try:
            return len(Path(f"{cg}-co/cgroup.procs").read_text().split()) >= 2
        except OSError:
            return False

    for _ in range(100):
        if (NETNS_DIR / f"qh-{name}").exists() and started():
            break
        subprocess.run(["sleep", "0.1"], check=False)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert Path(cg).exists() and (Path("/sys/fs/cgroup/memory") / name).exists()
    assert (MEM_EVENTS_DIR / f"quiho-memcap-{name}.events").exists()
    removed = cleanup_emulation(prefix)
    assert name in removed and f"memory/{name}" in removed and f"netns/qh-{name}" in removed
    assert f"run/quiho-memcap-{name}.events" in removed and not list(MEM_EVENTS_DIR.glob(f"quiho-memcap-{prefix}*"))
    assert not Path(cg).exists() and not Path(f"{cg}-co").exists()
    assert not (NETNS_DIR / f"qh-{name}").exists()
    assert not [d for root in CGROUP_KNOBS for d in root.iterdir() if d.name.startswith(prefix)]


def test_an_inventory_of_knob_hosts_becomes_a_design_whose_factors_name_their_resources(tmp_path: Path) -> None:
    from quiho.design import factor_table, local_fleet_vars
    from quiho.design.effects import FALLBACK_CLASSES
    from quiho.fleet.inventory import load_inventory
    from quiho.fleet.local.screening import screening_design

    design = screening_design(["core-sharing", "storage", "kernel-entry", "network", "memory-capacity"])
    on = {"core-sharing": ("quiho_corunner", "none", "cpu"), "storage": ("quiho_write_iops", '"0"', '"254:0:200"'),
          "kernel-entry": ("quiho_syscall_rules", "0", "4000"), "network": ("quiho_net", '"0"', '"rate:1000"'),
          "memory-capacity": ("quiho_mem_cache_mib", "0", "32")}
    lines = ["all:", "  vars: {ansible_connection: local, quiho_thp: never}", "  hosts:"]
    for h in design.hosts:
        lines.append(f"    {h.name}: {{" + ", ".join(f"{on[k][0]}: {on[k][1 + lev]}" for k, lev in
                                                    zip(design.knobs, h.levels, strict=True)) + "}")
    (tmp_path / "inv.yml").write_text("\n".join(lines) + "\n")
    inv = load_inventory(tmp_path / "inv.yml")
    assert inv.shares_machine and all(h.emulated for h in inv.hosts)
    table = factor_table(local_fleet_vars(inv.design_vars()))
    assert set(table.names) == set(design.knobs) and not table.notes
    described = {f.name: f.describe() for f in table.factors}
    assert described["storage"] == "write-IOPS limit 0 → 254:0:200"
    assert described["memory-capacity"] == "page-cache allowance 0 → 32"
    assert {FALLBACK_CLASSES[n] for n in table.names} == {"cpu", "storage", "kernel-entry", "network",
                                                         "memory-capacity"}
    # orthogonal coded columns: the screening design's main effects come out of the analysis unconfounded
    m = table.matrix(list(table.hosts))
    centred = m - m.mean(axis=0)
    gram = centred.T @ centred
    assert abs(gram - abs(gram).max() * np.eye(5)).max() < 1e-9


def test_a_bad_knob_level_in_an_inventory_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    from quiho.errors import InventoryError
    from quiho.fleet.inventory import load_inventory

    (tmp_path / "inv.yml").write_text("all:\n  hosts:\n    h1: {ansible_connection: local, quiho_net: 'delay:1;x'}\n")
    with pytest.raises(InventoryError, match="quiho_net"):
        load_inventory(tmp_path / "inv.yml")


def test_a_calibration_with_knobs_states_each_in_the_inventory_and_in_fleet_show(tmp_path: Path) -> None:
    from quiho.fleet.local.calibrate import choose, inventory_text, load_responses
    from quiho.fleet.show import calibration_lines

    resp = load_responses(sorted((repo_root() / "tests" / "data" / "calibration").glob("*.json"))[0])
    plain = choose(resp)
    assert "knobs" not in plain.to_dict()  # not screened: the stored row reads as before
    off = {"fsync": _times(0.1, 1, 0.03, seed=21), "cpu": _times(0.3, 1, 0.03, seed=22)}
    on = {"fsync": _times(0.1, 4, 0.03, seed=23), "cpu": _times(0.3, 1, 0.03, seed=24)}
    resp["knobs"] = {"knobs": [decide_knob(BY["storage"], "254:0:200", on, off).to_dict()],
                     "notes": ["network: no network namespace with a netem or tbf qdisc here"]}
    choice = choose(resp)
    assert choice.to_dict()["knobs"][0]["kept"] and [a.name for a in choice.axes] == [a.name for a in plain.axes]
    # a kept knob makes the hosts a screening design with the storage knob as a factor, 8 hosts
    assert choice.design is not None and "storage" in choice.design["factors"] and len(choice.hosts) == 8
    text = inventory_text(choice, resp.get("facts") or {}, "k" * 64)
    assert "# knob storage: kept: a slower disk" in text and "# knob network: no network namespace" in text
    inv_path = tmp_path / "inv.yml"
    inv_path.write_text(text)
    from quiho.design import factor_table, local_fleet_vars
    from quiho.fleet.inventory import load_inventory

    inv = load_inventory(inv_path)
    assert {h.write_iops for h in inv.hosts} == {"0", "254:0:200"}  # quoted: YAML 1.1 reads 254:0:50 as base 60
    assert factor_table(local_fleet_vars(inv.design_vars())).names == choice.design["factors"]
    d = choice.to_dict()
    info = {"id": 1, "created_at": "now", "elapsed_s": 1.0, "facts": {}, "inventory": "inv.yml", "hosts": [],
            **{k: d[k] for k in ("quota_levels", "period_us", "axes", "warnings", "knobs", "knob_notes")}}
    lines = calibration_lines(info)
    row = next(ln for ln in lines if ln.strip().startswith("knob storage"))
    assert "kept" in row and "254:0:200" in row and "own probe +" in row and "CPU probe" in row


@pytest.mark.root
def test_a_network_host_runs_the_command_in_its_namespace_with_the_marker_printed_inside_it() -> None:
    """The namespace is entered before the time marker: `ip netns exec` (a mount namespace, sysfs remounted) costs
    milliseconds that a short command would otherwise count as a network effect."""
    import yaml

    join = yaml.safe_load((repo_root() / "playbooks" / "vars" / "emulation.yml").read_text())["qh_join"]
    cg = CGROUP_CPU / f"quiho-nsmark-{os.getpid()}"
    ns = NETNS_DIR / f"qh-{cg.name}"
    cg.mkdir()
    subprocess.run(["ip", "netns", "add", ns.name], check=True)
    try:
        # the marker comes from a shell already in the namespace: its parent's namespace is the host's
        r = subprocess.run(["sh", "-c", join, "sh", str(cg), "1", "sh", "-c",
                            "readlink /proc/self/ns/net; exit 3"], capture_output=True, text=True, check=False)
        inside = subprocess.run(["ip", "netns", "exec", ns.name, "readlink", "/proc/self/ns/net"],
                                capture_output=True, text=True, check=True).stdout.strip()
        lines = r.stdout.splitlines()
        assert r.returncode == 3 and lines[0].startswith("quiho-exec-at: ") and lines[1] == inside
        assert inside != os.readlink("/proc/self/ns/net")
        # the marker's printer ran in the namespace: the ip netns exec comes before the echo in the script
        assert join.index('exec ip netns exec "qh-$n" sh -c') < join.index("quiho-exec-at")
    finally:
        subprocess.run(["ip", "netns", "del", ns.name], check=False)
        cg.rmdir()


def test_the_reread_probe_says_bad_arguments_and_a_missing_time_in_one_line(tmp_path: Path) -> None:
    from quiho.errors import InventoryError
    from quiho.fleet.local.probes import reread_seconds

    script = repo_root() / "playbooks" / "files" / "quiho-reread.py"
    for args in ([], [str(tmp_path / "f"), "0", "3"], [str(tmp_path / "f"), "4", "x"]):
        r = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, check=False)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "usage" in r.stderr
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "no" / "f"), "1", "1"], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 1 and r.stderr.startswith("quiho-reread: ") and r.stderr.count("\n") == 1
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "f"), "2", "2"], capture_output=True, text=True,
                       check=True)
    assert reread_seconds(r.stdout, ["python", "quiho-reread.py"]) > 0 and (tmp_path / "f").stat().st_size == 2 << 20
    for bad in ("", "nan\n", "-1\n", "done\n"):
        with pytest.raises(InventoryError, match="printed no time"):
            reread_seconds(bad, ["python", "quiho-reread.py"])


def _memory_host() -> tuple[Path, str, Path]:
    """(the memory controller's root, the playbooks' qh_join, quiho-emulate.sh); skips without cgroup v1 memory."""
    import yaml

    memcg = Path("/sys/fs/cgroup/memory")
    if not (memcg / "memory.oom_control").exists():
        pytest.skip("no cgroup v1 memory controller with memory.oom_control here")
    join = yaml.safe_load((repo_root() / "playbooks" / "vars" / "emulation.yml").read_text())["qh_join"]
    return memcg, join, repo_root() / "playbooks" / "files" / "quiho-emulate.sh"


@pytest.mark.root
def test_a_memory_capacity_host_pauses_an_application_that_outgrows_its_limit_and_never_kills_it(
        tmp_path: Path) -> None:
    """No swap here: a limit below the anonymous working set would be an OOM kill. The limit follows the
    application's own memory instead, and the page cache it may keep is trimmed back to the allowance."""
    memcg, join, script = _memory_host()
    cg = CGROUP_CPU / f"quiho-memcap-{os.getpid()}"
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(64 << 20))
    app = ("import os, sys, time\n"
           "b = bytearray(256 << 20)\n"
           "for i in range(0, len(b), 4096): b[i] = 1\n"  # 256 MiB anonymous, 16x the allowance
           "fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\n"
           "for _ in range(2):\n"
           "    os.lseek(fd, 0, 0)\n"
           "    while os.read(fd, 1 << 20): pass\n"
           "time.sleep(0.2)\n"  # ten of the watcher's looks
           "g = '/sys/fs/cgroup/memory/' + sys.argv[2]\n"
           "stat = dict(ln.split() for ln in open(g + '/memory.stat'))\n"
           "print(stat['rss'], int(stat['active_file']) + int(stat['inactive_file']),\n"
           "      open(g + '/memory.limit_in_bytes').read().strip())\n")
    subprocess.run(["sh", str(script), "start", str(cg), "100", "none", "60", "keep", "20000", "0", "16", "0"],
                   check=True)
    try:
        assert int((memcg / cg.name / "memory.limit_in_bytes").read_text()) == (16 + 256) << 20
        r = subprocess.run(["sh", "-c", join, "sh", str(cg), "0", sys.executable, "-c", app, str(data), cg.name],
                           capture_output=True, text=True, timeout=120, check=False)
        oom = dict(ln.split() for ln in (memcg / cg.name / "memory.oom_control").read_text().splitlines())
    finally:
        subprocess.run(["sh", str(script), "stop", str(cg)], check=False)
    assert r.returncode == 0, r.stderr
    rss, cache, limit = (int(x) for x in r.stdout.split())
    assert rss >= 256 << 20 and limit >= rss + (16 << 20)  # the limit followed the application's own memory
    assert cache <= (16 + 4) << 20  # the 64 MiB file did not stay cached: trimmed to the allowance (+ its slack)
    assert oom["oom_kill"] == "0"
    assert not Path(f"{cg}-co").exists() and not (memcg / cg.name).exists()
    assert not (MEM_EVENTS_DIR / f"quiho-memcap-{cg.name}.events").exists()


#: A process that writes a pipe whose reader reads into fresh memory, beside one that allocates 600 MiB at once,
#: four times: the system calls that fail at a cgroup v1 memory limit (a pipe buffer's charge: ENOMEM; a read's
#: copy into a page not yet faulted in: EFAULT). It prints the ENOMEM count; an EFAULT fails the run.
_BESIDE_AN_ALLOCATOR = """
import errno, os, sys, time
if os.fork() == 0:
    for _ in range(4):
        time.sleep(0.3); b = bytearray(600 << 20); time.sleep(0.2); del b
    os._exit(0)
r, w = os.pipe()
if os.fork() == 0:
    os.close(w)
    while os.read(r, 1 << 20): pass
    os._exit(0)
os.close(r)
enomem, end = 0, time.monotonic() + 2.4
while time.monotonic() < end:
    try:
        os.write(w, b"x" * 65536)
    except OSError as exc:
        if exc.errno != errno.ENOMEM: raise
        enomem += 1
os.close(w)
codes = [os.wait()[1] for _ in range(2)]
print(enomem, *codes)
"""


@pytest.mark.root
def test_a_process_beside_an_allocating_one_on_a_memory_capacity_host_has_no_system_call_fail_unsaid() -> None:
    """At a cgroup v1 memory limit only a page fault waits; any other charge fails (ENOMEM), which let `cat | xz -9`
    finish in 0.09 s with exit 0. The watcher keeps the limit above the group's own memory; a meeting it could not
    prevent is counted, and the run marked. Huge pages and the stream co-runner (the watcher's CPU busy) make the
    bursts as fast as they get here; before the headroom, 6 such runs had 2 ENOMEM and 1 EFAULT."""
    import shutil

    memcg, join, script = _memory_host()
    if shutil.which("stress-ng") is None:
        pytest.skip("stress-ng is not installed: the stream co-runner keeps the watcher's CPU busy")
    cg = CGROUP_CPU / f"quiho-memcap-beside-{os.getpid()}"
    events = MEM_EVENTS_DIR / f"quiho-memcap-{cg.name}.events"
    thp = "always" if Path("/sys/kernel/mm/transparent_hugepage/enabled").exists() else "keep"
    subprocess.run(["sh", str(script), "start", str(cg), "100", "stream", "60", thp, "20000", "0", "32", "0"],
                   check=True)
    runs = []
    try:
        for _ in range(3):
            before = int(events.read_text())
            r = subprocess.run(["sh", "-c", join, "sh", str(cg), "0", sys.executable, "-c", _BESIDE_AN_ALLOCATOR],
                               capture_output=True, text=True, timeout=120, check=False)
            runs.append((r.returncode, r.stdout, r.stderr, int(events.read_text()) - before))
        peak = int((memcg / cg.name / "memory.max_usage_in_bytes").read_text())
    finally:
        subprocess.run(["sh", str(script), "stop", str(cg)], check=False)
    assert peak >= 600 << 20  # the bursts happened in the group
    for rc, out, err, met in runs:
        assert rc == 0, err  # no EFAULT
        enomem, writer_rc, reader_rc = (int(x) for x in out.split())
        assert writer_rc == 0 and reader_rc == 0, out
        assert enomem == 0 or met > 0, (enomem, met)  # a failed system call is never silent


@pytest.mark.root
def test_a_system_call_that_meets_the_memory_limit_is_counted_for_the_run(tmp_path: Path) -> None:
    """What the headroom cannot prevent is counted: with the watcher stopped, a tmpfs write (a charge from a system
    call, which fails at the limit instead of waiting) meets the limit; the watcher, resumed, counts it."""
    memcg, join, script = _memory_host()
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm (tmpfs) to charge the group from a system call")
    cg = CGROUP_CPU / f"quiho-memcap-meet-{os.getpid()}"
    events = MEM_EVENTS_DIR / f"quiho-memcap-{cg.name}.events"
    shm = Path(f"/dev/shm/quiho-meet-{os.getpid()}")
    app = ("import errno, os, sys\n"  # up to 600 MiB into tmpfs, 1 MiB a call; prints the MiB written, errno
           "n, e, fd, b = 0, 0, os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600), b'x' * (1 << 20)\n"
           "try:\n"
           "    while n < 600 and os.write(fd, b) == 1 << 20: n += 1\n"
           "except OSError as exc:\n"
           "    e = exc.errno\n"
           "os.close(fd); os.unlink(sys.argv[1])\n"  # first: at the limit even a write to stdout fails
           "print(n, e)\n")
    subprocess.run(["sh", str(script), "start", str(cg), "100", "none", "60", "keep", "20000", "0", "16", "0"],
                   check=True)
    written, counts = [], []
    try:
        for _ in range(50):  # the watcher joins the co-runner's group as it starts
            procs = Path(f"{cg}-co/cgroup.procs").read_text().split()
            if procs:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        watcher = int(procs[0])
        for stop in (False, True):
            before = int(events.read_text())
            if stop:
                os.kill(watcher, signal.SIGSTOP)
            try:
                r = subprocess.run(["sh", "-c", join, "sh", str(cg), "0", sys.executable, "-c", app, str(shm)],
                                   capture_output=True, text=True, timeout=60, check=False)
            finally:
                os.kill(watcher, signal.SIGCONT)
            subprocess.run(["sleep", "0.1"], check=True)  # the watcher's next look
            assert r.returncode == 0, (stop, r.returncode, r.stdout, r.stderr)
            written.append(tuple(int(x) for x in r.stdout.split()))
            counts.append(int(events.read_text()) - before)
    finally:
        shm.unlink(missing_ok=True)
        subprocess.run(["sh", str(script), "stop", str(cg)], check=False)
    assert written[0] == (600, 0) and counts[0] == 0  # watched: the limit stayed ahead of 600 MiB written
    assert written[1][0] < 600 and written[1][1] in (0, errno.ENOMEM)  # unwatched: a short or failed write ...
    assert counts[1] > 0  # ... and that was counted


@pytest.mark.root
def test_a_short_run_on_a_memory_capacity_host_meets_its_allowance_from_its_first_moment(tmp_path: Path) -> None:
    """``start`` returns once the watcher watches: a 0.05 s reread of a 128 MiB file right after it comes from the
    disk, not from a page cache not yet trimmed (before, the run was over before the watcher's first look)."""
    from quiho.fleet.local.probes import reread_seconds

    _memcg, join, script = _memory_host()
    reread = [sys.executable, str(repo_root() / "playbooks" / "files" / "quiho-reread.py"), str(tmp_path / "f.bin"),
              "128", "3"]
    subprocess.run(reread, check=True, capture_output=True)  # the file made, outside any group
    times: dict[str, list[float]] = {"0": [], "32": []}  # page-cache allowance (MiB; 0: no knob) -> seconds
    for i, mem in enumerate(("0", "32", "0", "32")):
        cg = CGROUP_CPU / f"quiho-memcap-first-{os.getpid()}-{i}"
        subprocess.run(["sh", str(script), "start", str(cg), "100", "none", "60", "keep", "20000", "0", mem, "0"],
                       check=True)
        try:
            r = subprocess.run(["sh", "-c", join, "sh", str(cg), "0", *reread], capture_output=True, text=True,
                               timeout=120, check=True)
        finally:
            subprocess.run(["sh", str(script), "stop", str(cg)], check=True)
        times[mem].append(reread_seconds(r.stdout, reread))
    assert min(times["32"]) > 1.5 * max(times["0"]), times  # the same passes from the disk, each time
