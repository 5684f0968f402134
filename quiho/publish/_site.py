"""Render every page and write only the files whose bytes changed (content hashes in ``manifest.json``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from quiho._text import printable
from quiho._version import __version__
from quiho.errors import QuihoError, UsageError
from quiho.publish._collect import SiteData, read_site
from quiho.publish._fleet import fleet_index, host_file, host_page
from quiho.publish._index import index_page
from quiho.publish._layout import CSS, JS
from quiho.publish._profiles import profile_file, profile_page, profiles_index
from quiho.publish._series import series_file, series_index, series_page
from quiho.publish._targets import target_file, target_page, targets_index
from quiho.publish._vendor import vendor_files
from quiho.publish.options import PublishOptions, PublishResult
from quiho.store import Store
from quiho.store.alerts import AlertRow

__all__ = ["publish", "render_site", "MANIFEST", "MANIFEST_SCHEMA_VERSION"]

MANIFEST = "manifest.json"
MANIFEST_SCHEMA_VERSION = 1
#: The only shape a written path may have: ``dir/name`` of lower-case letters, digits, ``.`` and ``-``.
_REL = re.compile(r"(?:[a-z]+/)?[a-z0-9][a-z0-9.-]*")


def render_site(data: SiteData, options: PublishOptions) -> dict[str, bytes]:
    """Every file of the site but the reused series pages: path relative to its root → bytes (UTF-8)."""
    t = options.title
    pages = {"index.html": index_page(data, options), "assets/site.css": CSS, "assets/site.js": JS,
             "series/index.html": series_index(list(data.series), t),
             "fleet/index.html": fleet_index(list(data.fleets), t),
             "targets/index.html": targets_index(list(data.targets), t),
             "profiles/index.html": profiles_index(list(data.profiles), t)}
    alerts: dict[str, list[AlertRow]] = {}
    for a in data.alerts:
        alerts.setdefault(a.series, []).append(a)
    pages.update((series_file(s.name), series_page(s, t, alerts.get(s.name, ()))) for s in data.series
                 if not s.reused)
    pages.update((host_file(h.name, f.source), host_page(h, f, t)) for f in data.fleets for h in f.hosts)
    for tg in data.targets:
        pages[target_file(tg.name)] = target_page(tg, t)
        if tg.irup is not None:
            pages[target_file(tg.name, "json")] = json_text(tg.irup)
    for p in data.profiles:
        pages[profile_file(p)] = profile_page(p, t)
        if p.document is not None:
            pages[profile_file(p, "json")] = json_text(p.document)
    out = {k: v.encode("utf-8") for k, v in pages.items()}  # strict: a raw surrogate here is a bug
    out.update(vendor_files())
    return out


def json_text(doc: object) -> str:
    """A document as JSON whose text holds no ``<``, ``>`` or ``&`` (escaped, still the same JSON).

    A host serving it with a wrong content type, or a browser sniffing it, then finds no markup in it.
    """
    s = json.dumps(doc, indent=1, sort_keys=True, default=str)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n"


def _inside(root: Path, rel: str) -> Path:
    """``root / rel`` after checking that it cannot leave ``root`` (shape of ``rel``, then the resolved path)."""
    if not _REL.fullmatch(rel):
        raise ValueError(f"refusing to write {rel!r}: not a site path")
    p = root / rel
    if not p.resolve().is_relative_to(root.resolve()):
        raise UsageError(f"{p} resolves outside {root} (a symbolic link?): nothing written there")
    return p


def _old_manifest(root: Path) -> dict[str, str]:
    """Path → SHA-256 of the previous publish; empty for a new directory (:func:`_old_keys`: its page keys).

    Raises
    ------
    UsageError
        ``root`` is a file, or a non-empty directory that holds no quiho site (publishing there could overwrite
        someone's files), or a site of a newer manifest version.
    """
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} is a file: publish needs a directory")
    m = root / MANIFEST
    if not m.exists():
        if root.exists() and any(root.iterdir()):
            raise UsageError(f"{root} is not empty and holds no quiho site ({MANIFEST}): choose a new or empty "
                             "directory")
        return {}
    try:
        doc = json.loads(m.read_text(encoding="utf-8"))
        version, files = doc["schema_version"], doc["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{m} is not a quiho site manifest ({exc}): remove the directory or choose another") \
            from None
    if doc.get("schema") != "quiho.publish" or version > MANIFEST_SCHEMA_VERSION:
        raise UsageError(f"{m} is a site manifest v{version} this quiho ({__version__}) does not know: upgrade quiho "
                         "or publish into another directory")
    return {str(k): str(v) for k, v in files.items()}


def _old_keys(root: Path) -> dict[str, str]:
    """Path → page key the previous publish recorded (only series pages have one); read after :func:`_old_manifest`."""
    try:
        keys = json.loads((root / MANIFEST).read_text(encoding="utf-8")).get("keys") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {str(k): str(v) for k, v in keys.items()} if isinstance(keys, dict) else {}


def _check_destination(root: Path) -> None:
    """Refuse a site directory that cannot be made, before the store is read (nothing computed, nothing cached).

    Raises
    ------
    QuihoError
        The nearest ancestor that exists is not a directory or cannot be written.
    OSError
        A name too long for the file system (the caller turns it into a QuihoError).
    """
    at = root.absolute()
    while not at.exists() and at != at.parent:
        at = at.parent
    if at == root.absolute():
        return
    if not at.is_dir():
        raise QuihoError(f"cannot write the site into {printable(root)}: {printable(at)} is not a directory")
    if not os.access(at, os.W_OK | os.X_OK):
        raise QuihoError(f"cannot write the site into {printable(root)}: {printable(at)} is not writable")


def _reuse(root: Path, old: dict[str, str]) -> tuple[Callable[[str, str], bool], dict[str, str]]:
    """(may this page stay?, the pages it let stay → their SHA-256): same key, and the file on disk is as recorded."""
    keys, kept = _old_keys(root), {}

    def reuse(rel: str, key: str) -> bool:
        if not key or keys.get(rel) != key or rel not in old or not _REL.fullmatch(rel):
            return False
        p = _inside(root, rel)
        if not p.is_file() or hashlib.sha256(p.read_bytes()).hexdigest() != old[rel]:
            return False
        kept[rel] = old[rel]
        return True

    return reuse, kept


def _write(p: Path, data: bytes) -> None:
    """Replace ``p`` atomically: a reader (a static host mid-sync) sees the old file or the new one."""
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_site(root: Path, files: dict[str, bytes], kept: dict[str, str] | None = None,
               keys: dict[str, str] | None = None) -> tuple[list[str], int, list[str]]:
    """Write changed files, remove the previous publish's files that are gone; (written, unchanged, removed).

    ``kept``: pages left as they are (path → SHA-256, checked on disk by the caller), counted unchanged; ``keys``:
    page keys recorded in the manifest for the next publish.
    """
    old = _old_manifest(root)
    root.mkdir(parents=True, exist_ok=True)
    kept = {rel: sha for rel, sha in (kept or {}).items() if rel not in files}
    new = {**kept, **{rel: hashlib.sha256(b).hexdigest() for rel, b in files.items()}}
    paths = {rel: _inside(root, rel) for rel in sorted(files)}  # every path checked before anything is written
    written, unchanged = [], len(kept)
    for rel, p in paths.items():
        data = files[rel]
        if old.get(rel) == new[rel] and p.is_file() and hashlib.sha256(p.read_bytes()).hexdigest() == new[rel]:
            unchanged += 1
            continue
        _write(p, data)
        written.append(rel)
    removed = []
    for rel in sorted(set(old) - set(new)):
        if _REL.fullmatch(rel) and (p := _inside(root, rel)).is_file():
            p.unlink()
            removed.append(rel)
    manifest = json.dumps({"schema": "quiho.publish", "schema_version": MANIFEST_SCHEMA_VERSION,
                           "quiho_version": __version__, "files": dict(sorted(new.items())),
                           "keys": dict(sorted((k, v) for k, v in (keys or {}).items() if k in new))},
                          indent=1) + "\n"
    m = root / MANIFEST
    if not m.is_file() or m.read_text(encoding="utf-8") != manifest:
        _write(m, manifest.encode())
    return written, unchanged, removed


def publish(store: Store, directory: str | os.PathLike[str], options: PublishOptions | None = None) -> PublishResult:
    """Publish the store as a static site in ``directory``: series, fleets, targets' IRUPs, profiles, an overview.

    The site opens from ``file://`` or any static host: no server, no network, every asset beside the pages.
    Republishing rewrites only files whose bytes changed and removes pages of data that is gone; nothing else in
    ``directory`` is touched.

    Parameters
    ----------
    store : Store
        An open store. It is read, and each target's IRUP computed for the site is stored in its site cache
        (:mod:`quiho.store.site_cache`) so the next publish of the same input reuses it.
    directory : path-like
        Where the site goes: a new or empty directory, or one an earlier publish wrote.
    options : PublishOptions, optional
        Detector, drift, IRUP and staleness settings, the fingerprint sources, the site title.

    Returns
    -------
    PublishResult
        Counts, the files written, how many were unchanged, the files removed.

    Raises
    ------
    UsageError
        ``directory`` is a file, or a non-empty directory without a quiho site in it; an unknown detector, model
        preset, importance formula or resample mode.
    QuihoError
        The site cannot be written there (the operating system's reason in the message).
    StoreError
        The store cannot be read.

    Examples
    --------
    >>> from quiho.store import open_store
    >>> from quiho.publish import publish
    >>> with open_store("store.db") as st:  # doctest: +SKIP
    ...     print(publish(st, "site").pages)
    """
    options = options or PublishOptions()
    root = Path(directory)
    try:
        _check_destination(root)
        reuse, kept = _reuse(root, _old_manifest(root))  # refuses a foreign directory before reading the store
        data = read_site(store, options, reuse)
        files = render_site(data, options)
        keys = {series_file(s.name): s.key for s in data.series if s.key}
        written, unchanged, removed = write_site(root, files, kept, keys)
    except OSError as exc:  # a name too long, a parent that is a file, no space, no permission
        raise QuihoError(f"cannot write the site into {printable(root)}: {exc.strerror or exc}") from None
    return PublishResult(root, len(data.series), data.hosts, len(data.profiles), len(files) + len(kept),
                         tuple(written),
                         unchanged, tuple(removed), data.warnings, targets=len(data.targets),
                         irups_computed=sum(t.computed for t in data.targets))
