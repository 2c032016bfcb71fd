"""The Leads page in Chromium, with JavaScript off: one row per person with their products,
and the bulk actions from the row checkboxes — enroll in a campaign, assign to a user, and
stop, which waits for its box to be ticked (the browser keeps the form until then). And over
HTTP (the form and `POST /api/v1/leads/bulk`), on both databases: a person of another
workspace refuses the whole request."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.access import Role
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.workspace.accounts import add_user
from replyguard.service_layer.workspace.leads import contact_for_address, import_leads
from tests.conftest import START, build_app
from tests.support.scenario import csv_of, lead_state, step_counts
from tests.web.conftest import Site
from tests.web.rescue import ADA, ALAN, ATLAS, BEACON, BEACON_CAMPAIGN, GRACE, LEADS, live_workspace
from tests.web.support import PASSWORD, api_client, serving, signed_in, tenant

ME, BEN = "ann@alpha.test", "ben@alpha.test"


@pytest.fixture
def leads_site(sqlite_template: Path, tmp_path: Path) -> Iterator[tuple[str, App]]:
    path = tmp_path / "replyguard.db"
    shutil.copy(sqlite_template, path)
    app = build_app(f"sqlite:///{path}", FixedClock(START), tmp_path / "outbox")
    live_workspace(app)  # Ada is a lead of Atlas and Beacon; Grace and Alan of Atlas
    with app.uow() as uow:  # Grace and Alan become Beacon leads too, not yet enrolled
        import_leads(uow, BEACON, list(read_leads(csv_of(LEADS[1:]))))
        uow.commit()
    tenant(app, app.workspace, ME)
    with app.uow() as uow:
        add_user(uow, BEN, PASSWORD, name="Ben", role=Role.MEMBER)
        uow.commit()
    with serving(create_app(app)) as base:
        yield base, app
    app.close()


def sign_in(page: Page, base: str) -> None:
    page.goto(f"{base}/login")
    page.fill("#email", ME)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/inbox$"))


def choose(page: Page, *names: str) -> None:
    for name in names:
        page.get_by_label(f"Choose {name}", exact=True).check()


def contact_id(app: App, email: str) -> int:
    with app.uow() as uow:
        contact = contact_for_address(uow, email)
        assert contact is not None
        return contact.id


def owner_of(app: App, email: str) -> str | None:
    with app.uow() as uow:
        contact = contact_for_address(uow, email)
        assert contact is not None
        return contact.owner


def test_bulk_enroll_assign_and_stop_without_javascript(
    leads_site: tuple[str, App], browser: Browser
) -> None:
    base, app = leads_site
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_in(page, base)
    page.goto(f"{base}/leads")
    rows = page.locator("#people tbody tr[data-person]")
    expect(rows).to_have_count(3)  # one row per person, not one per lead (six)
    ada = rows.filter(has_text="Ada Lovelace")
    expect(ada.locator("li[data-product]")).to_have_text([re.compile(ATLAS), re.compile(BEACON)])

    # Enroll Grace and Alan in the Beacon pilot.
    choose(page, "Grace Hopper", "Alan Turing")
    page.get_by_label("Campaign to enroll them in").select_option(BEACON_CAMPAIGN)
    page.get_by_role("button", name="Enroll", exact=True).click()
    expect(page.locator("[data-flash]")).to_contain_text(f"2 enrolled in {BEACON_CAMPAIGN}")
    assert sum(step_counts(app, GRACE, BEACON).values()) == 3

    # Give Ada and Grace to Ben.
    choose(page, "Ada Lovelace", "Grace Hopper")
    page.get_by_label("User to give them to").select_option(BEN)
    page.get_by_role("button", name="Assign", exact=True).click()
    expect(page.locator("[data-flash]")).to_contain_text(f"2 people given to {BEN}")
    assert (owner_of(app, ADA), owner_of(app, GRACE), owner_of(app, ALAN)) == (BEN, BEN, None)
    expect(rows.filter(has_text="Ada Lovelace")).to_contain_text(BEN)

    # Stop Alan: not until the box is ticked.
    choose(page, "Alan Turing")
    stop = page.get_by_role("button", name="Stop", exact=True)
    stop.click()
    expect(page.locator("#bulk input[name=sure]:invalid")).to_have_count(1)
    assert lead_state(app, ALAN, ATLAS) == "active"  # the browser kept the form
    page.locator("#bulk input[name=sure]").check()
    stop.click()
    expect(page.locator("[data-flash]")).to_contain_text("2 leads stopped (1 person)")
    for product in (ATLAS, BEACON):
        assert lead_state(app, ALAN, product) == "stopped"
        assert step_counts(app, ALAN, product).get("scheduled", 0) == 0
    assert lead_state(app, GRACE, ATLAS) == "active"
    with app.uow() as uow:
        stops = uow.session.scalars(select(m.Event.data).where(m.Event.kind == "lead_state_set")).all()
    assert [s["by"] for s in stops] == [ME, ME]
    context.close()


def test_a_person_of_another_workspace_is_refused(site: Site) -> None:
    alpha, bravo = site.alpha.app, site.bravo.app
    for app, email in ((alpha, "mine@alpha.test"), (bravo, "theirs@bravo.test")):
        with app.uow() as uow:
            import_leads(uow, "P", list(read_leads(csv_of([{"email": email}]))))
            uow.commit()
    mine, theirs = contact_id(alpha, "mine@alpha.test"), contact_id(bravo, "theirs@bravo.test")
    with signed_in(site.base, site.alpha.email) as (client, csrf):
        for action in ("stop", "assign", "enroll"):
            form = {"action": action, "ids": [str(mine), str(theirs)], "sure": "1"}
            form |= {"owner": site.alpha.email, "campaign": "anything", "csrf_token": csrf}
            response = client.post("/leads/bulk", data=form)
            assert response.status_code == 303
            page = client.get(response.headers["location"]).text
            assert f"no person {theirs} in this workspace; nothing was changed" in page
    with api_client(site.base, site.alpha.token) as api:
        refused = api.post("/api/v1/leads/bulk", json={"action": "stop", "people": [mine, theirs]})
        assert refused.status_code == 404, refused.text
        assert lead_state(alpha, "mine@alpha.test", "P") == "active"
        assert lead_state(bravo, "theirs@bravo.test", "P") == "active"
        with bravo.uow() as uow:
            assert uow.session.get_one(m.Contact, theirs).owner is None
        done = api.post("/api/v1/leads/bulk", json={"action": "stop", "people": [mine]})  # the control
        assert done.status_code == 200 and done.json() == {"changed": 1, "already": 0, "skipped": []}
    assert lead_state(alpha, "mine@alpha.test", "P") == "stopped"
