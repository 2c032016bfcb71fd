"""The thread page's snooze names its time zone and reads the time in it: the reader's own
zone when the browser tells it (JavaScript), else the zone of the lead's campaign — never a
bare date-time silently taken as UTC."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.http import create_app
from tests.conftest import START, build_app
from tests.web.rescue import ADA, GRACE, live_workspace
from tests.web.support import PASSWORD, serving, tenant

ME = "ann@alpha.test"


@pytest.fixture
def threads(sqlite_template: Path, tmp_path: Path) -> Iterator[tuple[str, App, int, int]]:
    path = tmp_path / "replyguard.db"
    shutil.copy(sqlite_template, path)
    app = build_app(f"sqlite:///{path}", FixedClock(START), tmp_path / "outbox")
    live = live_workspace(app)
    live.reply(ADA, "Could we talk on Thursday at 10?", name="Ada Lovelace")
    live.reply(GRACE, "Not now, maybe next week.", name="Grace Hopper")
    tenant(app, app.workspace, ME)
    with serving(create_app(app)) as base:
        yield base, app, live.thread_of(ADA), live.thread_of(GRACE)
    app.close()


def open_thread(page: Page, base: str, thread: int) -> None:
    page.goto(f"{base}/login")
    page.fill("#email", ME)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/inbox$"))
    page.goto(f"{base}/threads/{thread}")


def snoozed_until(app: App, thread: int) -> datetime | None:
    with app.uow() as uow:
        return uow.session.get_one(m.RescueThread, thread).snoozed_until


def test_the_snooze_time_is_read_in_the_readers_zone(
    threads: tuple[str, App, int, int], browser: Browser
) -> None:
    base, app, ada, _grace = threads
    context = browser.new_context(timezone_id="America/New_York")
    page = context.new_page()
    open_thread(page, base, ada)
    form = page.locator("form[data-action=snooze]")
    expect(form.locator("label")).to_have_text("Snooze until, America/New_York time")
    form.get_by_label("Snooze until, America/New_York time").fill("2026-12-09T09:00")
    form.get_by_role("button", name="Snooze").click()
    expect(page.locator("[data-flash]")).to_contain_text("snoozed")
    assert snoozed_until(app, ada) == datetime(2026, 12, 9, 14, 0, tzinfo=UTC)  # 09:00 in New York
    context.close()


def test_without_javascript_the_label_names_the_campaigns_zone(
    threads: tuple[str, App, int, int], browser: Browser
) -> None:
    base, app, _ada, grace = threads
    context = browser.new_context(java_script_enabled=False, timezone_id="America/New_York")
    page = context.new_page()
    open_thread(page, base, grace)
    form = page.locator("form[data-action=snooze]")
    expect(form.locator("label")).to_have_text("Snooze until, UTC time")  # the campaign's zone
    form.get_by_label("Snooze until, UTC time").fill("2026-12-09T09:00")
    form.get_by_label("Time zone of the snooze time").select_option("UTC")
    form.get_by_role("button", name="Snooze").click()
    expect(page.locator("[data-flash]")).to_contain_text("snoozed")
    assert snoozed_until(app, grace) == datetime(2026, 12, 9, 9, 0, tzinfo=UTC)
    context.close()
