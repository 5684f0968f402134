"""Series verdicts for the site, judged once per changed series, and the keys that let an unchanged page stay.

Judging a series and reading its points take about 9 ms each (1,000 series: most of an unchanged republish). A
series' verdict is stored in the site cache (:mod:`quiho.store.site_cache`) under the hash of its stored rows'
digest and the detector options; its page is kept as written when its page key (that hash, the series' open
alerts, the site title and the renderer's own source) is the one the previous publish recorded for it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from quiho._version import __version__
from quiho.publish.options import PublishOptions

__all__ = ["verdict_doc", "verdict_from", "series_keys", "page_key", "CACHE_VERSION"]

#: Bumped when the stored document changes shape.
CACHE_VERSION = 1


def _plain(x: Any) -> Any:
    """Turn numpy scalars into Python numbers (anything else into text) for ``json.dumps``."""
    return x.item() if hasattr(x, "item") else str(x)


def verdict_doc(verdict: Any) -> dict[str, Any]:
    """A SeriesVerdict as a JSON document (its fields; NaN kept as JSON's ``NaN``); the alert is not kept."""
    d = dataclasses.asdict(dataclasses.replace(verdict, alert=None, event=""))
    return json.loads(json.dumps(d, default=_plain))


def verdict_from(doc: dict[str, Any]) -> Any:
    """The SeriesVerdict of a stored document, or None when its fields no longer fit (then it is judged again)."""
    from quiho.history import ChangePoint, Detection, NewestCheck, SeriesVerdict

    try:
        det = dict(doc["detection"])
        det["change_points"] = tuple(ChangePoint(**c) for c in det["change_points"])
        newest = {**doc["newest"], "ci": tuple(doc["newest"]["ci"])}
        return SeriesVerdict(**{**doc, "detection": Detection(**det), "newest": NewestCheck(**newest)})
    except (KeyError, TypeError, ValueError):
        return None


def series_keys(digests: dict[str, tuple[object, ...]], options: PublishOptions) -> dict[str, str]:
    """Series name → key of its verdict: its rows' digest, the detector options, the quiho version."""
    head = json.dumps([CACHE_VERSION, __version__, options.method, options.alpha, options.min_size,
                       options.magnitude_floor])
    return {name: hashlib.sha256(f"{head}\0{name}\0{d!r}".encode("utf-8", "surrogatepass")).hexdigest()
            for name, d in digests.items()}


@functools.cache
def _renderer() -> str:
    """SHA-256 of the site's own source: a page written by other code is written again."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()


def page_key(key: str, alerts: list[Any], options: PublishOptions) -> str:
    """Key of a series page: its verdict key, its open alerts (every field), the site title, the renderer."""
    alert_text = json.dumps([dataclasses.asdict(a) for a in alerts], default=_plain, sort_keys=True)
    return hashlib.sha256(f"{key}\0{alert_text}\0{options.title}\0{_renderer()}\0{__version__}"
                          .encode("utf-8", "surrogatepass")).hexdigest()
