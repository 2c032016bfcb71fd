"""Bringing a sequence back after a person's decision: revive what a reply cancelled before it
was ever handed over, then re-plan every remaining step from a start time.

Design (docs/architecture.md, "Resume"): CANCELLED is terminal for the machine. Only a
person's resume may move a step back, and only a step that provably never left: cancelled
from a queued state (not `cancel_requested`, which marks a step a reply found SENDING), for a
reply, a stop or the worker's refusal (`domain.states.revivable`), and with no outbound
message that a transport may have taken. A revived step keeps its send key and Message-ID —
still unique, and never used for a message that went out — so the worker's guard (claim,
re-check under the lead lock, marker, fencing) applies to it as to any step. A step whose
campaign step needs approval is revived as awaiting approval: a person approves it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.schedule import Wait, load_zone, replan
from replyguard.domain.states import Actor, StepState, check_step_move, revivable
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.enrollment import campaign_window

#: An outbound message in one of these states may have reached the recipient.
_MAY_HAVE_LEFT = ("handed", "accepted", "unknown")


@dataclass(frozen=True, slots=True)
class PlannedStep:
    campaign: str
    position: int
    subject: str
    due_at: datetime
    state: str

    def to_json(self) -> dict[str, object]:
        return {
            "campaign": self.campaign,
            "position": self.position,
            "subject": self.subject,
            "due_at": self.due_at.isoformat(),
            "state": self.state,
        }


def revive_and_replan(uow: UnitOfWork, lead_id: int, start: datetime) -> list[PlannedStep]:
    """Revive the lead's revivable steps and re-plan its queued ones from `start`.

    Must run under the lead lock. Returns what will be sent when, in order.
    """
    revive(uow, lead_id)
    return replan_lead(uow, lead_id, start)


def revive(uow: UnitOfWork, lead_id: int) -> int:
    left = set(
        uow.session.scalars(
            select(m.OutboundMessage.step_id).where(
                m.OutboundMessage.lead_id == lead_id, m.OutboundMessage.status.in_(_MAY_HAVE_LEFT)
            )
        )
    )
    rows = uow.session.execute(
        select(m.Step, m.CampaignStep.approval)
        .join(m.CampaignStep, m.CampaignStep.id == m.Step.campaign_step_id)
        .join(m.Enrollment, m.Enrollment.id == m.Step.enrollment_id)
        .where(
            m.Step.lead_id == lead_id,
            m.Step.state == StepState.CANCELLED,
            m.Enrollment.state == "active",
        )
    ).all()
    revived = 0
    kept: list[m.Step] = []
    for step, approval in rows:
        ok = revivable(
            StepState(step.state),
            cancel_reason=step.cancel_reason,
            cancel_requested=step.cancel_requested,
            handed_over=step.id in left or step.sent_at is not None,
        )
        if not ok:
            kept.append(step)
            continue
        target = StepState.AWAITING_APPROVAL if approval else StepState.SCHEDULED
        check_step_move(StepState.CANCELLED, target, Actor.PERSON)
        step.state, step.cancel_reason, step.claim_token = target, None, None
        step.lease_until, step.send_day, step.updated_at = None, None, uow.clock.now()
        uow.add_event("step_revived", lead_id=lead_id, step_id=step.id, state=target)
        revived += 1
    _skip_blockers(uow, lead_id, kept, [step for step, _ in rows if step not in kept])
    return revived


def _skip_blockers(uow: UnitOfWork, lead_id: int, kept: list[m.Step], revived: list[m.Step]) -> None:
    """A cancelled step that stays cancelled (it may have gone out) before a step brought back
    would hold that step back forever (steps go out in order): the resume skips it instead.
    Skipped is never sent; the person's decision to resume is the decision to go on without it."""
    last_revived: dict[int, int] = {}
    for step in revived:
        last_revived[step.enrollment_id] = max(last_revived.get(step.enrollment_id, 0), step.position)
    for step in kept:
        if step.position < last_revived.get(step.enrollment_id, 0):
            check_step_move(StepState.CANCELLED, StepState.SKIPPED, Actor.PERSON)
            step.state, step.updated_at = StepState.SKIPPED, uow.clock.now()
            uow.add_event(
                "step_skipped",
                lead_id=lead_id,
                step_id=step.id,
                by="person",
                why="cancelled when it may have gone out; the resume goes on without it",
            )


def replan_lead(uow: UnitOfWork, lead_id: int, start: datetime) -> list[PlannedStep]:
    """Re-plan the lead's queued steps per enrollment: windows and waits kept, none before `start`."""
    lead = uow.session.get_one(m.Lead, lead_id)
    contact = uow.session.get_one(m.Contact, lead.contact_id)
    planned: list[PlannedStep] = []
    enrollments = uow.session.execute(
        select(m.Enrollment, m.Campaign)
        .join(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
        .where(m.Enrollment.lead_id == lead_id, m.Enrollment.state == "active")
        .order_by(m.Enrollment.id)
    ).all()
    for enrollment, campaign in enrollments:
        steps = uow.session.execute(
            select(m.Step, m.CampaignStep.wait_days, m.CampaignStep.wait_seconds)
            .join(m.CampaignStep, m.CampaignStep.id == m.Step.campaign_step_id)
            .where(
                m.Step.enrollment_id == enrollment.id,
                m.Step.state.in_([StepState.SCHEDULED, StepState.AWAITING_APPROVAL]),
            )
            .order_by(m.Step.position)
        ).all()
        if not steps:
            continue
        last_sent = uow.session.scalar(
            select(m.Step.sent_at)
            .where(m.Step.enrollment_id == enrollment.id, m.Step.state == StepState.SENT)
            .order_by(m.Step.sent_at.desc())
            .limit(1)
        )
        zone = load_zone(contact.timezone or campaign.timezone)
        dues = replan(
            [Wait.stored(days, seconds) for _, days, seconds in steps],
            last_sent,
            start,
            campaign_window(campaign),
            zone,
        )
        for (step, _, _), due in zip(steps, dues, strict=True):
            step.due_at, step.updated_at = due, uow.clock.now()
            planned.append(PlannedStep(campaign.name, step.position, step.subject, due, step.state))
    if planned:
        uow.add_event(
            "steps_replanned", lead_id=lead_id, count=len(planned), first_due=planned[0].due_at.isoformat()
        )
    return planned
