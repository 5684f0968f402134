"""Escaping and naming: the one place where data becomes markup, script data or a file name.

Every name or value from the store reaches a page through :func:`text` (element text and quoted attributes) or
:func:`json_script` (data for the page's script); file names come from :func:`page_file`, a hash of the name,
so no name (``../``, ``/``, NUL, 5,000 characters) can choose where a file goes.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
from typing import Any

from quiho._text import printable

__all__ = ["text", "num", "pct", "json_script", "page_file", "key_bytes"]

#: Lone surrogates: what Python makes of bytes that were not UTF-8; a page cannot be written with them raw.
_SURROGATE = re.compile("[\ud800-\udfff]")


def text(value: object, limit: int | None = None, *, lines: bool = False) -> str:
    r"""``value`` as HTML text, safe inside an element and inside a single- or double-quoted attribute.

    Control characters become visible escapes (:func:`quiho._text.printable`), lone surrogates (bytes that were
    not UTF-8) ``\udcNN``, then ``& < > " '`` become entities. ``limit`` shortens the visible text to that many
    characters plus ``…`` (the full name stays on the page that is about it). ``lines=True`` keeps newlines (a
    ``<pre>`` block of our own JSON); names never get it.
    """
    if lines:
        return "\n".join(text(part, limit) for part in str(value).split("\n"))
    s = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", printable(value))
    if limit is not None and len(s) > limit:
        s = s[:limit] + "…"
    return html.escape(s, quote=True)


def num(x: float | None, fmt: str = ".4g") -> str:
    """A number for a table cell; ``–`` for None, NaN or ±inf (never the word ``nan``)."""
    if x is None or not isinstance(x, int | float) or not math.isfinite(x):
        return "–"
    return format(x, fmt)


def pct(x: float | None) -> str:
    """A relative change as ``+12.3%``; ``–`` when unknown."""
    return num(x, "+.1%")


def json_script(element_id: str, data: Any) -> str:
    r"""``<script type="application/json">`` holding ``data``, safe whatever strings it carries.

    ``<``, ``>`` and ``&`` are written as ``\u003c`` ... so no ``</script>`` or ``<!--`` can end or change the
    element; U+2028/U+2029 likewise. Non-finite numbers become null (JSON has none). The page reads it with
    ``JSON.parse(el.textContent)``, never ``eval``.
    """
    try:  # the common case, all numbers finite, without walking the data
        doc = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    except ValueError:
        doc = json.dumps(_finite(data), ensure_ascii=True, separators=(",", ":"))
    doc = doc.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"<script type='application/json' id='{text(element_id)}'>{doc}</script>"


def _finite(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


def key_bytes(name: str) -> bytes:
    """UTF-8 bytes of ``name``; lone surrogates (undecodable bytes) keep their identity via ``surrogatepass``."""
    return name.encode("utf-8", "surrogatepass")


def page_file(kind: str, name: str) -> str:
    """File name of the page about ``name``: ``<kind>-<20 hex digits of its SHA-256>.html``.

    Derived from a hash, never from the name: only ``[a-z0-9-.]`` reach the file system or an ``href``, and the
    same name always maps to the same file (stable links across publishes).
    """
    if not re.fullmatch(r"[a-z]+", kind):
        raise ValueError(f"page kind must be lower-case letters, got {kind!r}")
    return f"{kind}-{hashlib.sha256(key_bytes(name)).hexdigest()[:20]}.html"
