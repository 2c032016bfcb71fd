"""Absences by their dates (issue 22, item 4): long absences keep their date, past ones are
read as past, more shapes people write, a person's answer sent by a machine, and vendor
responder headers that say "no". These are the shapes the rules were tuned on; the held-out
shapes are in tests/fixtures/heldout/round4.py."""

from __future__ import annotations

from datetime import date, timedelta
from email.message import EmailMessage

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replyguard.domain.inbound.classify import classify
from replyguard.domain.states import ReplyKind

SENT = "Mon, 07 Dec 2026 09:00:00 +0000"


def _raw(text: str, headers: dict[str, str], subject: str = "Re: Reporting for Brightline") -> bytes:
    msg = EmailMessage()
    msg["From"] = "Jana Nowak <jana@dest.example>"
    msg["To"] = "dana@northwind.test"
    msg["Subject"] = subject
    msg["Date"] = SENT
    msg["Message-ID"] = "<a1@dest.example>"
    for name, value in headers.items():
        msg[name] = value
    msg.set_content(text)
    return msg.as_bytes()


AUTO = {"Auto-Submitted": "auto-replied"}


@pytest.mark.parametrize(
    ("text", "back"),
    [
        # Longer than a year: kept, so the policy can hold the lead with it.
        ("On sabbatical, back on 1 March 2028.", date(2028, 3, 1)),
        ("I'm on parental leave until 1 March 2028.", date(2028, 3, 1)),
        # Already over when the message was written: kept as past, so nothing is paused.
        ("I'm away until 30 November 2026.", date(2026, 11, 30)),
        ("Back on 1 December, I'll answer then.", date(2026, 12, 1)),
        # Everyday English.
        ("Back in on Dec 14.", date(2026, 12, 14)),
        ("I'm travelling and back at my desk on the 14th.", date(2026, 12, 14)),
        ("I'm back at work on 14 Dec.", date(2026, 12, 14)),
        # US numeric.
        ("Back on 12/14. For anything urgent call the office.", date(2026, 12, 14)),
        ("I'll be back in the office Mon 12/14.", date(2026, 12, 14)),
        ("I'm out through 12/13 and will reply when I'm back.", date(2026, 12, 14)),
        # Polish.
        ("Wracam do biura 14 grudnia.", date(2026, 12, 14)),
        ("Odpowiem po powrocie, 14 grudnia.", date(2026, 12, 14)),
        ("W biurze będę ponownie od 14.12.2026 r.", date(2026, 12, 14)),
    ],
)
def test_an_auto_reply_with_an_absence_and_a_date_is_an_out_of_office(text: str, back: date) -> None:
    c = classify(_raw(text, AUTO))
    assert (c.kind, c.return_date) == (ReplyKind.OUT_OF_OFFICE, back)


def test_back_in_touch_is_not_a_date() -> None:
    c = classify(_raw("Thanks, I'll be back in touch soon about the proposal.", AUTO))
    assert c.return_date is None


@pytest.mark.parametrize("value", ["none", "None", "no", "false", "0", "off", "never", ""])
def test_a_vendor_responder_header_that_says_no_is_read_as_no(value: str) -> None:
    c = classify(_raw("Sounds good, send me the deck.", {"X-Autorespond": value}))
    assert c.kind is ReplyKind.HUMAN_REPLY


def test_a_vendor_responder_header_that_says_yes_still_counts() -> None:
    assert classify(_raw("Thanks for your note.", {"X-Autorespond": "yes"})).kind is ReplyKind.AUTO_REPLY


HELPDESK = {"Auto-Submitted": "auto-generated", "In-Reply-To": "<rg.k1@mail.northwind.test>"}


@pytest.mark.parametrize(
    "text",
    [
        "Yes — we are interested. Call me Thursday at 10",
        "Could you send me your pricing for 20 seats? What does onboarding look like?",
        "Happy to set up a meeting next week, does Tuesday work?",
    ],
)
def test_an_automatic_message_in_a_thread_that_reads_as_a_person_is_marked(text: str) -> None:
    c = classify(_raw(text, HELPDESK))
    assert c.kind is ReplyKind.AUTO_REPLY and c.reads_as_person
    assert any(e.startswith("auto:reads-as-person:") for e in c.evidence)


@pytest.mark.parametrize(
    ("text", "headers"),
    [
        # A ticket receipt: a responder's own wording, and a question mark alone.
        ("This is an automated reply: we received your request (ticket 4411). Need help?", HELPDESK),
        ("Your request has been received. Need help? Visit our help centre.", HELPDESK),
        # Not an answer to anything.
        ("Yes — we are interested. Call me Thursday at 10", {"Auto-Submitted": "auto-generated"}),
    ],
)
def test_receipts_and_messages_outside_a_thread_are_not_marked(text: str, headers: dict[str, str]) -> None:
    assert not classify(_raw(text, headers)).reads_as_person


@given(st.integers(min_value=-90, max_value=3 * 365))
def test_a_written_return_date_is_kept_from_90_days_back_to_three_years_ahead(offset: int) -> None:
    day = date(2026, 12, 7) + timedelta(days=offset)
    text = f"I am on leave and will be back on {day.day} {day.strftime('%B')} {day.year}."
    c = classify(_raw(text, AUTO))
    assert (c.kind, c.return_date) == (ReplyKind.OUT_OF_OFFICE, day)
