"""A move that cannot be undone asks first, with JavaScript off too: Stop needs its box ticked
(the browser refuses the form until then), so one slip of the mouse never stops a lead."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.http import create_app
from tests.conftest import START, build_app
from tests.support.scenario import lead_state
from tests.web.rescue import ADA, ATLAS, live_workspace
from tests.web.support import PASSWORD, serving, tenant

ME = "ann@alpha.test"


@pytest.fixture
def thread_page(sqlite_template: Path, tmp_path: Path) -> Iterator[tuple[str, App, int]]:
    path = tmp_path / "replyguard.db"
    shutil.copy(sqlite_template, path)
    app = build_app(f"sqlite:///{path}", FixedClock(START), tmp_path / "outbox")
    live = live_workspace(app)
    live.reply(ADA, "Could we talk on Thursday at 10?", name="Ada Lovelace")
    tenant(app, app.workspace, ME)
    with serving(create_app(app)) as base:
        yield base, app, live.thread_of(ADA)
    app.close()


def test_stop_without_javascript_waits_for_its_box(
    thread_page: tuple[str, App, int], browser: Browser
) -> None:
    base, app, thread = thread_page
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{base}/login")
    page.fill("#email", ME)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/inbox$"))
    page.goto(f"{base}/threads/{thread}")
    stop = page.locator("form[data-action=stop]")
    expect(stop.locator("label")).to_contain_text("no more emails to this lead")
    stop.locator("button[type=submit]").click()  # the box not ticked: the browser keeps the form
    expect(stop.locator("input[name=sure]:invalid")).to_have_count(1)
    stop.locator("input[name=sure]").check()  # still the same page: nothing was sent
    stop.locator("button[type=submit]").click()
    expect(page.locator("[data-flash]")).to_contain_text("stopped")
    assert lead_state(app, ADA, ATLAS) == "stopped"
    with app.uow() as uow:
        decisions = uow.session.scalars(select(m.Event.id).where(m.Event.kind == "thread_decision")).all()
    assert len(decisions) == 1  # one stop: the first click, unticked, sent nothing
    context.close()
