"""Enrolling leads in a campaign: every step is rendered and scheduled up front.

Rendering at enrollment means a missing value or a failing template is an error now, for this
lead (it is skipped with the reason), instead of a half-rendered email days later. The
snapshot is rendered again when its inputs change (`service_layer/workspace/rendering.py`).

A person who is mid-sequence from the same mailbox (an earlier campaign still has steps to
send) is not enrolled again unless asked (`allow_parallel`): two parallel threads from one
sender to one person is what this tool exists to prevent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.schedule import SendWindow, Wait, load_zone, plan_due
from replyguard.domain.states import OPEN, ReplyState
from replyguard.service_layer import step_tallies
from replyguard.service_layer.steps import new_step
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaign_status import require_not_archived
from replyguard.service_layer.workspace.campaigns import find_campaign
from replyguard.service_layer.workspace.leads import LeadNotFound, find_lead, primary_address
from replyguard.service_layer.workspace.rendering import (
    RenderFailed,
    apply_threading,
    lead_values,
    render_texts,
)


@dataclass
class EnrollReport:
    enrolled: int = 0
    already: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (email, why)


def campaign_window(campaign: m.Campaign) -> SendWindow:
    return SendWindow.parse(campaign.window_days.split(","), campaign.window_start, campaign.window_end)


def step_wait(step: m.CampaignStep) -> Wait:
    return Wait.stored(step.wait_days, step.wait_seconds)


def live_steps(uow: UnitOfWork, campaign_id: int) -> list[m.CampaignStep]:
    """The campaign's steps for new enrollments, in order (retired ones left out)."""
    return list(
        uow.session.scalars(
            select(m.CampaignStep)
            .where(m.CampaignStep.campaign_id == campaign_id, m.CampaignStep.retired_at.is_(None))
            .order_by(m.CampaignStep.position)
        )
    )


def candidate_lead_ids(uow: UnitOfWork, campaign_name: str, email: str | None) -> list[int]:
    campaign = find_campaign(uow, campaign_name)
    require_not_archived(campaign)
    if email is not None:
        product = uow.session.get_one(m.Product, campaign.product_id)
        return [find_lead(uow, email, product.name).id]
    enrolled = select(m.Enrollment.lead_id).where(m.Enrollment.campaign_id == campaign.id)
    return list(
        uow.session.scalars(
            select(m.Lead.id)
            .where(
                m.Lead.workspace_id == uow.workspace_id,
                m.Lead.product_id == campaign.product_id,
                m.Lead.id.not_in(enrolled),
                m.Lead.audit_run_id.is_(None),  # AUDIT (issue 13): canaries are the audit's own
            )
            .order_by(m.Lead.id)
        )
    )


def enroll_leads(
    uow: UnitOfWork,
    campaign_name: str,
    lead_ids: list[int],
    report: EnrollReport,
    *,
    allow_parallel: bool = False,
) -> None:
    campaign = find_campaign(uow, campaign_name)
    require_not_archived(campaign)
    steps = live_steps(uow, campaign.id)
    mailbox = uow.session.get_one(m.Mailbox, campaign.mailbox_id)
    secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    uow.lock_leads(lead_ids)
    for lead_id in lead_ids:
        lead = uow.session.get_one(m.Lead, lead_id)
        uow.session.refresh(lead)
        if lead.workspace_id != uow.workspace_id:
            raise LeadNotFound(f"lead {lead_id} is not in this workspace")
        why = _why_not(uow, campaign, lead, allow_parallel=allow_parallel)
        if why == "already":
            report.already += 1
        elif why:
            report.skipped.append((primary_address(uow, lead.contact_id), why))
        else:
            _enroll_one(uow, campaign, steps, mailbox, secret, lead, report)
    if report.enrolled >= BULK_ENROLMENT:
        # (contact_addresses: every inbound message asks which contact owns its sender, and
        # without statistics PostgreSQL filtered the workspace's addresses for it)
        uow.analyze_after_commit("contacts", "contact_addresses", "leads", "enrollments", "steps")
        # Every new step wrote a row into the step-count ledger (SQLite: one per step); fold
        # it now rather than wait for a worker's pass (step_tallies.py).
        uow.session.flush()
        step_tallies.fold_if_long(uow.session.connection(), uow.workspace_id)


#: Enrolments of at least this many leads refresh the planner's statistics when they commit
#: (`UnitOfWork.analyze_after_commit`): the worker's first claims come right after them.
BULK_ENROLMENT = 100


def _why_not(uow: UnitOfWork, campaign: m.Campaign, lead: m.Lead, *, allow_parallel: bool) -> str | None:
    """Why this lead is not enrolled ("already" if it is), or None."""
    if uow.session.scalar(
        select(m.Enrollment.id).where(
            m.Enrollment.lead_id == lead.id, m.Enrollment.campaign_id == campaign.id
        )
    ):
        return "already"
    if lead.reply_state != ReplyState.ACTIVE:
        return f"lead is {lead.reply_state}"
    address = primary_address(uow, lead.contact_id)
    if uow.session.scalar(
        select(m.Suppression.id).where(
            m.Suppression.workspace_id == uow.workspace_id, m.Suppression.address == address
        )
    ):
        return "address is suppressed"
    if not allow_parallel:
        busy = mid_sequence_from(uow, lead.contact_id, campaign)
        if busy:
            return (
                f"still mid-sequence in campaign {busy!r} from the same mailbox"
                " (enroll with --allow-parallel to send both)"
            )
    return None


def mid_sequence_from(uow: UnitOfWork, contact_id: int, campaign: m.Campaign) -> str | None:
    """The name of another campaign from the same mailbox with steps of this person still to
    send or decide, if any."""
    return uow.session.scalar(
        select(m.Campaign.name)
        .join(m.Enrollment, m.Enrollment.campaign_id == m.Campaign.id)
        .join(m.Lead, m.Lead.id == m.Enrollment.lead_id)
        .join(m.Step, m.Step.enrollment_id == m.Enrollment.id)
        .where(
            m.Lead.contact_id == contact_id,
            m.Campaign.mailbox_id == campaign.mailbox_id,
            m.Campaign.id != campaign.id,
            m.Enrollment.state == "active",
            m.Step.state.in_(list(OPEN)),
        )
        .order_by(m.Enrollment.id)
        .limit(1)
    )


def _enroll_one(
    uow: UnitOfWork,
    campaign: m.Campaign,
    steps: list[m.CampaignStep],
    mailbox: m.Mailbox,
    secret: str,
    lead: m.Lead,
    report: EnrollReport,
) -> None:
    contact = uow.session.get_one(m.Contact, lead.contact_id)
    address = primary_address(uow, contact.id)
    try:
        texts = render_texts(steps, lead_values(uow, contact, campaign.owner))
    except RenderFailed as exc:
        report.skipped.append((address, str(exc)))
        return
    enrollment = m.Enrollment(
        workspace_id=uow.workspace_id,
        lead_id=lead.id,
        campaign_id=campaign.id,
        state="active",
        created_at=uow.clock.now(),
    )
    uow.session.add(enrollment)
    uow.session.flush()
    zone = load_zone(contact.timezone or campaign.timezone)
    window = campaign_window(campaign)
    due = uow.clock.now()
    rows = []
    # Positions count 1, 2, 3... within the enrollment (the claim's "previous step" is the one
    # at position - 1), whatever the campaign's own numbering after retired steps.
    for position, (step, text) in enumerate(zip(steps, texts, strict=True), start=1):
        due = plan_due(due, step_wait(step), window, zone)
        rows.append(new_step(uow, enrollment, step, position, mailbox, secret, address, text, due))
    apply_threading(rows, [text.subject for text in texts])
    uow.session.add_all(rows)
    uow.add_event("enrolled", lead_id=lead.id, campaign=campaign.name, steps=len(steps))
    report.enrolled += 1
