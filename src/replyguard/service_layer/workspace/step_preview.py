"""A campaign step as one lead would get it (a preview), and a test send of it to the person
asking — never to a lead.

A preview renders the step's templates on a lead of the campaign's product (or on the sample
lead every template was tried on), exactly as enrollment renders them (`rendering.render_texts`).

A test send hands that rendering to the campaign mailbox's own transport (`transport_for`),
addressed to the signed-in person's address, which the entry point takes from the session and
never from the request. Its subject is marked as a test; it gets a Message-ID of its own that
no step has, so nothing threads on it; no step, outbound row or send count is written (the
daily cap does not count it), only an event saying who sent which step to whom. An address
that belongs to a lead of the workspace is refused as a recipient even when it is the
person's own: a test is never how a lead gets an email.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import Outcome
from replyguard.domain.addresses import domain_of, normalize_address
from replyguard.domain.campaign_spec import SAMPLE_LEAD
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaigns import custom_fields
from replyguard.service_layer.workspace.rendering import RenderFailed, lead_values, render_texts

TEST_MARK = "[TEST]"


class SendTestRefused(ValueError):
    """Why a test send was not made (one line a person reads)."""


@dataclass(frozen=True, slots=True)
class Preview:
    campaign_id: int
    mailbox_id: int
    position: int
    lead_id: int | None  # None: the sample lead
    lead: str  # who it was rendered for, as a person reads it
    from_name: str
    from_address: str
    subject: str  # a follow-up's subject is the thread's: "Re: " and the earlier step's
    follow_up: bool
    body: str


@dataclass(frozen=True, slots=True)
class SentTest:
    recipient: str
    subject: str
    outcome: str  # accepted, transient, permanent, unknown
    detail: str


def preview_step(uow: UnitOfWork, campaign_id: int, position: int, lead_id: int | None = None) -> Preview:
    """Step `position` of the workspace's campaign rendered for `lead_id` (a lead of the
    campaign's product) or the sample lead. LookupError: no such campaign, step or lead;
    RenderFailed: the lead's data cannot fill the templates (the message names the field)."""
    campaign = uow.session.scalar(
        select(m.Campaign).where(m.Campaign.id == campaign_id, m.Campaign.workspace_id == uow.workspace_id)
    )
    if campaign is None:
        raise NotFound(f"no campaign {campaign_id}")
    templates = list(
        uow.session.scalars(
            select(m.CampaignStep)
            .where(m.CampaignStep.campaign_id == campaign.id, m.CampaignStep.retired_at.is_(None))
            .order_by(m.CampaignStep.position)
        )
    )
    upto = [t for t in templates if t.position <= position]
    if not upto or upto[-1].position != position:
        known = ", ".join(str(t.position) for t in templates)
        raise LookupError(f"campaign {campaign.name!r} has no step {position} (its steps: {known})")
    if lead_id is None:
        values: dict[str, str | None] = {**SAMPLE_LEAD, **dict.fromkeys(custom_fields(uow), "sample")}
        values["owner"] = campaign.owner
        who = "the sample lead (Alex Sample)"
    else:
        lead = uow.session.scalar(
            select(m.Lead).where(
                m.Lead.id == lead_id,
                m.Lead.workspace_id == uow.workspace_id,
                m.Lead.product_id == campaign.product_id,
            )
        )
        if lead is None:
            raise LookupError(f"no lead {lead_id} of this campaign's product")
        contact = uow.session.get_one(m.Contact, lead.contact_id)
        values = lead_values(uow, contact, campaign.owner)
        who = f"{values['full_name'] or values['email']} <{values['email']}>"
    # The step and the earlier one whose subject a follow-up takes ("Re: ...").
    wanted = [upto[-1]]
    opener = next((t for t in reversed(upto[:-1]) if t.subject), None)
    if upto[-1].subject is None and opener is not None:
        wanted.insert(0, opener)
    texts = render_texts(wanted, values)
    text = texts[-1]
    follow_up = text.subject is None
    subject = text.subject if text.subject is not None else f"Re: {texts[0].subject or ''}".rstrip()
    mailbox = uow.session.get_one(m.Mailbox, campaign.mailbox_id)
    return Preview(
        campaign.id, mailbox.id, position, lead_id, who, mailbox.from_name, mailbox.address,
        subject, follow_up, text.body,
    )  # fmt: skip


def send_test(
    app: Runtime, campaign_id: int, position: int, lead_id: int | None, *, to: str, by: str
) -> SentTest:
    """Send step `position`, rendered for `lead_id` (or the sample lead), to `to`: the address
    of the person asking, as the session knows it. Raises SendTestRefused or LookupError."""
    recipient = normalize_address(to)
    with app.uow() as uow:
        try:
            preview = preview_step(uow, campaign_id, position, lead_id)
        except RenderFailed as exc:
            raise SendTestRefused(f"step {position} cannot be rendered for this lead: {exc}") from None
        if uow.session.scalar(
            select(m.ContactAddress.id)
            .join(m.Lead, m.Lead.contact_id == m.ContactAddress.contact_id)
            .where(m.ContactAddress.workspace_id == uow.workspace_id, m.ContactAddress.address == recipient)
            .limit(1)
        ):
            raise SendTestRefused(
                f"{recipient} is a lead's address in this workspace: a test is never sent to a lead"
            )
    token = secrets.token_hex(12)
    subject = f"{TEST_MARK} {preview.subject}"
    email = OutgoingEmail(
        send_key=f"test-{token}",
        message_id=f"<test-{token}@{domain_of(preview.from_address)}>",
        from_name=preview.from_name,
        from_address=preview.from_address,
        to_name="",
        to_address=recipient,
        subject=subject,
        body=preview.body,
        date=app.clock.now(),
    )
    try:
        delivery = app.transport_for(preview.mailbox_id).send(email)
        outcome, detail = delivery.outcome, delivery.detail
    except Exception as exc:  # a transport raising is a failed test, said in one line
        outcome, detail = Outcome.UNKNOWN, f"transport raised {exc.__class__.__name__}"
    with app.uow() as uow:
        uow.add_event(
            "campaign_test_sent",
            campaign_id=campaign_id,
            position=position,
            rendered_for=lead_id,
            to=recipient,
            by=by,
            outcome=str(outcome),
            detail=detail[:300],
        )
        uow.commit()
    return SentTest(recipient, subject, str(outcome), detail)
