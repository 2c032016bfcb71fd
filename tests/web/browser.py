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
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

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
#: How long a page load, a click or an `expect` may wait (Playwright's defaults: 30 s and 5 s).
#: Each wait ends as soon as its condition holds, so this costs nothing on an idle machine; on
#: a loaded one (two suites at once on two cores) a sign-in page took longer than 30 s.
PATIENCE_MS = 120_000
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
        expect.set_options(timeout=PATIENCE_MS)
        _be_patient(launched)
        yield launched
        launched.close()


def _be_patient(launched: Browser) -> None:
    """Every context the tests open waits up to PATIENCE_MS for a page and an element."""
    new_context = launched.new_context

    def patient_context(**options: object) -> BrowserContext:
        context = new_context(**options)  # type: ignore[arg-type]
        context.set_default_timeout(PATIENCE_MS)
        context.set_default_navigation_timeout(PATIENCE_MS)
        return context

    launched.new_context = patient_context  # type: ignore[method-assign]


def screenshot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
