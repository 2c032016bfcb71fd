"""The re-check at send time, as a pure function (invariant 3).

The guarded worker calls `recheck` with what it read under the lead lock immediately before a
send. Anything but a clear "yes" refuses: a refusal either cancels the step (the lead is no
longer one we may write to) or puts it back to wait (a pause or a hold a person may lift).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

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


class Stale(Exception):
    """This worker's claim is no longer valid (it expired and another worker took over)."""


def recheck(check: SendCheck, now: datetime) -> SendRefusal | None:
    """None: send now. A SendRefusal: do not. Raise Stale: the claim is not ours any more."""
    if check.step_state != StepState.CLAIMED or check.claim_token != check.my_token:
        raise Stale(f"step is {check.step_state} with another claim")
    if check.cancel_requested:
        return SendRefusal("a reply asked to cancel this step", cancel=True)
    if check.address_suppressed:
        return SendRefusal("the address is suppressed", cancel=True)
    if check.enrollment_state != EnrollmentState.ACTIVE:
        return SendRefusal(f"the enrollment is {check.enrollment_state}", cancel=True)
    if check.campaign_status != "active":
        return SendRefusal(f"the campaign is {check.campaign_status}", cancel=False)
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
