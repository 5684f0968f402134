"""Store queries of fleet execution: hosts, fleet fingerprint runs, application runs and profiles.

Every SQL statement that :mod:`quiho.fleet`, :mod:`quiho.profile` and
:mod:`quiho.schedule` need lives here, so the rules they encode ("which
fingerprint run applies", "what is missing in a run", how an application run is
recorded) exist once.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from quiho.errors import UsageError
from quiho.store._db import Store, dumps, utcnow

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "AppRunBatch", "AppRunRow", "ProfileRow", "FingerprintRunRef", "UNSTABLE_COV", "applicable_fingerprint_run",
    "batch_of",
    "create_fingerprint_run",
    "fingerprint_run", "host_id", "host_counts", "hosts_with_runs",
    "visits_with_runs", "insert_app_runs", "latest_fleet_run",
    "mark_interrupted_runs", "missing_measurements", "remember_hosts", "set_host_status", "set_run_status",
    "summarise_run", "upsert_measurements", "profile_runs", "fingerprint_run_age", "fleet_hosts", "ok_measurements",
    "save_profile_row",
    "profile_row", "list_profiles", "save_calibration", "latest_calibration",
]

#: pyperf's stability rule: spread ≥ 10 % of the mean is flagged.
UNSTABLE_COV = 0.10


def host_id(conn: sqlite3.Connection, name: str, facts: dict[str, Any] | None = None) -> int:
    """Id of host ``name``, created if new; ``facts`` (if given) are merged into ``facts_json``."""
    row = conn.execute("SELECT id, facts_json FROM hosts WHERE name = ?", (name,)).fetchone()
    if row is None:
        cur = conn.execute(
            "INSERT INTO hosts(name, facts_json, created_at) VALUES (?, ?, ?)", (name, dumps(facts or {}), utcnow())
        )
        return int(cur.lastrowid or 0)
    if facts:
        merged = {**json.loads(row["facts_json"] or "{}"), **facts}
        conn.execute("UPDATE hosts SET facts_json = ? WHERE id = ?", (dumps(merged), row["id"]))
    return int(row["id"])


def remember_hosts(
    store: Store, inventory: str, hosts: Iterable[tuple[str, list[str], dict[str, Any]]]
) -> dict[str, int]:
    """Record hosts (name, groups, quiho variables) of ``inventory``; return name → id."""
    ids = {}
    with store.transaction() as conn:
        for name, groups, host_vars in hosts:
            hid = host_id(conn, name)
            ids[name] = hid
            conn.execute(
                "INSERT INTO fleet_hosts(host_id, inventory, groups_json, vars_json, updated_at) VALUES (?,?,?,?,?) "
                "ON CONFLICT(host_id) DO UPDATE SET inventory=excluded.inventory, groups_json=excluded.groups_json, "
                "vars_json=excluded.vars_json, updated_at=excluded.updated_at",
                (hid, inventory, dumps(list(groups)), dumps(host_vars), utcnow()),
            )
    return ids


def fleet_hosts(store: Store, inventory: str | None = None) -> list[dict[str, Any]]:
    """Hosts seen by a fleet run (of ``inventory``, if given), by name, each with its newest fleet fingerprint.

    ``last`` is that run's batch, status, time ``t`` and ok/failed counts, or None.
    """
    rows = store.conn.execute(
        "SELECT h.id, h.name, h.facts_json, f.inventory, f.groups_json FROM hosts h "
        "JOIN fleet_hosts f ON f.host_id = h.id ORDER BY h.name"
    ).fetchall()
    out = []
    for r in rows:
        if inventory is not None and r["inventory"] != inventory:
            continue
        last = store.conn.execute(
            "SELECT fr.batch, fr.status, COALESCE(fr.finished_at, fr.started_at) AS t, "
            "SUM(m.status='ok') AS ok, SUM(m.status='failed') AS failed FROM fingerprint_runs fr "
            "JOIN measurements m ON m.run_id = fr.id AND m.host_id = ? WHERE fr.source='fleet' "
            "GROUP BY fr.id ORDER BY fr.started_at DESC, fr.id DESC LIMIT 1",
            (r["id"],),
        ).fetchone()
        out.append({**dict(r), "last": dict(last) if last else None})
    return out


def set_host_status(
    conn: sqlite3.Connection, kind: str, batch: str, hid: int, status: str, reason: str | None
) -> None:
    """Upsert the status of one host in one fleet run (attempts counts invocations)."""
    conn.execute(
        "INSERT INTO fleet_host_status(kind, batch, host_id, status, reason, attempts, updated_at) "
        "VALUES (?,?,?,?,?,1,?) ON CONFLICT(kind, batch, host_id) DO UPDATE SET status=excluded.status, "
        "reason=excluded.reason, attempts=fleet_host_status.attempts+1, updated_at=excluded.updated_at",
        (kind, batch, hid, status, reason, utcnow()),
    )


# --- application runs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AppRunRow:
    """One ``app_runs`` row as the fleet runners produce it."""

    host: str
    version: str
    repetition: int
    status: str
    value: float | None
    reason: str | None
    stderr_tail: str | None
    extra: dict[str, Any]


@dataclass(frozen=True)
class AppRunBatch:
    """What the ``app_runs`` rows of one insert share: where they come from and what they measure."""

    source: str
    batch: str
    fingerprint_run_id: int | None
    application: str
    test: str
    unit: str
    higher_is_better: bool
    started_at: str


def insert_app_runs(
    store: Store,
    head: AppRunBatch,
    rows: Sequence[AppRunRow],
    host_statuses: dict[str, tuple[str, str | None]] | None = None,
) -> None:
    """Insert application runs (and, for ``source='fleet'``, each host's status) in one transaction.

    A row that is already there (same batch, host, version, test, repetition) is kept as it was.
    """
    h = head
    with store.transaction() as conn:
        for r in rows:
            conn.execute(
                "INSERT INTO app_runs(source, batch, fingerprint_run_id, host_id, application, version, test, "
                "repetition, value, unit, higher_is_better, status, reason, stderr_tail, started_at, extra_json) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                (h.source, h.batch, h.fingerprint_run_id, host_id(conn, r.host), h.application, r.version, h.test,
                 r.repetition, r.value, h.unit, int(h.higher_is_better), r.status, r.reason, r.stderr_tail,
                 h.started_at, dumps(r.extra)),
            )
        for host, (st, reason) in (host_statuses or {}).items():
            st = st if st in ("ok", "failed", "unreachable", "timeout") else "failed"
            set_host_status(conn, "app", h.batch, host_id(conn, host), st, reason)


def hosts_with_runs(store: Store, batch: str, application: str) -> set[str]:
    """Hosts that have at least one ``ok`` application run in ``batch`` (what a resume need not rerun)."""
    rows = store.conn.execute(
        "SELECT DISTINCT h.name FROM app_runs a JOIN hosts h ON h.id = a.host_id "
        "WHERE a.batch = ? AND a.application = ? AND a.status = 'ok'", (batch, application),
    ).fetchall()
    return {str(r["name"]) for r in rows}


def visits_with_runs(store: Store, batch: str, application: str) -> set[tuple[str, int]]:
    """(host, round) visits of a blocked design with at least one ``ok`` run in ``batch`` (a resume skips them)."""
    rows = store.conn.execute(
        "SELECT DISTINCT h.name, a.extra_json FROM app_runs a JOIN hosts h ON h.id = a.host_id "
        "WHERE a.batch = ? AND a.application = ? AND a.status = 'ok'", (batch, application),
    ).fetchall()
    return {(str(r["name"]), int(json.loads(r["extra_json"] or "{}").get("round", 0))) for r in rows}


# --- fleet fingerprint runs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FingerprintRunRef:
    """A fleet fingerprint run chosen for some hosts: id, batch, age and how many of the hosts it covers."""

    run_id: int
    batch: str
    age_s: float
    hosts_covered: int


def applicable_fingerprint_run(
    store: Store, hosts: Sequence[str], max_age_s: float | None = None
) -> FingerprintRunRef | None:
    """The fleet fingerprint run that applies to ``hosts``: the one rule for runs and profiles.

    Among complete/partial fleet runs with an ``ok`` measurement of any of ``hosts``
    (and, with ``max_age_s``, finished at most that long ago) the one covering most of
    ``hosts`` wins, then the newest: a newer run of one host must not hide an older run
    of the whole fleet. ``max_age_s`` of 0 or less means none applies (force a new one).
    """
    if not hosts or (max_age_s is not None and max_age_s <= 0):
        return None
    marks = ",".join("?" * len(hosts))
    rows = store.conn.execute(
        "SELECT r.id, r.batch, COALESCE(r.finished_at, r.started_at) AS t, COUNT(DISTINCT m.host_id) AS n "
        "FROM fingerprint_runs r JOIN measurements m ON m.run_id = r.id AND m.status = 'ok' "
        f"JOIN hosts h ON h.id = m.host_id AND h.name IN ({marks}) "
        "WHERE r.source = 'fleet' AND r.status IN ('complete','partial') GROUP BY r.id",
        list(hosts),
    ).fetchall()
    now = datetime.now(UTC)
    cands = [FingerprintRunRef(int(r["id"]), str(r["batch"]), (now - datetime.fromisoformat(r["t"])).total_seconds(),
                               int(r["n"])) for r in rows]
    cands = [c for c in cands if max_age_s is None or c.age_s <= max_age_s]
    if not cands:
        return None
    return max(cands, key=lambda c: (c.hosts_covered, -c.age_s, c.run_id))


def create_fingerprint_run(store: Store, batch: str, battery: str, params: dict[str, Any], version: str) -> int:
    """Insert a new ``running`` fleet fingerprint run; return its id."""
    with store.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO fingerprint_runs(source, batch, battery, status, params_json, started_at, quiho_version) "
            "VALUES ('fleet', ?, ?, 'running', ?, ?, ?)",
            (batch, battery, dumps(params), utcnow(), version),
        )
        return int(cur.lastrowid or 0)


def fingerprint_run(store: Store, ref: str) -> dict[str, Any]:
    """The fleet fingerprint run with batch label (or id) ``ref``.

    Raises
    ------
    UsageError
        No such run.
    """
    conn = store.conn
    row = conn.execute("SELECT * FROM fingerprint_runs WHERE source='fleet' AND batch = ?", (ref,)).fetchone()
    if row is None and ref.isdigit():
        row = conn.execute("SELECT * FROM fingerprint_runs WHERE source='fleet' AND id = ?", (int(ref),)).fetchone()
    if row is None:
        raise UsageError(f"no fleet fingerprint run {ref!r} in {store.path} (see 'quiho fleet show')")
    return dict(row)


def set_run_status(store: Store, run_id: int, status: str, *, note: str | None = None) -> None:
    """Set a fingerprint run's status (``running`` clears ``finished_at``); ``note`` goes into its params."""
    with store.transaction() as conn:
        if note is not None:
            row = conn.execute("SELECT params_json FROM fingerprint_runs WHERE id=?", (run_id,)).fetchone()
            params = json.loads(row["params_json"] or "{}") if row else {}
            params["interrupted"] = note
            conn.execute("UPDATE fingerprint_runs SET params_json=? WHERE id=?", (dumps(params), run_id))
        conn.execute("UPDATE fingerprint_runs SET status=?, finished_at=? WHERE id=?",
                     (status, None if status == "running" else utcnow(), run_id))


def latest_fleet_run(store: Store) -> dict[str, Any] | None:
    """Batch, status and start of the newest fleet fingerprint run, or None."""
    row = store.conn.execute("SELECT batch, status, started_at FROM fingerprint_runs WHERE source='fleet' "
                             "ORDER BY started_at DESC, id DESC LIMIT 1").fetchone()
    return dict(row) if row else None


def mark_interrupted_runs(store: Store) -> list[int]:
    """Mark fingerprint runs left ``running`` as ``partial``; call only while holding the measurement lock.

    Holding the lock proves no live quiho process is measuring into this store, so a
    ``running`` row was left by a process that died (``kill -9``, power loss). Returns the ids marked.
    """
    rows = store.conn.execute("SELECT id FROM fingerprint_runs WHERE status = 'running'").fetchall()
    for r in rows:
        set_run_status(store, int(r["id"]), "partial",
                       note=f"found running with no live holder at {utcnow()}; resumable")
    return [int(r["id"]) for r in rows]


def batch_of(store: Store, run_id: int) -> str:
    """Batch label of fingerprint run ``run_id``."""
    row = store.conn.execute("SELECT batch FROM fingerprint_runs WHERE id=?", (run_id,)).fetchone()
    return str(row["batch"])


def missing_measurements(store: Store, run_id: int, hid: int, stressors: list[str], reps: int) -> dict[int, list[str]]:
    """Repetition → stressors without a row for host ``hid`` in run ``run_id`` (what a resume reruns)."""
    have = {
        (r["repetition"], r["stressor"])
        for r in store.conn.execute(
            "SELECT repetition, stressor FROM measurements WHERE run_id = ? AND host_id = ?", (run_id, hid)
        )
    }
    out: dict[int, list[str]] = {}
    for rep in range(1, reps + 1):
        miss = [s for s in stressors if (rep, s) not in have]
        if miss:
            out[rep] = miss
    return out


def host_counts(store: Store, run_id: int, hid: int) -> tuple[int, int]:
    """(ok, failed) measurements of one host in one run."""
    row = store.conn.execute(
        "SELECT SUM(status='ok') AS ok, SUM(status='failed') AS failed FROM measurements "
        "WHERE run_id=? AND host_id=?",
        (run_id, hid),
    ).fetchone()
    return int(row["ok"] or 0), int(row["failed"] or 0)


def upsert_measurements(
    store: Store,
    run_id: int,
    host: str,
    rows: Sequence[tuple[int, str, float | None, str, str | None, dict[str, Any]]],
    *,
    facts: dict[str, Any] | None,
    status: str,
    reason: str | None,
) -> None:
    """Store one host's measurements ``(repetition, stressor, value, status, reason, extra)`` and its status."""
    with store.transaction() as conn:
        hid = host_id(conn, host, facts or None)
        for rep, stressor, value, st, why, extra in rows:
            conn.execute(
                "INSERT INTO measurements(run_id, host_id, repetition, stressor, value, unit, status, reason, "
                "extra_json) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(run_id, host_id, repetition, stressor) DO UPDATE "
                "SET value=excluded.value, status=excluded.status, reason=excluded.reason, "
                "extra_json=excluded.extra_json",
                (run_id, hid, rep, stressor, value, "bogo-ops/s", st, why, dumps(extra)),
            )
        set_host_status(conn, "fingerprint", batch_of(store, run_id), hid, status, reason)


def summarise_run(store: Store, run_id: int) -> None:
    """Median and spread per host and stressor of one run into ``fleet_fingerprint_summary``.

    ``cov`` is the population standard deviation over the mean of the ok
    repetitions; ``unstable`` flags cov ≥ 10 % or a value ≥ 50 % away from the median.
    """
    rows = store.conn.execute(
        "SELECT host_id, stressor, status, value FROM measurements WHERE run_id=?", (run_id,)
    ).fetchall()
    groups: dict[tuple[int, str], list[tuple[str, float | None]]] = {}
    for r in rows:
        groups.setdefault((r["host_id"], r["stressor"]), []).append((r["status"], r["value"]))
    with store.transaction() as conn:
        conn.execute("DELETE FROM fleet_fingerprint_summary WHERE run_id=?", (run_id,))
        for (hid, s), vals in groups.items():
            ok = [float(v) for st, v in vals if st == "ok" and v is not None]
            n_failed = sum(1 for st, _ in vals if st == "failed")
            med = statistics.median(ok) if ok else None
            mean = statistics.fmean(ok) if ok else None
            cov = statistics.pstdev(ok) / mean if ok and mean else None
            far = med is not None and med != 0 and any(abs(v - med) / med >= 0.5 for v in ok)
            unstable = int((cov is not None and cov >= UNSTABLE_COV) or far)
            conn.execute(
                "INSERT INTO fleet_fingerprint_summary(run_id, host_id, stressor, n_ok, n_failed, median, cov, min, "
                "max, unstable) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, hid, s, len(ok), n_failed, med, None if cov is None or cov != cov else cov,
                 min(ok) if ok else None, max(ok) if ok else None, unstable),
            )


# --- profiles -----------------------------------------------------------------------------------------------


def ok_measurements(store: Store, source: str = "fleet") -> pd.DataFrame:
    """Every ``ok`` measurement of the non-duplicate ``source`` runs.

    Columns: run_id, batch, started_at, host, stressor, value.
    """
    import pandas as pd

    q = (
        "SELECT r.id AS run_id, r.batch, r.started_at, h.name AS host, m.stressor, m.value "
        "FROM measurements m JOIN fingerprint_runs r ON r.id = m.run_id JOIN hosts h ON h.id = m.host_id "
        "WHERE m.status = 'ok' AND r.source = ? AND r.duplicate_of IS NULL"
    )
    return pd.read_sql_query(q, store.conn, params=[source])


def profile_runs(store: Store, application: str, labels: tuple[str, str], batch: str) -> pd.DataFrame:
    """The runs of one profile batch: host, version, repetition, status, value, unit, ..., ``order``, ``round``."""
    import pandas as pd

    q = (
        "SELECT h.name AS host, a.version, a.repetition, a.status, a.value, a.unit, a.higher_is_better, a.reason, "
        "a.fingerprint_run_id, a.extra_json FROM app_runs a JOIN hosts h ON h.id = a.host_id "
        "WHERE a.batch = ? AND a.application = ? AND a.version IN (?, ?) ORDER BY h.name, a.id"
    )
    df = pd.read_sql_query(q, store.conn, params=[batch, application, *labels])
    extra = [json.loads(x or "{}") for x in df.pop("extra_json")]
    df["order"] = [e.get("order") for e in extra]
    df["round"] = [e.get("round", 0) for e in extra]  # measurement round of a blocked design (0: one visit)
    return df


def fingerprint_run_age(store: Store, run_id: int) -> tuple[str, float | None] | None:
    """(batch, seconds since it finished or started) of fingerprint run ``run_id``, or None."""
    row = store.conn.execute("SELECT batch, COALESCE(finished_at, started_at) AS t FROM fingerprint_runs WHERE id=?",
                             (run_id,)).fetchone()
    if row is None:
        return None
    age = (datetime.now(UTC) - datetime.fromisoformat(row["t"])).total_seconds() if row["t"] else None
    return str(row["batch"]), age


@dataclass(frozen=True)
class ProfileRow:
    """One ``profiles`` row: a profile's identity, its verdicts and its whole JSON document."""

    batch: str
    application: str
    version_a: str
    version_b: str
    status: str
    verdict: str
    irup_verdict: str
    partial: list[str]
    fingerprint_run_id: int | None
    document: dict[str, Any]
    schema_version: int
    quiho_version: str


def save_profile_row(store: Store, row: ProfileRow) -> int:
    """Insert (or replace, same batch) one ``profiles`` row; return its id."""
    r = row
    with store.transaction() as c:
        cur = c.execute(
            "INSERT INTO profiles(batch, application, version_a, version_b, status, verdict, irup_verdict, "
            "partial_json, fingerprint_run_id, result_json, schema_version, created_at, quiho_version) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(batch) DO UPDATE SET status=excluded.status, "
            "verdict=excluded.verdict, irup_verdict=excluded.irup_verdict, partial_json=excluded.partial_json, "
            "result_json=excluded.result_json, created_at=excluded.created_at",
            (r.batch, r.application, r.version_a, r.version_b, r.status, r.verdict, r.irup_verdict, dumps(r.partial),
             r.fingerprint_run_id, dumps(r.document), r.schema_version, utcnow(), r.quiho_version),
        )
    return int(cur.lastrowid or 0)


def profile_row(store: Store, batch: str) -> dict[str, Any] | None:
    """``result_json`` and ``schema_version`` of profile ``batch``, or None."""
    row = store.conn.execute("SELECT result_json, schema_version FROM profiles WHERE batch = ?", (batch,)).fetchone()
    return dict(row) if row else None


def list_profiles(store: Store) -> list[dict[str, Any]]:
    """Every stored profile's identity and verdicts, newest first (its document: :func:`profile_row`).

    Keys: batch, application, version_a, version_b, status, verdict, irup_verdict, created_at, schema_version.
    """
    rows = store.conn.execute(
        "SELECT batch, application, version_a, version_b, status, verdict, irup_verdict, created_at, schema_version "
        "FROM profiles ORDER BY created_at DESC, id DESC").fetchall()
    return [dict(r) for r in rows]


def save_calibration(
    store: Store, *, facts_key: str, facts: dict[str, Any], result: dict[str, Any], inventory: str,
    elapsed_s: float, schema_version: int, quiho_version: str,
) -> int:
    """Insert one ``fleet_calibrations`` row (the local fleet's probing on one machine); return its id."""
    with store.transaction() as c:
        cur = c.execute(
            "INSERT INTO fleet_calibrations(facts_key, facts_json, result_json, inventory, elapsed_s, schema_version, "
            "created_at, quiho_version) VALUES (?,?,?,?,?,?,?,?)",
            (facts_key, dumps(facts), dumps(result), inventory, float(elapsed_s), schema_version, utcnow(),
             quiho_version),
        )
    return int(cur.lastrowid or 0)


def _calibration_row(row: Any) -> dict[str, Any]:
    out = dict(row)
    out["facts"] = json.loads(out.pop("facts_json"))
    out["result"] = json.loads(out.pop("result_json"))
    return out


def calibration_for_hosts(store: Store, hosts: set[str]) -> dict[str, Any] | None:
    """The newest calibration row whose generated fleet has exactly these host names (None: no such row)."""
    for row in store.conn.execute("SELECT * FROM fleet_calibrations ORDER BY id DESC"):
        cal = _calibration_row(row)
        if {h["name"] for h in cal["result"].get("choice", {}).get("hosts") or []} == hosts:
            return cal
    return None


def latest_calibration(store: Store, facts_key: str | None = None) -> dict[str, Any] | None:
    """The newest calibration row (for ``facts_key``, if given) as a dict with parsed ``facts``/``result``, or None."""
    q = "SELECT * FROM fleet_calibrations" + (" WHERE facts_key = ?" if facts_key else "") + " ORDER BY id DESC LIMIT 1"
    row = store.conn.execute(q, (facts_key,) if facts_key else ()).fetchone()
    return None if row is None else _calibration_row(row)
