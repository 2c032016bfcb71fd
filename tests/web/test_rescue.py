"""Reply Rescue on the web, over real HTTP to the app under uvicorn, on SQLite and PostgreSQL:
the inbox (filters, counts, order, audit threads hidden), a thread and its decisions through
the API and the pages, a person's answer sent once, the resume preview against what resume
really plans, quarantined mail retried into a thread, paused mailboxes, the audit's history
and the time from a reply to a person's first action."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.audit.config import Setup
from replyguard.service_layer.audit.run import config_audit
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.leads import find_lead
from replyguard.service_layer.workspace.mailboxes import pause_mailbox
from replyguard.settings import NotifySettings
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer
from tests.web.conftest import Site
from tests.web.rescue import ADA, ALAN, ATLAS, ATLAS_CAMPAIGN, BEACON, GRACE, Live, live_workspace
from tests.web.support import api_client, signed_in

#: Threads are assigned to users of the workspace only: the site's own (tests/web/conftest.py).
ASSIGNEE = "ann@alpha.test"


def lead_state(live: Live, email: str, product: str = ATLAS) -> str:
    with live.app.uow() as uow:
        return find_lead(uow, email, product).reply_state


def outbox_count(live: Live) -> int:
    with live.app.uow() as uow:
        return uow.session.scalar(select(func.count()).select_from(m.PersonSend)) or 0


def test_the_inbox_lists_filters_and_counts_threads_open_first(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    live.reply(ADA, "Yes, interested. Can we talk on Thursday at 10?", name="Ada Lovelace")
    live.reply(GRACE, "How much does it cost for 12 people?")
    live.reply(ALAN, "Not interested, thank you.")
    ada, grace, alan = live.thread_of(ADA), live.thread_of(GRACE), live.thread_of(ALAN)
    with api_client(site.base, site.alpha.token) as api:
        assert api.post(f"/api/v1/threads/{alan}/done").status_code == 200
        live.clock.advance(timedelta(minutes=1))
        snoozed = api.post(f"/api/v1/threads/{grace}/snooze", json={"until": "2026-12-09T09:00:00Z"})
        assert snoozed.status_code == 200, snoozed.text
        assert api.post(f"/api/v1/threads/{ada}/assign", json={"to": ASSIGNEE}).status_code == 200

        listed = api.get("/api/v1/threads").json()["items"]
        assert [t["id"] for t in listed] == [ada]
        [row] = listed
        assert (row["product"], row["campaign"], row["lead"], row["intent"]) == (
            ATLAS,
            ATLAS_CAMPAIGN,
            ADA,
            "interested",
        )
        assert row["other_active_products"] == [BEACON] and "pause_others" in row["actions"]
        assert api.get("/api/v1/threads/counts").json() == {"open": 1, "snoozed": 1, "done": 1, "all": 3}
        every = [t["id"] for t in api.get("/api/v1/threads", params={"state": "all"}).json()["items"]]
        assert every == [ada, grace, alan]  # open, then snoozed, then done
        assert [t["id"] for t in api.get("/api/v1/threads", params={"state": "snoozed"}).json()["items"]] == [
            grace
        ]
        by = {
            "intent=question&state=all": [grace],
            f"owner={ASSIGNEE}&state=all": [ada],
            "owner=sam@atlas.test&state=all": [ada, grace, alan],
            f"product={BEACON}&state=all": [],
            f"campaign={ATLAS_CAMPAIGN}&state=all": [ada, grace, alan],
            "kind=probable_reply&state=all": [],
            "audit=true&state=all": [],  # canary threads only: there are none
        }
        for query, expected in by.items():
            found = [t["id"] for t in api.get(f"/api/v1/threads?{query}").json()["items"]]
            assert found == expected, query
        # The snooze ends by itself: at its time the thread is open again, first in the list.
        live.clock.advance(timedelta(days=2))
        assert api.get("/api/v1/threads/counts").json()["open"] == 2
    with signed_in(site.base, site.alpha.email) as (page, _):
        home = page.get("/", follow_redirects=True)
        assert home.url.path == "/inbox" and f'data-thread="{ada}"' in home.text
        filtered = page.get("/inbox", params={"intent": "question"})
        assert f'data-thread="{grace}"' in filtered.text and f'data-thread="{ada}"' not in filtered.text


def test_decisions_through_the_api_and_the_resume_preview_is_what_resume_plans(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    live.reply(GRACE, "Please write again in the new year.")
    thread = live.thread_of(GRACE)
    with api_client(site.base, site.alpha.token) as api:
        detail = api.get(f"/api/v1/threads/{thread}").json()
        assert detail["lead"] == GRACE and detail["text"].startswith("Please write again")
        assert [c["from"] for c in detail["conversation"]] == ["ours", "theirs:human_reply"]
        assert "resume" in detail["actions"] and detail["resume_plan"], detail["actions"]
        preview = [(p["position"], p["due_at"]) for p in detail["resume_plan"]]

        wrong = api.post(f"/api/v1/threads/{thread}/decisions", json={"action": "confirm"})
        assert wrong.status_code == 409 and "probable" in wrong.json()["detail"]
        unknown = api.post(f"/api/v1/threads/{thread}/decisions", json={"action": "explode"})
        far = api.post(
            f"/api/v1/threads/{thread}/decisions", json={"action": "pause_until", "until": "9999-12-31"}
        )
        assert unknown.status_code == far.status_code == 422
        assert lead_state(live, GRACE) == "replied"  # none of them changed anything

        resumed = api.post(
            f"/api/v1/threads/{thread}/decisions", json={"action": "resume", "version": detail["version"]}
        )
        assert resumed.status_code == 200, resumed.text
        body = resumed.json()
        assert [(p["position"], p["due_at"]) for p in body["planned"]] == preview
        assert body["lead_state"] == "active" and body["message"].startswith("resumed; next: step 2")
        history = api.get(f"/api/v1/threads/{thread}").json()["history"]
        decision = history[-1]
        assert (decision["kind"], decision["action"], decision["by"]) == (
            "thread_decision",
            "resume",
            "api token tests default",
        )
        assert [p["position"] for p in decision["planned"]] == [2, 3]
    assert lead_state(live, GRACE) == "active"


def test_a_persons_answer_through_the_api_is_sent_once(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    live.reply(ADA, "How much is it for a team of 12?")
    thread = live.thread_of(ADA)
    answer = {"body": "Hi Ada,\n\n40 EUR a seat a month.\n\nSam", "version": seen_of(live, thread)}
    with api_client(site.base, site.alpha.token) as api:
        first = api.post(f"/api/v1/threads/{thread}/send", json=answer)
        again = api.post(f"/api/v1/threads/{thread}/send", json=answer)
        empty = api.post(
            f"/api/v1/threads/{thread}/send", json={"body": " \n ", "version": answer["version"]}
        )
        header = api.post(
            f"/api/v1/threads/{thread}/send", json={**answer, "subject": "Hi\r\nBcc: x@evil.test"}
        )
    assert first.status_code == 200 and first.json()["state"] == "sent" and not first.json()["duplicate"]
    assert again.json()["duplicate"] and again.json()["send_id"] == first.json()["send_id"]
    assert empty.status_code == header.status_code == 409
    assert outbox_count(live) == 1 and lead_state(live, ADA) == "replied"


def test_a_decision_form_without_the_csrf_token_is_refused_and_changes_nothing(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    live.reply(ADA, "Yes, let's talk. Thursday at 10?")
    thread = live.thread_of(ADA)
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        for action in ("stop", "done"):
            refused = page.post(f"/threads/{thread}/decide", data={"action": action})
            assert refused.status_code == 403 and "form expired" in refused.text
        forged = page.post(f"/threads/{thread}/send", data={"body": "Hi", "csrf_token": csrf[:-2] + "xx"})
        assert forged.status_code == 403
        assert lead_state(live, ADA) == "replied" and outbox_count(live) == 0
        with live.app.uow() as uow:
            assert uow.session.get_one(m.RescueThread, thread).state == "open"
            assert not uow.session.scalars(select(m.Event).where(m.Event.kind == "thread_decision")).all()
        # The control: the same form with its token is taken, and the page says what it did.
        done = page.post(
            f"/threads/{thread}/decide",
            data={"action": "stop", "csrf_token": csrf, "seen": seen_of(live, thread)},
        )
        assert done.status_code == 303 and done.headers["location"].endswith(f"/threads/{thread}#history")
        shown = page.get(done.headers["location"])
        assert "data-flash" in shown.text and "stopped; 0 queued steps cancelled" in shown.text
        # Said once: a reload of the same page says nothing more.
        assert (
            "stopped; 0 queued steps cancelled"
            not in page.get(done.headers["location"]).text.split('id="history"')[0]
        )
    assert lead_state(live, ADA) == "stopped"


def test_pages_retry_quarantined_mail_into_a_thread_and_resume_a_paused_mailbox(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    app = live.app

    def broken(_name: str) -> None:
        raise RuntimeError("the reply transaction failed (a bug, since fixed)")

    app.hooks.arm("inside_reply_tx", broken)
    stuck = live.reply(GRACE, "Interested, call me on Friday.")
    app.hooks.disarm()
    assert stuck.status == "quarantined" and lead_state(live, GRACE) == "active"
    with app.uow() as uow:
        mailbox = uow.session.scalars(select(m.Mailbox.id).where(m.Mailbox.address == "sam@atlas.test")).one()
        lead = find_lead(uow, GRACE, ATLAS).id
    with app.engine.begin() as conn:
        pause_mailbox(
            conn,
            workspace_id=app.workspace_id,
            mailbox_id=mailbox,
            lead_id=lead,
            reason="535 5.7.8 authentication failed",
            now=app.clock.now(),
        )
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        listed = page.get("/inbound", params={"status": "quarantined"})
        assert f'action="/inbound/{stuck.inbound_id}/retry"' in listed.text
        retried = page.post(f"/inbound/{stuck.inbound_id}/retry", data={"csrf_token": csrf})
        assert retried.status_code == 303 and retried.headers["location"] == f"/inbound/{stuck.inbound_id}"
        assert "Processed again: now matched." in page.get(retried.headers["location"]).text
        again = page.post(f"/inbound/{stuck.inbound_id}/retry", data={"csrf_token": csrf})
        assert again.status_code == 409 and "processed already" in again.text
        message = page.get(f"/inbound/{stuck.inbound_id}")
        assert f'href="/threads/{live.thread_of(GRACE)}"' in message.text

        mailboxes = page.get("/mailboxes")
        assert "535 5.7.8 authentication failed" in mailboxes.text
        assert f'action="/mailboxes/{mailbox}/resume"' in mailboxes.text
        thread_page = page.get(f"/threads/{live.thread_of(GRACE)}")
        assert "is paused (535 5.7.8 authentication failed)" in thread_page.text
        resumed = page.post(f"/mailboxes/{mailbox}/resume", data={"csrf_token": csrf})
        assert resumed.status_code == 303
    assert lead_state(live, GRACE) == "replied"
    with app.uow() as uow:
        assert uow.session.get_one(m.Mailbox, mailbox).status == "active"


def test_the_audit_page_shows_runs_and_the_latest_config_findings(site: Site) -> None:
    app = site.alpha.app
    live_workspace(app)
    setup = Setup(app.settings, NotifySettings(email=False), None, "maildir:outbox")
    report = config_audit(app, setup, campaign=ATLAS_CAMPAIGN)
    failed = [r for r in report.rows if not r.passed]
    assert failed  # no inbound source, no notice channel: a fresh workspace has findings
    with signed_in(site.base, site.alpha.email) as (page, _), api_client(site.base, site.alpha.token) as api:
        overview = page.get("/audit")
        assert 'id="config-findings"' in overview.text and f'data-run="{report.run_id}"' in overview.text
        for row in report.rows:
            assert f'data-check="{row.name}"' in overview.text and row.summary in overview.text
        detail = page.get(f"/audit/{report.run_id}")
        assert detail.status_code == 200 and failed[0].title in detail.text
        runs = api.get("/api/v1/audit/runs").json()
        assert runs[0]["run_id"] == report.run_id and runs[0]["failed"] == [r.name for r in failed]
        run = api.get(f"/api/v1/audit/runs/{report.run_id}").json()
        assert [c["check"] for c in run["checks"]] == [r.name for r in report.rows]


def test_time_from_reply_to_first_action_per_campaign(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    clock = live.clock
    assert isinstance(clock, FixedClock)
    live.reply(ADA, "Yes, interested.")
    live.reply(GRACE, "What does it cost?")
    live.reply(ALAN, "Who else uses it?")
    ada, grace = live.thread_of(ADA), live.thread_of(GRACE)
    with api_client(site.base, site.alpha.token) as api:
        clock.advance(timedelta(minutes=30))
        assert api.post(f"/api/v1/threads/{ada}/assign", json={"to": ASSIGNEE}).status_code == 200
        clock.advance(timedelta(hours=5, minutes=30))
        answer = {"body": "40 EUR a seat.", "version": seen_of(live, grace)}
        assert api.post(f"/api/v1/threads/{grace}/send", json=answer).status_code == 200
        assert api.post(f"/api/v1/threads/{ada}/done").status_code == 200  # later: not her first action
        clock.advance(timedelta(hours=1))
        with live.app.uow() as uow:
            campaign_id = uow.session.scalars(
                select(m.Campaign.id).where(m.Campaign.name == ATLAS_CAMPAIGN)
            ).one()
        stats = api.get(f"/api/v1/campaigns/{campaign_id}/first-action").json()
    assert (stats["acted"], stats["waiting"]) == (2, 1)
    assert stats["median_seconds"] == 30 * 60 and stats["p90_seconds"] == 6 * 3600
    assert stats["oldest_waiting_seconds"] == 7 * 3600
    assert [b["count"] for b in stats["buckets"]] == [1, 0, 1, 0, 0]
    with signed_in(site.base, site.alpha.email) as (page, _):
        reports = page.get("/reports")
        assert f'data-campaign="{ATLAS_CAMPAIGN}"' in reports.text and "median 30 min" in reports.text


def test_the_notice_backlog_is_the_outbox_not_yet_delivered(site: Site) -> None:
    from replyguard.adapters.notices import make_channels
    from replyguard.service_layer.queries.ops import ops_snapshot
    from replyguard.service_layer.rescue.notice_delivery import NoticeDelivery

    live = live_workspace(site.alpha.app)
    live.reply(ADA, "Interested!")

    def backlog() -> int:
        with live.app.scoped.installation() as uow:
            return ops_snapshot(uow).notice_backlog

    assert backlog() == 1
    settings = NotifySettings()
    NoticeDelivery(live.app, make_channels(settings, live.app.transport), settings).run_once()
    assert backlog() == 0  # delivered by email: out of the outbox, though nobody "read" it
    with live.app.engine.begin() as conn:
        conn.execute(update(m.Notice).values(done_at=None))
    assert backlog() == 1


def test_a_failed_step_is_resent_from_its_thread_page_and_goes_out(site: Site) -> None:
    """A real SMTP server refuses Grace's first email for good (554 at DATA): the lead is held
    and a step_failed thread opens; a person resends it from the thread page once the cause is
    fixed, and the worker sends the same email (same Message-ID) again."""
    app = site.alpha.app
    with RecordingSmtpServer(by_recipient={GRACE: Behaviour.REJECT_DATA}.get) as server:
        app.use_transport(SmtpTransport(server.url(timeout=10)))
        live = live_workspace(app)
        assert lead_state(live, GRACE) == "held"
        thread = live.thread_of(GRACE)
        with live.app.uow() as uow:
            step = uow.session.get_one(m.Step, uow.session.get_one(m.RescueThread, thread).step_id)
            message_id, failed_state = step.message_id, step.state
        assert failed_state == "failed"
        with signed_in(site.base, site.alpha.email) as (page, csrf):
            shown = page.get("/inbox", params={"kind": "step_failed"})
            assert f'data-thread="{thread}"' in shown.text
            detail = page.get(f"/threads/{thread}")
            assert 'id="failed-step"' in detail.text and "554" in detail.text
            assert 'data-action="resend_step"' in detail.text and 'data-action="skip_step"' in detail.text
            server.by_recipient = None  # the cause is fixed
            resent = page.post(
                f"/threads/{thread}/decide",
                data={"action": "resend_step", "csrf_token": csrf, "seen": seen_of(live, thread)},
            )
            assert resent.status_code == 303, resent.text
        Worker(app).run_once()
        to_grace = [r for r in server.accepted() if r.rcpt_tos == (GRACE,)]
    [mail] = to_grace
    assert mail.message()["Message-ID"] == message_id
    assert lead_state(live, GRACE) == "active"


def test_a_probable_reply_is_confirmed_from_its_thread_page(site: Site) -> None:
    """A colleague answers outside our thread: the message is held as probable, the inbound
    page links to its thread, and a person confirms it there for one of the candidates."""
    live = live_workspace(site.alpha.app)
    probable = live.colleague(ADA, "Charles Babbage <charles@lovelace.test>", "Ada forwarded this; call me.")
    assert probable.status == "probable"
    with site.alpha.app.uow() as uow:
        thread = uow.session.scalars(
            select(m.RescueThread.id).where(m.RescueThread.kind == "probable_reply")
        ).one()
        atlas = find_lead(uow, ADA, ATLAS).id
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        listed = page.get("/inbound", params={"status": "probable"})
        assert f'href="/threads/{thread}"' in listed.text
        shown = page.get(f"/threads/{thread}")
        assert 'data-action="confirm"' in shown.text and 'data-action="reject"' in shown.text
        assert f'name="lead" value="{atlas}"' in shown.text  # Ada is a lead of two products: say which
        assert 'id="draft"' not in shown.text  # nothing is answered before it is confirmed
        seen = seen_of(live, thread)
        ambiguous = page.post(
            f"/threads/{thread}/decide", data={"action": "confirm", "csrf_token": csrf, "seen": seen}
        )
        assert ambiguous.status_code == 409 and "several candidates" in ambiguous.text
        form = {"action": "confirm", "lead": str(atlas), "csrf_token": csrf, "seen": seen}
        confirmed = page.post(f"/threads/{thread}/decide", data=form)
        assert confirmed.status_code == 303
        assert not confirmed.headers["location"].startswith(f"/threads/{thread}?")  # the reply's own thread
    assert lead_state(live, ADA) == "replied" and lead_state(live, ADA, BEACON) == "active"


def seen_of(live: Any, thread: int) -> int:
    """The thread's version, as its page and the API show it (what a person decides on)."""
    with live.app.uow() as uow:
        return int(uow.session.get_one(m.RescueThread, thread).version)
