"""Record the ansible-runner events that ``test_events.py`` replays (run once, as root, on a machine with stress-ng).

    .venv/bin/python tests/fleet/record_events.py tests/data/fleet-events [SCENARIO ...]

Every scenario is a real run through :class:`quiho.fleet.session.FleetSession` on a
one-host local inventory (``rec-a``, ``ansible_connection: local``), some with an
unreachable ssh host (``rec-gone``: 127.0.0.1 port 9, nothing listens). The run's events
are kept as ansible-runner delivered them, minus what the mapping never reads (the module
``invocation``, loop summaries, events without a host) so the files stay small.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from quiho.app import load_app_spec, run_app
from quiho.fingerprint import FingerprintPlan, fingerprint
from quiho.fleet.runner import Invocation, PlaybookResult
from quiho.profile.interleave import InterleavePlan, run_interleaved
from quiho.store import open_store

fpmod = importlib.import_module("quiho.fingerprint.run")  # the package's 'fingerprint' is the function
session_mod = importlib.import_module("quiho.fleet.session")

KINDS = {"runner_on_start", "runner_on_ok", "runner_on_failed", "runner_on_unreachable", "runner_on_skipped",
         "runner_item_on_ok", "runner_item_on_failed"}
ONE = "all:\n  vars: {ansible_connection: local}\n  hosts:\n    rec-a: {}\n"
WITH_GONE = ("all:\n  hosts:\n    rec-a: {ansible_connection: local}\n"
             "    rec-gone: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 9}\n")


def _prune(ev: dict[str, Any]) -> dict[str, Any] | None:
    data = ev.get("event_data") or {}
    if ev.get("event") not in KINDS or not data.get("host"):
        return None
    drop = {"invocation", "stdout_lines", "stderr_lines"}  # the *_lines repeat stdout/stderr
    res = {k: v for k, v in (data.get("res") or {}).items() if k not in drop and not k.startswith("_ansible")}
    if "results" in res:
        res["results"] = []  # the loop's summary repeats every item: the items are their own events
    keep = {k: data[k] for k in ("host", "task", "ignore_errors") if k in data}
    return {"event": ev["event"], "event_data": {**keep, "res": res}}


class Capture:
    """Wraps the session's run_playbook and fingerprint_records to keep what the replay needs."""

    def __init__(self) -> None:
        self.invocations: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self._rp = session_mod.run_playbook
        self._fr = fpmod.fingerprint_records

    def __enter__(self) -> Capture:
        def rp(playbook: str, inventory: Any, extravars: dict[str, Any], how: Invocation = Invocation(),
               on_event: Any = None) -> PlaybookResult:
            res = self._rp(playbook, inventory, extravars, how, on_event)
            self.invocations.append({
                "playbook": playbook, "limit": list(how.limit) if how.limit else None, "timeout_s": how.timeout_s,
                "status": res.status, "rc": res.rc, "timed_out": res.timed_out,
                "extravars": {k: v for k, v in extravars.items() if k != "quiho_plan"},
                "events": [e for e in map(_prune, res.events) if e is not None],
            })
            return res

        def fr(res: PlaybookResult, host: str, plan: dict[int, list[str]], params: dict[str, Any],
               artifacts: Path) -> Any:
            self.records.append({"host": host, "plan": {str(k): v for k, v in plan.items()}, "params": params})
            return self._fr(res, host, plan, params, artifacts)

        session_mod.run_playbook = rp  # type: ignore[assignment]
        fpmod.fingerprint_records = fr  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        session_mod.run_playbook = self._rp  # type: ignore[assignment]
        fpmod.fingerprint_records = self._fr  # type: ignore[assignment]

    def save(self, path: Path, scenario: str) -> None:
        doc = {"scenario": scenario, "recorded_with": "tests/fleet/record_events.py",
               "invocations": self.invocations, "fingerprint_records": self.records}
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"{path}: {path.stat().st_size} bytes, {sum(len(i['events']) for i in self.invocations)} events")


def _freeze_null_stressor(stop: threading.Event, stopped: list[int]) -> None:
    while not stop.is_set():
        for entry in os.listdir("/proc"):
            try:
                comm = Path(f"/proc/{entry}/comm").read_text().strip()
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if comm == "stress-ng-null" and "/quiho-remote/" in cwd:
                os.kill(int(entry), signal.SIGSTOP)
                stopped.append(int(entry))
                return
        time.sleep(0.1)


def main(out: Path, only: set[str] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="qh-record-"))
    one, gone = work / "one.yml", work / "gone.yml"
    one.write_text(ONE)
    gone.write_text(WITH_GONE)
    bat = work / "bat.yaml"
    bat.write_text("schema_version: 1\nbatteries:\n"
                   "  two: {seconds: 1, repetitions: 1, stressors: [cpu, 'null']}\n"
                   "  hang: {seconds: 1, repetitions: 1, stressors: [cpu, 'null', zero]}\n"
                   "  long: {seconds: 20, repetitions: 1, stressors: [cpu]}\n")
    store = open_store(work / "q.db")
    if only:
        _apps(out, work, one, gone, store, only)
        return
    with Capture() as c:
        fingerprint(one, store=store, plan=FingerprintPlan(battery="two", battery_file=bat, warmup_seconds=0))
    c.save(out / "fingerprint-ok.json", "fingerprint, 1 local host, stressors cpu and null, 1 s, 1 repetition")
    stop, stopped = threading.Event(), []
    threading.Thread(target=_freeze_null_stressor, args=(stop, stopped), daemon=True).start()
    with Capture() as c:
        fingerprint(one, store=store,
                    plan=FingerprintPlan(battery="hang", battery_file=bat, warmup_seconds=0, outer_timeout_s=6))
    stop.set()
    for pid in stopped:  # normally already killed by the session's cleanup
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    c.invocations = c.invocations[:1]  # the second pass reruns 'zero' only: not needed
    c.records = c.records[:1]
    c.save(out / "fingerprint-hang.json", "fingerprint whose null stressor was SIGSTOPped: job killed at the "
           "outer timeout of 6 s (rc 124)")
    with Capture() as c:
        fingerprint(one, store=store,
                    plan=FingerprintPlan(battery="long", battery_file=bat, warmup_seconds=0, run_timeout_s=6))
    c.save(out / "fingerprint-cancelled.json", "fingerprint cancelled by the run's outer deadline of 6 s")
    _apps(out, work, one, gone, store, {"app-ok", "app-fail", "app-slow", "interleaved"})
    store.close()


def _apps(out: Path, work: Path, one: Path, gone: Path, store: Any, only: set[str]) -> None:
    spec = work / "app.yml"
    spec.write_text(
        "schema_version: 1\nname: rec\nversions:\n"
        "  ok: {command: [echo, '{\"result\": {\"ops\": 41.5}}']}\n"
        "  fail: {command: [sh, -c, 'echo doomed >&2; exit 3']}\n"
        "  slow: {command: [sleep, '30']}\n"
        "metric: {kind: json, path: result.ops, unit: ops/s, higher_is_better: true}\nrepetitions: 2\ntimeout: 2\n")
    s = load_app_spec(spec)
    for version, inv, what in (("ok", gone, "app run: JSON metric on rec-a, rec-gone unreachable"),
                               ("fail", one, "app run: exit code 3 with stderr"),
                               ("slow", one, "app run: sleep 30 under a 2 s timeout (rc 124)")):
        if f"app-{version}" in only:
            with Capture() as c:
                run_app(s, version, inv, store=store)
            c.save(out / f"app-{version}.json", what)
    if "interleaved" in only:
        with Capture() as c:
            run_interleaved(s, "ok", "fail", gone, store=store, batch="rec-profile",
                            plan=InterleavePlan(repetitions=2, warmup=1))
        c.save(out / "interleaved.json", "interleaved ok/fail, 2 repetitions + 1 warm-up each, rec-gone unreachable")


#: rec-user connects as an unprivileged user (root su's to nobody; pipelining: no module files to share)
TRACE_HOSTS = ("all:\n  hosts:\n    rec-a: {ansible_connection: local}\n"
               "    rec-user: {ansible_connection: local, ansible_become: true, ansible_become_method: su, "
               "ansible_become_user: nobody, ansible_become_flags: '-s /bin/sh', ansible_pipelining: true, "
               "ansible_python_interpreter: /usr/bin/python3}\n"
               "    rec-gone: {ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 9}\n")


def trace_scenarios(out: Path, work: Path, store: Any) -> None:
    """``trace-ok``: zlib level 1 vs 9 under bpftrace on rec-a, rec-user not root, rec-gone unreachable;
    ``trace-missing``: the traced library is missing on the host."""
    from quiho.fleet import load_inventory
    from quiho.trace.fleet import TracePlan, run_fleet_traces

    inv_path = work / "trace.yml"
    inv_path.write_text(TRACE_HOSTS)
    spec = work / "z.yml"
    spec.write_text(
        "schema_version: 1\nname: recz\nversions:\n"
        "  l1: {command: [python3, -c, 'import zlib; zlib.compress(bytes(range(256)) * 400, 1)']}\n"
        "  l9: {command: [python3, -c, 'import zlib; zlib.compress(bytes(range(256)) * 400, 9)']}\n"
        "repetitions: 1\ntimeout: 20\n")
    s = load_app_spec(spec)
    libz = str(Path("/lib/x86_64-linux-gnu/libz.so.1").resolve())
    for name, binary, hosts, what in (
            ("trace-ok", libz, None, "zlib level 1 vs 9, deflate, 2 traced runs each: rec-a ok, rec-user not root, "
             "rec-gone unreachable"),
            ("trace-missing", "/nonexistent/libz.so.1", ["rec-a"], "the traced library is missing on rec-a")):
        with Capture() as c:
            run_fleet_traces(s, TracePlan(("deflate",), {"1": binary, "2": binary}, 2, ("l1", "l9")),
                             load_inventory(inv_path), store=store, batch=f"rec-{name}", hosts=hosts)
        for inv in c.invocations:  # the generated scripts are long and rebuilt by the replay test
            inv["extravars"]["quiho_trace"] = {k: v for k, v in inv["extravars"]["quiho_trace"].items()
                                               if k in ("binaries", "order")}
        c.save(out / f"{name}.json", what)


if __name__ == "__main__":
    if sys.argv[2:] == ["trace"]:
        w = Path(tempfile.mkdtemp(prefix="qh-record-"))
        trace_scenarios(Path(sys.argv[1]), w, open_store(w / "q.db"))
        sys.exit(0)
    main(Path(sys.argv[1]), set(sys.argv[2:]) or None)  # optional scenario names: app-ok app-fail ... interleaved
