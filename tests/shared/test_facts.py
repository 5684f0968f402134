"""One machine-facts schema (quiho._facts) for histories, the local fleet's calibration and fingerprints."""

from __future__ import annotations

import os
from pathlib import Path

from quiho._facts import CALIBRATION_KEYS, HOST_KEYS, MachineFacts, calibration_facts, local_facts, parse_facts

DATA = Path(__file__).resolve().parents[1] / "data"

PLAYBOOK_STDOUT = """stress_ng=stress-ng, version 0.15.06 (gcc 12.2, x86_64 Linux 6.1.0) \U0001f4bb
cpu_model=AMD EPYC 7B13
vcpus=2
cores=1
mem_kb=24684092
kernel=6.1.0-18-amd64
arch=x86_64
os=Debian GNU/Linux 12 (bookworm)
l3=32768K
"""


def test_a_hosts_printed_facts_parse_to_the_schema() -> None:
    f = parse_facts(PLAYBOOK_STDOUT)
    assert (f.cpu_model, f.vcpus, f.cores, f.memtotal_mb, f.l3_cache) == ("AMD EPYC 7B13", 2, 1, 24105, "32768K")
    assert f.stress_ng_version and f.stress_ng_version.startswith("stress-ng, version 0.15.06")
    assert set(f.to_dict(HOST_KEYS)) == set(HOST_KEYS)
    # a fact the host could not read is None, never 0 or ""
    g = parse_facts("vcpus=\ncpu_model=\nmem_kb=n/a\n")
    assert g.vcpus is None and g.cpu_model is None and g.memtotal_mb is None


def test_this_machine_s_facts() -> None:
    f = local_facts()
    assert f.vcpus == os.cpu_count() and f.memtotal_mb and f.memtotal_mb > 0
    cpuinfo = Path("/proc/cpuinfo").read_text()
    assert f.cpu_model and f.cpu_model in cpuinfo
    assert f.kernel == os.uname().release and f.load1 is not None


def test_every_consumer_reads_the_same_keys() -> None:
    from quiho.fleet.local.probes import machine_facts as calibration
    from quiho.history.sources._io import local_facts_dict as history

    h, c = history(), calibration()
    assert set(c) == set(CALIBRATION_KEYS) and set(c) <= set(h)
    assert all(h[k] == c[k] for k in ("cpu_model", "vcpus", "memtotal_mb", "kernel"))


def test_round_trip_and_calibration_subset() -> None:
    f = MachineFacts(cpu_model="X", vcpus=4, thp_modes=("always", "madvise", "never"), memtotal_mb=1024)
    assert MachineFacts.from_dict(f.to_dict()) == f
    assert calibration_facts(f)["thp_modes"] == ["always", "madvise", "never"]


def test_responses_recorded_with_the_old_keys_still_load() -> None:
    from quiho.fleet.local.calibrate import load_responses

    old = DATA / "calibration" / "amd-epyc-issue15.json"
    assert '"online_cpus"' in old.read_text()
    facts = load_responses(old)["facts"]
    assert facts["vcpus"] == 2 and "online_cpus" not in facts and "memtotal_mb" in facts
