"""``quiho fingerprint --quick-local``: the quick fingerprint of the machine quiho runs on (hooked into _fleet)."""

from __future__ import annotations

from pathlib import Path

from quiho._text import printable
from quiho.cli._common import emit_json, err


def quick_local(store: Path | None, battery: str, seconds: int | None, repetitions: int | None, max_age_h: float,
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
