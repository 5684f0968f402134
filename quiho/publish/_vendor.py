"""The vendored chart library (uPlot, MIT; see ``vendor/README.md``): its files and their expected hashes."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["UPLOT_VERSION", "UPLOT_INTEGRITY", "VENDOR_FILES", "vendor_files"]

UPLOT_VERSION = "1.6.32"
#: npm's ``dist.integrity`` of the ``uplot`` tarball the files were taken from.
UPLOT_INTEGRITY = "sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=="
#: Site path → (file in ``vendor/``, its SHA-256): a changed or truncated copy is refused, never published.
VENDOR_FILES = {
    "assets/uplot.min.js": ("uPlot.iife.min.js",
                                 "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f"),
    "assets/uplot.min.css": ("uPlot.min.css", "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04"),
    "assets/uplot-license.txt": ("uPlot.LICENSE", "8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd"),
}
_DIR = Path(__file__).parent / "vendor"


def vendor_files() -> dict[str, bytes]:
    """Site path → bytes of every vendored file.

    Raises
    ------
    RuntimeError
        A file is missing or differs from the recorded hash (a broken installation, not a user error).
    """
    out = {}
    for rel, (name, sha) in VENDOR_FILES.items():
        data = (_DIR / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != sha:
            raise RuntimeError(f"vendored {name} differs from uPlot {UPLOT_VERSION} (SHA-256): reinstall quiho")
        out[rel] = data
    return out
