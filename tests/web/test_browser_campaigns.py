"""A campaign run from the browser (Debian's Chromium through Playwright, the real app under
uvicorn, a real SMTP server): its steps with their bodies and counts, a step previewed for a
chosen lead and sent as a test — to the signed-in person only —, a pause during which the
worker sends nothing, an edit through the differences and a confirmation, and a resume that
sends the edited emails. Archiving asks first, with JavaScript off too."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.workspace.campaigns import find_campaign
from tests.conftest import START, build_app
from tests.support.scenario import run_days
from tests.support.smtp_servers import RecordingSmtpServer
from tests.web.browser import screenshot
from tests.web.rescue import ADA, ATLAS_CAMPAIGN, Live, live_workspace
from tests.web.support import PASSWORD, serving, tenant

ME = "ann@alpha.test"


@dataclass(frozen=True)
class CampaignSite:
    base: str
    app: App
    live: Live
    campaign_id: int
    server: RecordingSmtpServer


@pytest.fixture
def campaign_site(sqlite_template: Path, tmp_path: Path) -> Iterator[CampaignSite]:
    path = tmp_path / "replyguard.db"
    shutil.copy(sqlite_template, path)
    app = build_app(f"sqlite:///{path}", FixedClock(START), tmp_path / "outbox")
    live = live_workspace(app)  # Atlas: three leads, their first emails sent (to the Maildir)
    tenant(app, app.workspace, ME)
    with app.uow() as uow:
        campaign_id = find_campaign(uow, ATLAS_CAMPAIGN).id
    with RecordingSmtpServer() as server, serving(create_app(app)) as base:
        # From here every email, the worker's and a test send, goes to the SMTP server.
        app.use_transport(SmtpTransport(server.url(timeout=10)))
        yield CampaignSite(base, app, live, campaign_id, server)
    app.close()


def sign_in(page: Page, base: str) -> None:
    page.goto(f"{base}/login")
    page.fill("#email", ME)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/inbox$"))


def sent_steps(app: App) -> int:
    """Steps of the Atlas campaign sent (the Beacon campaign, Ada's other product, goes on)."""
    with app.uow() as uow:
        templates = select(m.CampaignStep.id).where(
            m.CampaignStep.campaign_id == find_campaign(uow, ATLAS_CAMPAIGN).id
        )
        counted = select(func.count()).where(m.Step.state == "sent", m.Step.campaign_step_id.in_(templates))
        return int(uow.session.scalar(counted) or 0)


def from_atlas(server: RecordingSmtpServer) -> list[str]:
    """Recipients of what the SMTP server took from the Atlas mailbox."""
    return [r.rcpt_tos[0] for r in server.accepted() if r.mail_from.endswith("atlas.test")]


def test_preview_test_send_pause_edit_and_resume_from_the_browser(
    campaign_site: CampaignSite, browser: Browser
) -> None:
    site, app = campaign_site, campaign_site.app
    before = sent_steps(app)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    sign_in(page, site.base)
    page.goto(f"{site.base}/campaigns/{site.campaign_id}")

    # Steps with their bodies, and what each did.
    step2 = page.locator("#steps li.step[data-step='2']")
    expect(step2.locator("pre.body")).to_have_text("Hi {{ first_name }}, bringing this back up.")
    expect(page.locator("#steps li.step[data-step='1'] .step-stats")).to_contain_text("sent 3")
    expect(page.locator("#steps li.step[data-step='1'] .step-stats")).to_contain_text("reply rate 0.0 %")

    # A preview for Ada, then a test of it: to me, and to no one else.
    page.select_option("#preview-lead", label=f"Ada Lovelace <{ADA}>")
    page.locator("#steps li.step[data-step='1'] button").click()
    expect(page.locator("#preview-subject")).to_have_text("A question about Analytical Engines")
    expect(page.locator("#preview-body")).to_contain_text("Hi Ada, may I ask how Analytical Engines")
    screenshot(page, "campaign-preview")
    page.locator("#test-send button").click()
    expect(page.locator("[data-flash]")).to_contain_text(f"Test of step 1 sent to {ME}")
    [test] = site.server.wait_for_messages(1)
    assert test.rcpt_tos == (ME,)
    message = test.message()
    assert message["To"] == ME and message["From"] == "Sam Rivers <sam@atlas.test>"
    assert message["Subject"] == "[TEST] A question about Analytical Engines"
    assert "Hi Ada, may I ask" in message.get_content()
    assert sent_steps(app) == before  # a test is no step's send

    # Paused: a week of the worker sends nothing of it.
    page.locator("#pause").click()
    expect(page.locator("#campaign-status")).to_have_text("paused")
    run_days(app, site.live.clock, 8)
    assert sent_steps(app) == before
    assert from_atlas(site.server) == [ME]  # the test alone

    # An edit: the differences first, applied only once confirmed. (A week went by on the
    # simulated clock: the session ended, so sign in again.)
    sign_in(page, site.base)
    page.goto(f"{site.base}/campaigns/{site.campaign_id}")
    page.locator("a[href$='/edit']").click()
    source = page.locator("#source").input_value()
    page.fill("#source", source.replace("bringing this back up", "one more thought on launches"))
    page.locator("#edit button[type=submit]").click()
    expect(page.locator("#change-list li")).to_have_count(1)
    expect(page.locator("#change-list")).to_contain_text("step 2 body")
    expect(page.locator("#change-notes")).to_contain_text("queued ones are rendered again")
    with app.uow() as uow:  # nothing written before the confirmation
        assert "bringing this back up" in find_campaign(uow, ATLAS_CAMPAIGN).source
    screenshot(page, "campaign-edit-differences")
    page.locator("#confirm-edit button").click()
    expect(page.locator("[data-flash]")).to_contain_text("Campaign updated: 1 change(s)")
    expect(step2.locator("pre.body")).to_have_text("Hi {{ first_name }}, one more thought on launches.")

    # Resumed: the edited second emails go out, to the leads.
    page.locator("#resume").click()
    expect(page.locator("#campaign-status")).to_have_text("active")
    run_days(app, site.live.clock, 2)
    followups = [
        r for r in site.server.accepted() if r.mail_from.endswith("atlas.test") and r.rcpt_tos != (ME,)
    ]
    assert followups and all("one more thought on launches" in r.message().get_content() for r in followups)
    assert {r.rcpt_tos[0] for r in followups} <= {ADA, "grace@hopper.test", "alan@turing.test"}
    context.close()


def test_archive_without_javascript_waits_for_its_box(campaign_site: CampaignSite, browser: Browser) -> None:
    site = campaign_site
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_in(page, site.base)
    page.goto(f"{site.base}/campaigns/{site.campaign_id}")
    archive = page.locator("form#archive")
    archive.locator("button[type=submit]").click()  # the box not ticked: the browser keeps the form
    expect(archive.locator("input[name=sure]:invalid")).to_have_count(1)
    expect(page.locator("#campaign-status")).to_have_text("active")
    archive.locator("input[name=sure]").check()
    archive.locator("button[type=submit]").click()
    expect(page.locator("[data-flash]")).to_contain_text("Campaign archived: 6 queued emails cancelled")
    expect(page.locator("#campaign-status")).to_have_text("archived")
    # Nothing is queued any more: the queue opens on the first tab with steps in it.
    expect(page.locator("#queue .tabs a.current")).to_contain_text("sent")
    context.close()


def test_the_new_campaign_form_shows_a_new_mailbox_fields_only_when_asked(
    campaign_site: CampaignSite, browser: Browser
) -> None:
    site = campaign_site
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_in(page, site.base)
    page.goto(f"{site.base}/campaigns/new?tab=form")
    expect(page.locator("#mailbox-settings li[data-mailbox='sam@atlas.test']")).to_contain_text(
        "at most 40 a day"
    )
    fresh = page.locator("fieldset.new-mailbox")
    expect(fresh).to_be_hidden()  # an existing mailbox is picked: its own settings apply
    page.select_option("#mailbox_pick", label="A new mailbox (fill in below)")
    expect(fresh).to_be_visible()
    page.locator("#add-step").click()  # one more step row, the form kept as it was
    expect(page.locator("fieldset.step-row")).to_have_count(3)
    expect(page.locator("#mailbox_pick")).to_have_value(" new ")
    context.close()
