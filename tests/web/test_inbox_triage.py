"""Triage in the inbox, keyboard only, in Chromium: thirty replies, each opened, done,
assigned or snoozed without the mouse; the tabs' counts move with every decision. Plus the
inbox row (what they wrote, how long they waited, who has it), its search and the bulk form
without JavaScript."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import import_leads
from tests.conftest import START, build_app
from tests.support.scenario import csv_of, enroll_all
from tests.web.rescue import ATLAS, ATLAS_CAMPAIGN, Live, campaign
from tests.web.support import PASSWORD, csrf_of, serving, signed_in, tenant

PEOPLE = 30
ME = "ann@alpha.test"


@pytest.fixture
def thirty(sqlite_template: Path, tmp_path: Path) -> Iterator[tuple[str, App]]:
    """Thirty leads who each answered the first email (SQLite: the page is the same on both)."""
    path = tmp_path / "replyguard.db"
    shutil.copy(sqlite_template, path)
    app = build_app(f"sqlite:///{path}", FixedClock(START), tmp_path / "outbox")
    leads = [
        {"email": f"p{i:02d}@firm{i:02d}.test", "first_name": f"Pat{i:02d}", "last_name": "Doe",
         "company": f"Firm {i:02d}"}
        for i in range(PEOPLE)
    ]  # fmt: skip
    with app.uow() as uow:
        create_campaign(uow, campaign(ATLAS_CAMPAIGN, ATLAS, "sam@atlas.test", "Sam Rivers"))
        import_leads(uow, ATLAS, list(read_leads(csv_of(leads))))
        uow.commit()
    enroll_all(app, ATLAS_CAMPAIGN)
    assert isinstance(app.clock, FixedClock)
    app.clock.advance(timedelta(hours=3, minutes=5))
    Worker(app).run_once()
    live = Live(app, app.clock)
    for i, lead in enumerate(leads):
        live.clock.advance(timedelta(minutes=7))
        text = "What does it cost for a team of 12?" if i == 7 else f"Interesting, tell me more ({i:02d})."
        live.reply(lead["email"], text, name=f"Pat{i:02d} Doe")
    app.clock.advance(timedelta(days=2))
    tenant(app, app.workspace, ME)
    with serving(create_app(app)) as base:
        yield base, app
    app.close()


def counts(page: Page) -> dict[str, int]:
    found = {}
    for tab in page.locator("#thread-states a").all():
        label, number = re.fullmatch(r"\s*(\D+?)\s*(\d+)\s*", tab.inner_text()).groups()  # type: ignore[union-attr]
        found[label] = int(number)
    return found


def test_thirty_replies_triaged_with_the_keyboard_alone(thirty: tuple[str, App], browser: Browser) -> None:
    base, app = thirty
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/login")
    page.keyboard.press("Tab")  # the skip link
    page.locator("#email").focus()
    page.keyboard.type(ME)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/inbox$"))
    assert counts(page) == {"open": PEOPLE, "snoozed": 0, "done": 0, "all": PEOPLE}
    # Open the current thread with Enter, come back, and it is still there to decide.
    first = page.locator("#threads tr.current").get_attribute("data-thread")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{base}/threads/{first}")
    page.go_back()
    expect(page.locator("#threads tr.current")).to_have_attribute("data-thread", first or "")
    # Ten done with `e`: after each, the page comes back on the next thread.
    for n in range(1, 11):
        page.keyboard.press("e")
        expect(page.locator("[data-flash]")).to_contain_text("1 thread done.")
        expect(page.locator("#thread-states a.current")).to_contain_text(str(PEOPLE - n))
        # The new page's keys are live once app.js has marked its current row: a key pressed
        # before that would be lost.
        expect(page.locator("#threads tr.current")).to_have_count(1)
    assert counts(page) == {"open": 20, "snoozed": 0, "done": 10, "all": PEOPLE}
    # Ten assigned to me with `a` (assigned threads stay open; the keyboard moves on to the
    # thread that followed, wherever the assigned one is listed now).
    for _ in range(10):
        before = page.locator("#threads tr.current").get_attribute("data-thread")
        page.keyboard.press("a")
        expect(page.locator("[data-flash]")).to_contain_text("assigned to you")
        expect(page.locator("#threads tr.current")).not_to_have_attribute("data-thread", before or "")
    # The last ten (below the assigned ones, the keyboard already on the first) chosen with
    # `x`/`j`, then snoozed with `s`, a date and Enter.
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#keys-help")).to_be_hidden()  # a key before it closed went to the dialog
    for _ in range(10):
        page.keyboard.press("x")
        page.keyboard.press("j")
    expect(page.locator("input[name=ids]:checked")).to_have_count(10)
    page.keyboard.press("s")
    expect(page.locator("#bulk input[name=until_at]")).to_be_focused()
    page.keyboard.type("2026-12-21 09:00 UTC")
    page.keyboard.press("Enter")
    expect(page.locator("[data-flash]")).to_contain_text("10 threads snoozed.")
    assert counts(page) == {"open": 10, "snoozed": 10, "done": 10, "all": PEOPLE}
    context.close()
    with app.uow() as uow:
        assigned = uow.session.scalars(select(m.RescueThread.assignee)).all()
    assert assigned.count(ME) == 10


def test_a_row_says_what_they_wrote_how_long_they_waited_and_who_has_it(thirty: tuple[str, App]) -> None:
    base, _app = thirty
    with signed_in(base, ME) as (page, _csrf):
        inbox = page.get("/inbox").text
        assert "“What does it cost for a team of 12?”" in inbox
        assert "2 days" in inbox and "nobody" in inbox
        found = page.get("/inbox", params={"q": "cost team"}).text
        assert found.count('data-thread="') == 1 and "Pat07" in found
        assert page.get("/inbox", params={"q": "firm 03"}).text.count('data-thread="') == 1
        assert page.get("/inbox", params={"q": "100%_"}).text.count('data-thread="') == 0


def test_the_bulk_form_works_without_javascript_and_refuses_without_a_date(thirty: tuple[str, App]) -> None:
    base, app = thirty
    with app.uow() as uow:
        ids = [str(i) for i in uow.session.scalars(select(m.RescueThread.id).order_by(m.RescueThread.id))][:3]
    with signed_in(base, ME) as (page, _csrf):
        csrf = csrf_of(page.get("/inbox").text)
        snooze = page.post("/inbox/bulk", data={"action": "snooze", "ids": ids, "csrf_token": csrf})
        assert snooze.status_code == 303
        assert "snooze needs a date" in page.get(snooze.headers["location"]).text
        done = page.post(
            "/inbox/bulk",
            data={"action": "done", "ids": ids, "csrf_token": csrf, "back": "https://evil.test/"},
        )
        assert done.status_code == 303 and done.headers["location"] == "/inbox"
        assert "3 threads done." in page.get("/inbox").text
        again = page.post("/inbox/bulk", data={"action": "done", "ids": ids[:1], "csrf_token": csrf})
        assert "Not changed: #" in page.get(again.headers["location"]).text
