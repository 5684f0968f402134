"""The fleet trace runner's pure parts: recorded ansible-runner events of ``playbooks/trace.yml`` -> traced runs.

The recordings (``tests/data/fleet-events/trace-*.json``) are real runs made by
``tests/fleet/record_events.py DIR trace``: zlib level 1 vs 9 under bpftrace on a local root host, a host that
connects as ``nobody`` and one that is unreachable; and a run whose traced library is missing on the host.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import tarfile
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from quiho.app import AppSpec, TraceSpec
from quiho.errors import UsageError
from quiho.fleet.runner import EventLog, PlaybookResult
from quiho.fleet.session import FleetSession
from quiho.trace.fleet import (
    FleetTraceRun,
    TracePlan,
    resolve_trace,
    run_script,
    split_lifetime,
    trace_from_options,
    trace_records,
    tracer_cost_ns,
    unpack_events,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "fleet-events"
REPO = Path(__file__).resolve().parents[2]
LIBZ = Path("/lib/x86_64-linux-gnu/libz.so.1")


def _replay(inv: dict[str, Any]) -> PlaybookResult:
    log = EventLog(None)
    for ev in inv["events"]:
        log(ev)
    return log.result(inv["status"], inv["rc"], cancelled=inv["timed_out"], timeout_s=inv["timeout_s"])


def _records(name: str, fetch: Path) -> list[Any]:
    out = []
    for inv in json.loads((DATA / name).read_text())["invocations"]:
        res, group = _replay(inv), inv["limit"]
        order = inv["extravars"]["quiho_trace"]["order"]
        out += trace_records(res, group, order, fetch, timeout_s=40, statuses=FleetSession.host_statuses(res, group))
    return out


def test_traced_runs_alternate_versions_and_each_failing_host_has_its_own_reason(tmp_path: Path) -> None:
    for n in range(1, 5):  # what the playbook's fetch left on the controller
        (tmp_path / "rec-a").mkdir(exist_ok=True)
        (tmp_path / "rec-a" / f"events-{n}.txt.gz").write_bytes(gzip.compress(b"quiho-begin 1\n"))
    recs = _records("trace-ok.json", tmp_path)
    a = sorted((r for r in recs if r.host == "rec-a"), key=lambda r: r.order)
    assert [(r.order, r.side, r.status, r.engine) for r in a] == [
        (1, "1", "ok", "bpftrace"), (2, "2", "ok", "bpftrace"), (3, "1", "ok", "bpftrace"), (4, "2", "ok", "bpftrace")]
    assert all(r.wall_s is not None and r.wall_s > 0 and r.events is not None for r in a)
    user = [r for r in recs if r.host == "rec-user"]
    assert len(user) == 4 and all(r.status == "failed" for r in user)
    # rec-user has bpftrace (this machine's) but is not root: the message says only what it lacks
    assert "tracing on rec-user needs root (connected as uid 65534; bpftrace/stap attach uprobes)" in (
        user[0].reason or "")
    gone = [r for r in recs if r.host == "rec-gone"]
    assert len(gone) == 4 and all((r.reason or "").startswith("not traced: host unreachable") for r in gone)
    statuses = {}
    for inv in json.loads((DATA / "trace-ok.json").read_text())["invocations"]:
        statuses.update(FleetSession.host_statuses(_replay(inv), inv["limit"]))
    msgs = FleetTraceRun("b", TracePlan(("deflate",), {}, 2), tuple(recs), statuses, 4).host_messages()
    assert set(msgs) == {"rec-user", "rec-gone"}
    # the check's own sentence (it names the host), not the task that said it; other failures keep status and task
    assert msgs["rec-user"] == ("tracing on rec-user needs root (connected as uid 65534; bpftrace/stap attach "
                                "uprobes): connect as root")
    assert msgs["rec-gone"].startswith("unreachable: ")


def test_an_event_file_that_did_not_come_back_fails_that_run_only(tmp_path: Path) -> None:
    (tmp_path / "rec-a").mkdir()
    (tmp_path / "rec-a" / "events-2.txt.gz").write_bytes(gzip.compress(b""))
    a = sorted((r for r in _records("trace-ok.json", tmp_path) if r.host == "rec-a"), key=lambda r: r.order)
    assert [r.status for r in a] == ["failed", "ok", "failed", "failed"]
    assert a[0].reason == "no event file came back"


def test_the_fetched_tar_gives_the_event_files_and_nothing_else(tmp_path: Path) -> None:
    # what the playbook's gzip task makes (real tar), plus members a hostile host could add
    host = tmp_path / "rec-a"
    remote = tmp_path / "remote"
    remote.mkdir()
    for n in (1, 2):
        (remote / f"events-{n}.txt.gz").write_bytes(gzip.compress(f"quiho-begin {n}\n".encode()))
    (remote / "cost.txt.gz").write_bytes(gzip.compress(_abs_events([4000 + k % 7 for k in range(3000)])))
    subprocess.run(["tar", "-cf", str(tmp_path / "events.tar"), "events-1.txt.gz", "events-2.txt.gz", "cost.txt.gz"],
                   cwd=remote, check=True)
    host.mkdir()
    with tarfile.open(tmp_path / "events.tar", "a") as tf:
        for name, kind in (("../escaped.txt.gz", tarfile.REGTYPE), ("/tmp/abs-events-9.txt.gz", tarfile.REGTYPE),
                           ("events-3.txt.gz", tarfile.SYMTYPE), ("sub/events-4.txt.gz", tarfile.REGTYPE)):
            info = tarfile.TarInfo(name)
            info.type, info.size = kind, 0 if kind == tarfile.SYMTYPE else 3
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            tf.addfile(info, None if kind == tarfile.SYMTYPE else BytesIO(b"bad"))
    shutil.move(tmp_path / "events.tar", host / "events.tar")
    assert unpack_events(host) == 3
    assert sorted(p.name for p in host.iterdir()) == ["cost.txt.gz", "events-1.txt.gz", "events-2.txt.gz",
                                                      "events.tar"]
    assert tracer_cost_ns(host / "cost.txt.gz") == 4003.0
    assert gzip.decompress((host / "events-2.txt.gz").read_bytes()) == b"quiho-begin 2\n"
    assert not (tmp_path / "escaped.txt.gz").exists() and not Path("/tmp/abs-events-9.txt.gz").exists()
    # the runs read the unpacked files; no tar (the host's runs all failed) or a broken one writes nothing
    a = [r for r in _records("trace-ok.json", tmp_path) if r.host == "rec-a"]
    assert sorted(r.order for r in a if r.status == "ok") == [1, 2]
    assert unpack_events(tmp_path / "nothing") == 0
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "events.tar").write_bytes(b"not a tar")
    assert unpack_events(tmp_path / "broken") == 0


def _abs_events(durations: list[int]) -> bytes:
    """The tracer-cost run's output: one entry and one exit line per call of libc's abs (function id 0)."""
    return "".join(f"0 7 {100_000 * k} 0 {k}\n1 7 {100_000 * k + d} 0 0\n"
                   for k, d in enumerate(durations)).encode()


def test_a_tracer_cost_run_that_came_back_short_or_broken_is_no_measure(tmp_path: Path) -> None:
    short = tmp_path / "short.txt.gz"
    short.write_bytes(gzip.compress(_abs_events([5000] * 1000)))  # a third of the calls: python3 died early
    broken = tmp_path / "broken.txt.gz"
    broken.write_bytes(b"not gzip")
    assert tracer_cost_ns(short) is None and tracer_cost_ns(broken) is None
    assert tracer_cost_ns(tmp_path / "missing.txt.gz") is None


def test_a_binary_missing_on_the_host_is_that_hosts_message(tmp_path: Path) -> None:
    recs = _records("trace-missing.json", tmp_path)
    assert len(recs) == 4 and all(r.status == "failed" for r in recs)
    assert "binary not found on rec-a: /nonexistent/libz.so.1" in (recs[0].reason or "")


def test_lifetime_lines_give_the_traced_wall_and_are_removed() -> None:
    text, wall = split_lifetime(b"quiho-begin 1000\n0 7 1500 0 0\n1 7 2500 0 0\nquiho-exit 2000001000\n")
    assert text == b"0 7 1500 0 0\n1 7 2500 0 0\n" and wall == pytest.approx(2.0)
    assert split_lifetime(b"0 7 1 0 0\n") == (b"0 7 1 0 0\n", None)
    # exit() preferred over the tracer's end, which comes later
    text, wall = split_lifetime(b"quiho-begin 0\nquiho-exit 1000000000\nquiho-end 1500000000\n")
    assert text == b"" and wall == pytest.approx(1.0)
    assert split_lifetime(b"quiho-begin 0\nquiho-end 1500000000\n")[1] == pytest.approx(1.5)


def test_run_script_keeps_every_argument_whole(tmp_path: Path) -> None:
    spec = AppSpec.model_validate({"name": "x", "versions": {"a": {
        "command": ["python3", "-c", "import sys; print(sys.argv[1:])", "a b", "$HOME", "'q'", ";rm -rf /"],
        "workdir": str(tmp_path)}}})
    script = tmp_path / "run.sh"
    script.write_text(run_script(spec.versions["a"]))
    out = subprocess.run(["/bin/sh", str(script)], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith("quiho-traced-at: ")
    assert lines[1] == str(["a b", "$HOME", "'q'", ";rm -rf /"])


def _spec(command: list[str], **trace: Any) -> AppSpec:
    return AppSpec.model_validate({"name": "z", "versions": {"l1": {"command": command}, "l9": {"command": command}},
                                   **({"trace": trace} if trace else {})})


@pytest.mark.skipif(not LIBZ.exists() or shutil.which("nm") is None, reason="needs the system libz and nm")
def test_trace_requests_are_checked_before_anything_runs(tmp_path: Path) -> None:
    s = _spec(["python3", "-c", "pass"])
    plan = resolve_trace(s, "l1", "l9", TraceSpec(functions=("deflate",), binary=str(LIBZ)))
    assert plan.functions == ("deflate",) and plan.binaries["1"] == str(LIBZ.resolve()) and plan.runs == 3
    with pytest.raises(UsageError, match="not functions of .*nosuch"):
        resolve_trace(s, "l1", "l9", TraceSpec(functions=("nosuch",), binary=str(LIBZ)))
    with pytest.raises(UsageError, match="not an ELF"):
        resolve_trace(s, "l1", "l9", TraceSpec(functions=("f",), binary="/etc/passwd"))
    with pytest.raises(UsageError, match="not found"):
        resolve_trace(s, "l1", "l9", TraceSpec(functions=("f",), binary=str(tmp_path / "gone")))
    # options over the spec's trace: key; --trace-runs alone adjusts it; nothing asked, nothing traced
    spec_trace = TraceSpec(matching="^deflate$", binary=str(LIBZ), runs=5)
    assert trace_from_options(None, None, None, 2, spec_trace) == TraceSpec(matching="^deflate$", binary=str(LIBZ),
                                                                            runs=2)
    assert trace_from_options("deflate, inflate", None, None, None, spec_trace).functions == ("deflate", "inflate")
    assert trace_from_options(None, None, None, None, None) is None
    with pytest.raises(UsageError, match="exactly one"):
        trace_from_options("deflate", "x", None, None, None)
    with pytest.raises(UsageError, match="need --trace"):
        trace_from_options(None, None, str(LIBZ), None, None)


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("strip") is None, reason="needs gcc and binutils")
def test_a_stripped_executable_that_exports_nothing_is_refused(tmp_path: Path) -> None:
    exe = tmp_path / "tags"
    subprocess.run(["gcc", "-O2", "-s", "-o", str(exe), str(REPO / "examples/trace/v1/tags.c")], check=True)
    with pytest.raises(UsageError, match="no function symbols"):
        resolve_trace(_spec([str(exe)]), "l1", "l9", TraceSpec(functions=("find_tag",)))


def test_the_cli_refuses_a_bad_trace_request_and_measures_nothing(tmp_path: Path, capsys: Any) -> None:
    from quiho.cli.main import main

    spec = tmp_path / "z.yml"
    spec.write_text("schema_version: 1\nname: z\nversions:\n  l1: {command: [python3, -c, pass]}\n"
                    "  l9: {command: [python3, -c, pass]}\n")
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  vars: {ansible_connection: local}\n  hosts:\n    nohost: {}\n")
    db = tmp_path / "q.db"
    for args, needle in ((["--trace-binary", "/etc/passwd", "--trace", "deflate"], "not an ELF"),
                         (["--trace", "a", "--trace-matching", "b"], "exactly one"),
                         (["--trace-runs", "2"], "need --trace")):
        rc = main(["profile", "z@l1", "z@l9", "--spec", str(spec), "-i", str(inv), "--store", str(db), *args])
        err = capsys.readouterr().err
        assert rc == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    from quiho.store import open_store

    with open_store(db) as st:
        assert st.conn.execute("SELECT COUNT(*) FROM app_runs").fetchone()[0] == 0
