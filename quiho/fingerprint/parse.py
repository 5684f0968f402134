"""stress-ng YAML output → one typed result per *requested* stressor.

Exit code 0 is not success (measured with stress-ng 0.15.06): a stressor with no
``metrics`` entry, zero bogo-ops, or a wall time far from its ``-t`` is marked
failed with a reason and never given a value. Results are keyed by the name
that was requested, because stress-ng writes the ``null`` stressor unquoted and
YAML reads it back as None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import yaml

from quiho.errors import FingerprintParseError

__all__ = ["ResultStatus", "StressorResult", "parse_stressng_yaml", "running_stressor", "last_started"]

#: A run shorter than this share of ``-t`` ended early (e.g. stream in a small memory cgroup: 0.07 s of 1 s).
EARLY_FRACTION = 0.5
#: A run longer than ``OVERRUN_FACTOR * t + OVERRUN_SLACK_S`` overran its budget far beyond the
#: 1.7-2.5x seen for resources/mmaphuge at -t 1 (stress-ng 0.15.06).
OVERRUN_FACTOR = 3.0
OVERRUN_SLACK_S = 5.0


class ResultStatus(StrEnum):
    """Outcome of one stressor run (stored as the ``status`` of its measurement)."""

    OK = "ok"
    FAILED = "failed"


@dataclass(frozen=True)
class StressorResult:
    """One stressor of one repetition on one host.

    ``value`` is bogo-ops per second of real time (None when failed); ``extra``
    keeps the usr+sys-time rate, wall time, CPU share and the raw counters.
    """

    stressor: str
    status: ResultStatus
    value: float | None
    reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _num(entry: dict[str, Any], key: str) -> float | None:
    v = entry.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def parse_stressng_yaml(
    text: str,
    requested: list[str] | tuple[str, ...],
    seconds: float,
    *,
    host: str,
    path: str,
) -> tuple[list[StressorResult], dict[str, Any]]:
    """Parse one stress-ng ``--yaml`` file.

    Parameters
    ----------
    text : str
        File content.
    requested : sequence of str
        Stressors the job asked for, in order; one result is returned for each.
    seconds : float
        The per-stressor ``-t`` of the job, to judge wall time.
    host, path : str
        Named in error messages.

    Returns
    -------
    results : list of StressorResult
        One per requested stressor, same order.
    system_info : dict
        stress-ng's ``system-info`` block (empty if absent).

    Raises
    ------
    FingerprintParseError
        The file is empty, not YAML, truncated, or not a stress-ng result document.
    """
    where = f"host {host}, file {path}"
    if not text.strip():
        raise FingerprintParseError(f"{where}: empty stress-ng result file")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FingerprintParseError(f"{where}: not valid YAML ({str(exc).splitlines()[0]})") from exc
    if not isinstance(doc, dict):
        raise FingerprintParseError(f"{where}: expected a YAML mapping with 'metrics', got {type(doc).__name__}")
    # stress-ng ends its document with '...'; a file cut short still parses, so look for the end marker.
    if not re.search(r"^\.\.\.\s*$", text, flags=re.M):
        raise FingerprintParseError(f"{where}: truncated stress-ng result (no end-of-document '...' marker)")
    metrics = doc.get("metrics", [])
    if metrics is None:
        metrics = []
    if not isinstance(metrics, list):
        raise FingerprintParseError(f"{where}: 'metrics' is a {type(metrics).__name__}, expected a list")
    by_name: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(metrics):
        if not isinstance(entry, dict) or "stressor" not in entry:
            raise FingerprintParseError(f"{where}: metrics entry {i} has no 'stressor' field")
        name = "null" if entry["stressor"] is None else str(entry["stressor"])
        by_name.setdefault(name, entry)
    info = doc.get("system-info") or {}
    results = [_judge(s, by_name.get(s), seconds) for s in requested]
    return results, info if isinstance(info, dict) else {}


def _failed(stressor: str, reason: str, extra: dict[str, Any]) -> StressorResult:
    return StressorResult(stressor, ResultStatus.FAILED, None, reason, extra)


def _judge(stressor: str, entry: dict[str, Any] | None, seconds: float) -> StressorResult:
    if entry is None:
        return _failed(stressor, "no metrics in stress-ng output (skipped or not run)", {})
    ops = _num(entry, "bogo-ops")
    rate = _num(entry, "bogo-ops-per-second-real-time")
    wall = _num(entry, "wall-clock-time")
    usr = _num(entry, "user-time")
    sys_ = _num(entry, "system-time")
    extra: dict[str, Any] = {
        "bogo_ops": ops,
        "rate_usr_sys": _num(entry, "bogo-ops-per-second-usr-sys-time"),
        "wall_s": wall,
        "user_s": usr,
        "system_s": sys_,
        "cpu_share": ((usr or 0.0) + (sys_ or 0.0)) / wall if wall else None,
        "cpu_usage_per_instance": _num(entry, "cpu-usage-per-instance"),
        "max_rss_kb": _num(entry, "max-rss"),
        "seconds": seconds,
    }
    if ops is None or rate is None:
        return _failed(stressor, "metrics entry lacks bogo-ops or the real-time rate", extra)
    if ops <= 0:
        return _failed(stressor, "0 bogo-ops (one operation took longer than -t?)", extra)
    if wall is None:
        return _failed(stressor, "metrics entry lacks wall-clock-time", extra)
    if wall < EARLY_FRACTION * seconds:
        return _failed(stressor, f"ended early: wall {wall:.2f} s for -t {seconds:g} (killed or refused?)", extra)
    if wall > OVERRUN_FACTOR * seconds + OVERRUN_SLACK_S:
        return _failed(stressor, f"overran: wall {wall:.2f} s for -t {seconds:g}", extra)
    return StressorResult(stressor, ResultStatus.OK, rate, None, extra)


_STARTED = re.compile(r"\]\s+([a-z0-9-]+): started \[(\d+)\]")
_EXITED = re.compile(r"\]\s+([a-z0-9-]+): exited \[(\d+)\]")


def running_stressor(log_text: str) -> str | None:
    """From a ``-v`` stress-ng log, the stressor that started last and never exited (the one that hung)."""
    started: list[tuple[str, str]] = []
    exited: set[str] = set()
    for line in log_text.splitlines():
        m = _STARTED.search(line)
        if m:
            started.append((m.group(1), m.group(2)))
            continue
        m = _EXITED.search(line)
        if m:
            exited.add(m.group(2))
    for name, pid in reversed(started):
        if pid not in exited:
            return name
    return None


def last_started(log_text: str) -> str | None:
    """From a ``-v`` stress-ng log, the stressor that started last.

    In a sequential job killed by an outer timeout this is the one that was
    running when the timeout hit, even if stress-ng, on SIGTERM, still managed to
    reap it and log its exit.
    """
    last = None
    for line in log_text.splitlines():
        m = _STARTED.search(line)
        if m:
            last = m.group(1)
    return last
