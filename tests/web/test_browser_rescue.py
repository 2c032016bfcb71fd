"""Reply Rescue in a real browser (Debian's Chromium through Playwright) against the real app
under uvicorn, on SQLite and PostgreSQL: a reply ingested as a real message reaches the inbox,
a person edits the draft and presses Send, and a real SMTP server receives one threaded email
— however often the form is sent; and a hostile reply runs nothing on the thread page."""

from __future__ import annotations

import re
from datetime import timedelta

from playwright.sync_api import Browser, Page, expect
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.service_layer.inbound.ingest import ingest_raw
from tests.support.scenario import lead_state, run_days, step_counts
from tests.support.smtp_servers import RecordingSmtpServer
from tests.web.browser import screenshot
from tests.web.conftest import Site
from tests.web.rescue import ADA, ALAN, ATLAS, GRACE, live_workspace
from tests.web.support import PASSWORD
from tests.web.test_browser import assert_nothing_ran, hostile_html, spy_server

WROTE = "Yes, this is interesting. Could we talk on Thursday at 10?"
ANSWER = "Hi Ada,\n\nThursday at 10 works well. I will send an invitation.\n\nSam"


def sign_in_home(page: Page, base: str, email: str) -> None:
    """Sign in from the front door: a signed-in person lands in the inbox."""
    page.goto(f"{base}/")
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.fill("#email", email)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/inbox")


def test_a_reply_reaches_the_inbox_and_the_answer_goes_out_once_threaded(
    site: Site, browser: Browser
) -> None:
    app = site.alpha.app
    live = live_workspace(app)
    ours, subject = live.sent(ADA)
    with RecordingSmtpServer() as server:
        app.use_transport(SmtpTransport(server.url(timeout=10)))
        live.reply(ADA, WROTE, name="Ada Lovelace")
        live.clock.advance(timedelta(minutes=17))
        live.reply(GRACE, "How much does it cost for a team of 12?", name="Grace Hopper")
        live.clock.advance(timedelta(minutes=41))
        live.reply(ALAN, "I am not the right person; please write to Joan Clarke <joan@bletchley.test>.")
        with app.uow() as uow:
            theirs = uow.session.scalars(
                select(m.InboundMessage.message_id).where(m.InboundMessage.id == 1)
            ).one()
        thread = live.thread_of(ADA)

        # JavaScript off: the whole flow works without it, and nothing stops a double submit
        # in the browser — the server has to make it one email.
        context = browser.new_context(java_script_enabled=False, viewport={"width": 1360, "height": 900})
        page = context.new_page()
        sign_in_home(page, site.base, site.alpha.email)
        row = page.locator(f"#threads tr[data-thread='{thread}']")
        expect(row).to_contain_text("Ada Lovelace")
        expect(row).to_contain_text("interested")
        expect(page.locator("#thread-states a.current")).to_contain_text("open3")
        screenshot(page, f"rescue-inbox-{site.db}")

        row.locator("a").first.click()
        expect(page).to_have_url(f"{site.base}/threads/{thread}")
        expect(page.locator("#new-text")).to_have_text(
            "Yes, this is interesting. Could we talk on Thursday at 10?"
        )
        expect(page.locator("#conversation li.new")).to_contain_text("Could we talk on Thursday")
        expect(page.locator("#other-products")).to_contain_text("Beacon")
        expect(page.locator("#other-products button")).to_have_text(["Pause these", "Leave running"])
        page.fill("#body", ANSWER)
        screenshot(page, f"rescue-thread-{site.db}")

        # Two submits: the browser shows the answer to whichever it sent last, and that one may
        # have reached the server before or after the first was sent (both pages are right).
        seen = page.locator("#draft input[name=seen]").input_value()  # the version shown
        token = page.locator("#draft input[name=csrf_token]").input_value()
        page.dblclick("#draft button[type=submit]")
        # When both answers are in before the page loads, the page says both (one flash each).
        expect(page.locator("[data-flash]").first).to_contain_text(
            re.compile(r"on its way to ada@lovelace\.test|This answer was sent already")
        )
        expect(page.locator("#answers")).to_contain_text(f"{site.alpha.email} to {ADA}")
        # The browser's resubmit of the same form (back, then Send again): taken, not sent again.
        form = {
            "csrf_token": token,
            "subject": f"Re: {subject}",
            "body": ANSWER,
            "seen": seen,
        }
        again = page.request.post(f"{site.base}/threads/{thread}/send", form=form, max_redirects=0)
        assert again.status == 303 and again.headers["location"].endswith(f"/threads/{thread}#answers")
        said = page.request.get(f"{site.base}/threads/{thread}").text()
        assert "This answer was sent already (same text): nothing was sent again." in said
        context.close()

        # The lead stays stopped: days pass, the worker runs, no follow-up of Atlas goes out.
        run_days(app, live.clock, 8, step=timedelta(hours=6))
        # Sequence emails go out with a signed return path (sam+bounces-...@atlas.test).
        untagged = [(r, re.sub(r"\+[^@]*@", "@", r.mail_from)) for r in server.accepted()]
        from_atlas = [r for r, sender in untagged if sender == "sam@atlas.test"]
    [mail] = from_atlas
    message = mail.message()
    assert mail.rcpt_tos == (ADA,) and message["Subject"] == f"Re: {subject}"
    assert message["In-Reply-To"] == theirs and message["References"].split() == [ours, theirs]
    assert message.get_content().replace("\r\n", "\n").strip() == ANSWER
    assert lead_state(app, ADA, ATLAS) == "replied"
    assert step_counts(app, ADA, ATLAS) == {"sent": 1, "cancelled": 2}


def hostile_reply(to_lead: str, in_reply_to: str, spy: str) -> bytes:
    return (
        f'From: "<script>window.__pwned=1</script>" <{to_lead}>\r\n'
        "To: sam@atlas.test\r\n"
        "Subject: Re: <img src=x onerror=alert(1)> offer\r\n"
        "Message-ID: <xss-thread-1@lovelace.test>\r\n"
        f"In-Reply-To: {in_reply_to}\r\nReferences: {in_reply_to}\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        f"{hostile_html(spy)}\r\n"
    ).encode()


def test_a_hostile_reply_runs_no_script_on_the_thread_page(site: Site, browser: Browser) -> None:
    app = site.alpha.app
    live = live_workspace(app)
    ours, _ = live.sent(ADA)
    with spy_server() as (spy, hits):
        assert ingest_raw(app, hostile_reply(ADA, ours, spy), "imap").status == "matched"
        thread = live.thread_of(ADA)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        sign_in_home(page, site.base, site.alpha.email)
        expect(page.locator("#threads")).to_contain_text("<img src=x onerror=alert(1)> offer")  # as text
        page.wait_for_load_state("networkidle")
        assert_nothing_ran(page, dialogs)

        page.goto(f"{site.base}/threads/{thread}")
        expect(page.locator("iframe.message-frame")).to_have_attribute("sandbox", "")
        mail = page.frame_locator("iframe.message-frame")
        expect(mail.locator("body")).to_contain_text("interesting")
        mail.get_by_text("a javascript: link").click()  # clicked by the person: goes nowhere
        expect(page.locator("#new-text")).to_contain_text("interesting")
        expect(page.locator("#images-blocked")).to_contain_text("1 remote image blocked")
        page.wait_for_load_state("networkidle")
        assert_nothing_ran(page, dialogs)
        assert hits == []  # not the pixel, not a stylesheet, not a background: nothing left us
        context.close()
