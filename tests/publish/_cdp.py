"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (stdlib only).

Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4. Every event is kept,
so a test can assert that a page logged nothing to the console, threw nothing, violated no Content-Security-
Policy and requested nothing but ``file:`` and ``data:`` URLs.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
         "--disable-default-apps", "--disable-extensions", "--remote-debugging-pipe"]


class CDPError(RuntimeError):
    """A command failed or the browser went away."""


class Browser:
    """One headless Chromium with a fresh profile in ``profile_dir``; use as a context manager."""

    def __init__(self, profile_dir: Path) -> None:
        exe = shutil.which("chromium")
        if exe is None:
            raise CDPError("no chromium on PATH")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        hi_r, hi_w = os.dup(to_child_r) + 100, os.dup(from_child_w) + 100
        os.dup2(to_child_r, hi_r)
        os.dup2(from_child_w, hi_w)

        def fds() -> None:  # in the child: fd 3 = commands in, fd 4 = replies out
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=fds, close_fds=False)
        for fd in (to_child_r, from_child_w, hi_r, hi_w):
            os.close(fd)
        self._next = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()  # type: ignore[union-attr]

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                self._inbox.put(None)
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                self._inbox.put(json.loads(msg))

    def _pump(self, deadline: float) -> None:
        try:
            msg = self._inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            return
        if msg is None:
            raise CDPError("chromium closed the pipe")
        if "id" in msg:
            self._replies[msg["id"]] = msg
        else:
            self.events.append(msg)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 60.0) -> dict[str, Any]:
        """Send one command and wait for its reply; events arriving meanwhile are kept in :attr:`events`."""
        self._next += 1
        cid = self._next
        msg: dict[str, Any] = {"id": cid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while cid not in self._replies:
            if time.monotonic() > deadline:
                raise CDPError(f"{method}: no reply in {timeout} s")
            self._pump(deadline)
        reply = self._replies.pop(cid)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_event(self, method: str, session: str | None = None, timeout: float = 60.0) -> dict[str, Any]:
        """The first kept event ``method`` (of ``session``), waiting for it if needed."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for ev in self.events[seen:]:
                if ev.get("method") == method and (session is None or ev.get("sessionId") == session):
                    return ev
            seen = len(self.events)
            if time.monotonic() > deadline:
                raise CDPError(f"no {method} in {timeout} s")
            self._pump(deadline)

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except CDPError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Tab:
    """One page of a :class:`Browser`, loaded with ``scripts`` on or off, with its own event log."""

    def __init__(self, browser: Browser, url: str, *, scripts: bool = True, width: int = 1280,
                 height: int = 1000) -> None:
        self.b = browser
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.sid = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable", "DOM.enable"):
            browser.call(m, session=self.sid)
        browser.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                             "deviceScaleFactor": 1, "mobile": False}, self.sid)
        if not scripts:
            browser.call("Emulation.setScriptExecutionDisabled", {"value": True}, self.sid)
        self.first_event = len(browser.events)
        browser.call("Page.navigate", {"url": url}, self.sid)
        browser.wait_event("Page.loadEventFired", self.sid)

    def _mine(self) -> list[dict[str, Any]]:
        return [e for e in self.b.events[self.first_event:] if e.get("sessionId") == self.sid]

    def eval(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page."""
        r = self.b.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, self.sid)
        if "exceptionDetails" in r:
            raise CDPError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def html(self) -> str:
        """The page's DOM as HTML (works with scripts off)."""
        root = self.b.call("DOM.getDocument", {"depth": -1}, self.sid)["root"]["nodeId"]
        return str(self.b.call("DOM.getOuterHTML", {"nodeId": root}, self.sid)["outerHTML"])

    def mouse(self, x: float, y: float) -> None:
        self.b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, self.sid)

    def screenshot(self, path: Path) -> Path:
        data = self.b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, self.sid)
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    def problems(self) -> list[str]:
        """Console messages, uncaught exceptions, log errors (CSP violations, failed loads) and any request that is
        not ``file:`` or ``data:``: what a self-contained static page must never produce."""
        out = []
        for e in self._mine():
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled":
                out.append(f"console.{p.get('type')}: {[a.get('value') for a in p.get('args', [])]}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails', {}).get('text')}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append(f"log {p['entry'].get('level')}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif m == "Network.requestWillBeSent":
                url = p.get("request", {}).get("url", "")
                if not url.startswith(("file:", "data:")):
                    out.append(f"network request: {url}")
            elif m == "Network.loadingFailed":
                out.append(f"load failed: {p.get('errorText')}")
        return out

    def requests(self) -> list[str]:
        """Every URL the page requested."""
        return [e["params"]["request"]["url"] for e in self._mine() if e["method"] == "Network.requestWillBeSent"]
