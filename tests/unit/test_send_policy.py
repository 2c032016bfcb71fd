"""The re-check at send time: only "active, ours, not cancelled, not suppressed" sends."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from replyguard.domain.send_policy import SendCheck, Stale, backoff, recheck
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
    assert recheck(check, NOW) == SendRefusal(reason, cancel=cancel)


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
