"""Opens a page in headless Chromium (Debian's `chromium`, driven by Playwright), as
scripts/report_screenshot.py does.

The browser is a system package (`make browser`); without it the browser tests skip, unless
REQUIRE_BROWSER=1 (set by CI), which turns a missing browser into a failure.
"""

import os

import pytest

from scripts import report_screenshot


def chromium_path() -> str:
    path = report_screenshot.find_chromium()
    if path is None:
        message = "Chromium not installed (make browser)"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def open_page(playwright, url: str, requests: list):
    """(browser, page) with `url` loaded; every request the page makes is appended to
    `requests`."""
    return report_screenshot.open_page(playwright, url, requests, chromium_path())
