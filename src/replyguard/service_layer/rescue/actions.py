"""What a person does to leads and steps: approve, stop, resume. Each is one transaction."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.states import Actor, ReplyState, StepState, check_reply_move
from replyguard.service_layer import steps as step_writes
from replyguard.service_layer.inbound.replies import cancel_queued_steps
from replyguard.service_layer.rescue import thread_versions
from replyguard.service_layer.rescue.step_decisions import skip
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaigns import check_position, find_campaign
from replyguard.service_layer.workspace.leads import find_lead


def approve_steps(
    uow: UnitOfWork,
    campaign_name: str,
    *,
    email: str | None = None,
    position: int | None = None,
    approver: str = "cli",
) -> int:
    """Move steps waiting for approval to SCHEDULED. Returns how many were approved.
    LookupError for an unknown campaign or lead, or a position none of the campaign's steps has."""
    campaign = find_campaign(uow, campaign_name)
    if position is not None:
        check_position(uow, campaign, position)
    query = (
        select(m.Step)
        .join(m.Enrollment, m.Enrollment.id == m.Step.enrollment_id)
        .where(
            m.Enrollment.campaign_id == campaign.id,
            m.Step.state == StepState.AWAITING_APPROVAL,
            m.Step.workspace_id == uow.workspace_id,
        )
    )
    if email is not None:
        product = uow.session.get_one(m.Product, campaign.product_id)
        query = query.where(m.Step.lead_id == find_lead(uow, email, product.name).id)
    if position is not None:
        query = query.where(m.Step.position == position)
    steps = list(uow.session.scalars(query.order_by(m.Step.id)))
    uow.lock_leads(s.lead_id for s in steps)
    approved = 0
    for step in steps:
        uow.session.refresh(step)
        if step.state != StepState.AWAITING_APPROVAL:
            continue  # cancelled by a reply in the meantime
        step_writes.approve(step, uow.clock.now())
        uow.add_event("step_approved", lead_id=step.lead_id, step_id=step.id, by=approver)
        approved += 1
    return approved


@dataclass(frozen=True, slots=True)
class LeadMoved:
    lead_id: int
    before: str
    after: str
    cancelled: int = 0  # queued steps cancelled by a stop
    in_flight: int = 0  # steps being sent as it stopped: marked, never retried


def set_lead_state(uow: UnitOfWork, email: str, product: str, target: ReplyState, *, why: str) -> LeadMoved:
    """A person moves a lead (stop, resume). Stopping cancels its queued steps."""
    return move_by_person(uow, find_lead(uow, email, product), target, why=why)


def move_by_person(
    uow: UnitOfWork, lead: m.Lead, target: ReplyState, *, why: str, by: str = "person"
) -> LeadMoved:
    """`set_lead_state` on a lead already found in this workspace (the Leads page's bulk stop
    goes through here, lead by lead). IllegalTransition, before anything is written, for a move
    a person may not make (a lead already stopped, an unsubscribed one resumed)."""
    uow.lock_leads([lead.id])
    uow.session.refresh(lead)
    previous = ReplyState(lead.reply_state)
    check_reply_move(previous, target, Actor.PERSON)
    lead.reply_state = target
    lead.reply_state_updated_at = uow.clock.now()
    lead.hold_reason = None
    if target is ReplyState.ACTIVE:
        lead.paused_until = None
    uow.add_event("lead_state_set", lead_id=lead.id, before=previous, after=target, by=by, why=why)
    thread_versions.bump(
        uow.session,
        workspace_id=uow.workspace_id,
        now=uow.clock.now(),
        lead_id=lead.id,
        kind="lead_state",
        by=by,
        summary=f"lead {previous} -> {target} ({why})",
    )
    cancelled = in_flight = 0
    if target is ReplyState.STOPPED:
        cancelled, in_flight = cancel_queued_steps(uow, lead.id, reason="stopped by a person")
    return LeadMoved(lead.id, str(previous), str(target), cancelled, in_flight)


def resolve_unknown(uow: UnitOfWork, step_id: int, *, went_out: bool) -> None:
    """A person who checked an unknown outcome says whether the email went out. If it did not,
    the step is skipped: the sequence may go on, and nothing threads on it."""
    step = uow.session.get_one(m.Step, step_id)
    if step.workspace_id != uow.workspace_id or step.state != StepState.UNKNOWN:
        raise LookupError(f"step {step_id} is not an unknown outcome in this workspace")
    uow.lock_leads([step.lead_id])
    uow.session.refresh(step)
    if step.state != StepState.UNKNOWN:
        raise LookupError(f"step {step_id} is not an unknown outcome any more")
    if went_out:
        step_writes.went_out(step, uow.clock.now())
    else:
        skip(uow, step, why="not sent (checked by a person)")
    uow.add_event("unknown_resolved", lead_id=step.lead_id, step_id=step_id, went_out=went_out)
