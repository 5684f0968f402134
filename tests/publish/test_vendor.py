"""The vendored chart library is the recorded uPlot release, with its licence, copied into every site unchanged."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from quiho.publish._vendor import UPLOT_INTEGRITY, UPLOT_VERSION, VENDOR_FILES, vendor_files

VENDOR = Path(__file__).resolve().parents[2] / "quiho" / "publish" / "vendor"


def test_files_match_their_recorded_hashes_and_provenance():
    files = vendor_files()
    assert set(files) == set(VENDOR_FILES)
    for rel, (name, sha) in VENDOR_FILES.items():
        assert hashlib.sha256(files[rel]).hexdigest() == sha == hashlib.sha256((VENDOR / name).read_bytes()).hexdigest()
    head = f"/*! https://github.com/leeoniya/uPlot (v{UPLOT_VERSION}) */"
    assert files["assets/uplot.min.js"].startswith(head.encode())
    assert b"MIT License" in files["assets/uplot-license.txt"]
    readme = (VENDOR / "README.md").read_text()
    assert UPLOT_VERSION in readme and UPLOT_INTEGRITY in readme


def test_a_changed_copy_is_refused(tmp_path, monkeypatch):
    import quiho.publish._vendor as v

    for name, _ in VENDOR_FILES.values():
        (tmp_path / name).write_bytes((VENDOR / name).read_bytes())
    (tmp_path / "uPlot.min.css").write_bytes(b"/* edited */")
    monkeypatch.setattr(v, "_DIR", tmp_path)
    with pytest.raises(RuntimeError, match="uPlot.min.css differs"):
        vendor_files()
