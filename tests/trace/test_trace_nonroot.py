"""``quiho profile --trace`` on a fleet where one host cannot trace: real sshd hosts in network namespaces.

Host 1 is reached as root and has bpftrace. Host 2 is reached as a non-root account, has no bpftrace and no
stap (its sshd runs in a mount namespace where they are covered, :class:`quiho.testing.netns.HostLimits`) and
its own ``/tmp``, as a separate machine would. Both run examples/trace (tags v1 vs v2, built on each host by the
spec's setup). The profile must stand: both hosts' untraced runs give the metric, host 1's traces give the
per-function answer, and host 2 gets one line saying that it lacks root *and* a tracer.
"""

from __future__ import annotations

import json
import pwd
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from quiho.cli.main import main
from quiho.store import open_store
from quiho.store.traces import batch_trace_runs
from quiho.testing.netns import HostLimits, NetnsFleet

pytestmark = [pytest.mark.root, pytest.mark.netns, pytest.mark.bpftrace, pytest.mark.stressng, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fleet() -> Iterator[NetnsFleet]:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to build examples/trace (apt-get install gcc)")
    with NetnsFleet(2, prefix="qtest", limits={2: HostLimits(nonroot=True, hide=("bpftrace", "stap"),
                                                             private_tmp=True)}) as f:
        yield f
    users = subprocess.run(["getent", "passwd", f.hosts[1].user], capture_output=True).returncode
    assert users == 2, "teardown left the non-root account behind"
    assert not any(h.netns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
                   for h in f.hosts)


@pytest.fixture
def spec(fleet: NetnsFleet, tmp_path: Path) -> Iterator[Path]:
    # The sources go where the non-root account can read them whatever the checkout's permissions (its home);
    # each host builds into its own /tmp (host 1: this machine's, removed below; host 2: its private tmpfs).
    home = Path(pwd.getpwnam(fleet.hosts[1].user).pw_dir)
    out = f"/tmp/quiho-nonroot-{secrets.token_hex(3)}"
    versions = ""
    for v in ("v1", "v2"):
        src = home / "src" / v
        src.mkdir(parents=True)
        shutil.copy(REPO / "examples" / "trace" / v / "tags.c", src / "tags.c")
        versions += (f"  {v}:\n    setup: [gcc, -O2, -g, -fno-inline, -o, {out}-{v}, tags.c]\n"
                     f"    command: [{out}-{v}, '50000', '400']\n    workdir: {src}\n")
    for p in (home / "src", *(home / "src").rglob("*")):
        p.chmod(0o755 if p.is_dir() else 0o644)
    s = tmp_path / "tags.yml"
    s.write_text(f"schema_version: 1\nname: tags\nversions:\n{versions}"
                 "metric: {kind: runtime, unit: s, higher_is_better: false}\nrepetitions: 2\ntimeout: 60\n")
    yield s
    for v in ("v1", "v2"):
        Path(f"{out}-{v}").unlink(missing_ok=True)


def _profile(fleet: NetnsFleet, spec: Path, db: Path, capsys: pytest.CaptureFixture[str], *args: str
             ) -> tuple[int, str, str]:
    rc = main(["profile", "tags@v1", "tags@v2", "--spec", str(spec), "-i", str(fleet.inventory), "--max-age", "1h",
               "--fingerprint-repetitions", "1", "--seeds", "2", "--warmup", "0", "--trace", "find_tag",
               "--trace-runs", "2", "--store", str(db), *args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_a_host_without_root_and_tracer_is_one_line_and_the_profile_stands(
        fleet: NetnsFleet, spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traced, plain = fleet.hosts
    db = tmp_path / "q.db"
    rc, out, err = _profile(fleet, spec, db, capsys, "--report", str(tmp_path / "report"))
    # a partial profile is still an answer: exit 0 (only --fail-on-change with a regression exits otherwise)
    assert rc == 0, err
    doc = json.loads((tmp_path / "report" / "report.json").read_text())
    assert doc["status"] == "partial"

    # host 2: one line naming the host and both things it lacks, in the printed text and in the document
    uid = pwd.getpwnam(plain.user).pw_uid
    want = (f"tracing on {plain.name} needs root (connected as uid {uid}) and bpftrace or stap (neither found): "
            "connect as root and install bpftrace")
    assert doc["traces"]["hosts"] == {plain.name: want}
    assert f"partial: traces of host {plain.name}: {want}" in out.splitlines(), out
    assert [n for n in doc["partial"] if plain.name in n] == [f"traces of host {plain.name}: {want}"]
    assert not any(traced.name in n for n in doc["partial"]), doc["partial"]

    # the metric: both hosts' untraced runs (2 versions x 2 repetitions each), v2 faster
    ok = [r for r in doc["runs"] if r["status"] == "ok"]
    assert sorted({r["host"] for r in ok}) == sorted([traced.name, plain.name]) and len(ok) == 8
    assert doc["metric"]["hosts_used"] == 2

    # the functions: host 1 alone traced find_tag and flagged it (v2's hash lookup); one host is below the
    # fleet vote's minimum of three, so the fleet verdict is 'not-meaningful' with that host's magnitude
    (ft,) = doc["traces"]["functions"]
    assert ft["function"] == "find_tag" and ft["hosts"] == 1 and ft["hosts_flagged"] == 1, ft
    assert ft["verdict"] == "not-meaningful" and ft["magnitude"] < -0.5, ft
    assert set(doc["traces"]["overhead"]["hosts"]) == {traced.name}

    # nothing lost in the store: host 2's untraced runs are there, traced runs only from host 1
    with open_store(db) as st:
        rows = st.conn.execute("SELECT h.name, a.status, COUNT(*) FROM app_runs a JOIN hosts h ON h.id = a.host_id "
                               "WHERE a.batch = ? GROUP BY h.name, a.status", (doc["batch"],)).fetchall()
        assert {(str(r[0]), str(r[1])): int(r[2]) for r in rows} == {(traced.name, "ok"): 4, (plain.name, "ok"): 4}
        tr = batch_trace_runs(st, "tags", doc["batch"])
        assert sorted(r.host for r in tr) == [traced.name] * 4

    # a resume of the batch reruns no measured run (both hosts have theirs) and tries tracing again where the
    # batch has no traced run: host 2, which still says why
    rc, out2, err2 = _profile(fleet, spec, db, capsys, "--resume", doc["batch"], "--json")
    assert rc == 0, err2
    again = json.loads(out2)
    assert "interleaved on 0 host(s)" in err2 and "on 1 host(s)" in err2, err2
    with open_store(db) as st:
        n = st.conn.execute("SELECT COUNT(*) FROM app_runs WHERE batch = ?", (doc["batch"],)).fetchone()[0]
        assert n == 8 and len(batch_trace_runs(st, "tags", doc["batch"])) == 4
    assert again["traces"]["functions"] == doc["traces"]["functions"]
    assert again["status"] == "partial" and again["traces"]["hosts"] == {plain.name: want}

    # re-analysing the batch (nothing runs) still names the host that has no traces
    assert main(["profile", "tags@v1", "tags@v2", "--batch", doc["batch"], "--seeds", "2", "--store", str(db),
                 "--json"]) == 0
    redo = json.loads(capsys.readouterr().out)
    assert redo["traces"]["hosts"] == {plain.name: "no traced runs in this batch (its tracing failed or never ran)"}
    assert redo["status"] == "partial" and redo["traces"]["functions"] == doc["traces"]["functions"]
