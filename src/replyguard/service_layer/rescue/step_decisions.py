"""A person's decisions about a step that failed for good (or whose outcome is unknown).

A failed step holds its lead (`holds.hold_for_person`), and the next step of its enrollment
cannot be claimed while it is failed. A person then decides, each in one transaction:

* `resend_step`: try the same email again (same send key and Message-ID: it never arrived,
  so no copy can exist). Its retries start over.
* `skip_step`: go on without it. The steps after it are threaded again without it (a
  follow-up never replies to an email the lead never got), keep their wait after the last
  email that did go out, and the enrollment completes if nothing is left.
* stop the lead (`actions.set_lead_state`, `replyguard leads stop`).

Resend and skip return the lead to active when the hold was for this very step; a lead held
for something else (a probable reply meanwhile) stays held and the result says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.schedule import load_zone, plan_due
from replyguard.domain.states import OPEN, Actor, ReplyState, StepState, check_reply_move, check_step_move
from replyguard.service_layer.steps import put_back
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaigns import check_position, find_campaign
from replyguard.service_layer.workspace.enrollment import campaign_window, step_wait
from replyguard.service_layer.workspace.leads import find_lead, primary_address
from replyguard.service_layer.workspace.rendering import refresh_enrollment

#: A person who owns the lead this way decided already: nothing is resent.
_FINAL = (ReplyState.REPLIED, ReplyState.BOUNCED, ReplyState.UNSUBSCRIBED, ReplyState.STOPPED)


class DecisionRefused(ValueError):
    """The decision cannot be made (the message says why)."""


@dataclass(frozen=True, slots=True)
class StepDecision:
    step_id: int
    position: int
    state: str
    lead_state: str
    note: str


def find_step(
    uow: UnitOfWork, campaign_name: str, email: str, position: int | None, states: tuple[StepState, ...]
) -> m.Step:
    """The lead's step in `states` in this campaign (the first one, unless `position`)."""
    campaign = find_campaign(uow, campaign_name)
    if position is not None:
        check_position(uow, campaign, position)
    product = uow.session.get_one(m.Product, campaign.product_id)
    lead = find_lead(uow, email, product.name)
    uow.lock_leads([lead.id])
    query = (
        select(m.Step)
        .join(m.Enrollment, m.Enrollment.id == m.Step.enrollment_id)
        .where(
            m.Enrollment.campaign_id == campaign.id,
            m.Step.lead_id == lead.id,
            m.Step.state.in_(list(states)),
        )
        .order_by(m.Step.position)
        .execution_options(populate_existing=True)
    )
    if position is not None:
        query = query.where(m.Step.position == position)
    step = uow.session.scalars(query.limit(1)).first()
    if step is None:
        which = f"step {position}" if position is not None else "step"
        raise LookupError(
            f"{email} has no {which} that is {' or '.join(states)} in campaign {campaign_name!r}"
        )
    return step


def resend_step(uow: UnitOfWork, campaign_name: str, email: str, position: int | None = None) -> StepDecision:
    step = find_step(uow, campaign_name, email, position, (StepState.FAILED,))
    lead = uow.session.get_one(m.Lead, step.lead_id, populate_existing=True)
    if ReplyState(lead.reply_state) in _FINAL:
        raise DecisionRefused(f"the lead is {lead.reply_state}: nothing is resent to it")
    if uow.session.scalar(
        select(m.Suppression.id).where(
            m.Suppression.workspace_id == uow.workspace_id, m.Suppression.address == step.to_address
        )
    ):
        raise DecisionRefused(f"{step.to_address} is suppressed: nothing is resent to it")
    now = uow.clock.now()
    put_back(step, now, actor=Actor.PERSON, due_at=now)
    step.attempts = 0
    uow.add_event("step_resent", lead_id=lead.id, step_id=step.id, by="person", last_error=step.last_error)
    note = _unhold(uow, lead, step)
    return StepDecision(step.id, step.position, step.state, lead.reply_state, note)


def skip_step(uow: UnitOfWork, campaign_name: str, email: str, position: int | None = None) -> StepDecision:
    """Skip the lead's failed (or unknown) step; with `position`, a queued step may be skipped too."""
    states: tuple[StepState, ...] = (StepState.FAILED, StepState.UNKNOWN)
    if position is not None:
        states += (StepState.AWAITING_APPROVAL, StepState.SCHEDULED)
    step = find_step(uow, campaign_name, email, position, states)
    lead = uow.session.get_one(m.Lead, step.lead_id, populate_existing=True)
    skip(uow, step, why="skipped by a person")
    note = _unhold(uow, lead, step)
    return StepDecision(step.id, step.position, step.state, lead.reply_state, note)


def skip(uow: UnitOfWork, step: m.Step, *, why: str) -> None:
    """Skip one step (a person's decision): thread the rest without it, keep their spacing,
    and complete the enrollment if nothing is left. Must run under the lead lock."""
    check_step_move(StepState(step.state), StepState.SKIPPED, Actor.PERSON)
    now = uow.clock.now()
    step.state, step.claim_token, step.lease_until, step.updated_at = StepState.SKIPPED, None, None, now
    uow.add_event("step_skipped", lead_id=step.lead_id, step_id=step.id, by="person", why=why)
    uow.session.flush()
    enrollment = uow.session.get_one(m.Enrollment, step.enrollment_id)
    _respace_next(uow, enrollment, step)
    refresh_enrollment(uow, enrollment, why=why)
    left = uow.session.scalar(
        select(m.Step.id).where(m.Step.enrollment_id == enrollment.id, m.Step.state.in_(list(OPEN))).limit(1)
    )
    if left is None and enrollment.state == "active":
        enrollment.state = "completed"


def _respace_next(uow: UnitOfWork, enrollment: m.Enrollment, skipped: m.Step) -> None:
    """The step after a skipped one waits its own wait after the last email that went out."""
    nxt = uow.session.scalar(
        select(m.Step).where(m.Step.enrollment_id == enrollment.id, m.Step.position == skipped.position + 1)
    )
    if nxt is None or nxt.state not in (StepState.SCHEDULED, StepState.AWAITING_APPROVAL):
        return
    last_sent = uow.session.scalar(
        select(m.Step.sent_at)
        .where(m.Step.enrollment_id == enrollment.id, m.Step.state == StepState.SENT)
        .order_by(m.Step.position.desc())
        .limit(1)
    )
    campaign = uow.session.get_one(m.Campaign, enrollment.campaign_id)
    contact = uow.session.get_one(m.Contact, uow.session.get_one(m.Lead, enrollment.lead_id).contact_id)
    zone = load_zone(contact.timezone or campaign.timezone)
    window = campaign_window(campaign)
    if last_sent is None:
        earliest = window.next_open(uow.clock.now(), zone)
    else:
        earliest = plan_due(
            last_sent, step_wait(uow.session.get_one(m.CampaignStep, nxt.campaign_step_id)), window, zone
        )
    nxt.due_at = max(nxt.due_at, earliest)


def _unhold(uow: UnitOfWork, lead: m.Lead, step: m.Step) -> str:
    """Return the lead to active if it is held for this very step (the last hold was)."""
    if lead.reply_state != ReplyState.HELD:
        return f"the lead is {lead.reply_state}"
    last_hold = uow.session.execute(
        select(m.Event.step_id, m.Event.data)
        .where(m.Event.lead_id == lead.id, m.Event.kind == "lead_held")
        .order_by(m.Event.id.desc())
        .limit(1)
    ).first()
    if last_hold is None or last_hold.step_id != step.id:
        return f"the lead stays held: {lead.hold_reason}"
    check_reply_move(ReplyState.HELD, ReplyState.ACTIVE, Actor.PERSON)
    lead.reply_state, lead.reply_state_updated_at, lead.hold_reason = ReplyState.ACTIVE, uow.clock.now(), None
    uow.add_event(
        "lead_state_set", lead_id=lead.id, before="held", after="active", by="person", why="step decided"
    )
    return "the lead is active again"


def failed_steps(uow: UnitOfWork) -> list[dict[str, Any]]:
    """Steps waiting for a person's decision: failed for good, or with an unknown outcome."""
    rows = uow.session.execute(
        select(m.Step, m.Campaign.name, m.Lead.reply_state, m.Lead.contact_id)
        .join(m.Enrollment, m.Enrollment.id == m.Step.enrollment_id)
        .join(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
        .join(m.Lead, m.Lead.id == m.Step.lead_id)
        .where(
            m.Step.workspace_id == uow.workspace_id,
            m.Step.state.in_([StepState.FAILED, StepState.UNKNOWN]),
        )
        .order_by(m.Step.updated_at, m.Step.id)
    ).all()
    return [
        {
            "step_id": step.id,
            "campaign": campaign,
            "lead": primary_address(uow, contact_id),
            "position": step.position,
            "state": step.state,
            "subject": step.subject,
            "last_error": step.last_error,
            "attempts": step.attempts,
            "lead_state": lead_state,
            "since": step.updated_at.isoformat(),
        }
        for step, campaign, lead_state, contact_id in rows
    ]
