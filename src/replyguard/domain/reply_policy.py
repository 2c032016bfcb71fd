"""What a classified reply does to a lead: the table in PRODUCT.md as one pure function."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta

from replyguard.domain.states import Actor, ReplyKind, ReplyState, allowed_reply_moves


class Suppress(enum.StrEnum):
    NONE = "none"
    ADDRESS = "address"  # the address that bounced
    CONTACT = "contact"  # every address of the contact (unsubscribe)


@dataclass(frozen=True, slots=True)
class ReplyEffect:
    new_state: ReplyState | None  # None: the lead's state does not change
    cancel_steps: bool
    paused_until: datetime | None = None
    hold_reason: str | None = None
    suppress: Suppress = Suppress.NONE
    notify: bool = False
    every_product: bool = False  # applies to every lead of the contact (see CONTACT_WIDE)
    recommendation: str = ""


#: Kinds that concern the person, not one product: they apply to every lead of the contact.
#: An unsubscribe stops them all; an absence pauses them all (each resumes on its own). A human
#: reply stays with its own product: the thread shows the others for a person to decide.
CONTACT_WIDE: frozenset[ReplyKind] = frozenset({ReplyKind.UNSUBSCRIBE, ReplyKind.OUT_OF_OFFICE})


def contact_wide(kind: ReplyKind) -> bool:
    return kind in CONTACT_WIDE


def _move(current: ReplyState, target: ReplyState) -> ReplyState | None:
    """The target if the machine may make that move on its own, else no change."""
    return target if target in allowed_reply_moves(current, Actor.SYSTEM) else None


def decide(
    kind: ReplyKind,
    current: ReplyState,
    *,
    now: datetime,
    back_at: datetime | None,
    default_pause: timedelta,
    max_pause: timedelta,
    left_company: bool = False,
    other_address: bool = False,
    sender_confirmed: bool = True,
    reads_as_person: bool = False,
) -> ReplyEffect:
    """The effect of one reply. `sender_confirmed=False`: the message lacks the proof its
    effect needs (domain/trust.py: not bound to an email we sent, nor authenticated for the
    lead's domain). What the machine could not undo then waits for a person: an unsubscribe
    stops the lead as a human reply does; a hard bounce or an absence holds her."""
    if not sender_confirmed and kind in (ReplyKind.BOUNCE_HARD, ReplyKind.OUT_OF_OFFICE):
        return _unproven_hold(kind, current, now, back_at, default_pause, max_pause)
    if kind is ReplyKind.UNSUBSCRIBE and not sender_confirmed:
        return ReplyEffect(
            _move(current, ReplyState.REPLIED),
            cancel_steps=True,
            notify=True,
            recommendation=(
                "An unsubscribe request from a sender we cannot tie to this lead: the sequence is "
                "stopped; confirm the sender to unsubscribe and suppress the lead, or reject it."
            ),
        )
    if kind is ReplyKind.HUMAN_REPLY:
        # A person answered: whatever the machine thought (paused, held, bounced, stopped), a
        # human now owns the lead. Only an unsubscribe stays stronger.
        return ReplyEffect(
            _move(current, ReplyState.REPLIED),
            cancel_steps=True,
            notify=True,
            recommendation="Read the reply and answer it yourself; the sequence is stopped.",
        )
    if kind is ReplyKind.UNSUBSCRIBE:
        return ReplyEffect(
            _move(current, ReplyState.UNSUBSCRIBED),
            cancel_steps=True,
            suppress=Suppress.CONTACT,
            notify=True,
            every_product=True,
            recommendation="Nothing to send: the address is suppressed in every product.",
        )
    if kind is ReplyKind.BOUNCE_HARD:
        if other_address:
            return ReplyEffect(
                _move(current, ReplyState.HELD),
                cancel_steps=True,
                suppress=Suppress.ADDRESS,
                hold_reason="the address bounced; the contact has another address",
                notify=True,
                recommendation="Decide whether to reach this person at their other address.",
            )
        return ReplyEffect(_move(current, ReplyState.BOUNCED), cancel_steps=True, suppress=Suppress.ADDRESS)
    if kind is ReplyKind.OUT_OF_OFFICE:
        return _out_of_office(current, now, back_at, default_pause, max_pause)
    if kind is ReplyKind.AUTO_REPLY and left_company:
        return ReplyEffect(
            _move(current, ReplyState.HELD),
            cancel_steps=False,
            hold_reason="auto-reply says the person left or the mailbox is closed",
            notify=True,
            recommendation="Find the right contact at this company, or stop this lead.",
        )
    if kind is ReplyKind.AUTO_REPLY and reads_as_person:
        # A helpdesk tool marks an agent's answer automatic: the sequence waits for a person.
        return ReplyEffect(
            _move(current, ReplyState.HELD),
            cancel_steps=False,
            hold_reason="an automatic message in our thread reads as a person's answer",
            notify=True,
            recommendation=(
                "Read it: if a person answered (through a helpdesk tool), answer them yourself and "
                "stop the lead; if it is only a machine, resume the sequence."
            ),
        )
    # Other auto-replies and soft bounces are logged on the timeline; the sequence goes on.
    return ReplyEffect(None, cancel_steps=False)


def _unproven_hold(
    kind: ReplyKind,
    current: ReplyState,
    now: datetime,
    back_at: datetime | None,
    default_pause: timedelta,
    max_pause: timedelta,
) -> ReplyEffect:
    """An unproven hard bounce or absence: nothing is suppressed or paused; the lead is held
    (its steps wait) for a person, unless the message would have changed nothing anyway."""
    if kind is ReplyKind.OUT_OF_OFFICE:
        wanted = _out_of_office(current, now, back_at, default_pause, max_pause)
        if wanted.new_state is None:
            return wanted
        what = "an out-of-office"
        confirm = "confirm it to pause the lead until the return date, or reject it"
    else:
        what = "a hard bounce"
        confirm = "confirm it to suppress the address, or reject it and resume the lead"
    return ReplyEffect(
        _move(current, ReplyState.HELD),
        cancel_steps=False,
        hold_reason=f"{what} we cannot tie to an email we sent or to her domain",
        notify=True,
        recommendation=f"Nothing is sent meanwhile; {confirm}.",
    )


def _out_of_office(
    current: ReplyState,
    now: datetime,
    back_at: datetime | None,
    default_pause: timedelta,
    max_pause: timedelta,
) -> ReplyEffect:
    if current not in (ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE):
        return ReplyEffect(None, cancel_steps=False)
    until = back_at if back_at is not None else now + default_pause
    if until - now > max_pause:
        return ReplyEffect(
            ReplyState.HELD,
            cancel_steps=False,
            hold_reason=f"away until {until.date()}, longer than the {max_pause.days}-day limit",
            notify=True,
            recommendation="Decide whether to resume this lead when they are back.",
        )
    if until <= now:
        return ReplyEffect(None, cancel_steps=False)  # already back: nothing to pause
    return ReplyEffect(ReplyState.OUT_OF_OFFICE, cancel_steps=False, paused_until=until)


#: How far a live message's Date may lie before our first email and still count: clocks are
#: wrong by hours (a zone set wrong), rarely by more.
LIVE_CLOCK_SKEW = timedelta(days=1)


def predates_first_send(
    *,
    written_at: datetime | None,
    first_sent_at: datetime | None,
    in_thread: bool,
    history: bool,
) -> bool:
    """Whether a message was written before our first email to the lead, so that it can only
    inform (an event on the timeline) and never stop, hold, suppress or unsubscribe her.

    `in_thread`: it references a Message-ID of ours sent to this lead, which proves it was
    written after that email — never earlier. `history`: the caller imported it from a
    mailbox's past; such a message must prove it is newer (thread, or a Date at or after our
    first email), and one with no Date or to a lead we never wrote to only informs. A live
    message is believed to be new unless its Date lies more than LIVE_CLOCK_SKEW before our
    first email: stopping a lead is safe, missing a reply is not.
    """
    if in_thread:
        return False
    if history:
        return first_sent_at is None or written_at is None or written_at < first_sent_at
    if first_sent_at is None or written_at is None:
        return False
    return written_at < first_sent_at - LIVE_CLOCK_SKEW
