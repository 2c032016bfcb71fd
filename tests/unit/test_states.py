"""The reply-state and step-state machines: who may move a lead where, and which moves are refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from replyguard.domain import states
from replyguard.domain.states import (
    CANCELLABLE,
    TERMINAL,
    Actor,
    IllegalTransition,
    ReplyState,
    StepState,
    allowed_reply_moves,
    check_reply_move,
    check_step_move,
    reply_move,
    step_move,
)

R = ReplyState
S = StepState
SYSTEM, PERSON = Actor.SYSTEM, Actor.PERSON


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (R.ACTIVE, R.REPLIED),
        (R.ACTIVE, R.OUT_OF_OFFICE),
        (R.ACTIVE, R.HELD),
        (R.ACTIVE, R.BOUNCED),
        (R.ACTIVE, R.UNSUBSCRIBED),
        (R.OUT_OF_OFFICE, R.ACTIVE),  # the pause ended on its own
        (R.OUT_OF_OFFICE, R.REPLIED),
        (R.HELD, R.REPLIED),
        (R.REPLIED, R.UNSUBSCRIBED),
        (R.BOUNCED, R.REPLIED),
        (R.STOPPED, R.REPLIED),
        (R.UNSUBSCRIBED, R.UNSUBSCRIBED),
    ],
)
def test_system_may_make_these_moves(current: ReplyState, target: ReplyState) -> None:
    check_reply_move(current, target, SYSTEM)
    check_reply_move(current, target, PERSON)  # whatever the machine may do, a person may too


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (R.REPLIED, R.ACTIVE),
        (R.HELD, R.ACTIVE),
        (R.BOUNCED, R.ACTIVE),
        (R.STOPPED, R.ACTIVE),
        (R.ACTIVE, R.STOPPED),
        (R.HELD, R.OUT_OF_OFFICE),
    ],
)
def test_only_a_person_may_make_these_moves(current: ReplyState, target: ReplyState) -> None:
    with pytest.raises(IllegalTransition, match=f"from {current} to {target} by system"):
        check_reply_move(current, target, SYSTEM)
    check_reply_move(current, target, PERSON)


@pytest.mark.parametrize("actor", list(Actor))
@pytest.mark.parametrize("target", [s for s in ReplyState if s is not R.UNSUBSCRIBED])
def test_unsubscribed_never_leaves(actor: Actor, target: ReplyState) -> None:
    with pytest.raises(IllegalTransition):
        check_reply_move(R.UNSUBSCRIBED, target, actor)


def test_the_only_automatic_way_back_to_active_is_the_end_of_a_pause() -> None:
    back = [s for s in ReplyState if s is not R.ACTIVE and R.ACTIVE in allowed_reply_moves(s, SYSTEM)]
    assert back == [R.OUT_OF_OFFICE]


def test_the_machine_never_stops_a_lead() -> None:
    assert all(R.STOPPED not in allowed_reply_moves(s, SYSTEM) for s in ReplyState if s is not R.STOPPED)


#: Where each actor may move a lead from each state, written out once more from PRODUCT.md's
#: rules: the machine stops and pauses, only a person resumes, stops or decides a held lead,
#: an unsubscribe is never undone. Every state has a row for both actors.
_ALL = frozenset(ReplyState)
EXPECTED: dict[tuple[ReplyState, Actor], frozenset[ReplyState]] = {
    (R.ACTIVE, SYSTEM): frozenset({R.REPLIED, R.OUT_OF_OFFICE, R.HELD, R.BOUNCED, R.UNSUBSCRIBED}),
    (R.ACTIVE, PERSON): _ALL - {R.ACTIVE},
    (R.OUT_OF_OFFICE, SYSTEM): _ALL - {R.STOPPED},
    (R.OUT_OF_OFFICE, PERSON): _ALL,
    (R.HELD, SYSTEM): frozenset({R.REPLIED, R.HELD, R.BOUNCED, R.UNSUBSCRIBED}),
    (R.HELD, PERSON): _ALL,
    (R.REPLIED, SYSTEM): frozenset({R.REPLIED, R.BOUNCED, R.UNSUBSCRIBED}),
    (R.REPLIED, PERSON): _ALL,
    (R.BOUNCED, SYSTEM): frozenset({R.REPLIED, R.BOUNCED, R.UNSUBSCRIBED}),
    (R.BOUNCED, PERSON): frozenset({R.ACTIVE, R.REPLIED, R.BOUNCED, R.UNSUBSCRIBED, R.STOPPED}),
    (R.UNSUBSCRIBED, SYSTEM): frozenset({R.UNSUBSCRIBED}),
    (R.UNSUBSCRIBED, PERSON): frozenset({R.UNSUBSCRIBED}),
    (R.STOPPED, SYSTEM): frozenset({R.REPLIED, R.BOUNCED, R.UNSUBSCRIBED, R.STOPPED}),
    (R.STOPPED, PERSON): frozenset({R.ACTIVE, R.REPLIED, R.BOUNCED, R.UNSUBSCRIBED, R.STOPPED}),
}


def table_differences(
    moves: Callable[[ReplyState, Actor], frozenset[ReplyState]],
) -> list[str]:
    """Every (state, actor) whose allowed moves differ from EXPECTED, or that has no row."""
    found = []
    for state in ReplyState:
        for actor in Actor:
            try:
                allowed = moves(state, actor)
            except KeyError:
                found.append(f"{state} by {actor}: no row")
                continue
            expected = EXPECTED[(state, actor)]
            if allowed != expected:
                extra, missing = sorted(allowed - expected), sorted(expected - allowed)
                found.append(f"{state} by {actor}: extra {extra}, missing {missing}")
    return found


def test_every_state_has_a_row_for_both_actors() -> None:
    assert set(EXPECTED) == {(state, actor) for state in ReplyState for actor in Actor}
    assert table_differences(allowed_reply_moves) == []


@pytest.mark.parametrize(
    "planted",
    [
        pytest.param({R.HELD: None}, id="a state without a row"),
        pytest.param(
            {R.REPLIED: frozenset({R.REPLIED, R.BOUNCED, R.UNSUBSCRIBED, R.ACTIVE})}, id="an extra move"
        ),
        pytest.param({R.BOUNCED: frozenset({R.REPLIED, R.BOUNCED})}, id="a missing move"),
    ],
)
def test_the_table_check_catches_a_changed_row(
    planted: dict[ReplyState, frozenset[ReplyState] | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = {state: moves for state, moves in states._SYSTEM_MOVES.items() if planted.get(state, moves)}
    rows |= {state: moves for state, moves in planted.items() if moves is not None}
    monkeypatch.setattr(states, "_SYSTEM_MOVES", rows)
    assert table_differences(allowed_reply_moves) != []


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (S.AWAITING_APPROVAL, S.SCHEDULED),
        (S.AWAITING_APPROVAL, S.CANCELLED),
        (S.SCHEDULED, S.CLAIMED),
        (S.SCHEDULED, S.CANCELLED),
        (S.CLAIMED, S.SENDING),
        (S.CLAIMED, S.SCHEDULED),
        (S.CLAIMED, S.CANCELLED),
        (S.SENDING, S.SENT),
        (S.SENDING, S.SCHEDULED),
        (S.SENDING, S.FAILED),
        (S.SENDING, S.UNKNOWN),
        (S.UNKNOWN, S.SENT),
        (S.UNKNOWN, S.CANCELLED),
    ],
)
def test_allowed_step_moves(current: StepState, target: StepState) -> None:
    check_step_move(current, target)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (S.AWAITING_APPROVAL, S.CLAIMED),  # approval cannot be skipped
        (S.AWAITING_APPROVAL, S.SENDING),
        (S.SCHEDULED, S.SENDING),  # no send without a claim
        (S.SCHEDULED, S.SENT),
        (S.CLAIMED, S.SENT),  # no acceptance without the durable marker
        (S.SENT, S.SCHEDULED),
        (S.SENT, S.CANCELLED),
        (S.CANCELLED, S.SCHEDULED),
        (S.FAILED, S.SCHEDULED),
        (S.UNKNOWN, S.SCHEDULED),  # an unknown outcome is never resent blindly
        (S.UNKNOWN, S.SENDING),
    ],
)
def test_illegal_step_moves(current: StepState, target: StepState) -> None:
    with pytest.raises(IllegalTransition, match=f"from {current} to {target}"):
        check_step_move(current, target)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (S.FAILED, S.SCHEDULED),  # resend
        (S.FAILED, S.SKIPPED),
        (S.UNKNOWN, S.SKIPPED),
        (S.AWAITING_APPROVAL, S.SKIPPED),
        (S.SCHEDULED, S.SKIPPED),
    ],
)
def test_person_only_step_moves(current: StepState, target: StepState) -> None:
    with pytest.raises(IllegalTransition):
        check_step_move(current, target)  # never by the machine
    check_step_move(current, target, Actor.PERSON)


def test_nothing_leaves_skipped_or_sent_even_by_a_person() -> None:
    for state in (S.SKIPPED, S.SENT):
        for target in StepState:
            with pytest.raises(IllegalTransition):
                check_step_move(state, target, Actor.PERSON)


def test_only_a_persons_resume_brings_back_or_skips_a_cancelled_step() -> None:
    by_person = {S.SCHEDULED, S.AWAITING_APPROVAL, S.SKIPPED}
    for target in StepState:
        with pytest.raises(IllegalTransition):
            check_step_move(S.CANCELLED, target, Actor.SYSTEM)
        if target not in by_person:
            with pytest.raises(IllegalTransition):
                check_step_move(S.CANCELLED, target, Actor.PERSON)
    for target in by_person:
        check_step_move(S.CANCELLED, target, Actor.PERSON)


def test_cancellable_and_terminal_sets() -> None:
    assert {S.AWAITING_APPROVAL, S.SCHEDULED, S.CLAIMED} == CANCELLABLE
    assert S.SENDING not in CANCELLABLE  # an in-flight send is marked, not cancelled
    assert not CANCELLABLE & TERMINAL
    for state in (S.SENT, S.CANCELLED, S.FAILED):
        assert state in TERMINAL
        for target in StepState:
            with pytest.raises(IllegalTransition):
                check_step_move(state, target)


def test_step_move_returns_the_checked_sources_for_a_setwise_update() -> None:
    assert step_move(CANCELLABLE, StepState.CANCELLED) == sorted(CANCELLABLE)
    assert step_move(StepState.SENDING, StepState.SENT) == [StepState.SENDING]
    with pytest.raises(IllegalTransition):
        step_move([StepState.SCHEDULED, StepState.SENT], StepState.CANCELLED)
    with pytest.raises(IllegalTransition):
        step_move(StepState.FAILED, StepState.SCHEDULED)  # only a person resends
    assert step_move(StepState.FAILED, StepState.SCHEDULED, Actor.PERSON) == [StepState.FAILED]


def test_reply_move_refuses_what_only_a_person_may_do() -> None:
    assert reply_move(ReplyState.OUT_OF_OFFICE, ReplyState.ACTIVE) == [ReplyState.OUT_OF_OFFICE]
    with pytest.raises(IllegalTransition):
        reply_move([ReplyState.HELD, ReplyState.REPLIED], ReplyState.ACTIVE)
    assert reply_move(ReplyState.HELD, ReplyState.ACTIVE, Actor.PERSON) == [ReplyState.HELD]
