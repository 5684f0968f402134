"""The docs site: it builds strictly, its CLI reference lists every command, its quickstart renders in Chromium."""

from __future__ import annotations

import contextlib
import functools
import html
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlparse

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    res = build(REPO / "mkdocs.yml", out)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


# --- the build ---------------------------------------------------------------------------------------------------

def test_site_builds_every_page(site):
    for page in ["index.html", "quickstart/index.html", "statistics/index.html", "design/index.html",
                 "cli/index.html", "bench/index.html", "workflows/profile/index.html",
                 "workflows/fingerprints/index.html", "workflows/traces/index.html",
                 "workflows/histories/index.html", "workflows/ci/index.html"]:
        assert (site / page).is_file(), page
    # the CLI page is made at build time, never a file in docs/
    assert not (REPO / "docs" / "cli.md").exists()
    assert not (site / "hooks").exists()  # the hook's source is not published


def test_strict_build_fails_on_a_broken_link(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "docs", copy / "docs")
    shutil.copy(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    bench = copy / "docs" / "bench.md"
    bench.write_text(bench.read_text() + "\nSee [the missing page](missing.md#nowhere).\n")
    res = build(copy / "mkdocs.yml", tmp_path / "site")
    assert res.returncode != 0
    assert "missing.md" in res.stderr


# --- the CLI reference -------------------------------------------------------------------------------------------

def command_paths(app) -> list[str]:
    """Every command of a typer app as the user types it, walked from typer's click tree (not the hook's code)."""
    import typer.main

    root = typer.main.get_command(app)
    out: list[str] = []

    def walk(cmd, path: str) -> None:
        out.append(path)
        ctx = cmd.context_class(cmd, info_name=path.split()[-1])
        for name in getattr(cmd, "list_commands", lambda _ctx: [])(ctx):
            sub = cmd.get_command(ctx, name)
            if not sub.hidden:
                walk(sub, f"{path} {name}")

    walk(root, "quiho")
    return out


def missing_from_page(page_html: str, paths: list[str]) -> list[str]:
    """Commands without their own heading on the CLI page (heading ids are the slugged command paths)."""
    ids = set(re.findall(r'<h[1-6] id="([^"]+)"', page_html))
    return [p for p in paths if p.replace(" ", "-").lower() not in ids]


def test_cli_reference_lists_every_command(site):
    from quiho.cli.main import app

    page = (site / "cli" / "index.html").read_text()
    paths = command_paths(app)
    assert len(paths) > 25 and "quiho history detect" in paths
    assert missing_from_page(page, paths) == []
    # each command's usage line and one of its options' defaults come from the app itself
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "Usage: quiho history detect [OPTIONS] [FILE_OR_SERIES]" in text
    assert "[default: auto]" in text


def test_cli_check_fails_for_a_command_the_page_lacks(site):
    import typer

    from quiho.cli.main import app

    extra = typer.Typer()
    extra.registered_commands = list(app.registered_commands)
    extra.registered_groups = list(app.registered_groups)

    @extra.command("brand-new")
    def brand_new() -> None:
        """A command added after the page was built."""

    page = (site / "cli" / "index.html").read_text()
    assert missing_from_page(page, command_paths(extra)) == ["quiho brand-new"]


# --- the quickstart in headless Chromium -------------------------------------------------------------------------

#: ``<link rel=...>`` kinds that load a file (prev/next/canonical only point at pages)
_LOADING_RELS = {"stylesheet", "icon", "shortcut", "preload", "modulepreload", "manifest", "apple-touch-icon"}


class _Refs(HTMLParser):
    """Every file a page loads: stylesheets and icons of link elements, src of script, img and source elements."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "link" and set((a.get("rel") or "").lower().split()) & _LOADING_RELS and a.get("href"):
            self.refs.append(a["href"] or "")
        elif tag in ("script", "img", "source") and a.get("src"):
            self.refs.append(a["src"] or "")


def local_assets(page_url: str, page_html: str) -> list[str]:
    """Paths (from the site root) of the local files a page references."""
    parser = _Refs()
    parser.feed(page_html)
    out = []
    for ref in parser.refs:
        url = urlparse(urljoin(page_url, ref))
        if url.scheme in ("http", "https") and url.netloc == urlparse(page_url).netloc:
            out.append(url.path)
    return out


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    requests: list[tuple[str, int]] = []

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        _QuietHandler.requests.append((self.path, int(code) if str(code).isdigit() else 0))


def chromium(tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("chromium")
    assert exe is not None
    return subprocess.run([exe, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra, url],
                          capture_output=True, text=True, timeout=120)


def demo_lines() -> list[str]:
    """Lines of the demo output shown on the quickstart (its ```text blocks), without the '…' trim marks."""
    md = (REPO / "docs" / "quickstart.md").read_text()
    blocks = re.findall(r"```text\n(.*?)```", md, flags=re.S)
    assert blocks, "the quickstart shows no output block"
    return [ln.strip() for b in blocks for ln in b.splitlines() if len(ln.strip()) > 20]


@pytest.mark.chromium
def test_quickstart_renders_in_chromium(site, tmp_path):
    _QuietHandler.requests.clear()
    with serve(site) as root:
        url = root + "quickstart/"
        # 1. the DOM after scripts ran: code blocks with the demo's real output in them
        res = chromium(tmp_path, url, "--dump-dom")
        assert res.returncode == 0, res.stderr[-2000:]
        dom = res.stdout
        assert "<pre" in dom and "<code" in dom
        text = html.unescape(re.sub(r"<[^>]+>", "", dom))
        lines = demo_lines()
        assert len(lines) > 10 and [ln for ln in lines if ln not in text] == []
        # 2. every local asset the page references exists in the built site, and the browser got each one
        assets = local_assets(url, (site / "quickstart" / "index.html").read_text())
        assert any(a.endswith(".css") for a in assets) and any(a.endswith(".js") for a in assets)
        missing = [a for a in assets if not (site / a.lstrip("/")).is_file()]
        assert missing == []
        failed = [(p, c) for p, c in _QuietHandler.requests if c >= 400]
        assert failed == []
        assert "Failed to load resource" not in res.stderr
        # 3. a screenshot that is not blank: a rendered page has text, a header bar and code blocks in colour
        shot = tmp_path / "quickstart.png"
        res = chromium(tmp_path, url, f"--screenshot={shot}", "--window-size=1280,1600")
        assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    import matplotlib.image

    pixels = (matplotlib.image.imread(shot)[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    colours = np.unique(pixels, axis=0)
    assert len(colours) > 50, len(colours)
    assert (pixels != pixels[0]).any(axis=1).mean() > 0.05  # more than a background
    if os.environ.get("QUIHO_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["QUIHO_KEEP_SCREENSHOT"])


def test_missing_asset_check_can_fail(site, tmp_path):
    page = (site / "quickstart" / "index.html").read_text()
    broken = page.replace("</head>", '<link rel="stylesheet" href="../assets/nowhere.css"></head>', 1)
    assets = local_assets("http://127.0.0.1:1/quickstart/", broken)
    assert [a for a in assets if not (site / a.lstrip("/")).is_file()] == ["/assets/nowhere.css"]


def test_readme_links_into_the_docs_exist():
    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [lnk for lnk in links if not re.match(r"[a-z]+:", lnk)]
    assert any(lnk.startswith("docs/") for lnk in local)
    assert [lnk for lnk in local if not (REPO / lnk).is_file()] == []
