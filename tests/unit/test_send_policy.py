"""The re-check at send time: only "active, ours, not cancelled, not suppressed" sends."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from replyguard.domain.send_policy import (
    Next,
    SendCheck,
    SendLimits,
    Stale,
    after_refusal,
    backoff,
    hand_over_deferral,
    limits_deferral,
    recheck,
)
from replyguard.domain.smtp_answers import Blame
from replyguard.domain.states import ReplyState, SendRefusal, StepState

NOW = datetime(2026, 12, 8, 15, 0, tzinfo=UTC)
OK = SendCheck(
    reply_state=ReplyState.ACTIVE,
    paused_until=None,
    step_state=StepState.CLAIMED,
    claim_token="mine",
    my_token="mine",
    cancel_requested=False,
    enrollment_state="active",
    campaign_status="active",
    address_suppressed=False,
)


def test_all_clear_sends() -> None:
    assert recheck(OK, NOW) is None


def test_a_pause_that_has_ended_sends() -> None:
    assert recheck(replace(OK, paused_until=NOW), NOW) is None
    assert recheck(replace(OK, paused_until=NOW - timedelta(seconds=1)), NOW) is None


@pytest.mark.parametrize(
    "check",
    [
        replace(OK, claim_token="theirs"),
        replace(OK, claim_token=None),
        replace(OK, step_state=StepState.SCHEDULED),
        replace(OK, step_state=StepState.CANCELLED),
        replace(OK, step_state=StepState.SENDING),
        # Even a lead that replied is "stale" first: the claim is not ours to act on.
        replace(OK, claim_token="theirs", reply_state=ReplyState.REPLIED),
    ],
)
def test_a_claim_that_is_not_ours_raises_stale(check: SendCheck) -> None:
    with pytest.raises(Stale):
        recheck(check, NOW)


@pytest.mark.parametrize(
    ("check", "reason", "cancel"),
    [
        (replace(OK, cancel_requested=True), "a reply asked to cancel this step", True),
        (replace(OK, address_suppressed=True), "the address is suppressed", True),
        (replace(OK, enrollment_state="cancelled"), "the enrollment is cancelled", True),
        (replace(OK, enrollment_state="completed"), "the enrollment is completed", True),
        (replace(OK, campaign_status="paused"), "the campaign is paused", False),
        (replace(OK, paused_until=NOW + timedelta(minutes=1)), "the lead is paused", False),
        (replace(OK, reply_state=ReplyState.OUT_OF_OFFICE), "the lead is out_of_office", False),
        (replace(OK, reply_state=ReplyState.HELD), "the lead is held", False),
        (replace(OK, reply_state=ReplyState.REPLIED), "the lead is replied", True),
        (replace(OK, reply_state=ReplyState.BOUNCED), "the lead is bounced", True),
        (replace(OK, reply_state=ReplyState.UNSUBSCRIBED), "the lead is unsubscribed", True),
        (replace(OK, reply_state=ReplyState.STOPPED), "the lead is stopped", True),
    ],
)
def test_each_refusal(check: SendCheck, reason: str, cancel: bool) -> None:
    refusal = recheck(check, NOW)
    assert refusal is not None
    assert (refusal.reason, refusal.cancel) == (reason, cancel)
    # Only a suppressed address ends the rest of the enrollment (nothing else of it can go).
    assert refusal.ends_enrollment is (reason == "the address is suppressed")


def test_a_cancel_request_wins_over_a_pause() -> None:
    refusal = recheck(replace(OK, cancel_requested=True, reply_state=ReplyState.OUT_OF_OFFICE), NOW)
    assert refusal is not None
    assert refusal.cancel is True


def test_an_unknown_reply_state_is_refused_loudly() -> None:
    with pytest.raises(ValueError, match="nonsense"):
        recheck(replace(OK, reply_state="nonsense"), NOW)


def test_backoff_doubles_up_to_the_cap() -> None:
    base, cap = timedelta(minutes=2), timedelta(hours=2)
    assert [backoff(n, base, cap) for n in (1, 2, 3, 4)] == [
        timedelta(minutes=2),
        timedelta(minutes=4),
        timedelta(minutes=8),
        timedelta(minutes=16),
    ]
    assert backoff(20, base, cap) == cap
    assert backoff(0, base, cap) == base


# ---------------------------------------------------------------- after a refusal


@pytest.mark.parametrize(
    ("temporary", "blame", "attempts", "cancel", "soft", "expected"),
    [
        (True, Blame.NONE, 1, False, 0, Next.RETRY),
        (True, Blame.NONE, 7, False, 0, Next.RETRY),
        (True, Blame.NONE, 8, False, 0, Next.FAIL),  # retries ran out: a person decides
        (False, Blame.NONE, 1, False, 0, Next.FAIL),
        (False, Blame.ADDRESS, 1, False, 0, Next.HARD_BOUNCE),
        (True, Blame.MAILBOX_FULL, 1, False, 0, Next.SOFT_BOUNCE),
        (True, Blame.MAILBOX_FULL, 1, False, 1, Next.SOFT_BOUNCE),
        (True, Blame.MAILBOX_FULL, 1, False, 2, Next.HARD_BOUNCE),  # the third soft bounce
        (True, Blame.SENDER, 1, False, 0, Next.PAUSE_MAILBOX),
        (True, Blame.SENDER, 8, False, 0, Next.PAUSE_MAILBOX),  # never the lead's fault
        (False, Blame.ADDRESS, 1, True, 0, Next.CANCEL),  # a reply wins over a bounce
        (True, Blame.NONE, 1, True, 0, Next.CANCEL),
    ],
)
def test_after_refusal(
    temporary: bool, blame: Blame, attempts: int, cancel: bool, soft: int, expected: Next
) -> None:
    got = after_refusal(
        temporary=temporary,
        blame=blame,
        attempts=attempts,
        max_attempts=8,
        cancel_requested=cancel,
        soft_bounces=soft,
        soft_bounce_limit=3,
    )
    assert got is expected


def test_hand_over_is_deferred_when_the_window_closed_or_the_day_changed() -> None:
    from datetime import date
    from zoneinfo import ZoneInfo

    from replyguard.domain.schedule import SendWindow

    utc = ZoneInfo("UTC")
    window = SendWindow.parse(["mon", "tue", "wed", "thu", "fri"], "09:00", "17:00")
    inside = datetime(2026, 12, 7, 16, 59, 59, tzinfo=UTC)
    assert hand_over_deferral(inside, window, utc, date(2026, 12, 7), utc) is None
    closed = datetime(2026, 12, 7, 17, 0, 0, tzinfo=UTC)
    assert hand_over_deferral(closed, window, utc, date(2026, 12, 7), utc) == datetime(
        2026, 12, 8, 9, 0, tzinfo=UTC
    )
    # Claimed on Monday (counted in Monday's cap), handed over on Tuesday: count it again.
    tuesday = datetime(2026, 12, 8, 10, 0, tzinfo=UTC)
    assert hand_over_deferral(tuesday, window, utc, date(2026, 12, 7), utc) == tuesday


def test_a_paused_mailbox_waits_without_cancelling() -> None:
    assert recheck(replace(OK, mailbox_status="paused"), NOW) == SendRefusal(
        "the mailbox is paused", cancel=False
    )


def _limits(**changes: object) -> SendLimits:
    from zoneinfo import ZoneInfo

    from replyguard.domain.schedule import SendWindow

    utc = ZoneInfo("UTC")
    window = SendWindow.parse(["mon", "tue", "wed", "thu", "fri"], "09:00", "17:00")
    return replace(SendLimits(window, utc, utc, daily_cap=100), **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, None),  # nothing changed since the claim
        ({"daily_cap": 500}, None),  # a cap raised: the claim's count still holds
        ({"daily_cap": 99}, NOW),  # lowered: back to the queue, the next claim counts it again
        ({"mailbox_status": "paused"}, NOW),  # another worker's server refused the mailbox
        ({"campaign_status": "paused"}, NOW),
        ({"zone": "Asia/Tokyo"}, datetime(2026, 12, 9, 0, 0, tzinfo=UTC)),  # the lead's window: closed
        ({"mailbox_zone": "Asia/Tokyo"}, NOW),  # the cap's day is now Wednesday: count it again
    ],
    ids=["same", "cap-raised", "cap-lowered", "mailbox-paused", "campaign-paused", "zone", "cap-day"],
)
def test_the_last_check_judges_the_settings_as_they_are_now(
    changes: dict[str, object], expected: datetime | None
) -> None:
    from datetime import date
    from zoneinfo import ZoneInfo

    zoned = {k: ZoneInfo(v) if k.endswith("zone") else v for k, v in changes.items()}
    assert limits_deferral(NOW, _limits(**zoned), date(2026, 12, 8), counted_cap=100) == expected


def test_a_window_changed_since_the_claim_defers_to_its_next_opening() -> None:
    from replyguard.domain.schedule import SendWindow

    later = SendWindow.parse(["mon", "tue", "wed", "thu", "fri"], "16:00", "18:00")
    assert limits_deferral(NOW, _limits(window=later), None, counted_cap=100) == NOW.replace(hour=16)
