"""Real-browser helpers for tests/test_site.py and tests/test_lab.py: Debian's Chromium driven by
Playwright for Python, a local static server, and a log of every request a page makes. The
session fixture `chromium` lives in tests/conftest_browser.py (`pytest_plugins = ["conftest_browser"]`).

Playwright's own browser download (`playwright install`) cannot work here: the tests drive the
system Chromium at /usr/bin/chromium, which `.ci/install-browser.sh` installs when it is missing.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "build" / "artifacts"
CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
LOCAL_HOSTS = {"127.0.0.1"}
INLINE_SCHEMES = {"data", "blob", "about"}  # content inside the page itself: nothing leaves the machine


def require_chromium() -> str:
    """The Chromium binary, or a test failure that says how to install it (never a skip)."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: the browser tests need Debian's Chromium. "
            "Install it with `bash .ci/install-browser.sh` (apt-get install -y chromium), "
            "or set COURSE_CHROMIUM to another Chromium binary.",
            pytrace=False,
        )
    return CHROMIUM


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@contextlib.contextmanager
def serve(directory: Path):
    """Serve a folder on 127.0.0.1 (stdlib http.server in a thread); yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in INLINE_SCHEMES or parts.hostname in LOCAL_HOSTS


@dataclass
class NetworkLog:
    """Every request of one page: what went outside 127.0.0.1 (blocked, never sent), what failed
    (network error or HTTP status >= 400), and uncaught JavaScript errors."""

    requests: list = field(default_factory=list)
    external: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)

    @classmethod
    def attach(cls, page) -> NetworkLog:
        log = cls()
        page.on("request", lambda r: log.requests.append(r.url))
        page.on("requestfailed", lambda r: log.failed.append(f"{r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and log.failed.append(f"{r.url} (HTTP {r.status})"))
        page.on("pageerror", lambda e: log.page_errors.append(str(e)))

        def gate(route):
            if is_local(route.request.url):
                route.continue_()
            else:
                log.external.append(route.request.url)
                route.abort("blockedbyclient")

        page.route("**/*", gate)
        return log


def screenshot_path(name: str) -> Path:
    """Where a test keeps a screenshot: build/artifacts/<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / f"{name}.png"


def kill_tree(proc, timeout: float = 10) -> None:
    """Stop a server we started: SIGTERM, then SIGKILL if it does not exit in time."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
