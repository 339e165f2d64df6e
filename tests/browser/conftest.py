"""The browser tests' fixture: Playwright's sync API, or a clean skip on a machine
without it or Debian's Chromium (shared helpers: tests/browser/helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import CHROMIUM


@pytest.fixture
def playwright_api():
    """Playwright's sync API, or a clean skip on a machine without it or Chromium."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    return sync_api
