"""Fingerprint history per host × stressor, and drift alerts on it.

Every stored fingerprint run contributes, per host and stressor, the median
over its repetitions. Each (host, stressor) series, ordered by run start
time, goes through a history detector (default ``auto``: rank-based binary
segmentation with Pettitt's test, see :mod:`quiho.history`). A change is an
alert when it is large (``|after/before - 1| ≥ min_change``) and significant
after a Bonferroni correction over all the series tested (a fleet of 6 hosts ×
40 stressors is 240 tests; without the correction noise alone would alert).

The default test (``method="maxt"``) suits fingerprints, whose noise is
multiplicative and close to Gaussian on the log scale: the largest two-sample
t statistic over every split of the log series, calibrated by permuting the
series (so the p-value accounts for searching over the split). Any detector of
:data:`quiho.history.DETECTORS` can be chosen instead.

It also reports hosts whose hardware group changed between the first and the
latest run (look-alikes that appeared, or hosts that split from their group),
and stale hosts without a fingerprint newer than ``max_age``.

It lives with the scheduled fingerprinting it watches, above the analyses it calls (:mod:`quiho.history`,
:mod:`quiho.irup`), which themselves import :mod:`quiho.fingerprint`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from quiho._text import printable
from quiho.errors import NotEnoughData
from quiho.fingerprint.catalog import load_catalog
from quiho.history import detect
from quiho.irup.groups import hardware_groups
from quiho.store import Store
from quiho.store.fingerprints import ok_measurements

__all__ = [
    "StressorDrift", "GroupChange", "StaleHost", "DriftReport", "fingerprint_history", "detect_drift", "drift_warnings",
    "max_t_split",
]


@dataclass(frozen=True)
class StressorDrift:
    """One stressor of one host changed level at one run."""

    host: str
    stressor: str
    primary: str
    index: int
    batch: str
    when: str
    before: float
    after: float
    magnitude: float
    p_value: float
    p_adjusted: float


@dataclass(frozen=True)
class GroupChange:
    """A host's hardware group changed between the first and the latest run."""

    host: str
    kind: str  # "look-alike" (joined others) or "split" (left its group)
    others: tuple[str, ...]


@dataclass(frozen=True)
class StaleHost:
    """A host without a fingerprint newer than the maximum age."""

    host: str
    last_fingerprint: str | None


@dataclass(frozen=True)
class DriftReport:
    """Drift of a fleet's fingerprints over its stored history."""

    runs: int
    hosts: int
    series_tested: int
    method: str
    alpha: float
    min_change: float
    drifts: tuple[StressorDrift, ...]
    group_changes: tuple[GroupChange, ...]
    stale: tuple[StaleHost, ...]
    not_meaningful: tuple[str, ...]

    def drifted_hosts(self) -> dict[str, list[StressorDrift]]:
        """Drifts grouped by host."""
        out: dict[str, list[StressorDrift]] = {}
        for d in self.drifts:
            out.setdefault(d.host, []).append(d)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (``quiho fleet drift --json``)."""
        return {
            "schema_version": 1, "runs": self.runs, "hosts": self.hosts, "series_tested": self.series_tested,
            "method": self.method, "alpha": self.alpha, "min_change": self.min_change,
            "drifted_hosts": {
                h: [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in d.__dict__.items()} for d in ds]
                for h, ds in self.drifted_hosts().items()
            },
            "group_changes": [g.__dict__ | {"others": list(g.others)} for g in self.group_changes],
            "stale": [s.__dict__ for s in self.stale],
            "not_meaningful": list(self.not_meaningful),
        }


def fingerprint_history(store: Store, *, source: str = "fleet") -> pd.DataFrame:
    """Long table: one row per (run, host, stressor) with the median over repetitions.

    Columns: ``run_id, batch, started_at, host, stressor, value``; ordered by start time.
    """
    df = ok_measurements(store, source)
    if df.empty:
        return df.assign(value=pd.Series(dtype=float))
    med = df.groupby(["run_id", "batch", "started_at", "host", "stressor"], as_index=False)["value"].median()
    return med.sort_values(["started_at", "run_id", "host", "stressor"]).reset_index(drop=True)


@dataclass(frozen=True)
class _Split:
    index: int
    before: float
    after: float
    magnitude: float
    p_value: float


def max_t_split(values: np.ndarray, *, min_segment: int = 3, n_perm: int = 9999, random_state: int = 0) -> _Split:
    """Most likely single level shift of ``log(values)`` and its permutation p-value.

    The statistic is ``max_k |mean(x[:k]) - mean(x[k:])| / (s_pooled * sqrt(1/k + 1/(n-k)))``
    over ``min_segment ≤ k ≤ n - min_segment``; its p-value is the share of
    ``n_perm`` random permutations (plus the data) reaching it, so it is valid
    whatever the split chosen (smallest possible p: ``1 / (n_perm + 1)``).

    References
    ----------
    Hawkins, D. M. (1977). Testing a sequence of observations for a shift in location. JASA 72, 180-186.
    Antoch, J., Hušková, M. (2001). Permutation tests in change point analysis. Stat. Prob. Letters 53, 37-46.
    """
    x = np.log(np.asarray(values, dtype=float))
    n = len(x)
    ks = np.arange(min_segment, n - min_segment + 1)
    if len(ks) == 0:
        return _Split(-1, float("nan"), float("nan"), float("nan"), 1.0)

    def stat(m: np.ndarray) -> np.ndarray:  # m: (b, n) -> (b, len(ks)) t statistics
        c1 = np.cumsum(m, axis=1)[:, ks - 1]
        c2 = np.cumsum(m**2, axis=1)[:, ks - 1]
        tot, tot2 = m.sum(axis=1, keepdims=True), (m**2).sum(axis=1, keepdims=True)
        m1, m2 = c1 / ks, (tot - c1) / (n - ks)
        ss = (c2 - ks * m1**2) + ((tot2 - c2) - (n - ks) * m2**2)
        sp = np.sqrt(np.maximum(ss, 1e-300) / (n - 2))
        return np.abs(m1 - m2) / (sp * np.sqrt(1 / ks + 1 / (n - ks)))

    obs = stat(x[None, :])[0]
    k_best = int(np.argmax(obs))
    rng = np.random.default_rng(random_state)
    perms = rng.permuted(np.broadcast_to(x, (n_perm, n)).copy(), axis=1)
    null = stat(perms).max(axis=1)
    p = (1 + int((null >= obs[k_best] - 1e-12).sum())) / (n_perm + 1)
    k = int(ks[k_best])
    raw = np.asarray(values, dtype=float)
    before, after = float(raw[:k].mean()), float(raw[k:].mean())
    return _Split(k, before, after, after / before - 1 if before else float("nan"), p)


def _group_changes(hist: pd.DataFrame) -> list[GroupChange]:
    runs = hist.drop_duplicates("run_id")[["run_id", "started_at"]].sort_values(["started_at", "run_id"])
    if len(runs) < 2:
        return []

    def mates(run_id: int) -> dict[str, set[str]]:
        w = hist[hist["run_id"] == run_id].pivot_table(index="host", columns="stressor", values="value").dropna(axis=1)
        if len(w) < 2 or w.shape[1] == 0:
            return {}
        hw = hardware_groups(w.reset_index(drop=True), w.index.to_numpy())
        members = hw.members()
        return {h: set(members[g]) - {h} for h, g in hw.unit_groups.items()}

    first, last = mates(int(runs["run_id"].iloc[0])), mates(int(runs["run_id"].iloc[-1]))
    out = []
    for h in sorted(set(first) & set(last)):
        joined = (last[h] - first[h]) & set(first)
        left = (first[h] - last[h]) & set(last)
        if joined:
            out.append(GroupChange(h, "look-alike", tuple(sorted(joined))))
        if left:
            out.append(GroupChange(h, "split", tuple(sorted(left))))
    return out


def detect_drift(
    store: Store,
    *,
    method: str = "maxt",
    alpha: float = 0.05,
    min_change: float = 0.05,
    min_runs: int = 8,
    max_age: timedelta | None = None,
    now: datetime | None = None,
    source: str = "fleet",
) -> DriftReport:
    """Find hosts whose fingerprints changed over the stored history.

    Over 80 lines only by its parameters and their documentation (the code is 46 lines).

    Parameters
    ----------
    store : Store
    method : str, default "maxt"
        ``maxt`` (permutation-calibrated max-t split of the log series, see :func:`max_t_split`) or a
        history detector from :data:`quiho.history.DETECTORS`.
    alpha : float, default 0.05
        Family-wise error rate over all (host, stressor) series (Bonferroni): the chance that a steady
        fleet raises any alert at all is at most ``alpha``.
    min_change : float, default 0.05
        Smallest relative level change reported (5 %).
    min_runs : int, default 8
        Series shorter than this are listed as not meaningful, not tested.
    max_age : timedelta, optional
        Hosts whose newest fingerprint is older are reported stale.
    now : datetime, optional
        Reference time for staleness (default: current UTC time).
    source : str, default "fleet"

    Returns
    -------
    DriftReport

    Raises
    ------
    NotEnoughData
        No fingerprint history at all.
    """
    hist = fingerprint_history(store, source=source)
    if hist.empty:
        raise NotEnoughData(f"no '{source}' fingerprints in the store: run quiho fingerprint first")
    catalog = load_catalog()
    runs = hist.drop_duplicates("run_id")
    cands: list[tuple[str, str, Any, pd.DataFrame]] = []
    short: list[str] = []
    tested = 0
    for (host, stressor), s in hist.groupby(["host", "stressor"], sort=True):
        s = s.sort_values(["started_at", "run_id"])
        if len(s) < min_runs:
            short.append(f"{host}/{stressor}: {len(s)} runs (< {min_runs})")
            continue
        tested += 1
        if method == "maxt":
            seed = int.from_bytes(f"{host}/{stressor}".encode()[:8].ljust(8, b"\0"), "little") % (2**32)
            cands.append((str(host), str(stressor), max_t_split(s["value"].to_numpy(), random_state=seed), s))
            continue
        values = pd.Series(s["value"].to_numpy(dtype=float), index=s["batch"].astype(str).to_numpy())
        for cp in detect(values, method).change_points:
            cands.append((str(host), str(stressor), cp, s))
    drifts = []
    for host, stressor, cp, s in cands:
        p_adj = min(1.0, float(cp.p_value) * max(tested, 1))
        if cp.index >= 0 and p_adj < alpha and np.isfinite(cp.magnitude) and abs(cp.magnitude) >= min_change:
            row = s.iloc[cp.index]
            drifts.append(StressorDrift(
                host=host, stressor=stressor, primary=catalog.primary(stressor), index=int(cp.index),
                batch=str(row["batch"]), when=str(row["started_at"]), before=float(cp.before), after=float(cp.after),
                magnitude=float(cp.magnitude), p_value=float(cp.p_value), p_adjusted=p_adj,
            ))
    stale: list[StaleHost] = []
    if max_age is not None:
        now = now or datetime.now(UTC)
        last = hist.groupby("host")["started_at"].max()
        for host, ts in last.items():
            t = datetime.fromisoformat(str(ts))
            if t.tzinfo is None:
                t = t.replace(tzinfo=UTC)
            if now - t > max_age:
                stale.append(StaleHost(str(host), str(ts)))
    return DriftReport(
        runs=len(runs), hosts=hist["host"].nunique(), series_tested=tested, method=method, alpha=alpha,
        min_change=min_change, drifts=tuple(sorted(drifts, key=lambda d: (d.host, d.index, d.stressor))),
        group_changes=tuple(_group_changes(hist)), stale=tuple(stale), not_meaningful=tuple(short),
    )


def drift_lines(rep: DriftReport) -> list[str]:
    """The terminal text of ``quiho fleet drift`` (host names escaped with :func:`quiho._text.printable`)."""
    out = [f"{rep.runs} fingerprint runs, {rep.hosts} hosts, {rep.series_tested} host×stressor series tested "
           f"({rep.method}, family-wise α = {rep.alpha}, floor {rep.min_change:.0%})"]
    by_host = rep.drifted_hosts()
    if not by_host:
        out.append("no drift")
    for host, ds in by_host.items():
        out.append(f"{printable(host)}: {len(ds)} stressor(s) changed")
        out.extend(f"  {d.stressor:12} ({d.primary}) {d.magnitude:+.1%} at run {printable(d.batch)} ({d.when}), "
                   f"p = {d.p_adjusted:.3g} (Bonferroni)" for d in ds)
    out.extend(f"{printable(g.host)}: {'became a look-alike of' if g.kind == 'look-alike' else 'split from'} "
               f"{', '.join(map(printable, g.others))}" for g in rep.group_changes)
    out.extend(f"{printable(s.host)}: stale (last fingerprint {s.last_fingerprint})" for s in rep.stale)
    if rep.not_meaningful:
        out.append(f"not tested (too few runs): {len(rep.not_meaningful)} series")
    return out


def drift_warnings(store: Store, hosts: list[str] | None = None, **kwargs: Any) -> list[str]:
    """One line per host (of ``hosts``, default all) whose fingerprint drifted, for other commands to show.

    Returns an empty list when there is no history to judge (fewer runs than
    the detector needs): absence of evidence is not reported as drift.
    """
    try:
        rep = detect_drift(store, **kwargs)
    except NotEnoughData:
        return []
    out = []
    for host, ds in rep.drifted_hosts().items():
        if hosts is not None and host not in hosts:
            continue
        latest = max(d.when for d in ds)
        what = ", ".join(f"{d.stressor} {d.magnitude:+.0%}" for d in ds[:5])
        out.append(f"host {host}'s fingerprint drifted ({what}; since {latest}): its older runs describe "
                   f"another machine")
    for g in rep.group_changes:
        if hosts is None or g.host in hosts:
            out.append(f"host {g.host} {'became a look-alike of' if g.kind == 'look-alike' else 'split from'} "
                       f"{', '.join(g.others)} since its first fingerprint")
    return out
