"""Every page at a phone's width (390 x 844) and a laptop's (1,280 x 800) in Chromium: no
horizontal scroll, and no accessibility violation axe-core rates serious or critical (axe-core
as bundled by axe-playwright-python: nothing is downloaded at run time).

The layout is the same on both databases, so this runs on SQLite only. Screenshots go to
build/screenshots/; with REPLYGUARD_SCREENS=DIR (`make screens`: docs/screens) they are kept
there too, for the README.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.audit.config import Setup
from replyguard.service_layer.audit.run import config_audit
from replyguard.settings import NotifySettings
from tests.conftest import START, build_app
from tests.web.browser import screenshot
from tests.web.rescue import ADA, GRACE, live_workspace
from tests.web.support import PASSWORD, serving, tenant

WIDTHS = {"phone": {"width": 390, "height": 844}, "laptop": {"width": 1280, "height": 800}}
SERIOUS = {"serious", "critical"}


@pytest.fixture
def site(sqlite_template: Path, tmp_path: Path) -> Iterator[tuple[str, App]]:
    path = tmp_path / "replyguard.db"
    shutil.copy(sqlite_template, path)
    app = build_app(f"sqlite:///{path}", FixedClock(START), tmp_path / "outbox")
    live = live_workspace(app)
    live.reply(ADA, "Yes, this is interesting. Could we talk on Thursday at 10?", name="Ada Lovelace")
    live.clock.advance(timedelta(minutes=20))
    live.reply(GRACE, "How much does it cost for a team of 12?", name="Grace Hopper")
    tenant(app, app.workspace, "ann@alpha.test")  # the owner: the admin pages are walked too
    config_audit(app, Setup(app.settings, NotifySettings(), None, "maildir:outbox"))  # a run to show
    with serving(create_app(app)) as base:
        yield base, app
    app.close()


def pages(page: Page, base: str) -> list[tuple[str, str]]:
    """(name, path) of every page of the navigation, a thread, a campaign (with a preview, and
    its edit page), a lead, an audit run, the page that starts an audit, and the new-campaign
    form."""
    page.goto(f"{base}/inbox")
    found = [
        ((a.text_content() or "").strip(), a.get_attribute("href") or "")
        for a in page.locator("nav[aria-label=Main] a").all()
    ]
    links = [(re.sub(r"\W+", "-", name.lower()).strip("-"), href) for name, href in found]
    links.append(("audit-new", "/audit/new"))  # linked from the audit page, for admins
    for kind, listing in (
        ("thread", "/inbox"),
        ("campaign", "/campaigns"),
        ("lead", "/leads"),
        ("audit", "/audit"),
    ):
        prefix = f"/{kind}" if kind == "audit" else f"/{kind}s"
        pattern = rf"{prefix}/\d+"
        page.goto(f"{base}{listing}")
        href = page.locator(f"main a[href^='{prefix}/']").evaluate_all(
            "(links, pattern) => links.map((a) => a.getAttribute('href'))"
            ".filter((h) => new RegExp(`^${pattern}$`).test(h))",
            pattern,
        )
        assert href, f"no {kind} linked from {listing}"
        links.append(("audit-run" if kind == "audit" else kind, href[0]))
    campaign = dict(links)["campaign"]
    # A campaign's own pages: a step previewed for a lead, and its edit page.
    links += [("campaign-preview", f"{campaign}?step=1"), ("campaign-edit", f"{campaign}/edit")]
    links.append(("new-campaign-form", "/campaigns/new?tab=form"))
    return links


def test_every_page_fits_a_phone_and_a_laptop_without_serious_accessibility_faults(
    site: tuple[str, App], browser: Browser
) -> None:
    base, _app = site
    axe = Axe()
    keep = os.environ.get("REPLYGUARD_SCREENS")
    problems: list[str] = []
    for width, viewport in WIDTHS.items():
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        page.goto(f"{base}/login")
        page.fill("#email", "ann@alpha.test")
        page.fill("#password", PASSWORD)
        page.click("button[type=submit]")
        expect(page).to_have_url(re.compile(r"/inbox$"))
        visited = pages(page, base)
        assert len(visited) >= 12 and all(name for name, _ in visited), visited
        for name, path in visited:
            page.goto(f"{base}{path}")
            expect(page.locator("main#content")).to_be_visible()
            overflow = page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            if overflow > 0:
                problems.append(f"{width} {path}: {overflow} px wider than the screen")
            found = axe.run(page).response["violations"]
            for violation in found:
                if violation["impact"] in SERIOUS:
                    targets = [n["target"] for n in violation["nodes"]][:3]
                    rule, impact = violation["id"], violation["impact"]
                    problems.append(f"{width} {path}: axe {rule} ({impact}) at {targets}")
            shot = screenshot(page, f"{name}-{width}")
            if keep:
                Path(keep).mkdir(parents=True, exist_ok=True)
                shutil.copy(shot, Path(keep) / shot.name)
        context.close()
    assert problems == [], "\n".join(problems)


def test_the_keyboard_reaches_the_content_first_and_the_phone_menu_folds(
    site: tuple[str, App], browser: Browser
) -> None:
    base, _app = site
    context = browser.new_context(viewport=WIDTHS["phone"])
    page = context.new_page()
    page.goto(f"{base}/login")
    page.fill("#email", "ann@alpha.test")
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/inbox$"))
    # The first Tab lands on the skip link (ten navigation links used to come first); Enter
    # moves the focus into the content.
    page.keyboard.press("Tab")
    expect(page.locator(".skip-link")).to_be_focused()
    expect(page.locator(".skip-link")).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page.locator("main#content")).to_be_focused()
    # On a phone the navigation is one "Menu" line until opened.
    expect(page.locator("nav[aria-label=Main] a").first).to_be_hidden()
    page.locator("details.menu > summary").click()
    expect(page.locator("nav[aria-label=Main] a").first).to_be_visible()
    context.close()
