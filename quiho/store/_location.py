"""Where a store lives: a SQLite file or a PostgreSQL database URL, and how to name it without its password.

``--store`` and ``$QUIHO_STORE`` take either a file path or ``postgresql://[user[:password]@][host][:port]/db``
(``postgres://`` and ``postgresql+psycopg://`` too; ``?service=NAME`` names a libpq service). Credentials come
from the URL, a libpq service file, ``PGPASSFILE`` or the ``PG*`` environment, as libpq reads them. Every name a
message, log or ``repr`` shows is :attr:`StoreLocation.label`, which never holds the password: a store error that
printed it would leak it into CI logs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, quote_plus

from quiho.errors import StoreError

__all__ = ["StoreLocation", "parse_location", "redact", "DEFAULT_STORE"]

DEFAULT_STORE = Path(".quiho") / "quiho.db"
#: URL schemes taken for PostgreSQL; another ``scheme://`` is refused, text without one is a file path.
PG_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
#: ``postgresql:/x`` is what :class:`pathlib.Path` leaves of ``postgresql://x`` (it folds the double slash).
_SCHEME = re.compile(r"^(postgresql\+psycopg|postgresql|postgres|sqlite):/+", re.IGNORECASE)
_ANY_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class StoreLocation:
    """A parsed ``--store``.

    Attributes
    ----------
    backend : str
        ``"sqlite"`` or ``"postgresql"``.
    label : str
        How messages name the store: the file path, or the URL with the password replaced by ``***``.
    path : Path
        The SQLite file; for PostgreSQL a name in ``.quiho/pg-HOST-PORT-DB/`` of this controller (never a database
        file), so what belongs to this machine and the store (``path.parent``: the measurement lock, the local
        fleet's calibration file) stays on this machine even when :attr:`files_dir` is shared.
    files_dir : Path
        Where the store's large values (trace calls in Parquet) live: beside a SQLite file; for PostgreSQL
        ``$QUIHO_STORE_FILES`` or ``.quiho/pg-HOST-PORT-DB`` on this controller.
    url : str
        The SQLAlchemy URL with the password (for PostgreSQL only; never shown).
    """

    backend: str
    label: str
    path: Path
    files_dir: Path
    url: str = field(default="", repr=False)
    secret: str = field(default="", repr=False)

    def __str__(self) -> str:
        return self.label

    def redact(self, text: str) -> str:
        """``text`` with this location's password (plain or URL-quoted) replaced by ``***``."""
        return redact(text, self.secret)


def redact(text: str, secret: str) -> str:
    """``text`` without ``secret`` in any of the spellings a URL or a driver message may give it."""
    if not secret:
        return text
    for s in sorted({secret, quote(secret, safe=""), quote_plus(secret)}, key=len, reverse=True):
        text = text.replace(s, "***")
    return text


def parse_location(spec: str | os.PathLike[str] | None) -> StoreLocation:
    """Parse ``--store`` (``None``: ``$QUIHO_STORE``, else ``./.quiho/quiho.db``).

    Raises
    ------
    StoreError
        A ``postgresql://`` URL that does not parse (the message shows it without its password), or another
        URL scheme.
    """
    if spec is None:
        spec = os.environ.get("QUIHO_STORE") or DEFAULT_STORE
    text = os.fspath(spec)
    m = _SCHEME.match(text)
    other = _ANY_SCHEME.match(text)
    if m is None and other is not None:
        raise StoreError(f"store URL scheme {other.group(1)!r} is not supported: give a SQLite file path, "
                         f"sqlite:///PATH or postgresql://USER@HOST:PORT/DB")
    if m is None:
        p = Path(text)
        return StoreLocation("sqlite", str(p), p, p.parent)
    scheme, rest = m.group(1).lower(), text[m.end():]
    if scheme == "sqlite":  # sqlite:///relative.db, sqlite:////abs.db
        p = Path(rest)
        return StoreLocation("sqlite", str(p), p, p.parent)
    return _postgres(rest)


def _postgres(rest: str) -> StoreLocation:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    raw = "postgresql+psycopg://" + rest
    secret = _password_of(rest)
    try:
        url = make_url(raw)
    except (ArgumentError, ValueError) as exc:
        raise StoreError(f"cannot read store URL {redact('postgresql://' + rest, secret)}: "
                         f"{redact(str(exc), secret)}") from None
    secret = url.password or secret or ""
    label = redact(url.set(drivername="postgresql").render_as_string(hide_password=True), str(secret))
    service = url.query.get("service")
    name = "-".join(str(x) for x in (url.host or service or "local", url.port or 5432, url.database or "")
                    if x != "")
    local = Path(".quiho") / f"pg-{_safe(name)}"
    files = Path(os.environ.get("QUIHO_STORE_FILES") or local)
    return StoreLocation("postgresql", label, local / f"{_safe(url.database or 'store')}.pg", files,
                         url.render_as_string(hide_password=False), str(secret))


def _password_of(rest: str) -> str:
    """The password of ``user:password@host...`` before parsing, so even a URL that fails to parse is redacted."""
    auth = rest.split("/", 1)[0]
    if "@" not in auth:
        return ""
    userinfo = auth.rsplit("@", 1)[0]
    return userinfo.split(":", 1)[1] if ":" in userinfo else ""


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
