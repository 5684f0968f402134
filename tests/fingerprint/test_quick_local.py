"""``quiho fingerprint --quick-local``: real stress-ng on this machine, stored once per machine state, reused."""

import json
import os
import stat

import pytest

from quiho._facts import MachineFacts
from quiho.cli.main import main
from quiho.errors import RunFailed
from quiho.fingerprint.local import LocalFingerprintOptions, quick_local_fingerprint, state_key
from quiho.store import open_store

pytestmark = pytest.mark.stressng
ONE = LocalFingerprintOptions(repetitions=1)


def test_state_key_follows_the_facts_that_matter():
    a = MachineFacts(host="r1", cpu_model="X", vcpus=2, load1=0.1)
    assert state_key(a) == state_key(MachineFacts(host="r1", cpu_model="X", vcpus=2, load1=3.0))  # load is no state
    assert state_key(a) != state_key(MachineFacts(host="r1", cpu_model="Y", vcpus=2))
    assert state_key(a) != state_key(MachineFacts(host="r2", cpu_model="X", vcpus=2))


def test_measured_once_then_reused_until_too_old(tmp_path):
    with open_store(tmp_path / "q.db") as st:
        first = quick_local_fingerprint(st, ONE)
        assert not first.reused and not first.failed
        assert {"cpu", "stream", "null"} <= set(first.values.index) and (first.values > 0).all()
        again = quick_local_fingerprint(st, ONE)
        assert again.reused and again.run_id == first.run_id and again.values.equals(first.values)
        fresh = quick_local_fingerprint(st, LocalFingerprintOptions(repetitions=1, max_age_s=0))
        assert not fresh.reused and fresh.run_id != first.run_id


def _dropping(tmp_path, stressor):
    """A stress-ng that runs the real one on the job without ``stressor`` (so that stressor reports nothing)."""
    exe = tmp_path / "stress-ng-without"
    exe.write_text("#!/bin/sh\n"
                   f"for a; do case $prev in --job) sed -i '/^{stressor} 1$/d' \"$a\";; esac; prev=$a; done\n"
                   "exec stress-ng \"$@\"\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_failed_stressor_is_kept_as_failed_and_said(tmp_path):
    with open_store(tmp_path / "q.db") as st:
        fp = quick_local_fingerprint(st, LocalFingerprintOptions(repetitions=1, stress_ng=_dropping(tmp_path, "zero")))
        assert fp.failed == ("zero",) and "zero" not in fp.values.index and "cpu" in fp.values.index
        n = st.conn.execute("SELECT status, reason FROM measurements WHERE stressor = 'zero' AND repetition = 1"
                            ).fetchone()
        assert n["status"] == "failed" and "no metrics" in n["reason"]


def test_missing_stress_ng_is_one_error(tmp_path):
    with open_store(tmp_path / "q.db") as st, pytest.raises(RunFailed, match="not found"):
        quick_local_fingerprint(st, LocalFingerprintOptions(stress_ng=str(tmp_path / "none")))


def test_cli_json_is_what_predict_reads(tmp_path, capsys):
    db = str(tmp_path / "q.db")
    assert main(["fingerprint", "--quick-local", "--repetitions", "1", "--store", db, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["values"]["cpu"] > 0 and doc["facts"]["vcpus"] == os.cpu_count()
    path = tmp_path / "fp.json"
    path.write_text(json.dumps(doc))
    from quiho.irup.predict import read_fingerprint_file

    assert read_fingerprint_file(path).to_dict() == doc["values"]
