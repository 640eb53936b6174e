"""The browser fixture shared by every browser test; test modules load it with
`pytest_plugins = ["conftest_browser"]` (helpers: tests/browser.py)."""

from __future__ import annotations

import pytest
from browser import CHROMIUM_ARGS, require_chromium


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for the whole test session (Playwright's sync API allows a single
    running instance per thread, so every browser test shares this one)."""
    from playwright.sync_api import sync_playwright

    executable = require_chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
