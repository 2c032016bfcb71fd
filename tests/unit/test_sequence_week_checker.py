"""The week simulation's checker (bench/sequence_week.py) can fail: each broken promise it
looks for, planted in a tiny history of accepted emails, is counted."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from bench.sequence_week import StepRow, judge
from bench.sim_worker import ScaledClock
from tests.support.smtp_servers import ReceivedMessage

from replyguard.domain.outgoing import OutgoingEmail, message_bytes
from replyguard.domain.schedule import SendWindow, Wait

START = datetime(2026, 12, 7, 0, 0, tzinfo=UTC)  # Monday
CLOCK = ScaledClock(START, t0=1_000_000.0, speed=1.0)
WINDOW = SendWindow.parse(["mon", "tue", "wed", "thu", "fri"], "09:00", "17:00")


def _step(position: int, **changes: object) -> StepRow:
    row = StepRow(
        send_key=f"key{position}",
        enrollment_id=1,
        position=position,
        state="sent",
        to_address="ann@corp.test",
        subject="Hello" if position == 1 else "Re: Hello",
        body=f"Body {position}.",
        in_reply_to=None if position == 1 else "<rg.key1@seller.test>",
        references=None if position == 1 else "<rg.key1@seller.test>",
        mailbox="rep@seller.test",
        mailbox_zone="UTC",
        zone="UTC",
        window=WINDOW,
        wait=Wait.parse("0d" if position == 1 else "1d"),
        lead_id=7,
    )
    return replace(row, **changes)  # type: ignore[arg-type]


def _accepted(step: StepRow, at: datetime, **changes: object) -> ReceivedMessage:
    email = OutgoingEmail(
        send_key=step.send_key,
        message_id=f"<rg.{step.send_key}@seller.test>",
        from_name="Rep",
        from_address="rep@seller.test",
        to_name="Ann",
        to_address=step.to_address,
        subject=step.subject,
        body=step.body,
        date=at,
        in_reply_to=step.in_reply_to,
        references=step.references,
    )
    email = replace(email, **changes)  # type: ignore[arg-type]
    wall = CLOCK.to_wall(at)
    return ReceivedMessage(
        queue_id="q",
        message_id=email.message_id,
        send_key=email.send_key,
        mail_from="rep@seller.test",
        rcpt_tos=(step.to_address,),
        data_at=wall,
        accepted_at=wall,
        behaviour="accept",
        tls=False,
        authenticated=False,
        content=message_bytes(email),
    )


MON_10 = START + timedelta(hours=10)
TUE_10 = MON_10 + timedelta(days=1)


def _counts(
    steps: list[StepRow], accepted: list[ReceivedMessage], replies: list[dict[str, Any]] | None = None
) -> dict[str, int]:
    report = judge(
        {s.send_key: s for s in steps}, accepted, replies or [], CLOCK, caps={"rep@seller.test": 5}
    )
    return {k: n for k, n in report["zero_counts"].items() if n}


THREADED = "threaded on an email the server had not accepted"
OVER_CAP = "over the mailbox's daily cap"
AFTER_REPLY = "started after the lead's reply committed"
BROKEN = [
    ("second first", "out of order (an earlier step neither accepted before nor skipped)"),
    ("too soon", "closer than its wait to the email before"),
    ("at night", "outside the send window"),
    ("other body", "not the right step (key, To, Subject, body or threading differ)"),
    ("twice", "accepted more than once"),
    ("never accepted", "sent in the database, never accepted by the server"),
]
#: Every broken promise a test below plants, by the checker's own name for it.
PLANTED = {broken for _, broken in BROKEN} | {THREADED, OVER_CAP, AFTER_REPLY}


def test_a_faithful_history_counts_nothing() -> None:
    one, two = _step(1), _step(2)
    assert _counts([one, two], [_accepted(one, MON_10), _accepted(two, TUE_10)]) == {}


@pytest.mark.parametrize(("history", "broken"), BROKEN)
def test_each_broken_promise_is_counted(history: str, broken: str) -> None:
    one, two = _step(1), _step(2)
    accepted = {
        "second first": [_accepted(two, MON_10), _accepted(one, TUE_10)],
        "too soon": [_accepted(one, MON_10), _accepted(two, MON_10 + timedelta(hours=2))],
        "at night": [_accepted(one, MON_10 - timedelta(hours=8)), _accepted(two, TUE_10)],
        "other body": [_accepted(one, MON_10, body="Something else."), _accepted(two, TUE_10)],
        "twice": [_accepted(one, MON_10), _accepted(one, MON_10), _accepted(two, TUE_10)],
        "never accepted": [_accepted(one, MON_10)],
    }[history]
    assert broken in _counts([one, two], accepted)


def test_a_follow_up_to_an_email_the_server_never_took_is_counted() -> None:
    one, two = _step(1, state="skipped"), _step(2)
    # Step 1 was skipped (never accepted), yet step 2 still replies to it.
    counts = _counts([one, two], [_accepted(two, TUE_10)])
    assert THREADED in counts


def test_a_day_over_the_cap_is_counted() -> None:
    steps = [_step(1, send_key=f"k{i}", enrollment_id=i, lead_id=i) for i in range(6)]
    accepted = [_accepted(s, MON_10 + timedelta(minutes=i)) for i, s in enumerate(steps)]
    assert _counts(steps, accepted) == {OVER_CAP: 1}


def test_a_follow_up_started_after_the_reply_committed_is_counted() -> None:
    one, two = _step(1), _step(2)
    accepted = [_accepted(one, MON_10), _accepted(two, TUE_10)]
    # Ann's reply committed on Monday afternoon; step 2's DATA started on Tuesday.
    replied = [{"lead_id": 7, "before_commit": CLOCK.to_wall(MON_10 + timedelta(hours=5))}]
    assert _counts([one, two], accepted, replied) == {AFTER_REPLY: 1}
    # A reply that committed after step 2 had started is the race the guard allows ("crossed").
    late = [{"lead_id": 7, "before_commit": CLOCK.to_wall(TUE_10 + timedelta(minutes=1))}]
    assert _counts([one, two], accepted, late) == {}


def test_every_promise_the_checker_counts_is_planted_above() -> None:
    """A promise added to the checker without a test that plants its breach fails here."""
    one = _step(1)
    names = set(judge({one.send_key: one}, [], [], CLOCK)["zero_counts"])
    assert names - PLANTED == set()
