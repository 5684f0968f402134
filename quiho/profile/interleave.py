"""Run two versions of an application on every host, interleaved (v1, v2, v1, v2 ...).

Built on the fleet's public pieces (``playbooks/run.yml`` through
:class:`quiho.fleet.session.FleetSession`, the application spec and its metric extraction)
because ``quiho.fleet.run_app`` runs one version at a time: two separate runs would
put minutes of drift (other tenants, thermal state) between the versions, and a
paired comparison per host is only as good as the pairing.

How: ``run.yml`` runs the app command ``2 × (W + R)`` times per host (W warm-ups per
version, discarded) inside one emulation session (same cgroup quota and co-runner). The
command is a fixed ``sh`` script whose arguments are the two versions' argv lists (user data
only ever arrives as positional arguments, never as shell text); a counter file in the
host's remote directory makes call *i* run version ``(i + first) mod 2``. The script prints
``quiho-version: 1|2`` before it execs the version, and quiho checks that marker, so a
misordered run can never be attributed to the wrong version. On a fleet whose hosts share
one machine (the local fleet) hosts are run one invocation at a time and alternate which
version goes first, so a first-run effect (cold page cache, co-runner warm-up) cancels in
the paired test across hosts; on real fleets all hosts start with v1.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from quiho.app import AppSpec
from quiho.app.run import command_wall, strip_markers
from quiho.app.spec import extract_metric
from quiho.errors import UsageError
from quiho.fleet import FleetEvent, Inventory, PlaybookResult, load_inventory
from quiho.fleet.session import (
    FleetSession,
    app_budget,
    limit_failure,
    measuring,
    rc_failure,
    remember_inventory,
    run_rc,
    stderr_tail,
)
from quiho.store import Store
from quiho.store.app_runs import AppRunBatch, AppRunRow, insert_app_runs

__all__ = ["InterleavedRun", "InterleavePlan", "RunRecord", "interleaved_records", "run_interleaved", "store_label",
           "INTERLEAVE_SH", "SETUP_SH"]

#: $1 first (0|1), $2 n1 = argc of version 1, $3 workdir 1, $4 workdir 2, then argv1..., argv2...
INTERLEAVE_SH = (
    # relative on purpose: Ansible's chdir does not update $PWD, which still names the controller's directory
    'f=./.quiho-interleave; first=$1; n1=$2; d1=$3; d2=$4; shift 4; '
    'i=$(cat "$f" 2>/dev/null || echo 0); echo $((i + 1)) > "$f"; '
    'if [ $(( (i + first) % 2 )) -eq 1 ]; then shift "$n1"; echo "quiho-version: 2"; '
    '[ -z "$d2" ] || cd "$d2" || exit 125; exec "$@"; fi; '
    'total=$#; k=0; for a do k=$((k + 1)); if [ "$k" -le "$n1" ]; then set -- "$@" "$a"; fi; done; '
    'shift "$total"; echo "quiho-version: 1"; [ -z "$d1" ] || cd "$d1" || exit 125; exec "$@"'
)
#: $1 n1 = argc of setup 1 (0 = none), $2 workdir 1, $3 workdir 2, then setup1..., setup2...
SETUP_SH = (
    'n1=$1; d1=$2; d2=$3; shift 3; total=$#; '
    '( k=0; for a do k=$((k + 1)); if [ "$k" -le "$n1" ]; then set -- "$@" "$a"; fi; done; shift "$total"; '
    'if [ $# -gt 0 ]; then [ -z "$d1" ] || cd "$d1" || exit 125; "$@"; fi ) || exit $?; '
    'shift "$n1"; if [ $# -gt 0 ]; then [ -z "$d2" ] || cd "$d2" || exit 125; exec "$@"; fi'
)
_MARK = re.compile(r"^quiho-version: ([12])$", re.M)


@dataclass(frozen=True)
class RunRecord:
    """One run of one version on one host (``order`` = position in the host's interleaved sequence)."""

    host: str
    version: str
    repetition: int
    order: int
    status: str
    value: float | None
    wall_s: float | None
    reason: str | None
    stderr_tail: str | None
    warmup: bool = False


@dataclass(frozen=True)
class InterleavedRun:
    """Result of :func:`run_interleaved`."""

    batch: str
    application: str
    versions: tuple[str, str]
    status: str
    records: tuple[RunRecord, ...]
    hosts: dict[str, tuple[str, str | None]]
    elapsed_s: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"batch": self.batch, "application": self.application, "versions": list(self.versions),
                "status": self.status, "elapsed_s": round(self.elapsed_s, 2),
                "hosts": {h: {"status": s, "reason": r} for h, (s, r) in self.hosts.items()},
                "records": [r.__dict__ for r in self.records]}


def store_label(version_a: str, version_b: str) -> str:
    """The version label the candidate's runs are stored under (``V#2`` when a version is compared with itself)."""
    return version_b if version_b != version_a else f"{version_b}#2"


def _command(spec: AppSpec, v1: str, v2: str, first: int) -> list[str]:
    a, b = spec.versions[v1], spec.versions[v2]
    return ["sh", "-c", INTERLEAVE_SH, "sh", str(first), str(len(a.command)), a.workdir or "", b.workdir or "",
            *a.command, *b.command]


def _setup(spec: AppSpec, v1: str, v2: str) -> list[str]:
    a, b = spec.versions[v1], spec.versions[v2]
    if not a.setup and not b.setup:
        return []
    return ["sh", "-c", SETUP_SH, "sh", str(len(a.setup)), a.workdir or "", b.workdir or "", *a.setup, *b.setup]


def interleaved_records(
    res: PlaybookResult, group: list[str], spec: AppSpec, labels: dict[str, str], *, first: int, n_warm: int,
    n_runs: int, statuses: dict[str, tuple[str, str | None]],
) -> list[RunRecord]:
    """Map one invocation's ``quiho app run`` runs to :class:`RunRecord` s (no store access).

    The version of a run is read from the wrapper's ``quiho-version`` marker (the
    position only decides for runs without output); the first ``n_warm`` runs are
    warm-ups. Runs that never happened (setup failed, host unreachable, timeout) are
    recorded failed with the host's status, so the report can say why a host has no data.
    """
    records: list[RunRecord] = []
    seen: dict[str, set[int]] = {h: set() for h in group}
    counters: dict[tuple[str, str], int] = {}  # (host, side) -> repetitions so far
    for data in res.runs("quiho app run"):
        h = str(data.get("host"))
        r = data.get("res") or {}
        order = int(r.get("item", 0))
        seen.setdefault(h, set()).add(order)
        stdout = strip_markers(str(r.get("stdout", "")))
        m = _MARK.search(stdout)
        side = m.group(1) if m else ("1" if (order - 1 + first) % 2 == 0 else "2")
        is_warm = order <= n_warm
        if not is_warm:
            counters[(h, side)] = counters.get((h, side), 0) + 1
        wall = command_wall(r)
        tail = stderr_tail(r)
        value: float | None = None
        why = rc_failure(run_rc(r), spec.timeout, tail, with_stderr=True) or limit_failure(r)
        if why is None and m is None:
            why = "the interleaving wrapper printed no version marker"
        elif why is None and wall is None:
            why = "no wall time reported"
        elif why is None:
            value, why = extract_metric(spec.metric, _MARK.sub("", stdout), wall or 0.0)
        records.append(RunRecord(h, labels[side], 0 if is_warm else counters[(h, side)], order,
                                 "ok" if why is None else "failed", value, wall, why, tail, warmup=is_warm))
    for h in group:
        st, host_why = statuses[h]
        for order in range(n_warm + 1, n_runs + 1):
            if order in seen.get(h, set()):
                continue
            side = "1" if (order - 1 + first) % 2 == 0 else "2"
            counters[(h, side)] = counters.get((h, side), 0) + 1
            records.append(RunRecord(h, labels[side], counters[(h, side)], order, "failed", None, None,
                                     f"not run: host {st}" + (f" ({host_why})" if host_why else ""), None))
    return records


@dataclass(frozen=True)
class InterleavePlan:
    """What :func:`run_interleaved` runs, and what its runs are recorded against.

    Parameters
    ----------
    repetitions : int, optional
        Runs per version per host (default ``spec.repetitions``).
    warmup : int, default 1
        Discarded warm-up runs per version per host, at the start of the sequence (first runs pay for a cold
        page cache and binaries). They are returned with ``warmup=True`` and not stored in ``app_runs``.
    hosts : sequence of str, optional
        Only these inventory hosts.
    fingerprint_run_id : int, optional
        Fingerprint run the application runs are paired with.
    host_key_checking : bool, default True
        SSH host key checking of the fleet session.
    cgroup_prefix : str, default "quiho"
        Prefix of the emulated hosts' cgroups.
    round : int, default 0
        Measurement round of these runs (a blocked design visits every host once per round); stored with each run.
    repetition_offset : int, default 0
        Runs per version already stored for these hosts by earlier rounds: this call's repetitions follow them.
    setup : bool, default True
        Run the versions' setup commands first (False: what an earlier call built is still in place).
    stage : int, default 1
        Which pass over the fleet these runs belong to (2: a designed fleet's hosts visited again because the
        first pass was inconclusive); stored with each run.
    """

    repetitions: int | None = None
    warmup: int = 1
    hosts: Sequence[str] | None = None
    fingerprint_run_id: int | None = None
    host_key_checking: bool = True
    cgroup_prefix: str = "quiho"
    round: int = 0
    repetition_offset: int = 0
    setup: bool = True
    stage: int = 1


def run_interleaved(
    spec: AppSpec,
    version_a: str,
    version_b: str,
    inventory: str | os.PathLike[str] | Inventory | None = None,
    *,
    store: Store,
    batch: str,
    plan: InterleavePlan | None = None,
    on_event: Callable[[FleetEvent], None] | None = None,
) -> InterleavedRun:
    """Run ``version_a`` and ``version_b`` alternately on every host and store each run in ``app_runs``.

    Each invocation's runs are stored as soon as it ends, so an interrupted profile keeps
    the hosts already measured (a resume runs only the others).

    Parameters
    ----------
    spec : AppSpec
        The application (both versions must be in it).
    version_a, version_b : str
        Baseline and candidate (may be the same version: a false-positive check).
    inventory : path-like or Inventory, optional
        Default: the local fleet. A profile passes the inventory it loaded (each load runs ``ansible-inventory``).
    store : Store
        Runs go to ``app_runs`` with ``source='profile'`` and this ``batch``.
    batch : str
        Label of this profile's runs.
    plan : InterleavePlan, optional
        Repetitions, warm-ups, hosts and the fingerprint run (default ``InterleavePlan()``).
    on_event : callable, optional
        Fleet progress events.

    Returns
    -------
    InterleavedRun
        ``status`` complete / partial / failed; a failed run is recorded with its reason and stderr tail.
    """
    p = plan or InterleavePlan()
    warmup, hosts = p.warmup, p.hosts
    spec.require_versions(version_a, version_b)
    if warmup < 0:
        raise UsageError("warmup must be 0 or more")
    reps = int(p.repetitions or spec.repetitions)
    labels = {"1": version_a, "2": store_label(version_a, version_b)}
    inv = load_inventory(inventory)
    names = [h for h in inv.names if hosts is None or h in hosts]
    t0 = datetime.now(UTC)
    n_warm = 2 * warmup
    n_runs = 2 * reps + n_warm
    per_host, emulate_s = app_budget(spec.timeout, n_runs)
    records: list[RunRecord] = []
    statuses: dict[str, tuple[str, str | None]] = {}
    with measuring(store, f"quiho profile {spec.name}@{version_a} @{version_b}"):
        remember_inventory(store, inv)
        session = FleetSession(inv, "run.yml", batch, cgroup_prefix=p.cgroup_prefix,
                               host_key_checking=p.host_key_checking, forks=5, on_event=on_event)
        first_of = inv.first_version()
        for group in session.groups(names):
            first = first_of[group[0]]
            extravars = {
                "quiho_app": {"command": _command(spec, version_a, version_b, first),
                              "setup": _setup(spec, version_a, version_b) if p.setup else [], "workdir": ""},
                "quiho_reps": list(range(1, n_runs + 1)),
                "quiho_app_timeout": spec.timeout,
                "quiho_emulate_seconds": emulate_s,
                # the co-runner's settle overlaps the warm-ups (run.yml)
                "quiho_measured_from": n_warm,
            }
            res = session.run(group, extravars, per_host * len(group))
            got = session.host_statuses(res, group)
            statuses.update(got)
            recs = interleaved_records(res, group, spec, labels, first=first, n_warm=n_warm, n_runs=n_runs,
                                       statuses=got)
            records.extend(recs)
            extra = {"interleaved_with": [version_a, version_b], "timeout_s": spec.timeout,
                     "warmup_runs_per_version": warmup, "round": p.round, "stage": p.stage}
            head = AppRunBatch("profile", batch, p.fingerprint_run_id, spec.name, spec.metric.test, spec.metric.unit,
                               spec.metric.higher_is_better, t0.isoformat())
            insert_app_runs(
                store, head,
                [AppRunRow(r.host, r.version, p.repetition_offset + r.repetition, r.status, r.value, r.reason,
                           r.stderr_tail,
                           {"order": r.order, "wall_s": r.wall_s, **extra}) for r in recs if not r.warmup],
            )
    n_ok = sum(r.status == "ok" and not r.warmup for r in records)
    status = "complete" if n_ok == len(names) * 2 * reps else ("partial" if n_ok else "failed")
    return InterleavedRun(batch, spec.name, (version_a, version_b), status, tuple(records), statuses,
                          (datetime.now(UTC) - t0).total_seconds())
