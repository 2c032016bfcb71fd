"""One rescue thread as its page shows it: `thread_views.thread_detail` (the conversation, the
draft, the decisions), plus what a person needs to decide well — the reply as received (its
HTML, which the web layer sanitises), the step a failed-step thread is about, the mailbox's
pause, every decision with what it did, and what a resume would send when.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.schedule import Wait, load_zone, replan
from replyguard.domain.states import StepState, revivable
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.queries.inbound import inbound_message
from replyguard.service_layer.rescue import presence
from replyguard.service_layer.rescue.decision_base import ThreadNotFound
from replyguard.service_layer.rescue.replan import PlannedStep
from replyguard.service_layer.rescue.thread_views import thread_detail
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.enrollment import campaign_window
from replyguard.settings import Settings

#: An outbound message in one of these states may have reached the recipient (replan.py).
_MAY_HAVE_LEFT = ("handed", "accepted", "unknown")
_HISTORY = ("thread_opened", "thread_updated", "thread_decision", "person_reply_sent", "model_draft")


@dataclass(frozen=True, slots=True)
class Received:
    """The message that opened (or last updated) the thread, as it arrived."""

    inbound_id: int
    sender: str
    received_at: datetime
    text: str  # the whole text part, quoted history included
    html: str  # as received: the web layer sanitises it before anyone sees it


@dataclass(frozen=True, slots=True)
class StepView:
    step_id: int
    position: int
    subject: str
    state: str
    attempts: int
    last_error: str | None
    due_at: datetime


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    at: datetime
    kind: str
    by: str | None
    action: str | None
    message: str
    planned: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ThreadPage:
    lead_id: int
    detail: dict[str, Any]  # thread_views.thread_detail, as the CLI's `threads show --json`
    received: Received | None
    step: StepView | None
    mailbox_paused: str | None  # the reason, when the thread's mailbox is paused
    history: list[HistoryEntry]
    resume_plan: list[PlannedStep]  # what `resume` would send, and when
    presence: list[dict[str, Any]] = field(default_factory=list)  # who else is on it, fresh marks
    #: The zones a snooze time may be given in, the team's first: the zone of the lead's first
    #: campaign (where the owner told of the thread works), then UTC.
    snooze_zones: list[str] = field(default_factory=lambda: ["UTC"])


def thread_page(uow: UnitOfWork, thread_id: int, settings: Settings, viewer: str | None = None) -> ThreadPage:
    try:
        detail = thread_detail(uow, thread_id, settings)
    except ThreadNotFound:
        raise NotFound(f"no thread {thread_id}") from None
    thread = uow.session.get_one(m.RescueThread, thread_id)
    return ThreadPage(
        lead_id=thread.lead_id,
        detail=detail,
        received=_received(uow, thread),
        step=_step(uow, thread.step_id),
        mailbox_paused=_mailbox_paused(uow, thread.mailbox_id),
        history=history(uow, thread),
        resume_plan=resume_plan(uow, thread.lead_id) if _may_send(detail["actions"]) else [],
        presence=presence.others(uow, thread.id, viewer),
        snooze_zones=_snooze_zones(uow, thread.lead_id),
    )


def _received(uow: UnitOfWork, thread: m.RescueThread) -> Received | None:
    inbound_id = thread.inbound_message_id
    if inbound_id is None and thread.reply_id is not None:
        inbound_id = uow.session.scalar(
            select(m.Reply.inbound_message_id).where(m.Reply.id == thread.reply_id)
        )
    if inbound_id is None:
        return None
    try:
        message = inbound_message(uow, inbound_id)
    except NotFound:
        return None
    return Received(inbound_id, message.row.sender, message.row.received_at, message.text, message.html)


def _step(uow: UnitOfWork, step_id: int | None) -> StepView | None:
    if step_id is None:
        return None
    step = uow.session.scalar(
        select(m.Step).where(m.Step.id == step_id, m.Step.workspace_id == uow.workspace_id)
    )
    if step is None:
        return None
    return StepView(
        step.id, step.position, step.subject, step.state, step.attempts, step.last_error, step.due_at
    )


def _mailbox_paused(uow: UnitOfWork, mailbox_id: int | None) -> str | None:
    if mailbox_id is None:
        return None
    row = uow.session.execute(
        select(m.Mailbox.status, m.Mailbox.paused_reason).where(m.Mailbox.id == mailbox_id)
    ).first()
    if row is None or row[0] == "active":
        return None
    return row[1] or "paused"


def history(uow: UnitOfWork, thread: m.RescueThread) -> list[HistoryEntry]:
    """What happened to the thread, oldest first: opened, updated, each decision (with the
    steps it planned) and each answer a person sent."""
    rows = uow.session.scalars(
        select(m.Event)
        .where(
            m.Event.workspace_id == uow.workspace_id,
            m.Event.lead_id == thread.lead_id,
            m.Event.kind.in_(_HISTORY),
        )
        .order_by(m.Event.at, m.Event.id)
    )
    found = []
    for event in rows:
        data = event.data or {}
        if data.get("thread_id") != thread.id:
            continue
        found.append(
            HistoryEntry(
                at=event.at,
                kind=event.kind,
                by=data.get("by"),
                action=data.get("action"),
                message=_message(event.kind, data),
                planned=list(data.get("planned") or []),
            )
        )
    return found


def _message(kind: str, data: dict[str, Any]) -> str:
    if kind == "thread_decision":
        return str(data.get("message") or data.get("action") or "")
    if kind == "person_reply_sent":
        return f"answer {data.get('state')} as {data.get('message_id')}"
    if kind == "model_draft":
        return "the model wrote a draft" if data.get("ok") else f"the model failed: {data.get('error')}"
    what = (data.get("kind") or "").replace("_", " ")
    return f"{'opened' if kind == 'thread_opened' else 'updated'}: {what}"


def _snooze_zones(uow: UnitOfWork, lead_id: int) -> list[str]:
    """The zone of the lead's first campaign (its owner is told of the thread), then UTC."""
    team = uow.session.scalar(
        select(m.Campaign.timezone)
        .join(m.Enrollment, m.Enrollment.campaign_id == m.Campaign.id)
        .where(m.Enrollment.lead_id == lead_id)
        .order_by(m.Enrollment.id)
        .limit(1)
    )
    return [team, "UTC"] if team and team != "UTC" else ["UTC"]


def resume_plan(uow: UnitOfWork, lead_id: int) -> list[PlannedStep]:
    """What a person's resume would send, and when, if decided now — read only.

    The same rules as `replan.revive_and_replan` (which writes): queued steps and those a
    resume may revive (`domain.states.revivable`), re-planned from now with their waits, in
    the send window. tests/web/test_queries.py compares the two.
    """
    now = uow.clock.now()
    left = set(
        uow.session.scalars(
            select(m.OutboundMessage.step_id).where(
                m.OutboundMessage.lead_id == lead_id, m.OutboundMessage.status.in_(_MAY_HAVE_LEFT)
            )
        )
    )
    lead = uow.session.get_one(m.Lead, lead_id)
    zone_of_contact = uow.session.scalar(select(m.Contact.timezone).where(m.Contact.id == lead.contact_id))
    enrollments = uow.session.execute(
        select(m.Enrollment.id, m.Campaign)
        .join(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
        .where(m.Enrollment.lead_id == lead_id, m.Enrollment.state == "active")
        .order_by(m.Enrollment.id)
    ).all()
    planned: list[PlannedStep] = []
    for enrollment_id, campaign in enrollments:
        rows = uow.session.execute(
            select(m.Step, m.CampaignStep.wait_days, m.CampaignStep.wait_seconds, m.CampaignStep.approval)
            .join(m.CampaignStep, m.CampaignStep.id == m.Step.campaign_step_id)
            .where(
                m.Step.enrollment_id == enrollment_id,
                m.Step.state.in_([StepState.SCHEDULED, StepState.AWAITING_APPROVAL, StepState.CANCELLED]),
            )
            .order_by(m.Step.position)
        ).all()
        chosen = []
        for step, days, seconds, approval in rows:
            if step.state != StepState.CANCELLED:
                chosen.append((step, days, seconds, step.state))
            elif revivable(
                StepState(step.state),
                cancel_reason=step.cancel_reason,
                cancel_requested=step.cancel_requested,
                handed_over=step.id in left or step.sent_at is not None,
            ):
                target = StepState.AWAITING_APPROVAL if approval else StepState.SCHEDULED
                chosen.append((step, days, seconds, target.value))
        if not chosen:
            continue
        last_sent = uow.session.scalar(
            select(m.Step.sent_at)
            .where(m.Step.enrollment_id == enrollment_id, m.Step.state == StepState.SENT)
            .order_by(m.Step.sent_at.desc())
            .limit(1)
        )
        dues = replan(
            [Wait.stored(days, seconds) for _, days, seconds, _ in chosen],
            last_sent,
            now,
            campaign_window(campaign),
            load_zone(zone_of_contact or campaign.timezone),
        )
        for (step, _, _, state), due in zip(chosen, dues, strict=True):
            planned.append(PlannedStep(campaign.name, step.position, step.subject, due, str(state)))
    return planned


def _may_send(actions: list[str]) -> bool:
    return "resume" in actions or "restart" in actions
