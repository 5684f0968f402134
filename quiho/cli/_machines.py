"""``quiho fingerprint --quick-local``: the quick fingerprint of the machine quiho runs on (hooked into _fleet)."""

from __future__ import annotations

from pathlib import Path

from quiho._text import printable
from quiho.cli._common import emit_json, err


def quick_local(store: str | None, battery: str, seconds: int | None, repetitions: int | None, max_age_h: float,
                json_out: bool) -> None:
    """Measure (or reuse) this machine's quick fingerprint and print it."""
    from quiho.fingerprint.local import LocalFingerprintOptions, quick_local_fingerprint
    from quiho.store import open_store

    opts = LocalFingerprintOptions(battery="quick" if battery == "default" else battery, seconds=seconds,
                                   repetitions=repetitions, max_age_s=max_age_h * 3600.0)
    with open_store(store) as st:
        fp = quick_local_fingerprint(st, opts)
    if json_out:
        emit_json(fp.to_dict())
        return
    how = f"reused (measured {fp.age_s / 3600:.1f} h ago)" if fp.reused else "measured now"
    print(printable(f"quick local fingerprint of {fp.host}: run id {fp.run_id}, {how}, state {fp.state[:12]}"))
    for s, v in fp.values.items():
        print(printable(f"  {s:<12} {v:>14.2f} bogo-ops/s"))
    if fp.failed:
        err(printable(f"warning: failed stressors (kept as failed): {', '.join(fp.failed)}"))


def record_import_machine(store: str | None, series: list[str], revision: str | None, quick_fp: bool,
                          host: str | None, max_age_h: float) -> None:
    """After ``history import``: record the machine (``--fingerprint`` or ``--host``) on the imported revisions.

    ``revision`` None: every revision of the series (a CSV or the store's runs).
    """
    from quiho.errors import UsageError
    from quiho.history.normalise import attach_machine, local_machine, stored_host
    from quiho.store import open_store

    if quick_fp and host is not None:
        raise UsageError("give --fingerprint (this machine) or --host NAME (a stored host), not both")
    with open_store(store) as st:
        m = local_machine(st, max_age_h * 3600.0) if quick_fp else stored_host(st, str(host))
        n = attach_machine(st, series, None if revision is None else [revision], m)
    fp = f"fingerprint run {m.fingerprint_run_id}" if m.fingerprint_run_id is not None else "no fingerprint"
    err(printable(f"recorded machine {m.host} ({fp}) on {n} revision(s)"))
    if m.note:
        err(printable(f"warning: {m.note}"))


def normalised_detect(store: str | None, name: str, opts: object, fmt: str, json_out: bool,
                      newest_alpha: float | None = None) -> bool:
    """``history detect SERIES --normalise``; whether a change point was found or the newest revision regresses.

    The machine effect is fitted twice, once per question, because neither fit can answer the other's. The newest
    revision's check needs an effect fitted without it (:func:`~quiho.history.normalise.check_newest_normalised`):
    fitted with it, part of its regression becomes its machine's factor and is divided out (measured in
    tests/history/test_normalise_newest.py). The change points are the whole history's (:func:`detect_normalised`):
    the effect is fitted jointly with the segmentation so that it absorbs no step, and a step only the newest
    revision makes placeable (``min_size`` revisions after it) is a segment bound the fit before it never saw.
    """
    from quiho.history import GateOptions, load_history
    from quiho.history.normalise import (
        NormaliseOptions,
        check_newest_normalised,
        detect_normalised,
        normalised_lines,
        normalised_markdown,
        revision_fingerprints,
    )
    from quiho.store import open_store

    assert isinstance(opts, NormaliseOptions)
    with open_store(store, create=False) as st:
        h = load_history(st, name)
        fps = revision_fingerprints(st, name, h.revisions)
    nd = detect_normalised(h, fps, opts)
    alpha = GateOptions().newest_alpha if newest_alpha is None else newest_alpha  # the gate's level
    nn = check_newest_normalised(h, fps, opts, alpha=alpha) if len(h) > 1 else None
    if json_out:
        emit_json({**nd.to_dict(), "newest": None if nn is None else nn.to_dict()})
    elif fmt == "markdown":
        # a revision's kind (hardware type) when its facts give one: what the newest-revision check knows it by
        print(normalised_markdown(nd, [None if m is None else m.identity for m in fps], nn), end="")
    else:
        print("\n".join(normalised_lines(nd, nn)))
    return bool(nd.detection.change_points) or (nn is not None and nn.check.verdict == "regression")


def normalised_plot(store: str | None, name: str, output: Path, opts: object) -> None:
    """``history plot SERIES --normalise -o FILE``: raw and normalised side by side."""
    from quiho.history.normalise import NormaliseOptions, detect_series_normalised, plot_normalised
    from quiho.store import open_store

    assert isinstance(opts, NormaliseOptions)
    with open_store(store, create=False) as st:
        nd = detect_series_normalised(st, name, opts)
    err(printable(f"wrote {plot_normalised(nd, output)} ({nd.reason})"))
