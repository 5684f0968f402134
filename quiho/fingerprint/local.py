"""A quick fingerprint of the machine quiho runs on (a CI runner), stored once per machine state and reused.

stress-ng runs here directly (no fleet, no playbook, no emulation): one job file per repetition of a battery
(default ``quick``: 7 stressors, 1 s each, 2 repetitions, ~20 s with the warm-up). The machine state is the hash of
the facts that decide what the fingerprint measures (:data:`STATE_KEYS`); a stored fingerprint of the same state
younger than ``max_age_s`` is reused, because a CI job that measures a benchmark should not spend its time
re-measuring the runner it was given an hour ago.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from quiho._facts import MachineFacts, local_facts
from quiho.errors import FingerprintParseError, RunFailed
from quiho.fingerprint.battery import load_battery, render_job
from quiho.fingerprint.parse import ResultStatus, parse_stressng_yaml
from quiho.store import Store
from quiho.store.fingerprints import fingerprint_by_id, reusable_local_fingerprint, write_local_fingerprint

__all__ = ["LocalFingerprintOptions", "LocalFingerprint", "STATE_KEYS", "state_key", "quick_local_fingerprint"]

#: Facts whose change makes a stored local fingerprint stale (a different runner, kernel, or stress-ng).
STATE_KEYS = ("host", "cpu_model", "vcpus", "memtotal_mb", "kernel", "arch", "l3_cache", "stress_ng_version",
              "thp_modes")


@dataclass(frozen=True)
class LocalFingerprintOptions:
    """Settings of :func:`quick_local_fingerprint`.

    Attributes
    ----------
    battery : str, default "quick"
        Battery of ``stressors/batteries.yaml``.
    repetitions, seconds : int, optional
        Override the battery's.
    max_age_s : float, default 7 days
        A stored fingerprint of the same machine state younger than this is reused.
    force : bool, default False
        Measure even when a reusable fingerprint exists.
    stress_ng : str, default "stress-ng"
        The stress-ng executable.
    """

    battery: str = "quick"
    repetitions: int | None = None
    seconds: int | None = None
    max_age_s: float = 7 * 86400.0
    force: bool = False
    stress_ng: str = "stress-ng"


@dataclass(frozen=True)
class LocalFingerprint:
    """A stored quick fingerprint of this machine: run id, whether it was reused, medians and failed stressors."""

    run_id: int
    host: str
    reused: bool
    age_s: float
    facts: dict[str, Any]
    state: str
    values: pd.Series
    failed: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping; ``values`` is what ``quiho predict --fingerprint`` reads."""
        return {"run_id": self.run_id, "host": self.host, "reused": self.reused, "age_s": round(self.age_s, 1),
                "state": self.state, "facts": self.facts, "failed": list(self.failed),
                "values": {k: float(v) for k, v in self.values.items()}}


def state_key(facts: MachineFacts) -> str:
    """Hash of the :data:`STATE_KEYS` facts (stable JSON, sha256 hex)."""
    return hashlib.sha256(json.dumps(facts.to_dict(STATE_KEYS), sort_keys=True).encode()).hexdigest()


def _stress_ng_version(exe: str) -> str | None:
    try:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None


def quick_local_fingerprint(store: Store, opts: LocalFingerprintOptions | None = None) -> LocalFingerprint:
    """The quick fingerprint of this machine: the stored one while its facts hold and it is young enough, else new.

    Parameters
    ----------
    store : Store
        Open store (the fingerprint is written to it).
    opts : LocalFingerprintOptions, optional

    Returns
    -------
    LocalFingerprint
        ``failed`` names stressors with no ok repetition (kept in the store as failed, never dropped silently).

    Raises
    ------
    RunFailed
        stress-ng is missing, or every stressor failed.
    CatalogError
        Unknown battery.
    """
    opts = opts or LocalFingerprintOptions()
    exe = shutil.which(opts.stress_ng)
    if exe is None:
        raise RunFailed(f"{opts.stress_ng} not found: install stress-ng (apt-get install stress-ng) to fingerprint "
                        "this machine")
    facts = replace(local_facts(), stress_ng_version=_stress_ng_version(exe), load1=None)
    key = state_key(facts)
    host = facts.host or "localhost"
    if not opts.force:
        hit = reusable_local_fingerprint(store, key, opts.max_age_s)
        if hit is not None:
            fp = fingerprint_by_id(store, hit[0])
            if fp is not None:
                return LocalFingerprint(hit[0], fp.host, True, hit[1], facts.to_dict(), key, fp.medians(),
                                        tuple(fp.failed()))
    rows, params = _measure(exe, opts)
    if all(r[3] != "ok" for r in rows):
        reasons = sorted({str(r[4]) for r in rows})
        raise RunFailed(f"every stressor failed on this machine: {'; '.join(reasons[:3])}")
    run_id = write_local_fingerprint(store, host, facts.to_dict(), key, params, rows)
    fp = fingerprint_by_id(store, run_id)
    assert fp is not None  # just written
    return LocalFingerprint(run_id, host, False, 0.0, facts.to_dict(), key, fp.medians(), tuple(fp.failed()))


def _measure(exe: str, opts: LocalFingerprintOptions) -> tuple[list[tuple[int, str, float | None, str, str | None]],
                                                                   dict[str, Any]]:
    """Run the battery: one warm-up pass (not kept), then one stress-ng job per repetition."""
    bat = load_battery(opts.battery)
    secs = int(opts.seconds or bat.seconds)
    reps = int(opts.repetitions or bat.repetitions)
    params = {"battery": bat.name, "stressors": list(bat.stressors), "options": bat.options, "seconds": secs,
              "repetitions": reps, "warmup_seconds": bat.warmup_seconds, "value": "bogo-ops-per-second-real-time"}
    rows: list[tuple[int, str, float | None, str, str | None]] = []
    with tempfile.TemporaryDirectory(prefix="quiho-local-fp-") as tmp:
        if bat.warmup_seconds:
            _job(exe, Path(tmp), "warmup", render_job(bat.stressors, bat.warmup_seconds, bat.options),
                 _limit(len(bat.stressors), bat.warmup_seconds))
        for rep in range(1, reps + 1):
            text = _job(exe, Path(tmp), f"rep{rep}", render_job(bat.stressors, secs, bat.options),
                        _limit(len(bat.stressors), secs))
            try:
                results, _ = parse_stressng_yaml(text, bat.stressors, secs, host="localhost", path=f"rep{rep}.yaml")
            except FingerprintParseError as exc:
                rows += [(rep, s, None, "failed", str(exc)) for s in bat.stressors]
                continue
            rows += [(rep, r.stressor, r.value, "ok" if r.status == ResultStatus.OK else "failed", r.reason)
                     for r in results]
    return rows, params


def _limit(n_stressors: int, seconds: int) -> int:
    """Outer time limit of one job, as a fleet fingerprint's (:func:`quiho.fingerprint.run.outer_timeout`)."""
    return int(n_stressors * seconds * 2 + 2 * n_stressors + 10)


def _job(exe: str, tmp: Path, name: str, job: str, limit: int) -> str:
    """Run one job file (killed after ``limit`` seconds); the YAML it wrote ('' when none)."""
    (tmp / f"{name}.job").write_text(job)
    yml = tmp / f"{name}.yaml"
    try:
        subprocess.run([exe, "--job", str(tmp / f"{name}.job"), "--yaml", str(yml), "--temp-path", str(tmp)],
                       capture_output=True, text=True, timeout=limit, check=False, cwd=tmp)
    except subprocess.TimeoutExpired:
        pass  # what it wrote so far is judged by the parser (truncated: every stressor failed)
    return yml.read_text() if yml.exists() else ""
