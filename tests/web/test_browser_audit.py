"""The audit from the browser, in Chromium: an admin starts a run of the six checks on a live
campaign, the run page follows it (reloading itself with JavaScript) to six passed rows; with
JavaScript off a running run shows its stage, the six rows waiting and a Refresh link that
brings the result; a member gets 403 on the start page and its form; the pages pass axe."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.access import Role
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.audit.web_runs import carry_out, start_web_run
from replyguard.service_layer.workspace.accounts import add_user
from tests.conftest import START, build_app
from tests.integration.audit_support import CANARY, Q1, live_workspace
from tests.web.support import PASSWORD, serving, tenant

ADMIN, MEMBER = "ann@alpha.test", "ben@alpha.test"
SERIOUS = {"serious", "critical"}


@pytest.fixture
def audit_site(sqlite_template: Path, tmp_path: Path) -> Iterator[tuple[str, App]]:
    path = tmp_path / "replyguard.db"
    shutil.copy(sqlite_template, path)
    clock = FixedClock(START)
    app = build_app(f"sqlite:///{path}", clock, tmp_path / "outbox")
    live_workspace(app, clock)
    tenant(app, app.workspace, ADMIN)  # the first user of a workspace is its owner
    with app.uow() as uow:
        add_user(uow, MEMBER, PASSWORD, name="Ben", role=Role.MEMBER)
        uow.commit()
    with serving(create_app(app)) as base:
        yield base, app
    app.close()


def sign_in(page: Page, base: str, email: str) -> None:
    page.goto(f"{base}/login")
    page.fill("#email", email)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/inbox$"))


def serious(page: Page) -> list[str]:
    found = Axe().run(page).response["violations"]
    return [f"{v['id']} at {[n['target'] for n in v['nodes']][:3]}" for v in found if v["impact"] in SERIOUS]


def test_an_admin_starts_a_run_and_follows_it_to_six_passed_rows(
    audit_site: tuple[str, App], browser: Browser
) -> None:
    base, app = audit_site
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_in(page, base, ADMIN)
    page.goto(f"{base}/audit")
    page.get_by_role("link", name="Start an audit").click()
    expect(page).to_have_url(re.compile(r"/audit/new$"))
    assert serious(page) == []
    page.get_by_label("Campaign").select_option(Q1)
    page.get_by_label("Canary address").fill(CANARY)
    page.get_by_role("button", name="Start the audit").click()
    expect(page).to_have_url(re.compile(r"/audit/\d+$"))
    # The page reloads itself while the run goes on, until the run is over.
    expect(page.locator("h1")).to_contain_text("passed")
    rows = page.locator("#audit-checks tr[data-check]")
    expect(rows).to_have_count(6)
    expect(rows.locator("td.status")).to_have_text(["pass"] * 6)
    expect(page.locator("#audit-progress")).to_have_count(0)
    assert serious(page) == []
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    with app.uow() as uow:
        run = uow.session.execute(select(m.AuditRun.status, m.AuditRun.started_by, m.AuditRun.canary)).one()
    assert tuple(run) == ("passed", ADMIN, CANARY)
    context.close()


def test_without_javascript_a_running_run_shows_its_stage_and_a_refresh_brings_the_rows(
    audit_site: tuple[str, App], browser: Browser
) -> None:
    base, app = audit_site
    with app.uow() as uow:  # started, as a click does; carried out below, by the test
        run_id = start_web_run(uow, app, Q1, canary=CANARY, by=ADMIN)
        uow.commit()
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_in(page, base, ADMIN)
    page.goto(f"{base}/audit/{run_id}")
    expect(page.locator("#audit-progress")).to_contain_text("starting")
    waiting = page.locator("#audit-checks tr[data-check]")
    expect(waiting).to_have_count(6)
    expect(waiting.locator("td.status")).to_have_text(["waiting"] * 6)
    # A second start while it runs is shown this run, not a new one.
    page.goto(f"{base}/audit/new")
    page.get_by_label("Campaign").select_option(Q1)
    page.get_by_label("Canary address").fill(CANARY)
    page.get_by_role("button", name="Start the audit").click()
    expect(page).to_have_url(re.compile(rf"/audit/{run_id}$"))
    expect(page.locator("[data-flash]")).to_contain_text(f"already running (run {run_id})")
    carry_out(app, run_id, channels=["email"])
    page.get_by_role("link", name="Refresh").click()
    expect(page.locator("h1")).to_contain_text("passed")
    expect(page.locator("#audit-checks td.status")).to_have_text(["pass"] * 6)
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.AuditRun)) == 1
    context.close()


def test_a_member_may_read_the_audit_but_not_start_one(audit_site: tuple[str, App], browser: Browser) -> None:
    base, app = audit_site
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, base, MEMBER)
    page.goto(f"{base}/audit")
    expect(page.get_by_role("link", name="Start an audit")).to_have_count(0)
    response = page.goto(f"{base}/audit/new")
    assert response is not None and response.status == 403
    token = page.context.request.get(f"{base}/campaigns").text()
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', token)
    assert csrf is not None
    posted = page.context.request.post(
        f"{base}/audit/new", form={"campaign": Q1, "canary": CANARY, "csrf_token": csrf.group(1)}
    )
    assert posted.status == 403
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.AuditRun)) == 0
    context.close()
