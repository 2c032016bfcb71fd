"""Creating campaigns from their TOML file."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.campaign_spec import CampaignSpec, CampaignSpecError, parse_campaign
from replyguard.service_layer.uow import UnitOfWork


@dataclass(frozen=True, slots=True)
class CampaignCreated:
    campaign_id: int
    name: str
    product: str
    steps: int
    created: bool  # False: an identical campaign already existed


def custom_fields(uow: UnitOfWork) -> set[str]:
    """Custom CSV columns seen in this workspace: usable as template variables."""
    names: set[str] = set()
    for fields in uow.session.scalars(
        select(m.Contact.fields).where(m.Contact.workspace_id == uow.workspace_id)
    ):
        names.update(fields or {})
    return names


def get_or_create_product(uow: UnitOfWork, name: str) -> m.Product:
    product = uow.session.scalar(
        select(m.Product).where(m.Product.workspace_id == uow.workspace_id, m.Product.name == name)
    )
    if product is None:
        product = m.Product(workspace_id=uow.workspace_id, name=name)
        uow.session.add(product)
        uow.session.flush()
    return product


def create_campaign(uow: UnitOfWork, source: str) -> CampaignCreated:
    spec = parse_campaign(source, custom_fields(uow))
    existing = uow.session.scalar(
        select(m.Campaign).where(m.Campaign.workspace_id == uow.workspace_id, m.Campaign.name == spec.name)
    )
    if existing is not None:
        if existing.source == source:
            return CampaignCreated(existing.id, spec.name, spec.product, len(spec.steps), False)
        raise CampaignSpecError(
            f"campaign.name: a different campaign named {spec.name!r} already exists; "
            "give the new one another name (running campaigns are never rewritten under their leads)"
        )
    product = get_or_create_product(uow, spec.product)
    mailbox = _mailbox(uow, spec)
    campaign = m.Campaign(
        workspace_id=uow.workspace_id,
        product_id=product.id,
        mailbox_id=mailbox.id,
        name=spec.name,
        owner=spec.owner,
        timezone=spec.timezone,
        window_days=",".join(spec.window.day_names()),
        window_start=spec.window.start.strftime("%H:%M"),
        window_end=spec.window.end.strftime("%H:%M"),
        daily_cap=spec.daily_cap,
        status="active",
        source=source,
        created_at=uow.clock.now(),
    )
    uow.session.add(campaign)
    uow.session.flush()
    for step in spec.steps:
        uow.session.add(
            m.CampaignStep(
                workspace_id=uow.workspace_id,
                campaign_id=campaign.id,
                position=step.position,
                wait_seconds=int(step.wait.total_seconds()),
                subject=step.subject,
                body=step.body,
                approval=step.approval,
            )
        )
    uow.add_event("campaign_created", campaign=spec.name, product=spec.product, steps=len(spec.steps))
    return CampaignCreated(campaign.id, spec.name, spec.product, len(spec.steps), True)


def _mailbox(uow: UnitOfWork, spec: CampaignSpec) -> m.Mailbox:
    mailbox = uow.session.scalar(
        select(m.Mailbox).where(m.Mailbox.workspace_id == uow.workspace_id, m.Mailbox.address == spec.mailbox)
    )
    if mailbox is None:
        mailbox = m.Mailbox(
            workspace_id=uow.workspace_id,
            address=spec.mailbox,
            from_name=spec.from_name,
            daily_cap=spec.daily_cap,
            timezone=spec.timezone,
        )
        uow.session.add(mailbox)
        uow.session.flush()
    elif spec.daily_cap < mailbox.daily_cap:
        # The cap protects the mailbox's reputation: when campaigns disagree, the strictest wins.
        mailbox.daily_cap = spec.daily_cap
    return mailbox


def find_campaign(uow: UnitOfWork, name: str) -> m.Campaign:
    campaign = uow.session.scalar(
        select(m.Campaign).where(m.Campaign.workspace_id == uow.workspace_id, m.Campaign.name == name)
    )
    if campaign is None:
        known = uow.session.scalars(
            select(m.Campaign.name).where(m.Campaign.workspace_id == uow.workspace_id)
        ).all()
        raise LookupError(f"no campaign named {name!r} (known: {', '.join(known) or 'none'})")
    return campaign
