"""Two people on one thread, each in their own browser (Debian's Chromium through Playwright),
against the real app under uvicorn and a real SMTP server, on SQLite and PostgreSQL (issue 20).

Ann and Ben open the same thread; each page shows the other one is there. Ann stops the lead;
Ben, on the page he opened before, presses Resume: nothing is done, and his page says what
changed and who did it. Then both answer the same version: Ann's answer goes out, Ben is told
Ann answered (and when), and the SMTP server receives exactly one email.
"""

from __future__ import annotations

import re

from playwright.sync_api import Browser, BrowserContext, Page, expect

from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.domain.access import Role
from replyguard.service_layer.workspace.accounts import add_user
from tests.support.scenario import lead_state
from tests.support.smtp_servers import RecordingSmtpServer
from tests.web.conftest import Site
from tests.web.rescue import ADA, ATLAS, live_workspace
from tests.web.support import PASSWORD

BEN = "ben@alpha.test"


def signed_in(browser: Browser, base: str, email: str) -> tuple[BrowserContext, Page]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())  # "Stop this lead's sequence for good?"
    page.goto(f"{base}/login")
    page.fill("#email", email)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/inbox")
    return context, page


def test_the_second_decision_and_the_second_answer_are_refused_with_what_changed(
    site: Site, browser: Browser
) -> None:
    app = site.alpha.app
    live = live_workspace(app)
    with app.uow() as uow:
        add_user(uow, BEN, PASSWORD, name="Ben", role=Role.MEMBER)
        uow.commit()
    with RecordingSmtpServer() as server:
        app.use_transport(SmtpTransport(server.url(timeout=60)))
        live.reply(ADA, "Could you send me the pricing next week?", name="Ada Lovelace")
        thread = live.thread_of(ADA)
        url = f"{site.base}/threads/{thread}"
        ann_context, ann = signed_in(browser, site.base, site.alpha.email)
        ben_context, ben = signed_in(browser, site.base, BEN)
        ann.goto(url)
        ben.goto(url)
        expect(ben.locator("#presence")).to_contain_text(f"{site.alpha.email} has it open")

        # Ann stops; Ben, on the page he read before, resumes: refused, told what changed.
        ann.check("form[data-action=stop] input[name=sure]")
        ann.click("form[data-action=stop] button[type=submit]")
        expect(ann.locator("[data-flash]")).to_contain_text("stopped")
        ben.click("form[data-action=resume] button[type=submit]")
        expect(ben.locator("#thread-error")).to_contain_text("changed since you opened it")
        expect(ben.locator("#changed")).to_contain_text(re.compile(rf"{re.escape(site.alpha.email)}.*stop"))
        assert lead_state(app, ADA, ATLAS) == "stopped"
        # His page now shows the thread as it is: no resume, a restart on purpose.
        expect(ben.locator("form[data-action=resume]")).to_have_count(0)
        expect(ben.locator("form[data-action=restart]")).to_have_count(1)

        # Both answer the version they see: one email, and Ben is told Ann answered.
        ann.goto(url)
        ben.goto(url)
        ann.fill("#body", "Hi Ada,\n\nthe pricing is attached.\n\nAnn")
        ben.fill("#body", "Hi Ada,\n\nhere is our pricing.\n\nBen")
        ann.click("#draft button[type=submit]")
        expect(ann.locator("[data-flash]")).to_contain_text("on its way")
        ben.click("#draft button[type=submit]")
        expect(ben.locator("#thread-error")).to_contain_text(
            re.compile(rf"{re.escape(site.alpha.email)} answered at \d\d:\d\d")
        )
        expect(ben.locator("#body")).to_have_value("Hi Ada,\n\nhere is our pricing.\n\nBen")  # kept
        ann_context.close()
        ben_context.close()
        to_ada = [r for r in server.accepted() if r.rcpt_tos == (ADA,)]
    assert len(to_ada) == 1 and "Ann" in to_ada[0].message().get_content()
    assert lead_state(app, ADA, ATLAS) == "stopped"
