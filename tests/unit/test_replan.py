"""Re-planning a resumed sequence, and the person-only step moves that make it safe."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from replyguard.domain.schedule import SendWindow, Wait, replan
from replyguard.domain.states import (
    Actor,
    IllegalTransition,
    StepState,
    ThreadState,
    check_step_move,
    check_thread_move,
    revivable,
)

WINDOW = SendWindow.parse(["mon", "tue", "wed", "thu", "fri"], "09:00", "17:00")
UTCZ = ZoneInfo("UTC")
SAT = datetime(2026, 12, 12, 12, tzinfo=UTC)


def test_replan_keeps_waits_windows_and_never_plans_before_now() -> None:
    last_sent = datetime(2026, 12, 7, 10, tzinfo=UTC)  # Monday
    dues = replan([Wait(days=3), Wait(days=4)], last_sent, SAT, WINDOW, UTCZ)
    assert dues[0] == datetime(2026, 12, 14, 9, tzinfo=UTC)  # Saturday -> Monday 09:00
    assert dues[1] == datetime(2026, 12, 18, 9, tzinfo=UTC)  # its own wait after the first
    recent = datetime(2026, 12, 11, 16, tzinfo=UTC)
    assert replan([Wait(days=3)], recent, SAT, WINDOW, UTCZ) == [datetime(2026, 12, 14, 16, tzinfo=UTC)]
    assert replan([], last_sent, SAT, WINDOW, UTCZ) == []


@pytest.mark.parametrize(
    ("reason", "requested", "handed", "ok"),
    [
        ("reply:human_reply", False, False, True),
        ("stopped by a person", False, False, True),
        ("refused", False, False, True),
        ("reply:human_reply", True, False, False),  # it was in flight when the reply came
        ("reply:human_reply", False, True, False),  # a transport may have taken it
        ("reply:unsubscribe", False, False, False),
        ("reply:bounce_hard", False, False, False),
        ("not sent (checked by a person)", False, False, False),
    ],
)
def test_only_steps_that_never_left_may_be_revived(
    reason: str, requested: bool, handed: bool, ok: bool
) -> None:
    assert (
        revivable(StepState.CANCELLED, cancel_reason=reason, cancel_requested=requested, handed_over=handed)
        is ok
    )


def test_reviving_and_sending_again_are_person_only_moves() -> None:
    with pytest.raises(IllegalTransition):
        check_step_move(StepState.CANCELLED, StepState.SCHEDULED)
    with pytest.raises(IllegalTransition):
        check_step_move(StepState.UNKNOWN, StepState.SCHEDULED)
    check_step_move(StepState.CANCELLED, StepState.SCHEDULED, Actor.PERSON)
    check_step_move(StepState.UNKNOWN, StepState.SCHEDULED, Actor.PERSON)
    with pytest.raises(IllegalTransition):
        check_step_move(StepState.SENT, StepState.SCHEDULED, Actor.PERSON)


def test_thread_states() -> None:
    check_thread_move(ThreadState.OPEN, ThreadState.SNOOZED)
    check_thread_move(ThreadState.DONE, ThreadState.OPEN)
    with pytest.raises(IllegalTransition):
        check_thread_move(ThreadState.DONE, ThreadState.SNOOZED)
