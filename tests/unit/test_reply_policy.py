"""What each kind of reply does to a lead, from each state that matters (PRODUCT.md's table)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from replyguard.domain.reply_policy import ReplyEffect, Suppress, decide, predates_first_send
from replyguard.domain.states import ReplyKind, ReplyState

NOW = datetime(2026, 12, 8, 15, 0, tzinfo=UTC)
DEFAULT_PAUSE = timedelta(days=7)
MAX_PAUSE = timedelta(days=60)
R = ReplyState
K = ReplyKind


def run(
    kind: ReplyKind,
    current: ReplyState = R.ACTIVE,
    back_at: datetime | None = None,
    **kwargs: bool,
) -> ReplyEffect:
    return decide(
        kind,
        current,
        now=NOW,
        back_at=back_at,
        default_pause=DEFAULT_PAUSE,
        max_pause=MAX_PAUSE,
        **kwargs,
    )


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        (R.ACTIVE, R.REPLIED),
        (R.OUT_OF_OFFICE, R.REPLIED),
        (R.HELD, R.REPLIED),
        (R.BOUNCED, R.REPLIED),
        (R.STOPPED, R.REPLIED),
        (R.REPLIED, R.REPLIED),
        (R.UNSUBSCRIBED, None),  # an unsubscribe stays stronger than a later reply
    ],
)
def test_human_reply_hands_the_lead_to_a_person(current: ReplyState, expected: ReplyState | None) -> None:
    effect = run(K.HUMAN_REPLY, current)
    assert effect.new_state == expected
    assert effect.cancel_steps is True
    assert effect.notify is True
    assert effect.suppress is Suppress.NONE
    assert effect.every_product is False  # only the matched product stops
    assert effect.recommendation


def test_out_of_office_with_a_return_date_pauses_until_then() -> None:
    back = NOW + timedelta(days=10)
    effect = run(K.OUT_OF_OFFICE, back_at=back)
    assert effect == ReplyEffect(R.OUT_OF_OFFICE, cancel_steps=False, paused_until=back)


def test_out_of_office_without_a_date_uses_the_default_pause() -> None:
    effect = run(K.OUT_OF_OFFICE)
    assert effect.new_state is R.OUT_OF_OFFICE
    assert effect.paused_until == NOW + DEFAULT_PAUSE
    assert effect.cancel_steps is False


def test_a_second_out_of_office_extends_the_pause() -> None:
    back = NOW + timedelta(days=3)
    effect = run(K.OUT_OF_OFFICE, R.OUT_OF_OFFICE, back_at=back)
    assert (effect.new_state, effect.paused_until) == (R.OUT_OF_OFFICE, back)


def test_out_of_office_beyond_the_limit_is_held_for_a_person() -> None:
    back = NOW + MAX_PAUSE + timedelta(days=1)
    effect = run(K.OUT_OF_OFFICE, back_at=back)
    assert effect.new_state is R.HELD
    assert effect.cancel_steps is False
    assert effect.paused_until is None
    assert effect.notify is True
    assert effect.hold_reason is not None
    assert str(back.date()) in effect.hold_reason
    assert "60-day" in effect.hold_reason


def test_out_of_office_exactly_at_the_limit_still_pauses() -> None:
    assert run(K.OUT_OF_OFFICE, back_at=NOW + MAX_PAUSE).new_state is R.OUT_OF_OFFICE


def test_out_of_office_with_a_past_date_changes_nothing() -> None:
    effect = run(K.OUT_OF_OFFICE, back_at=NOW - timedelta(days=1))
    assert effect.new_state is None
    assert effect.cancel_steps is False


@pytest.mark.parametrize("current", [R.REPLIED, R.HELD, R.BOUNCED, R.UNSUBSCRIBED, R.STOPPED])
def test_out_of_office_never_overrides_a_stronger_state(current: ReplyState) -> None:
    effect = run(K.OUT_OF_OFFICE, current, back_at=NOW + timedelta(days=3))
    assert effect.new_state is None
    assert effect.paused_until is None


def test_left_company_auto_reply_is_held() -> None:
    effect = run(K.AUTO_REPLY, left_company=True)
    assert effect.new_state is R.HELD
    assert effect.cancel_steps is False
    assert effect.notify is True
    assert effect.hold_reason is not None
    assert "left" in effect.hold_reason


def test_hard_bounce_without_another_address_bounces() -> None:
    effect = run(K.BOUNCE_HARD)
    assert effect.new_state is R.BOUNCED
    assert effect.cancel_steps is True
    assert effect.suppress is Suppress.ADDRESS


def test_hard_bounce_with_another_address_is_held_for_a_person() -> None:
    effect = run(K.BOUNCE_HARD, other_address=True)
    assert effect.new_state is R.HELD
    assert effect.cancel_steps is True
    assert effect.suppress is Suppress.ADDRESS
    assert effect.notify is True
    assert effect.hold_reason is not None
    assert "another address" in effect.hold_reason


def test_hard_bounce_after_a_reply_keeps_the_human_state() -> None:
    # REPLIED -> HELD is not a move the machine may make: the human keeps the lead.
    assert run(K.BOUNCE_HARD, R.REPLIED, other_address=True).new_state is None
    assert run(K.BOUNCE_HARD, R.REPLIED).new_state is R.BOUNCED


@pytest.mark.parametrize("current", list(ReplyState))
def test_unsubscribe_stops_every_product(current: ReplyState) -> None:
    effect = run(K.UNSUBSCRIBE, current)
    assert effect.new_state is R.UNSUBSCRIBED
    assert effect.cancel_steps is True
    assert effect.suppress is Suppress.CONTACT
    assert effect.every_product is True


@pytest.mark.parametrize(("kind", "current"), [(K.BOUNCE_SOFT, R.ACTIVE), (K.AUTO_REPLY, R.ACTIVE)])
def test_soft_bounce_and_plain_auto_reply_change_nothing(kind: ReplyKind, current: ReplyState) -> None:
    effect = run(kind, current)
    assert effect == ReplyEffect(None, cancel_steps=False)
    assert effect.suppress is Suppress.NONE


def test_soft_bounce_from_out_of_office_keeps_the_pause() -> None:
    assert run(K.BOUNCE_SOFT, R.OUT_OF_OFFICE).new_state is None


def test_an_unconfirmed_unsubscribe_stops_the_lead_and_suppresses_nothing() -> None:
    effect = run(K.UNSUBSCRIBE, sender_confirmed=False)
    assert (effect.new_state, effect.cancel_steps, effect.suppress) == (R.REPLIED, True, Suppress.NONE)
    assert not effect.every_product and effect.notify
    confirmed = run(K.UNSUBSCRIBE)
    assert (confirmed.new_state, confirmed.suppress, confirmed.every_product) == (
        R.UNSUBSCRIBED,
        Suppress.CONTACT,
        True,
    )


FIRST = datetime(2026, 12, 7, 14, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.mark.parametrize(
    ("written", "first", "in_thread", "history", "predates"),
    [
        # An import from a mailbox's past must prove it is newer than our first email.
        (FIRST - HOUR, FIRST, False, True, True),
        (FIRST + HOUR, FIRST, False, True, False),
        (FIRST - 400 * 24 * HOUR, FIRST, True, True, False),  # answers our Message-ID: newer
        (None, FIRST, False, True, True),  # no Date: cannot tell
        (FIRST, None, False, True, True),  # we never wrote to this lead
        # A live message is new unless its Date says otherwise by more than a wrong clock could.
        (FIRST - HOUR, FIRST, False, False, False),
        (FIRST - 23 * HOUR, FIRST, False, False, False),
        (FIRST - 25 * HOUR, FIRST, False, False, True),
        (FIRST - 400 * 24 * HOUR, FIRST, True, False, False),
        (None, FIRST, False, False, False),
        (FIRST - 400 * 24 * HOUR, None, False, False, False),  # writing to us before we wrote: stop
    ],
)
def test_predates_first_send(
    written: datetime | None, first: datetime | None, in_thread: bool, history: bool, predates: bool
) -> None:
    found = predates_first_send(written_at=written, first_sent_at=first, in_thread=in_thread, history=history)
    assert found is predates


@pytest.mark.parametrize("current", [R.ACTIVE, R.OUT_OF_OFFICE])
def test_an_automatic_message_that_reads_as_a_person_holds_the_lead(current: ReplyState) -> None:
    effect = run(K.AUTO_REPLY, current, reads_as_person=True)
    assert (effect.new_state, effect.cancel_steps, effect.notify) == (R.HELD, False, True)
    assert effect.hold_reason and effect.recommendation
    assert run(K.AUTO_REPLY, current).new_state is None  # without the person's words: logged only
