"""The two state machines at the heart of replyguard: a lead's reply state and a step's lifecycle.

Both are explicit: an enum of states and a table of allowed moves. A move that is not in
the table raises `IllegalTransition`; callers never write a state without asking here first.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class IllegalTransition(ValueError):
    """A state change that the state machine does not allow."""


class Actor(enum.StrEnum):
    """Who asks for a change: the machine (inbound mail, the worker) or a person."""

    SYSTEM = "system"
    PERSON = "person"


class ReplyState(enum.StrEnum):
    """The one reply state of a lead (a contact in one product's context). Only ACTIVE sends."""

    ACTIVE = "active"
    REPLIED = "replied"
    OUT_OF_OFFICE = "out_of_office"
    HELD = "held"
    BOUNCED = "bounced"
    UNSUBSCRIBED = "unsubscribed"
    STOPPED = "stopped"


_R = ReplyState
# Moves the machine may make on its own. Anything that returns a lead to ACTIVE, other than
# the end of an out-of-office pause, needs a person (see _PERSON_ONLY).
_SYSTEM_MOVES: dict[ReplyState, frozenset[ReplyState]] = {
    _R.ACTIVE: frozenset({_R.REPLIED, _R.OUT_OF_OFFICE, _R.HELD, _R.BOUNCED, _R.UNSUBSCRIBED}),
    _R.OUT_OF_OFFICE: frozenset(
        {_R.ACTIVE, _R.REPLIED, _R.OUT_OF_OFFICE, _R.HELD, _R.BOUNCED, _R.UNSUBSCRIBED}
    ),
    _R.HELD: frozenset({_R.REPLIED, _R.HELD, _R.BOUNCED, _R.UNSUBSCRIBED}),
    _R.REPLIED: frozenset({_R.REPLIED, _R.BOUNCED, _R.UNSUBSCRIBED}),
    _R.BOUNCED: frozenset({_R.REPLIED, _R.BOUNCED, _R.UNSUBSCRIBED}),
    _R.UNSUBSCRIBED: frozenset({_R.UNSUBSCRIBED}),
    _R.STOPPED: frozenset({_R.REPLIED, _R.BOUNCED, _R.UNSUBSCRIBED, _R.STOPPED}),
}
# Extra moves only a person may make: resuming, stopping, deciding a held lead.
_PERSON_ONLY: dict[ReplyState, frozenset[ReplyState]] = {
    _R.ACTIVE: frozenset({_R.STOPPED}),
    _R.OUT_OF_OFFICE: frozenset({_R.STOPPED}),
    _R.HELD: frozenset({_R.ACTIVE, _R.STOPPED, _R.OUT_OF_OFFICE}),
    # OUT_OF_OFFICE and HELD: "not a reply" restores the state the reply found, and a person may
    # take a headerless absence note for what it is ("pause until DATE").
    _R.REPLIED: frozenset({_R.ACTIVE, _R.STOPPED, _R.OUT_OF_OFFICE, _R.HELD}),
    _R.BOUNCED: frozenset({_R.ACTIVE, _R.STOPPED}),
    _R.UNSUBSCRIBED: frozenset(),  # an unsubscribe is never undone by this system
    _R.STOPPED: frozenset({_R.ACTIVE}),
}


def allowed_reply_moves(current: ReplyState, actor: Actor) -> frozenset[ReplyState]:
    moves = _SYSTEM_MOVES[current]
    if actor is Actor.PERSON:
        moves = moves | _PERSON_ONLY[current]
    return moves


def check_reply_move(current: ReplyState, target: ReplyState, actor: Actor) -> None:
    """Raise IllegalTransition unless `actor` may move a lead from `current` to `target`."""
    if target not in allowed_reply_moves(current, actor):
        raise IllegalTransition(f"a lead cannot go from {current} to {target} by {actor}")


class StepState(enum.StrEnum):
    """Lifecycle of one scheduled email of an enrollment."""

    AWAITING_APPROVAL = "awaiting_approval"  # waits for a person before it may be scheduled
    SCHEDULED = "scheduled"  # queued for its due time
    CLAIMED = "claimed"  # a worker holds a lease on it; nothing has been handed to a transport
    SENDING = "sending"  # durable marker: a transport call may be in flight (outcome unknown)
    SENT = "sent"  # the transport accepted it
    CANCELLED = "cancelled"  # will never be sent
    FAILED = "failed"  # refused for good or retries ran out; the lead waits for a person
    UNKNOWN = "unknown"  # a send whose outcome cannot be known; a person decides
    SKIPPED = "skipped"  # a person decided this step will not be sent; the next one may go


_S = StepState
#: States from which a reply cancels a step outright.
CANCELLABLE: frozenset[StepState] = frozenset({_S.AWAITING_APPROVAL, _S.SCHEDULED, _S.CLAIMED})
#: States that will never change again without a person.
TERMINAL: frozenset[StepState] = frozenset({_S.SENT, _S.CANCELLED, _S.FAILED, _S.UNKNOWN, _S.SKIPPED})
#: The previous step of an enrollment must be in one of these before the next may be claimed:
#: nothing follows an email that did not arrive, and nothing overtakes one still waiting.
LETS_NEXT_GO: frozenset[StepState] = frozenset({_S.SENT, _S.SKIPPED})
#: States that keep an enrollment open: it completes only when no step is in one of these.
OPEN: frozenset[StepState] = frozenset(
    {_S.AWAITING_APPROVAL, _S.SCHEDULED, _S.CLAIMED, _S.SENDING, _S.FAILED, _S.UNKNOWN}
)

_STEP_MOVES: dict[StepState, frozenset[StepState]] = {
    _S.AWAITING_APPROVAL: frozenset({_S.SCHEDULED, _S.CANCELLED}),
    # SCHEDULED -> AWAITING_APPROVAL: its content changed after a person approved it.
    _S.SCHEDULED: frozenset({_S.CLAIMED, _S.CANCELLED, _S.SCHEDULED, _S.AWAITING_APPROVAL}),
    # A claim that expires before any send returns to SCHEDULED; a fenced marker moves it on.
    _S.CLAIMED: frozenset({_S.SENDING, _S.SCHEDULED, _S.CANCELLED}),
    # From SENDING only evidence moves a step: acceptance, a refusal before acceptance
    # (back to SCHEDULED for a retry), a permanent refusal, or an unknown outcome.
    _S.SENDING: frozenset({_S.SENT, _S.SCHEDULED, _S.FAILED, _S.UNKNOWN, _S.CANCELLED}),
    _S.SENT: frozenset(),
    _S.CANCELLED: frozenset(),
    _S.FAILED: frozenset(),
    # A person who knows the email did not go out may cancel it; nobody resends it blindly.
    _S.UNKNOWN: frozenset({_S.SENT, _S.CANCELLED}),
    _S.SKIPPED: frozenset(),
}
# Moves only a person may make: resend a failed step, skip a step that has not gone out,
# bring back a step a reply or a stop cancelled before it was ever handed over (see
# `revivable` and docs/architecture.md, "Resume"), and send again a step whose unknown outcome
# a person checked and found not sent.
_PERSON_STEP_MOVES: dict[StepState, frozenset[StepState]] = {
    _S.FAILED: frozenset({_S.SCHEDULED, _S.SKIPPED}),
    _S.UNKNOWN: frozenset({_S.SCHEDULED, _S.SKIPPED}),
    _S.AWAITING_APPROVAL: frozenset({_S.SKIPPED}),
    _S.SCHEDULED: frozenset({_S.SKIPPED}),
    # A person's resume: bring back what never left, and skip (never resend) a cancelled step
    # that may have left, so that it does not hold back the ones after it.
    _S.CANCELLED: frozenset({_S.SCHEDULED, _S.AWAITING_APPROVAL, _S.SKIPPED}),
}


def first_step_state(*, needs_approval: bool) -> StepState:
    """The state a step is born in: waiting for a person when its template asks for approval."""
    return StepState.AWAITING_APPROVAL if needs_approval else StepState.SCHEDULED


def check_step_move(current: StepState, target: StepState, actor: Actor = Actor.SYSTEM) -> None:
    allowed = _STEP_MOVES[current]
    if actor is Actor.PERSON:
        allowed = allowed | _PERSON_STEP_MOVES.get(current, frozenset())
    if target not in allowed:
        raise IllegalTransition(f"a step cannot go from {current} to {target} by {actor}")


def step_move(
    current: StepState | Iterable[StepState], target: StepState, actor: Actor = Actor.SYSTEM
) -> list[StepState]:
    """The states a step may be in for an UPDATE that moves it to `target`, each move checked.

    Steps change state in set-wise UPDATEs (`... WHERE state IN (...)`), not one object at a
    time, so the table cannot be asked row by row; instead the WHERE is built here, and a move
    the table does not allow raises `IllegalTransition` when the statement is built — before
    any row is touched, on every call, so a test of the code path is a test of the move:

        update(S).where(S.c.state.in_(step_move(CANCELLABLE, StepState.CANCELLED)))
    """
    sources = [current] if isinstance(current, StepState) else sorted(current)
    for source in sources:
        check_step_move(source, target, actor)
    return sources


def reply_move(
    current: ReplyState | Iterable[ReplyState], target: ReplyState, actor: Actor = Actor.SYSTEM
) -> list[ReplyState]:
    """`step_move` for a lead's reply state: the checked sources of a set-wise UPDATE."""
    sources = [current] if isinstance(current, ReplyState) else sorted(current)
    for source in sources:
        check_reply_move(source, target, actor)
    return sources


#: Why a step may have been cancelled and still be brought back by a person's resume: a
#: reply's cancellation (`reply:<kind>`), a person's stop, and the worker's refusal at its
#: re-check (the lead had just replied or been stopped). Nothing else: a person who checked an
#: unknown outcome, a bounce or an unsubscribe said something about the address itself.
REVIVABLE_REASONS = ("reply:human_reply", "reply:out_of_office", "stopped by a person", "refused")


def revivable(
    state: StepState, *, cancel_reason: str | None, cancel_requested: bool, handed_over: bool
) -> bool:
    """May a person's resume bring this step back (CANCELLED -> SCHEDULED)?

    Only a step cancelled while it was still queued: `cancel_requested` marks a step that a
    reply found SENDING (it may have gone out), and `handed_over` says a transport has seen it
    (an outbound message that was not refused before acceptance). Such a step is never resent.
    """
    return (
        state is StepState.CANCELLED
        and not cancel_requested
        and not handed_over
        and (cancel_reason or "") in REVIVABLE_REASONS
    )


class EnrollmentState(enum.StrEnum):
    ACTIVE = "active"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class ReplyKind(enum.StrEnum):
    """What an inbound message is, as `inspect --json` prints it."""

    HUMAN_REPLY = "human_reply"
    OUT_OF_OFFICE = "out_of_office"
    AUTO_REPLY = "auto_reply"
    BOUNCE_HARD = "bounce_hard"
    BOUNCE_SOFT = "bounce_soft"
    UNSUBSCRIBE = "unsubscribe"


@dataclass(frozen=True, slots=True)
class SendRefusal:
    """Why the guarded worker refused to send a claimed step."""

    reason: str
    cancel: bool  # True: the step is cancelled; False: it goes back to wait (pause, hold)
    #: The rest of the enrollment cannot go out either (its address is suppressed): cancel it.
    ends_enrollment: bool = False


class ThreadState(enum.StrEnum):
    """A rescue thread: waiting for a person (open), put aside until a time, or done."""

    OPEN = "open"
    SNOOZED = "snoozed"
    DONE = "done"


_T = ThreadState
_THREAD_MOVES: dict[ThreadState, frozenset[ThreadState]] = {
    _T.OPEN: frozenset({_T.OPEN, _T.SNOOZED, _T.DONE}),
    _T.SNOOZED: frozenset({_T.OPEN, _T.SNOOZED, _T.DONE}),
    _T.DONE: frozenset({_T.OPEN}),  # a new message, or a person reopening it
}


def check_thread_move(current: ThreadState, target: ThreadState) -> None:
    if target not in _THREAD_MOVES[current]:
        raise IllegalTransition(f"a thread cannot go from {current} to {target}")
