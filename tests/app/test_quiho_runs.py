"""playbooks/library/quiho_runs.py, the module that runs a visit's repetitions, run as Ansible runs it (a process).

An Ansible module reads its arguments from a JSON file named on its command line when run by hand; what it prints
is the task result quiho reads. Its runs are mapped with the same functions a profile uses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from quiho.app.run import command_wall
from quiho.app.spec import AppSpec
from quiho.fleet.runner import EventLog
from quiho.profile.interleave import interleaved_records

MODULE = Path(__file__).resolve().parents[2] / "playbooks" / "library" / "quiho_runs.py"
#: call 1 hangs (past the guard), call 2 fails with stderr, call 3 prints 2 MB, later calls print a metric
SCRIPT = ('n=$(cat "$1" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$1"; echo "quiho-version: 1"; '
          'case $n in 1) exec sleep 30 ;; 2) echo doomed >&2; exit 3 ;; 3) head -c 2000000 /dev/zero | tr "\\0" x; '
          'echo ;; *) echo "ops: 4$n" ;; esac')


def _module(tmp_path: Path, args: dict[str, Any], env: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
    f = tmp_path / "args.json"
    f.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, str(MODULE), str(f)], capture_output=True, text=True, check=False,
                         timeout=120, env=None if env is None else {**os.environ, **env})
    return json.loads(out.stdout), time.monotonic() - t0


def test_every_run_comes_back_alone_a_hung_one_is_killed_by_the_guard(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    res, took = _module(tmp_path, {"argv": ["sh", "-c", SCRIPT, "sh", str(counter)], "chdir": str(tmp_path),
                                   "items": [1, 2, 3, 4, 5], "guard_s": 1.5})
    runs = res["runs"]
    assert [r["item"] for r in runs] == [1, 2, 3, 4, 5]
    assert took < 20  # the hung run cost its guard, not its 30 s
    assert runs[0]["guard_killed"] and runs[0]["rc"] != 0
    assert not any(r["guard_killed"] for r in runs[1:])
    assert runs[1]["rc"] == 3 and runs[1]["stderr"] == "doomed"
    assert runs[2]["rc"] == 0 and runs[2]["stdout"] == "quiho-version: 1\n" + "x" * 2_000_000  # nothing cut
    assert [r["stdout"] for r in runs[3:]] == ["quiho-version: 1\nops: 44", "quiho-version: 1\nops: 45"]
    for r in runs:  # the command module's time fields: quiho's wall time reads them as before
        wall = command_wall(r)
        assert wall is not None and 0 <= wall < 10

    spec = AppSpec.model_validate({
        "name": "rec", "versions": {"a": {"command": ["true"]}, "b": {"command": ["true"]}},
        "metric": {"kind": "regex", "pattern": "ops: (\\d+)", "unit": "ops/s", "higher_is_better": True},
        "timeout": 7})
    log = EventLog()
    log({"event": "runner_on_ok", "event_data": {"host": "h", "task": "quiho app run", "res": res}})
    log({"event": "runner_on_ok", "event_data": {"host": "h", "task": "quiho done", "res": {}}})
    result = log.result("successful", 0, cancelled=False, timeout_s=60)
    recs = interleaved_records(result, ["h"], spec, {"1": "a", "2": "b"}, first=0, n_warm=0, n_runs=5,
                               statuses={"h": ("ok", None)})
    assert [(r.order, r.status, r.value) for r in recs] == [
        (1, "failed", None), (2, "failed", None), (3, "failed", None), (4, "ok", 44.0), (5, "ok", 45.0)]
    assert [r.reason for r in recs[:2]] == ["timed out after 7 s", "exit code 3: doomed"]
    assert recs[2].reason is not None and "ops" in recs[2].reason  # ran, printed no metric


def test_a_directory_that_cannot_be_entered_fails_the_task_and_runs_nothing(tmp_path: Path) -> None:
    res, _ = _module(tmp_path, {"argv": ["touch", str(tmp_path / "ran")], "chdir": str(tmp_path / "nope"),
                                "items": [1, 2]})
    assert res.get("failed") and "runs" not in res and "Unable to change directory" in res["msg"]
    assert not (tmp_path / "ran").exists()


def test_before_gates_the_runs_after_always_runs_and_item_args_follow_argv(tmp_path: Path) -> None:
    log = tmp_path / "log"
    note = ["sh", "-c", 'echo "$1" >> "$0"; [ "$1" != bad ]', str(log)]
    res, _ = _module(tmp_path, {"argv": ["sh", "-c", 'echo "$2 $3" >> "$1"', "sh", str(log)],
                                "items": [{"rep": 1}, {"rep": 2}], "item_args": [["a", "1"], ["b", "2"]],
                                "before": [*note, "start"], "after": [*note, "stop"]})
    assert not res.get("failed") and [r["item"] for r in res["runs"]] == [{"rep": 1}, {"rep": 2}]
    assert log.read_text().split("\n") == ["start", "a 1", "b 2", "stop", ""]

    log.unlink()
    res, _ = _module(tmp_path, {"argv": ["touch", str(tmp_path / "ran")], "items": [1],
                                "before": [*note, "bad"], "after": [*note, "stop"]})
    assert res["failed"] and "runs" not in res and res["msg"].startswith("before failed (rc 1)")
    assert log.read_text() == "bad\nstop\n" and not (tmp_path / "ran").exists()  # no runs, the stop ran

    res, _ = _module(tmp_path, {"argv": ["true"], "items": [1, 2], "after": [*note, "bad"]})
    assert res["failed"] and [r["rc"] for r in res["runs"]] == [0, 0]  # the runs are kept, the host fails


def test_the_settle_is_spent_before_the_first_measured_item_and_over_the_warm_ups(tmp_path: Path) -> None:
    """The co-runner's settle (settle_s after ``before``) delays only the item ``settle_item``, by what is left."""
    stamp = ["sh", "-c", 'date +%s.%N >> "$0"', str(tmp_path / "t")]
    res, _ = _module(tmp_path, {"argv": stamp, "items": [1, 2, 3, 4], "before": stamp,
                                "settle_s": 1.0, "settle_item": 2})
    assert not res.get("failed")
    start, *items = (float(x) for x in (tmp_path / "t").read_text().split())
    assert items[1] - start < 1.0 <= items[2] - start  # the warm-ups at once, the first measured run after 1 s
    assert items[3] - items[2] < 1.0  # no settle before the later ones
    (tmp_path / "t").unlink()
    res, _ = _module(tmp_path, {"argv": ["sh", "-c", "sleep 0.6; " + stamp[2], *stamp[3:]], "items": [1, 2, 3],
                                "before": stamp, "settle_s": 1.0, "settle_item": 2})
    start, *items = (float(x) for x in (tmp_path / "t").read_text().split())
    assert items[2] - items[1] < 1.0 + 0.6  # two warm-ups of 0.6 s outlast the settle: nothing more waited


def test_the_argv_reaches_the_program_as_written_nothing_expanded_from_the_controller(tmp_path: Path) -> None:
    """A ``sh -c`` script's variables are the shell's: the controller's environment (which the local connection
    passes on) must not rewrite them first, nor a leading ``~``; the program still inherits that environment."""
    script = 'name=shell; printf "%s|%s|%s" "$name" "$1" "$QUIHO_SEEN"'
    res, _ = _module(tmp_path, {"argv": ["sh", "-c", script, "sh", "~/$name"], "items": [1], "before": ["true"]},
                     env={"name": "controller", "QUIHO_SEEN": "inherited"})
    assert res["runs"][0]["rc"] == 0 and res["runs"][0]["stdout"] == "shell|~/$name|inherited"


def test_every_ansible_command_task_passes_its_argv_unexpanded() -> None:
    """Ansible's command module expands ``$NAME`` in its argv by default; quiho's inline scripts use shell variables
    (``$name``, ``$d``, ``$r``, ...) that a controller's environment could shadow, so every task turns that off."""
    def commands(node: Any) -> list[dict[str, Any]]:
        if isinstance(node, list):
            return [c for item in node for c in commands(item)]
        if isinstance(node, dict):
            own = [node["ansible.builtin.command"]] if "ansible.builtin.command" in node else []
            return own + [c for v in node.values() for c in commands(v)]
        return []

    tasks = 0
    for f in sorted(MODULE.parents[1].rglob("*.yml")):
        for c in commands(yaml.safe_load(f.read_text())):
            tasks += 1
            assert c.get("expand_argument_vars") is False, f.name
    assert tasks >= 10


@pytest.mark.root
def test_a_short_run_in_a_throttled_cgroup_is_timed_without_a_poll_timeout(tmp_path: Path) -> None:
    """AnsibleModule.run_command could add its 1 s select timeout to a run whose child exits between two polls.

    The race needs a child whose exit lags its pipes' closing: a CPU quota provides it (the local fleet's emulated
    hosts). On correct code it fails only if a ~10 ms run takes 0.9 s.
    """
    emulate = (MODULE.parents[1] / "files" / "quiho-emulate.sh").read_text()
    cg = f"/sys/fs/cgroup/cpu/quiho-test-runs-{os.getpid()}"
    join = 'echo $$ > "$1/cgroup.procs"; shift; exec taskset -c 0 "$@"'
    res, _ = _module(tmp_path, {
        "argv": ["sh", "-c", join, "sh", cg, "timeout", "-k", "5", "60", "dd", "if=/dev/zero", "of=/dev/null", "bs=16M",
                 "count=1", "status=none"],
        "items": list(range(200)), "guard_s": 30,
        "before": ["sh", "-c", emulate, "quiho-emulate", "start", cg, "50", "none", "600", "keep", "20000"],
        "after": ["sh", "-c", emulate, "quiho-emulate", "stop", cg]})
    walls = [command_wall(r) for r in res["runs"]]
    assert [r["rc"] for r in res["runs"]] == [0] * 200
    assert all(w is not None and w < 0.9 for w in walls), sorted(w for w in walls if w is not None)[-5:]
    assert not Path(cg).exists()  # the emulation was stopped


def test_a_run_during_which_the_memory_group_met_its_limit_is_counted_and_not_used(tmp_path: Path) -> None:
    """The memory-capacity watcher counts its group's limit meetings in a file; the run during which the count
    rose carries how much, and a profile records it failed with that reason although it exited 0."""
    events = tmp_path / "events"
    # run 1: the count is not there yet; run 2 meets the limit twice; run 3 does not
    bump = ('echo "quiho-version: $1"; echo "ops: 7"; '
            'case $1 in 2) echo 2 > "$0" ;; esac')
    res, _ = _module(tmp_path, {"argv": ["sh", "-c", bump, str(events)], "items": [1, 2, 3],
                                "item_args": [["1"], ["2"], ["1"]], "events_file": str(events)})
    assert [r["limit_events"] for r in res["runs"]] == [0, 2, 0]
    plain, _ = _module(tmp_path, {"argv": ["true"], "items": [1]})
    assert "limit_events" not in plain["runs"][0]  # no events file: the runs are as before

    spec = AppSpec.model_validate({
        "name": "mem", "versions": {"a": {"command": ["true"]}, "b": {"command": ["true"]}},
        "metric": {"kind": "regex", "pattern": "ops: (\\d+)", "unit": "ops/s", "higher_is_better": True}})
    log = EventLog()
    log({"event": "runner_on_ok", "event_data": {"host": "h", "task": "quiho app run", "res": res}})
    log({"event": "runner_on_ok", "event_data": {"host": "h", "task": "quiho done", "res": {}}})
    recs = interleaved_records(log.result("successful", 0, cancelled=False, timeout_s=60), ["h"], spec,
                               {"1": "a", "2": "b"}, first=0, n_warm=0, n_runs=3, statuses={"h": ("ok", None)})
    assert [(r.status, r.value) for r in recs] == [("ok", 7.0), ("failed", None), ("ok", 7.0)]
    assert recs[1].reason is not None and "met its limit (2x)" in recs[1].reason


def test_runs_get_the_callers_environment_on_the_local_connection(tmp_path: Path) -> None:
    """Where quiho's runner says what the caller had (QUIHO_CALLER_ENV), a run sees none of Ansible's variables."""
    ansible = {"ANSIBLE_CONFIG": "/tmp/qh-run-x/ansible.cfg", "ANSIBLE_NOCOLOR": "1", "AWX_ISOLATED_DATA_DIR": "/x",
               "RUNNER_OMIT_EVENTS": "False", "PATH": "/tmp/qh-run-x/bin:/usr/bin:/bin", "QUIHO_KEEP": "yes"}
    args = {"argv": ["sh", "-c", "env"], "items": [1]}

    def env_of(extra: dict[str, str]) -> dict[str, str]:
        res, _ = _module(tmp_path, args, env={**ansible, **extra})
        return dict(line.split("=", 1) for line in res["runs"][0]["stdout"].splitlines() if "=" in line)

    caller = {"PATH": "/usr/bin:/bin", "ANSIBLE_NOCOLOR": "0"}  # the caller's own ANSIBLE_ variable comes back
    local = env_of({"QUIHO_CALLER_ENV": json.dumps(caller)})
    assert local["PATH"] == "/usr/bin:/bin" and local["ANSIBLE_NOCOLOR"] == "0" and local["QUIHO_KEEP"] == "yes"
    assert not {k for k in local if k.startswith(("ANSIBLE_", "AWX_", "RUNNER_")) and k != "ANSIBLE_NOCOLOR"}
    assert "QUIHO_CALLER_ENV" not in local
    remote = env_of({})  # over SSH: the host's environment, left alone
    assert {k: remote[k] for k in ansible} == ansible
