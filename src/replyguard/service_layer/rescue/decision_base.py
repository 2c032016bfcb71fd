"""What every person decision shares: its request and result values, its errors, and the
checked moves of a lead and a thread."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.schedule import load_zone
from replyguard.domain.states import Actor, ReplyState, ThreadState, check_reply_move, check_thread_move
from replyguard.service_layer.rescue.replan import PlannedStep
from replyguard.service_layer.uow import UnitOfWork


class DecisionError(ValueError):
    """The decision does not apply to this thread as it is now."""


class ThreadNotFound(LookupError):
    pass


@dataclass
class DecisionResult:
    thread_id: int
    action: str
    message: str
    lead_state: str | None = None
    planned: list[PlannedStep] = field(default_factory=list)
    new_thread_id: int | None = None
    version: int | None = None  # the thread's version after the decision

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "version": self.version,
            "action": self.action,
            "message": self.message,
            "lead_state": self.lead_state,
            "planned": [p.to_json() for p in self.planned],
            "new_thread_id": self.new_thread_id,
        }


@dataclass(frozen=True, slots=True)
class Request:
    """What a person asked: the action and its arguments."""

    action: str
    by: str
    until: date | None = None
    until_at: datetime | None = None  # snooze
    to: str | None = None  # assign
    lead: str | None = None  # confirm: which candidate (email), when there are several
    step_id: int | None = None  # unknown outcomes: which step, when there are several
    #: The thread's version the person saw (None: not given; the entry point decides whether
    #: that may be, see `domain/thread_actions.SENDS`).
    seen: int | None = None
    #: A restart (sending again to a lead a person stopped) is confirmed on its own.
    confirmed: bool = False


def get_thread(uow: UnitOfWork, thread_id: int) -> m.RescueThread:
    thread = uow.session.scalar(
        select(m.RescueThread).where(
            m.RescueThread.id == thread_id, m.RescueThread.workspace_id == uow.workspace_id
        )
    )
    if thread is None:
        raise ThreadNotFound(f"no thread {thread_id} in this workspace")
    return thread


def lead_of(uow: UnitOfWork, lead_id: int) -> m.Lead:
    lead = uow.session.get_one(m.Lead, lead_id, populate_existing=True)
    if lead.workspace_id != uow.workspace_id:
        raise ThreadNotFound("lead not in this workspace")
    return lead


def move_lead(uow: UnitOfWork, lead: m.Lead, target: ReplyState, by: str, why: str) -> None:
    previous = ReplyState(lead.reply_state)
    check_reply_move(previous, target, Actor.PERSON)
    lead.reply_state, lead.reply_state_updated_at = target, uow.clock.now()
    if target is not ReplyState.HELD:
        lead.hold_reason = None
    if target is ReplyState.ACTIVE:
        lead.paused_until = None
    uow.add_event("lead_state_set", lead_id=lead.id, before=previous, after=target, by=by, why=why)


def start_of(uow: UnitOfWork, lead: m.Lead, day: date) -> datetime:
    """Midnight of `day` where the person is (their time zone, else the campaign's)."""
    contact = uow.session.get_one(m.Contact, lead.contact_id)
    zone_name = contact.timezone or uow.session.scalar(
        select(m.Campaign.timezone)
        .join(m.Enrollment, m.Enrollment.campaign_id == m.Campaign.id)
        .where(m.Enrollment.lead_id == lead.id)
        .limit(1)
    )
    return datetime.combine(day, time(0), tzinfo=load_zone(zone_name or "UTC"))


def planned_text(planned: list[PlannedStep]) -> str:
    if not planned:
        return "nothing is left to send"
    first = planned[0]
    return f"next: step {first.position} '{first.subject}' on {first.due_at:%a %d %b %H:%M} UTC" + (
        f" (+{len(planned) - 1} more)" if len(planned) > 1 else ""
    )


def close(thread: m.RescueThread) -> None:
    check_thread_move(ThreadState(thread.state), ThreadState.DONE)
    thread.state, thread.snoozed_until = ThreadState.DONE, None
