"""Absences by their dates, and a person's answer sent by a machine (issue 22, item 4), end to
end through ingest_raw on SQLite and PostgreSQL."""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import format_datetime

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.scenario import REPORTS, lead_state, load_examples, run_days, step_counts

MARC = "marc.keller@brightline-logistics.test"


def _sent(app: App, clock: FixedClock) -> tuple[str, str]:
    """One day of sending: (Message-ID, subject) of our first email to Marc."""
    load_examples(app)
    run_days(app, clock, 1)
    with app.uow() as uow:
        lead = find_lead(uow, MARC, REPORTS)
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == lead.id, m.Step.position == 1)
        ).one()
        return step.message_id, step.subject


def _auto(clock: FixedClock, in_reply_to: str, subject: str, body: str, headers: dict[str, str]) -> bytes:
    msg = EmailMessage()
    msg["From"] = f"Marc Keller <{MARC}>"
    msg["To"] = "dana@northwind-analytics.test"
    msg["Subject"] = subject
    msg["Date"] = format_datetime(clock.now())
    msg["Message-ID"] = "<auto1@brightline-logistics.test>"
    msg["In-Reply-To"] = in_reply_to
    msg["References"] = in_reply_to
    for name, value in headers.items():
        msg[name] = value
    msg.set_content(body)
    return msg.as_bytes()


def _thread_reasons(app: App) -> list[str | None]:
    with app.uow() as uow:
        lead = find_lead(uow, MARC, REPORTS)
        return [
            t.reason
            for t in uow.session.scalars(select(m.RescueThread).where(m.RescueThread.lead_id == lead.id))
        ]


def test_a_sabbatical_past_the_pause_limit_holds_the_lead_for_a_person_with_its_date(
    app: App, clock: FixedClock
) -> None:
    # Before: the date (15 months ahead) was dropped, and without "out of the office" the
    # message was a plain auto-reply: no pause at all, step 2 went out.
    mid, subject = _sent(app, clock)
    raw = _auto(
        clock,
        mid,
        f"Re: {subject}",
        "On sabbatical, back on 1 March 2028.\n",
        {"Auto-Submitted": "auto-replied"},
    )
    result = ingest_raw(app, raw, "test")
    assert result.kind == "out_of_office"
    assert lead_state(app, MARC, REPORTS) == "held"
    assert any("2028-03-01" in (reason or "") for reason in _thread_reasons(app))
    run_days(app, clock, 14)
    assert step_counts(app, MARC, REPORTS)["sent"] == 1


def test_an_absence_that_ended_before_the_message_pauses_nothing(app: App, clock: FixedClock) -> None:
    # Before: a return date before the message was rejected, and the default 7-day pause applied.
    mid, subject = _sent(app, clock)
    raw = _auto(
        clock,
        mid,
        f"Automatic reply: {subject}",
        "I am out of the office until 29 November 2026 with limited access to email.\n",
        {"Auto-Submitted": "auto-replied"},
    )
    assert ingest_raw(app, raw, "test").kind == "out_of_office"
    assert lead_state(app, MARC, REPORTS) == "active"
    with app.uow() as uow:
        assert find_lead(uow, MARC, REPORTS).paused_until is None


def test_a_person_answering_through_a_helpdesk_tool_holds_the_lead_and_opens_a_thread(
    app: App, clock: FixedClock
) -> None:
    # Before: `Auto-Submitted: auto-generated` made it an auto-reply: no thread, step 2 sent.
    mid, subject = _sent(app, clock)
    raw = _auto(
        clock,
        mid,
        f"Re: {subject}",
        "Yes — we are interested. Call me Thursday at 10\n",
        {"Auto-Submitted": "auto-generated"},
    )
    result = ingest_raw(app, raw, "test")
    assert result.kind == "auto_reply"
    assert lead_state(app, MARC, REPORTS) == "held"
    assert _thread_reasons(app) == ["an automatic message in our thread reads as a person's answer"]
    run_days(app, clock, 14)
    assert step_counts(app, MARC, REPORTS)["sent"] == 1


def test_a_ticket_receipt_in_our_thread_lets_the_sequence_go_on(app: App, clock: FixedClock) -> None:
    mid, subject = _sent(app, clock)
    raw = _auto(
        clock,
        mid,
        f"Re: {subject}",
        "This is an automated reply: we have received your request (ticket 4411). Need help? "
        "Visit our help centre.\n",
        {"Auto-Submitted": "auto-generated"},
    )
    assert ingest_raw(app, raw, "test").kind == "auto_reply"
    assert lead_state(app, MARC, REPORTS) == "active"
    assert _thread_reasons(app) == []


def test_x_autorespond_none_is_a_person(app: App, clock: FixedClock) -> None:
    mid, subject = _sent(app, clock)
    raw = _auto(clock, mid, f"Re: {subject}", "Sounds good, send me the deck.\n", {"X-Autorespond": "none"})
    assert ingest_raw(app, raw, "test").kind == "human_reply"
    assert lead_state(app, MARC, REPORTS) == "replied"
