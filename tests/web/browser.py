"""Debian's Chromium driven by Playwright (Python), never a browser Playwright downloads.

Without /usr/bin/chromium the browser tests skip with a message saying how to get it; with
REPLYGUARD_REQUIRE_BROWSER=1 (set by .ci/run) they fail instead. Screenshots go to
build/screenshots/ (ignored by git); the README shows copies kept under docs/.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


def require_chromium() -> None:
    if CHROMIUM.exists():
        return
    message = (
        f"Chromium not found at {CHROMIUM}: install Debian's (apt-get install chromium) to run the "
        "browser tests. Playwright's own browser downloads are never used."
    )
    if os.environ.get("REPLYGUARD_REQUIRE_BROWSER") == "1":
        pytest.fail(message + " REPLYGUARD_REQUIRE_BROWSER=1 makes this an error.")
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    require_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


def screenshot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
