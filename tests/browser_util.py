"""Opens a page in headless Chromium (Debian's `chromium`, driven by Playwright).

The browser is a system package (`make browser`); without it the browser tests skip, unless
REQUIRE_BROWSER=1 (set by CI), which turns a missing browser into a failure.
"""

import os
import shutil

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser")
# Headless as root, with Chromium's own background traffic off: the page must need no network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or next(
        (p for p in map(shutil.which, CHROMIUM_NAMES) if p), None
    )
    if path is None:
        message = "Chromium not installed (make browser)"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def open_page(playwright, url: str, requests: list):
    """(browser, page) with `url` loaded; every request the page makes is appended to
    `requests`."""
    browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url)
    page.wait_for_load_state("load")
    return browser, page
