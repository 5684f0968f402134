"""Training data for an IRUP: fingerprint rows joined with an application's metric.

A row is one (batch, host, repetition). Fingerprint repetition *i* is paired
with application repetition *i* of the same host and batch, as in the paper;
where the fingerprint has no such repetition, the host's median fingerprint
of that run is used instead. Rows missing any stressor are dropped (the paper's
rule), and the drop is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from quiho.errors import NotEnoughData, UnknownTargetError
from quiho.store import Store
from quiho.store.irup import app_values, fingerprint_values, target_counts

__all__ = ["TargetData", "load_target", "list_targets", "parse_target", "target_name", "load_fingerprints"]


@dataclass(frozen=True)
class TargetData:
    """Fingerprints ``X`` (rows × stressors) and the metric ``y`` for one target.

    ``meta`` has one row per row of ``X`` with columns ``batch``, ``host``,
    ``repetition``, ``run_id`` and ``paired`` (True when the fingerprint
    repetition matched the application repetition, False when a median was used).
    """

    target: str
    X: pd.DataFrame
    y: pd.Series
    meta: pd.DataFrame
    unit: str
    higher_is_better: bool
    dropped_rows: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def parse_target(target: str) -> tuple[str, str, str]:
    """Split ``APP[@VERSION][/TEST]`` into (application, version, test).

    ``hpccg`` → ('hpccg', '', 'hpccg'); ``redisbench/SET`` → ('redisbench', '', 'SET');
    ``stream@nadds1/runtime`` → ('stream', 'nadds1', 'runtime'). A missing test
    means "the test named like the application" (or, for versioned targets,
    the only test that version has).
    """
    app, _, test = target.partition("/")
    app, _, version = app.partition("@")
    if not app:
        raise UnknownTargetError(f"empty target name in {target!r}")
    return app, version, test


def list_targets(store: Store) -> pd.DataFrame:
    """Every target with data: application, version, test, rows, hosts, unit."""
    df = target_counts(store)
    df["target"] = [target_name(a, v, t) for a, v, t in zip(df.application, df.version, df.test, strict=True)]
    return df


def target_name(app: str, version: str, test: str) -> str:
    """The target's name: ``app@version``, with ``/test`` when the test is not named after the application."""
    base = f"{app}@{version}" if version else app
    return base if test == app else f"{base}/{test}"


def load_fingerprints(store: Store, run_ids: list[int]) -> pd.DataFrame:
    """Long table of ok measurements (run_id, batch, host, repetition, stressor, value)."""
    return fingerprint_values(store, run_ids)


def _target_runs(store: Store, target: str, batch: str | None) -> pd.DataFrame:
    """The application runs ``target`` names (its test chosen when the name leaves one open).

    Raises
    ------
    UnknownTargetError
        No runs match, or the name fits several tests.
    """
    app, version, test = parse_target(target)
    apps = app_values(store, app, version, test, batch)
    if apps.empty:
        # A name with '/' or '@' inside the benchmark or test (listed by `targets` as is) splits
        # ambiguously: take the listed target of exactly that name.
        listed = list_targets(store)
        hit = listed[listed["target"] == target]
        if len(hit):
            app, version, test = (str(hit.iloc[0][k]) for k in ("application", "version", "test"))
            apps = app_values(store, app, version, test, batch)
    if not test and not apps.empty:
        tests = sorted(apps["test"].unique())
        if app in tests:
            apps = apps[apps["test"] == app]
        elif len(tests) == 1:
            pass
        else:
            choices = ", ".join(f"{target}/{t}" for t in tests[:8])
            raise UnknownTargetError(f"target {target!r} is ambiguous: name one of {choices}")
    if apps.empty:
        known = list_targets(store)["target"].tolist()
        close = [t for t in known if t.startswith(app)][:8] or known[:8]
        where = f" in batch {batch}" if batch else ""
        known_text = f"known targets include: {', '.join(close)}" if close else "the store has no application runs yet"
        raise UnknownTargetError(f"no data for target {target!r}{where}; {known_text}")
    return apps


def load_target(store: Store, target: str, *, batch: str | None = None) -> TargetData:
    """Assemble the training rows of ``target``.

    Parameters
    ----------
    store : Store
        Open store.
    target : str
        ``APP[@VERSION][/TEST]``; see :func:`parse_target`.
    batch : str, optional
        Only use rows of this batch (fingerprint run label).

    Raises
    ------
    UnknownTargetError
        No successful application runs match ``target`` (the message lists close names).
    NotEnoughData
        No row has both a complete fingerprint and a metric value.
    """
    apps = _target_runs(store, target, batch)
    apps = apps[apps["run_id"].notna()].copy()
    apps["run_id"] = apps["run_id"].astype(int)
    fp = load_fingerprints(store, sorted(apps["run_id"].unique().tolist()))
    wide = fp.pivot_table(index=["run_id", "host", "repetition"], columns="stressor", values="value", aggfunc="mean")
    med = wide.groupby(level=["run_id", "host"]).median()
    rows, meta = [], []
    for rec in apps.itertuples(index=False):
        key = (rec.run_id, rec.host, rec.repetition)
        if key in wide.index:
            vec, paired = wide.loc[key], True
        elif (rec.run_id, rec.host) in med.index:
            vec, paired = med.loc[(rec.run_id, rec.host)], False
        else:
            continue
        rows.append(vec.to_numpy(dtype=float))
        meta.append((rec.batch, rec.host, rec.repetition, rec.run_id, paired, rec.value))
    if not rows:
        raise NotEnoughData(f"target {target!r} has no application run with a fingerprint of the same host")
    X = pd.DataFrame(np.vstack(rows), columns=wide.columns.astype(str))
    m = pd.DataFrame(meta, columns=["batch", "host", "repetition", "run_id", "paired", "value"])
    complete = X.notna().all(axis=1).to_numpy()
    # Stressors missing everywhere for this target (e.g. not in this battery) are not a reason to drop rows.
    all_missing = X.columns[X.isna().all(axis=0)]
    if len(all_missing):
        X = X.drop(columns=all_missing)
        complete = X.notna().all(axis=1).to_numpy()
    dropped = int((~complete).sum())
    X = X.loc[complete].reset_index(drop=True)
    m = m.loc[complete].reset_index(drop=True)
    if X.empty:
        raise NotEnoughData(f"target {target!r}: every row lacks at least one stressor value")
    y = m.pop("value").astype(float).rename(target)
    notes = []
    if dropped:
        notes.append(f"{dropped} row(s) dropped for missing stressor values")
    if (~m["paired"]).any():
        notes.append(f"{int((~m['paired']).sum())} row(s) used the host's median fingerprint (no matching repetition)")
    return TargetData(
        target=target, X=X, y=y, meta=m, unit=str(apps["unit"].iloc[0]),
        higher_is_better=bool(apps["higher_is_better"].iloc[0]), dropped_rows=dropped, notes=tuple(notes),
    )
