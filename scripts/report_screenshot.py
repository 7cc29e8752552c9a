"""The run report's screenshot on docs/report.md (docs/figures/run-report.png), from a real
run: `make report-screenshot` runs the IMDB pipeline on its embedded corpus, as `make run`
does, into a fresh folder, opens the report it wrote in headless Chromium (Debian's, `make
browser`; Playwright drives it, no browser is downloaded) and keeps the page's first screen.

    .venv/bin/python -m scripts.report_screenshot [--output docs/figures/run-report.png]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

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
VIEWPORT = {"width": 1280, "height": 900}
SHOWN_HEIGHT = 1400  # the model card and the evaluation's first tables
RUN = ["run", "--task", "imdb"]


def find_chromium() -> str | None:
    """$CHROMIUM, else the first Chromium on PATH."""
    return os.environ.get("CHROMIUM") or next(
        (p for p in map(shutil.which, CHROMIUM_NAMES) if p), None
    )


def open_page(playwright, url: str, requests: list, chromium: str):
    """(browser, page) with `url` loaded in `chromium`; every request the page makes is
    appended to `requests`."""
    browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
    page = browser.new_page(viewport=VIEWPORT)
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url)
    page.wait_for_load_state("load")
    return browser, page


def run_report(output: str) -> str:
    """Runs `tfx-transformers run --task imdb` into `output` (its progress shown); the path
    of the report it wrote."""
    command = [sys.executable, "-m", "pipeline.cli", *RUN, "--output", output]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    if not summary.get("report"):
        raise RuntimeError(f"the run wrote no report: {summary}")
    return summary["report"]


def screenshot(report: str, path: str, chromium: str) -> None:
    """The report's first SHOWN_HEIGHT pixels at VIEWPORT's width, as PNG, to `path`."""
    from playwright.sync_api import sync_playwright

    requests: list = []
    with sync_playwright() as playwright:
        browser, page = open_page(playwright, "file://" + report, requests, chromium)
        try:
            height = min(SHOWN_HEIGHT, page.evaluate("document.body.scrollHeight"))
            clip = {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": height}
            page.screenshot(path=path, clip=clip, full_page=True)
        finally:
            browser.close()
    offline = all(url.startswith(("file://", "data:")) for url in requests)
    if not offline:
        raise RuntimeError(f"the report asked the network for something: {requests}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join("docs", "figures", "run-report.png"))
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("error: Chromium not installed (make browser)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="report-screenshot-") as folder:
        report = run_report(folder)
        screenshot(report, args.output, chromium)
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
