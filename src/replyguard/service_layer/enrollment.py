"""Enrolling leads in a campaign: every step is rendered and scheduled up front.

Rendering at enrollment means a missing value is an error now, for this lead, instead of a
half-rendered email days later; and what a person approves is exactly what will be sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import UnsafeHeaderValue, check_header_value, domain_of
from replyguard.domain.inbound.subjects import subject_key
from replyguard.domain.message_ids import message_id_for, send_key
from replyguard.domain.schedule import SendWindow, load_zone, plan_due
from replyguard.domain.states import ReplyState, StepState
from replyguard.domain.templates import TemplateError, render
from replyguard.service_layer.campaigns import find_campaign
from replyguard.service_layer.leads import LeadNotFound, find_lead, primary_address
from replyguard.service_layer.uow import UnitOfWork


@dataclass
class EnrollReport:
    enrolled: int = 0
    already: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (email, why)


def campaign_window(campaign: m.Campaign) -> SendWindow:
    return SendWindow.parse(campaign.window_days.split(","), campaign.window_start, campaign.window_end)


def candidate_lead_ids(uow: UnitOfWork, campaign_name: str, email: str | None) -> list[int]:
    campaign = find_campaign(uow, campaign_name)
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


def enroll_leads(uow: UnitOfWork, campaign_name: str, lead_ids: list[int], report: EnrollReport) -> None:
    campaign = find_campaign(uow, campaign_name)
    steps = list(
        uow.session.scalars(
            select(m.CampaignStep)
            .where(m.CampaignStep.campaign_id == campaign.id)
            .order_by(m.CampaignStep.position)
        )
    )
    mailbox = uow.session.get_one(m.Mailbox, campaign.mailbox_id)
    secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    uow.lock_leads(lead_ids)
    for lead_id in lead_ids:
        lead = uow.session.get_one(m.Lead, lead_id)
        uow.session.refresh(lead)
        if lead.workspace_id != uow.workspace_id:
            raise LeadNotFound(f"lead {lead_id} is not in this workspace")
        _enroll_one(uow, campaign, steps, mailbox, secret, lead, report)


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
    if uow.session.scalar(
        select(m.Enrollment.id).where(
            m.Enrollment.lead_id == lead.id, m.Enrollment.campaign_id == campaign.id
        )
    ):
        report.already += 1
        return
    if lead.reply_state != ReplyState.ACTIVE:
        report.skipped.append((address, f"lead is {lead.reply_state}"))
        return
    if uow.session.scalar(
        select(m.Suppression.id).where(
            m.Suppression.workspace_id == uow.workspace_id, m.Suppression.address == address
        )
    ):
        report.skipped.append((address, "address is suppressed"))
        return
    values: dict[str, str | None] = {
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "full_name": f"{contact.first_name} {contact.last_name}".strip(),
        "company": contact.company,
        "title": contact.title,
        "email": address,
        "timezone": contact.timezone,
        "owner": contact.owner or campaign.owner,
        **{k: str(v) for k, v in (contact.fields or {}).items()},
    }
    try:
        rendered = [
            (
                render(s.subject, values, f"step {s.position} subject") if s.subject else None,
                render(s.body, values, f"step {s.position} body"),
            )
            for s in steps
        ]
        for subject, _body in rendered:
            if subject is not None:
                check_header_value("subject", subject)
    except (TemplateError, UnsafeHeaderValue) as exc:
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
    thread_subject = ""
    thread_ids: list[str] = []
    for step, (own_subject, body) in zip(steps, rendered, strict=True):
        due = plan_due(due, timedelta(seconds=step.wait_seconds), window, zone)
        key = send_key(secret, enrollment.id, step.position)
        message_id = message_id_for(key, domain_of(mailbox.address))
        if own_subject is not None:
            # A step with its own subject starts a new thread; follow-ups without one reply in it.
            thread_subject, thread_ids = own_subject, []
        subject = own_subject if own_subject is not None else f"Re: {thread_subject}"
        uow.session.add(
            m.Step(
                workspace_id=uow.workspace_id,
                enrollment_id=enrollment.id,
                lead_id=lead.id,
                mailbox_id=mailbox.id,
                campaign_step_id=step.id,
                position=step.position,
                state=StepState.AWAITING_APPROVAL if step.approval else StepState.SCHEDULED,
                due_at=due,
                send_key=key,
                message_id=message_id,
                to_address=address,
                subject=subject,
                subject_key=subject_key(subject)[:200],
                body=body,
                in_reply_to=thread_ids[-1] if thread_ids else None,
                references=" ".join(thread_ids) if thread_ids else None,
                attempts=0,
                updated_at=uow.clock.now(),
            )
        )
        thread_ids.append(message_id)
    uow.add_event("enrolled", lead_id=lead.id, campaign=campaign.name, steps=len(steps))
    report.enrolled += 1
