"""The decisions of the send path, as pure functions.

* `recheck` (invariant 3): the guarded worker calls it with what it read under the lead lock
  immediately before a send. Anything but a clear "yes" refuses: a refusal either cancels the
  step (the lead is no longer one we may write to) or puts it back to wait (a pause, a hold or
  a paused mailbox a person may lift).
* `hand_over_deferral`: the window and the cap's day, checked again for each email right
  before it is handed over (the clock moves during a batch).
* `limits_deferral`: the same, on the settings as they are at that moment (`SendLimits`: a
  person may change the window, the cap or a pause while the email is on its way).
* `after_refusal`: what a refused send leads to, given whose problem the refusal is.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from replyguard.domain.schedule import SendWindow, local_day
from replyguard.domain.smtp_answers import Blame
from replyguard.domain.states import EnrollmentState, ReplyState, SendRefusal, StepState


@dataclass(frozen=True, slots=True)
class SendCheck:
    """What the worker read under the lock."""

    reply_state: str
    paused_until: datetime | None
    step_state: str
    claim_token: str | None
    my_token: str
    cancel_requested: bool
    enrollment_state: str
    campaign_status: str
    address_suppressed: bool
    mailbox_status: str = "active"


class Stale(Exception):
    """This worker's claim is no longer valid (it expired and another worker took over)."""


def recheck(check: SendCheck, now: datetime) -> SendRefusal | None:
    """None: send now. A SendRefusal: do not. Raise Stale: the claim is not ours any more."""
    if check.step_state != StepState.CLAIMED or check.claim_token != check.my_token:
        raise Stale(f"step is {check.step_state} with another claim")
    if check.cancel_requested:
        return SendRefusal("a reply asked to cancel this step", cancel=True)
    if check.address_suppressed:
        return SendRefusal("the address is suppressed", cancel=True, ends_enrollment=True)
    if check.enrollment_state != EnrollmentState.ACTIVE:
        return SendRefusal(f"the enrollment is {check.enrollment_state}", cancel=True)
    if check.campaign_status != "active":
        return SendRefusal(f"the campaign is {check.campaign_status}", cancel=False)
    if check.mailbox_status != "active":
        return SendRefusal(f"the mailbox is {check.mailbox_status}", cancel=False)
    state = ReplyState(check.reply_state)
    if state is ReplyState.ACTIVE:
        if check.paused_until is not None and check.paused_until > now:
            return SendRefusal("the lead is paused", cancel=False)
        return None
    if state in (ReplyState.OUT_OF_OFFICE, ReplyState.HELD):
        return SendRefusal(f"the lead is {state}", cancel=False)
    return SendRefusal(f"the lead is {state}", cancel=True)


def backoff(attempt: int, base: timedelta, cap: timedelta) -> timedelta:
    """Delay before retry number `attempt` (1-based) after a transient transport error."""
    delay: timedelta = base * (2 ** max(0, attempt - 1))
    return delay if delay < cap else cap


def hand_over_deferral(
    now: datetime,
    window: SendWindow,
    zone: ZoneInfo,
    send_day: date | None,
    mailbox_zone: ZoneInfo,
) -> datetime | None:
    """None: the email may be handed over now. Otherwise when to try again: the window closed
    since the claim (its next opening), or the mailbox's day changed since the claim counted
    this email against that day's cap (now: the next claim counts it against the new day)."""
    if not window.contains(now, zone):
        return window.next_open(now, zone)
    if send_day is not None and local_day(now, mailbox_zone) != send_day:
        return now
    return None


@dataclass(frozen=True, slots=True)
class SendLimits:
    """The settings a person may change while an email is on its way, as read right before it
    is handed over: the campaign's window (in the lead's zone) and status, and the mailbox's
    daily cap, the zone whose days the cap counts, and its pause."""

    window: SendWindow
    zone: ZoneInfo  # the lead's
    mailbox_zone: ZoneInfo
    daily_cap: int
    mailbox_status: str = "active"
    campaign_status: str = "active"


def limits_deferral(
    now: datetime, limits: SendLimits, send_day: date | None, counted_cap: int
) -> datetime | None:
    """None: the email may be handed over now. Otherwise when to try again, judged on the
    settings as they are now rather than as the claim saw them.

    `send_day` and `counted_cap` are what the claim counted this email against: that day's
    cap of the mailbox. A cap lowered since then no longer promises this email a slot, so it
    goes back to the queue (now), where the next claim counts it against the new cap under
    the mailbox's lock: the one place that counts a day's emails. A paused mailbox or campaign
    gives it back too (the claim skips both until a person resumes them)."""
    if limits.mailbox_status != "active" or limits.campaign_status != "active":
        return now
    later = hand_over_deferral(now, limits.window, limits.zone, send_day, limits.mailbox_zone)
    if later is not None:
        return later
    if limits.daily_cap < counted_cap:
        return now
    return None


class Next(enum.StrEnum):
    """What happens to a step after the transport refused it."""

    RETRY = "retry"  # back to the queue after a backoff
    SOFT_BOUNCE = "soft_bounce"  # the mailbox is full: a soft bounce, tried again much later
    HARD_BOUNCE = "hard_bounce"  # the address does not exist: the step fails, the address bounces
    PAUSE_MAILBOX = "pause_mailbox"  # our mailbox was refused: it stops until a person resumes it
    FAIL = "fail"  # refused for good, or retries ran out: the lead waits for a person
    CANCEL = "cancel"  # a reply asked to cancel the step while it was being sent


def after_refusal(
    *,
    temporary: bool,
    blame: Blame,
    attempts: int,
    max_attempts: int,
    cancel_requested: bool,
    soft_bounces: int,
    soft_bounce_limit: int,
) -> Next:
    """`soft_bounces`: the address's soft bounces recorded before this one. A reply wins over
    everything (a bounce must not turn a replied lead into a bounced one)."""
    if cancel_requested:
        return Next.CANCEL
    if blame is Blame.SENDER:
        return Next.PAUSE_MAILBOX
    if blame is Blame.ADDRESS:
        return Next.HARD_BOUNCE
    if blame is Blame.MAILBOX_FULL:
        return Next.HARD_BOUNCE if soft_bounces + 1 >= soft_bounce_limit else Next.SOFT_BOUNCE
    if temporary and attempts < max_attempts:
        return Next.RETRY
    return Next.FAIL
