"""The rendered snapshot of a lead's emails: To name, subject, body and threading headers.

Decision (docs/architecture.md, "What is sent is one snapshot"): every step is rendered when
the lead is enrolled, and rendered again whenever its inputs change — the lead's data
(`leads import`), the campaign (`campaign update`), or which earlier emails really go out (a
person skips one). The worker sends the stored snapshot as it is, so its To header, subject
and body always come from the same data, and the send path renders nothing.

Approval is of content: when a re-render changes a step a person already approved, the step
goes back to waiting for approval. What a person approved is what is sent.

Steps that have left the queue (claimed, sending, sent, unknown) keep what they had.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import UnsafeHeaderValue, check_header_value
from replyguard.domain.inbound.subjects import subject_key
from replyguard.domain.sequence import Planned, thread_headers
from replyguard.domain.states import StepState, check_step_move
from replyguard.domain.templates import TemplateError, render
from replyguard.service_layer.sending.holds import hold_for_person
from replyguard.service_layer.uow import UnitOfWork

#: Steps whose snapshot may still change: nothing of them has been handed to a transport.
RENDERABLE = frozenset({StepState.SCHEDULED, StepState.AWAITING_APPROVAL, StepState.FAILED})
#: Steps that will never reach the lead: nothing may thread on them.
NOT_GOING_OUT = frozenset({StepState.SKIPPED, StepState.CANCELLED})


class RenderFailed(ValueError):
    """A lead's data cannot fill a campaign's templates; the message names step and field."""


@dataclass(frozen=True, slots=True)
class Texts:
    to_name: str
    subject: str | None  # its own subject; None: a follow-up in the thread
    body: str


def lead_values(uow: UnitOfWork, contact: m.Contact, owner: str) -> dict[str, str | None]:
    return {
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "full_name": f"{contact.first_name} {contact.last_name}".strip(),
        "company": contact.company,
        "title": contact.title,
        "email": uow.session.scalars(
            select(m.ContactAddress.address)
            .where(m.ContactAddress.contact_id == contact.id)
            .order_by(m.ContactAddress.is_primary.desc(), m.ContactAddress.id)
            .limit(1)
        ).one(),
        "timezone": contact.timezone,
        "owner": contact.owner or owner,
        **{k: str(v) for k, v in (contact.fields or {}).items()},
    }


def render_texts(steps: list[m.CampaignStep], values: dict[str, str | None]) -> list[Texts]:
    """Every step for one lead, or RenderFailed naming the step and field."""
    to_name = values["full_name"] or ""
    try:
        check_header_value("To name", to_name)
        texts = []
        for step in steps:
            subject = render(step.subject, values, f"step {step.position} subject") if step.subject else None
            if subject is not None:
                check_header_value(f"step {step.position} subject", subject)
            texts.append(Texts(to_name, subject, render(step.body, values, f"step {step.position} body")))
    except (TemplateError, UnsafeHeaderValue) as exc:
        raise RenderFailed(str(exc)) from exc
    return texts


def apply_threading(steps: list[m.Step], own_subjects: list[str | None]) -> None:
    """Set subject and threading headers of the steps that may still change, from which of the
    earlier steps really go out (`domain/sequence.py`)."""
    planned = [
        Planned(own, step.message_id, step.state not in NOT_GOING_OUT)
        for step, own in zip(steps, own_subjects, strict=True)
    ]
    for step, threading in zip(steps, thread_headers(planned), strict=True):
        if step.state in RENDERABLE:
            step.subject = threading.subject
            step.subject_key = subject_key(threading.subject)[:200]
            step.in_reply_to = threading.in_reply_to
            step.references = threading.references


def refresh_enrollment(uow: UnitOfWork, enrollment: m.Enrollment, *, why: str) -> int:
    """Render the enrollment's queued steps again from the current data and campaign, and
    re-derive threading. Returns how many steps changed. Must run under the lead's lock.

    A step whose content changed after a person approved it waits for approval again. If the
    data can no longer fill the templates, nothing changes and the lead is held for a person.
    """
    campaign = uow.session.get_one(m.Campaign, enrollment.campaign_id)
    steps = list(
        uow.session.scalars(
            select(m.Step).where(m.Step.enrollment_id == enrollment.id).order_by(m.Step.position)
        )
    )
    templates = {
        s.id: s
        for s in uow.session.scalars(select(m.CampaignStep).where(m.CampaignStep.campaign_id == campaign.id))
    }
    lead = uow.session.get_one(m.Lead, enrollment.lead_id)
    contact = uow.session.get_one(m.Contact, lead.contact_id)
    try:
        texts = render_texts(
            [templates[s.campaign_step_id] for s in steps], lead_values(uow, contact, campaign.owner)
        )
    except RenderFailed as exc:
        if any(s.state in RENDERABLE for s in steps):
            _hold(uow, lead.id, f"the {campaign.name!r} emails can no longer be rendered ({why}): {exc}")
        return 0
    before = {s.id: (s.to_name, s.subject, s.body) for s in steps}
    own_subjects: list[str | None] = []
    for step, text in zip(steps, texts, strict=True):
        template = templates[step.campaign_step_id]
        if step.state in RENDERABLE:
            step.to_name, step.body = text.to_name, text.body
            own_subjects.append(text.subject)
        else:
            own_subjects.append(step.subject if template.subject is not None else None)
    apply_threading(steps, own_subjects)
    changed = 0
    for step in steps:
        if step.state not in RENDERABLE or before[step.id] == (step.to_name, step.subject, step.body):
            continue
        changed += 1
        step.updated_at = uow.clock.now()
        if step.state == StepState.SCHEDULED and templates[step.campaign_step_id].approval:
            check_step_move(StepState.SCHEDULED, StepState.AWAITING_APPROVAL)
            step.state = StepState.AWAITING_APPROVAL
            uow.add_event(
                "approval_withdrawn", lead_id=lead.id, step_id=step.id, why=f"content changed: {why}"
            )
    if changed:
        uow.add_event(
            "steps_rendered_again", lead_id=lead.id, enrollment_id=enrollment.id, count=changed, why=why
        )
    return changed


def refresh_leads(uow: UnitOfWork, lead_ids: list[int], *, why: str) -> int:
    """`refresh_enrollment` for every active enrollment of these leads (locked here)."""
    if not lead_ids:
        return 0
    uow.lock_leads(lead_ids)
    enrollments = uow.session.scalars(
        select(m.Enrollment)
        .where(m.Enrollment.lead_id.in_(lead_ids), m.Enrollment.state == "active")
        .order_by(m.Enrollment.id)
    ).all()
    return sum(refresh_enrollment(uow, enrollment, why=why) for enrollment in enrollments)


def _hold(uow: UnitOfWork, lead_id: int, reason: str) -> None:
    uow.session.flush()
    hold_for_person(
        uow.session.connection(),
        workspace_id=uow.workspace_id,
        lead_id=lead_id,
        now=uow.clock.now(),
        kind="render_failed",
        reason=reason,
        settings=uow.settings,
    )
    uow.session.expire_all()
