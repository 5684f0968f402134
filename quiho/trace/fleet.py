"""Per-function traces on the fleet: both versions run interleaved under bpftrace (or SystemTap) on every host.

``quiho profile APP@V1 APP@V2 --trace F1,F2`` (or the spec's ``trace:`` key) runs this after the measured
runs. ``playbooks/trace.yml`` runs, per host, one traced warm-up run that is not kept (the first traced run after a
host's emulation starts can be slower, and it would always fall on the side that host starts with), then ``runs``
traced runs of each version in the order v1, v2, v1, v2 ...
(on a fleet sharing one machine alternate hosts start with v2, as the measured runs do), the command inside the
host's emulation (cgroup quota, co-runner, THP) like any application run, on CPU 0, and the tracer on the other
CPUs: a tracer that shares the command's CPU preempts it to read events, so every probed call's time would
depend on the other functions' speed. It gzips each run's event file and fetches them in one tar per host.
The controller turns each file into calls (:func:`quiho.trace.parse_events`, :func:`quiho.trace.events_to_calls`)
and stores them per host under the profile's batch (``trace_runs.batch``). Traced runs never feed the metric:
uprobes cost 11-25 µs per hit, so the metric comes from the untraced runs; each traced run's wall time is kept
so the report can state the overhead (traced / untraced).

What is checked before anything runs (:func:`resolve_trace`): the functions exist in each version's binary
(static or dynamic symbol table), the binary is an ELF file. What can only be checked on a host is reported per
host (the rest of the profile stands): no root, no bpftrace/stap that could be installed, the binary missing.

The mapping from a playbook's events to traced runs (:func:`trace_records`) is a pure function, tested against
recorded ansible-runner events (``tests/data/fleet-events/trace-*.json``).
"""

from __future__ import annotations

import contextlib
import gzip
import re
import shlex
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quiho._text import printable
from quiho.app.spec import TraceSpec
from quiho.errors import QuihoError, UsageError
from quiho.fleet.runner import FleetEvent, PlaybookResult
from quiho.fleet.session import FleetAccess, FleetSession, app_budget, measuring, rc_failure, stderr_tail
from quiho.trace._collect import COST_CODE, COST_FUNCTION, tracer_cost_of, without_banner

if TYPE_CHECKING:
    from quiho.app.spec import AppSpec, AppVersion
    from quiho.fleet.inventory import Inventory
    from quiho.store import Store

__all__ = ["TracePlan", "TracedRun", "FleetTraceRun", "resolve_trace", "trace_records",
           "run_fleet_traces", "run_script", "trace_from_options", "split_lifetime", "tracer_cost_ns"]




@dataclass(frozen=True)
class TracePlan:
    """What will be traced: the functions, each side's binary (``"1"``, ``"2"``) and runs per version.

    ``versions`` are the two versions compared (side 1, side 2); ``labels`` the version label each side's runs are
    stored under (default the versions; ``{"1": "v1", "2": "v1#2"}`` for a self-comparison).
    """

    functions: tuple[str, ...]
    binaries: dict[str, str]
    runs: int
    versions: tuple[str, str] = ("", "")
    labels: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"functions": list(self.functions), "binaries": dict(self.binaries), "runs": self.runs}


def _version_binary(v: AppVersion) -> Path:
    """The executable a version's command starts (relative to its workdir, else looked up on PATH)."""
    exe = v.command[0]
    if "/" in exe:
        p = Path(exe)
        return p if p.is_absolute() else Path(v.workdir or ".") / p
    found = shutil.which(exe)
    return Path(found) if found else Path(exe)


def resolve_trace(spec: AppSpec, version_a: str, version_b: str, trace: TraceSpec) -> TracePlan:
    """Check the trace request against the binaries before anything runs; return the plan.

    A binary missing on the controller is accepted only for a version whose ``setup`` may build it
    (it is then checked on each host); explicit function names are then taken as given.

    Raises
    ------
    UsageError
        Unknown function, a regex matching nothing, a binary that is not ELF, stripped and exporting nothing,
        or missing without a setup that could build it.
    """
    from quiho.trace import resolve_functions

    spec.require_versions(version_a, version_b)
    binaries: dict[str, str] = {}
    found: tuple[str, ...] | None = None
    for side, ver in (("1", version_a), ("2", version_b)):
        v = spec.versions[ver]
        b = Path(trace.binary) if trace.binary else _version_binary(v)
        b = b.resolve() if b.exists() else b
        binaries[side] = str(b)
        if not b.exists():
            if not v.setup or trace.binary:
                raise UsageError(f"trace binary {printable(str(b))} of {spec.name}@{printable(ver)} not found "
                                 "(give --trace-binary)")
            continue
        fns = tuple(resolve_functions(b, list(trace.functions) if trace.functions else None, trace.matching))
        if found is not None and set(fns) != set(found):
            only = sorted(set(fns) ^ set(found))
            raise UsageError(f"the versions' binaries differ in the traced functions: {printable(', '.join(only))}")
        found = found or fns
    if found is None:
        if trace.functions is None:
            raise UsageError("--trace-matching needs a binary on this machine to match against (give --trace "
                             "with names, or --trace-binary)")
        from quiho.trace import bpftrace_script

        bpftrace_script(Path("/"), trace.functions)  # checks the names (UsageError)
        found = trace.functions
    return TracePlan(tuple(found), binaries, trace.runs, (version_a, version_b))


def trace_from_options(functions: str | None, matching: str | None, binary: str | None, runs: int | None,
                       default: TraceSpec | None) -> TraceSpec | None:
    """The trace request of ``quiho profile``: command-line options over the spec's ``trace:`` key.

    ``functions`` is comma-separated. ``binary``/``runs`` alone adjust the spec's request. None: no tracing.

    Raises
    ------
    UsageError
        Both or neither of ``functions``/``matching`` where needed, or ``runs`` out of range.
    """
    from pydantic import ValidationError

    if functions is None and matching is None:
        if default is None:
            if binary is not None or runs is not None:
                raise UsageError("--trace-binary/--trace-runs need --trace or --trace-matching (or a 'trace:' key "
                                 "in the application spec)")
            return None
        base = default.model_dump()
    else:
        fns = tuple(f.strip() for f in functions.split(",") if f.strip()) if functions is not None else None
        base = {"functions": fns, "matching": matching, "binary": default.binary if default else None,
                "runs": default.runs if default else 3}
    if binary is not None:
        base["binary"] = binary
    if runs is not None:
        base["runs"] = runs
    try:
        return TraceSpec.model_validate(base)
    except ValidationError as exc:
        raise UsageError("; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())) from None


_MARK = "quiho-traced-at"


def run_script(v: AppVersion) -> str:
    """The script a tracer starts (``-c``): a start-time marker, then ``exec`` of the version's argv.

    bpftrace's ``-c`` splits its argument at spaces, so the argv travels shell-quoted in a file; ``exec`` keeps
    the process id the scripts' ``pid == cpid`` predicate names. Without a workdir the run happens in the
    host's remote directory (where the script lies), as application runs do.
    """
    cd = f"cd {shlex.quote(v.workdir)} || exit 125" if v.workdir else 'cd "$(dirname "$0")" || exit 125'
    return (f"echo \"{_MARK}: $(date '+%Y-%m-%d %H:%M:%S.%6N')\"\n{cd}\n"
            f"exec {' '.join(shlex.quote(c) for c in v.command)}\n")


@dataclass(frozen=True)
class TracedRun:
    """One traced run on one host (``order`` = position in the host's sequence, ``side`` ``"1"``/``"2"``)."""

    host: str
    order: int
    side: str
    engine: str
    status: str
    reason: str | None
    wall_s: float | None
    events: Path | None


_AT = re.compile(rf"^{_MARK}: (\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{{6}})$", re.M)


def _traced_wall(res: dict[str, Any]) -> float | None:
    """From the run script's marker to the module's end: the command's time under the tracer, with its detach."""
    m = _AT.search(str(res.get("stdout", "")))
    if not m or not res.get("end"):
        return None
    fmt = "%Y-%m-%d %H:%M:%S.%f"
    try:
        wall = (datetime.strptime(str(res["end"]), fmt) - datetime.strptime(m.group(1), fmt)).total_seconds()
    except ValueError:
        return None
    return wall if wall >= 0 else None


def _engine(res: dict[str, Any]) -> str:
    cmd = res.get("cmd") or []
    if isinstance(cmd, str):
        cmd = cmd.split()
    return next((c for c in cmd if c in ("bpftrace", "stap")), "")


def trace_records(res: PlaybookResult, group: list[str], order: dict[str, list[str]], fetch_dir: Path, *,
                  timeout_s: float, statuses: dict[str, tuple[str, str | None]]) -> list[TracedRun]:
    """Map one invocation's ``quiho traced run`` items to :class:`TracedRun` s (no store access).

    A run is ``ok`` when the tracer exited 0 and its gzipped event file came back
    (``<fetch_dir>/<host>/events-<order>.txt.gz``); otherwise ``failed`` with the reason (timeout, exit code
    with the last stderr line, no event file). Runs that never happened (host failed a check, unreachable)
    are ``failed`` with the host's own message.
    """
    out: list[TracedRun] = []
    seen: dict[str, set[int]] = {}
    for data in res.items("quiho traced run"):
        h = str(data.get("host"))
        r = data.get("res") or {}
        idx = r.get("idx", r.get(r.get("ansible_index_var", ""), None))
        n = int(idx) + 1 if idx is not None else len(seen.get(h, ())) + 1
        seen.setdefault(h, set()).add(n)
        side = str(r.get("item", order.get(h, ["1"] * n)[n - 1]))
        why = rc_failure(r.get("rc"), timeout_s, stderr_tail(r), with_stderr=True)
        f = fetch_dir / h / f"events-{n}.txt.gz"
        if why is None and not f.is_file():
            why = "no event file came back"
        out.append(TracedRun(h, n, side, _engine(r), "ok" if why is None else "failed", why, _traced_wall(r),
                             f if why is None else None))
    for h in group:
        st, host_why = statuses.get(h, ("unreachable", None))
        for n, side in enumerate(order.get(h, []), start=1):
            if n not in seen.get(h, set()):
                out.append(TracedRun(h, n, side, "", "failed",
                                     f"not traced: host {st}" + (f" ({host_why})" if host_why else ""), None, None))
    return out


_EVENTS = re.compile(r"^(events-[0-9]+|cost)\.txt\.gz$")


def unpack_events(host_dir: Path) -> int:
    """Write the event files of a host's fetched ``events.tar`` beside it; the number written.

    Only regular members named ``events-<n>.txt.gz`` (and the tracer-cost run's ``cost.txt.gz``) are read, by
    name alone (no path from the archive is followed), streamed. A missing tar writes nothing and a broken one
    stops where it breaks: a run whose file is not there says that no event file came back.
    """
    n = 0
    with contextlib.suppress(OSError, tarfile.TarError), tarfile.open(host_dir / "events.tar") as tf:
        for m in tf:
            src = tf.extractfile(m) if m.isfile() and _EVENTS.match(m.name) else None
            if src is not None:
                with src, open(host_dir / m.name, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                n += 1
    return n


#: How the runner prefixes the message of the playbook's per-host check task (``task: msg``).
_CHECK = "quiho trace check: "


@dataclass(frozen=True)
class FleetTraceRun:
    """Result of :func:`run_fleet_traces`: every traced run and each host's status."""

    batch: str
    plan: TracePlan
    runs: tuple[TracedRun, ...]
    hosts: dict[str, tuple[str, str | None]]
    stored: int

    def host_messages(self) -> dict[str, str]:
        """Per host whose tracing did not fully work: why (one line).

        A host that failed the playbook's check (no root, no tracer, binary missing) gets the check's own
        sentence, which names the host and everything it lacks; other failures keep status and task.
        """
        out: dict[str, str] = {}
        for h, (st, why) in self.hosts.items():
            if st == "failed" and why and why.startswith(_CHECK):
                out[h] = why.removeprefix(_CHECK)
            elif st != "ok":
                out[h] = f"{st}" + (f": {why}" if why else "")
        for r in self.runs:
            if r.status != "ok" and r.host not in out:
                out[r.host] = f"traced run {r.order} failed: {r.reason}"
        return out


#: Printed by the generated scripts around the traced command, in the tracer's clock (ns): the tracer attached
#: (the command is released right after), the command called libc's exit() (a return from main does), and the
#: tracer's end (bpftrace's END comes ~0.4 s after the command exits: only a fallback for commands that never
#: call exit(); not every kernel has the sched tracepoints that would time the exit itself).
_LIFE = re.compile(rb"^quiho-(begin|exit|end) (\d+)\n?", re.M)
_BT_LIFE = ('BEGIN { printf("quiho-begin %lu\\n", nsecs); }',
            'uprobe:libc:exit /pid == cpid/ { printf("quiho-exit %lu\\n", nsecs); }\n',
            'END { printf("quiho-end %lu\\n", nsecs); ')
_STAP_LIFE = ('probe begin { printf("quiho-begin %d\\n", gettimeofday_ns()) }\n'
              'probe process.end { if (pid() == target()) printf("quiho-exit %d\\n", gettimeofday_ns()) }\n')


_COST_SH = f"exec python3 -c {shlex.quote(COST_CODE)}\n"


def tracer_cost_ns(path: Path) -> float | None:
    """The median traced empty call of a host's fetched ``cost.txt.gz`` (None if missing or unusable)."""
    try:
        return tracer_cost_of(gzip.decompress(path.read_bytes()))
    except (OSError, EOFError):
        return None


def _scripts(binary: Path, functions: tuple[str, ...]) -> tuple[str, str]:
    """(bpftrace, SystemTap) scripts for ``functions`` plus the lines timing the traced command itself."""
    from quiho.trace import bpftrace_script, stap_script

    bt = bpftrace_script(binary, functions).replace("BEGIN { }", _BT_LIFE[0], 1).replace("END { ", _BT_LIFE[2], 1)
    bt += _BT_LIFE[1]  # bpftrace allows one END probe: the script's (which clears its maps) prints the end first
    return bt, stap_script(binary, functions) + _STAP_LIFE


def split_lifetime(text: bytes) -> tuple[bytes, float | None]:
    """The event text without the lifetime lines, and the traced command's wall time from them (None if absent).

    The time runs from the tracer's start (the command is held until the probes are attached) to the
    command's call of ``exit()`` (else the tracer's end); the tracer's own start-up and detach are outside.
    """
    seen: dict[bytes, list[int]] = {b"begin": [], b"exit": [], b"end": []}
    for m in _LIFE.finditer(text):
        seen[m.group(1)].append(int(m.group(2)))
    begin, stop = seen[b"begin"], seen[b"exit"] or seen[b"end"]
    wall = (max(stop) - begin[0]) / 1e9 if begin and stop and max(stop) >= begin[0] else None
    return (_LIFE.sub(b"", text) if any(seen.values()) else text), wall


def _store_run(store: Store, spec: AppSpec, version: str, label: str, r: TracedRun, plan: TracePlan,
               batch: str, probe_ns: float | None) -> str | None:
    """Parse, convert and store one fetched event file (with its host's tracer cost); why it cannot be used."""
    from quiho.trace import TraceSource, events_to_calls, parse_events, save_trace

    assert r.events is not None
    try:
        text = gzip.decompress(r.events.read_bytes())
    except (OSError, EOFError) as exc:
        return f"event file unreadable: {exc}"
    text, wall = split_lifetime(without_banner(text))
    try:
        calls, stats = events_to_calls(parse_events(text, plan.functions))
    except QuihoError as exc:
        return f"events not usable: {exc}"
    source = TraceSource(" ".join(spec.versions[version].command), r.engine or "bpftrace", plan.functions,
                         host=r.host, batch=batch, wall_s=wall if wall is not None else r.wall_s,
                         probe_ns=probe_ns)
    save_trace(store, spec.name, label, calls, stats, source)
    return None


def run_fleet_traces(
    spec: AppSpec,
    plan: TracePlan,
    inventory: Inventory,
    *,
    store: Store,
    batch: str,
    hosts: list[str] | None = None,
    access: FleetAccess = FleetAccess(),
    on_event: Callable[[FleetEvent], None] | None = None,
) -> FleetTraceRun:
    """Trace both versions interleaved on every host (``playbooks/trace.yml``) and store the calls per host.

    Parameters
    ----------
    spec : AppSpec
    plan : TracePlan
        From :func:`resolve_trace`: functions, binaries, runs, the two versions and their stored labels.
    inventory : Inventory
    store : Store
        Calls go to Parquet files and ``trace_runs`` rows with ``batch``.
    batch : str
        The profile's batch.
    hosts : list of str, optional
        Only these hosts.
    access : FleetAccess
        Cgroup prefix and SSH host-key checking (forks are the trace playbook's own).
    on_event : callable, optional
        Progress events.

    Returns
    -------
    FleetTraceRun
        Per-host failures are in it (and in :meth:`FleetTraceRun.host_messages`), never raised.
    """
    from quiho.trace import bpftrace_script

    version_a, version_b = plan.versions
    labels = plan.labels or {"1": version_a, "2": version_b}
    names = [h for h in inventory.names if hosts is None or h in hosts]
    sides = {"1": spec.versions[version_a], "2": spec.versions[version_b]}
    scripts = {s: _scripts(Path(plan.binaries[s]), plan.functions) for s in sides}
    tr = {
        "binaries": plan.binaries,
        "bt": {s: scripts[s][0] for s in sides},
        "stap": {s: scripts[s][1] for s in sides},
        "run_sh": {s: run_script(v) for s, v in sides.items()},
        "cost_sh": _COST_SH, "cost_bt": bpftrace_script("libc", [COST_FUNCTION]),
    }
    first_of = inventory.first_version()
    order = {h: [("1", "2")[(k + first_of[h]) % 2] for k in range(2 * plan.runs)] for h in names}
    # tracing may double a run's time; one more run: the playbook's warm-up, not kept
    per_host, emulate_s = app_budget(spec.timeout * 2, 2 * plan.runs + 1)
    runs: list[TracedRun] = []
    statuses: dict[str, tuple[str, str | None]] = {}
    stored = 0
    with measuring(store, f"quiho profile --trace {spec.name}"), \
            tempfile.TemporaryDirectory(prefix="quiho-trace-fetch-") as tmp:
        session = FleetSession(inventory, "trace.yml", batch, cgroup_prefix=access.cgroup_prefix,
                               host_key_checking=access.host_key_checking, forks=5, on_event=on_event)
        for group in session.groups(names):
            extravars = {"quiho_trace": {**tr, "order": {h: order[h] for h in group}},
                         "quiho_app_timeout": spec.timeout * 2, "quiho_emulate_seconds": emulate_s,
                         "quiho_fetch_dir": tmp}
            res = session.run(group, extravars, per_host * len(group))
            got = session.host_statuses(res, group)
            statuses.update(got)
            cost: dict[str, float | None] = {}
            for h in group:
                unpack_events(Path(tmp) / h)
                cost[h] = tracer_cost_ns(Path(tmp) / h / "cost.txt.gz")
            for r in trace_records(res, group, order, Path(tmp), timeout_s=spec.timeout * 2, statuses=got):
                if r.status == "ok":
                    ver = version_a if r.side == "1" else version_b
                    why = _store_run(store, spec, ver, labels[r.side], r, plan, batch, cost.get(r.host))
                    if why is not None:
                        r = TracedRun(r.host, r.order, r.side, r.engine, "failed", why, r.wall_s, None)
                    else:
                        stored += 1
                runs.append(r)
    return FleetTraceRun(batch, plan, tuple(runs), statuses, stored)
