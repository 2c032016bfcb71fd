"""The leads list (search) and the lead page: the contact, its products, its steps and one
timeline of every event across products."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select

from replyguard.adapters.db import models as m
from replyguard.domain.timeline import describe
from replyguard.service_layer.queries import NotFound, Page, bounds, like_pattern, paged
from replyguard.service_layer.queries.products import require_product
from replyguard.service_layer.uow import UnitOfWork

TIMELINE_LIMIT = 500


@dataclass(frozen=True, slots=True)
class LeadRow:
    lead_id: int
    contact_id: int
    email: str
    name: str
    company: str
    product: str
    reply_state: str
    reply_state_updated_at: datetime


@dataclass(frozen=True, slots=True)
class LeadListing:
    """A lead in `replyguard leads list`: who, in which product, its state and its steps."""

    lead_id: int
    email: str
    name: str
    company: str
    product: str
    reply_state: str
    reply_state_updated_at: datetime
    steps: dict[str, int]  # step state -> how many of the lead's steps are in it


@dataclass(frozen=True, slots=True)
class ProductLead:
    lead_id: int
    product: str
    reply_state: str
    reply_state_updated_at: datetime
    paused_until: datetime | None
    hold_reason: str | None


@dataclass(frozen=True, slots=True)
class ContactInfo:
    contact_id: int
    name: str
    email: str
    alternates: list[str]
    company: str
    title: str
    timezone: str | None
    owner: str | None
    fields: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LeadStep:
    step_id: int
    campaign_id: int
    campaign: str
    position: int
    subject: str
    state: str
    due_at: datetime
    sent_at: datetime | None
    cancel_reason: str | None
    crossed: bool


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    id: int
    at: datetime
    kind: str
    lead_id: int | None
    product: str | None
    actor: str
    summary: str
    step_position: int | None
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LeadDetail:
    lead: ProductLead
    contact: ContactInfo
    other_leads: list[ProductLead]
    steps: list[LeadStep]
    timeline: list[TimelineEntry]


def search_leads(
    uow: UnitOfWork, q: str = "", *, state: str | None = None, page: int = 1, per_page: int = 50
) -> Page[LeadRow]:
    """Leads whose any address, name or company contains `q` (case-insensitive), newest first."""
    ws = uow.workspace_id
    primary = m.ContactAddress
    query = (
        select(m.Lead, m.Contact, primary.address, m.Product.name)
        .join(m.Contact, m.Contact.id == m.Lead.contact_id)
        .join(primary, (primary.contact_id == m.Contact.id) & primary.is_primary)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(m.Lead.workspace_id == ws)
    )
    if q.strip():
        pattern = like_pattern(q)
        any_address = select(m.ContactAddress.contact_id).where(
            m.ContactAddress.workspace_id == ws, m.ContactAddress.address.like(pattern, escape="\\")
        )
        query = query.where(
            or_(
                m.Contact.id.in_(any_address),
                (m.Contact.first_name + " " + m.Contact.last_name).ilike(pattern, escape="\\"),
                m.Contact.company.ilike(pattern, escape="\\"),
            )
        )
    if state:
        query = query.where(m.Lead.reply_state == state)
    offset, limit = bounds(page, per_page)
    rows = uow.session.execute(query.order_by(m.Lead.id.desc()).offset(offset).limit(limit)).all()
    items = [
        LeadRow(
            lead.id,
            contact.id,
            address,
            _name(contact),
            contact.company,
            product,
            lead.reply_state,
            lead.reply_state_updated_at,
        )
        for lead, contact, address, product in rows
    ]
    return paged(items, page, per_page)


def list_leads(uow: UnitOfWork, *, product: str | None = None, state: str | None = None) -> list[LeadListing]:
    """Every lead of the workspace (of `product`, in reply `state`), by address then product,
    each with its steps counted by state. The audit's canaries are left out. Raises
    ProductNotFound for a product that does not exist (an empty list would hide the typo)."""
    if product is not None:
        require_product(uow, product)
    primary = m.ContactAddress
    leads = (
        select(m.Lead.id)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(m.Lead.workspace_id == uow.workspace_id, m.Lead.audit_run_id.is_(None))
    )
    if product is not None:
        leads = leads.where(m.Product.name == product)
    if state is not None:
        leads = leads.where(m.Lead.reply_state == state)
    chosen = leads.subquery()
    counts: dict[int, dict[str, int]] = {}
    for lead_id, step_state, count in uow.session.execute(
        select(m.Step.lead_id, m.Step.state, func.count())
        .where(m.Step.lead_id.in_(select(chosen.c.id)))
        .group_by(m.Step.lead_id, m.Step.state)
    ):
        counts.setdefault(lead_id, {})[step_state] = count
    rows = uow.session.execute(
        select(m.Lead, m.Contact, primary.address, m.Product.name)
        .join(m.Contact, m.Contact.id == m.Lead.contact_id)
        .join(primary, (primary.contact_id == m.Contact.id) & primary.is_primary)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(m.Lead.id.in_(select(chosen.c.id)))
        .order_by(primary.address, m.Product.name)
    ).all()
    return [
        LeadListing(
            lead.id,
            address,
            _name(contact),
            contact.company,
            product_name,
            lead.reply_state,
            lead.reply_state_updated_at,
            dict(sorted(counts.get(lead.id, {}).items())),
        )
        for lead, contact, address, product_name in rows
    ]


def _name(contact: m.Contact) -> str:
    return f"{contact.first_name} {contact.last_name}".strip()


def _product_lead(lead: m.Lead, product: str) -> ProductLead:
    return ProductLead(
        lead.id, product, lead.reply_state, lead.reply_state_updated_at, lead.paused_until, lead.hold_reason
    )


def lead_detail(uow: UnitOfWork, lead_id: int) -> LeadDetail:
    """The lead, if it is in this workspace (NotFound otherwise). Everything else is read
    through it (its contact, that contact's leads, steps and events), so those queries filter
    on the lead or contact id alone: a second, unselective `workspace_id` term there leads
    SQLite (no statistics unless someone runs ANALYZE) to walk the workspace index instead —
    half a second at a million steps."""
    found = uow.session.execute(
        select(m.Lead, m.Product.name)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(m.Lead.id == lead_id, m.Lead.workspace_id == uow.workspace_id)
    ).one_or_none()
    if found is None:
        raise NotFound(f"no lead {lead_id}")
    lead, product = found
    contact = uow.session.get_one(m.Contact, lead.contact_id)
    siblings = uow.session.execute(
        select(m.Lead, m.Product.name)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(m.Lead.contact_id == contact.id)  # the contact of a lead of this workspace, above
        .order_by(m.Product.name)
    ).all()
    products = {sibling.id: name for sibling, name in siblings}
    return LeadDetail(
        lead=_product_lead(lead, product),
        contact=_contact(uow, contact),
        other_leads=[_product_lead(s, n) for s, n in siblings if s.id != lead.id],
        steps=_steps(uow, lead.id),
        timeline=_timeline(uow, products),
    )


def _contact(uow: UnitOfWork, contact: m.Contact) -> ContactInfo:
    addresses = uow.session.execute(
        select(m.ContactAddress.address, m.ContactAddress.is_primary)
        .where(m.ContactAddress.contact_id == contact.id)
        .order_by(m.ContactAddress.is_primary.desc(), m.ContactAddress.id)
    ).all()
    return ContactInfo(
        contact.id,
        _name(contact),
        addresses[0][0] if addresses else "",
        [a for a, primary in addresses[1:]],
        contact.company,
        contact.title,
        contact.timezone,
        contact.owner,
        dict(contact.fields or {}),
    )


def _steps(uow: UnitOfWork, lead_id: int) -> list[LeadStep]:
    rows = uow.session.execute(
        select(m.Step, m.Campaign.id, m.Campaign.name)
        .join(m.Enrollment, m.Enrollment.id == m.Step.enrollment_id)
        .join(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
        .where(m.Step.lead_id == lead_id)
        .order_by(m.Campaign.name, m.Step.position)
    ).all()
    return [
        LeadStep(
            s.id, cid, cname, s.position, s.subject, s.state, s.due_at, s.sent_at, s.cancel_reason, s.crossed
        )
        for s, cid, cname in rows
    ]


def _timeline(uow: UnitOfWork, products: dict[int, str]) -> list[TimelineEntry]:
    """Every event of every lead of the contact (each product), newest first."""
    rows = uow.session.execute(
        select(m.Event, m.Step.position)
        .outerjoin(m.Step, m.Step.id == m.Event.step_id)
        .where(m.Event.lead_id.in_(list(products)))
        .order_by(m.Event.at.desc(), m.Event.id.desc())
        .limit(TIMELINE_LIMIT)
    ).all()
    entries = []
    for event, position in rows:
        actor, summary = describe(event.kind, event.data)
        entries.append(
            TimelineEntry(
                event.id,
                event.at,
                event.kind,
                event.lead_id,
                products.get(event.lead_id) if event.lead_id else None,
                actor,
                summary,
                position,
                dict(event.data or {}),
            )
        )
    return entries


EXPORT_HEADER = ("email", "name", "company", "product", "reply_state", "since", "queued", "sent")


def export_rows(leads: list[LeadListing]) -> list[tuple[str, ...]]:
    """The rows of a lead export (`leads list --csv`, the Leads page's Export CSV)."""
    queued = ("scheduled", "claimed", "awaiting_approval")
    return [
        (
            lead.email,
            lead.name,
            lead.company,
            lead.product,
            lead.reply_state,
            lead.reply_state_updated_at.isoformat(timespec="seconds"),
            str(sum(lead.steps.get(s, 0) for s in queued)),
            str(lead.steps.get("sent", 0)),
        )
        for lead in leads
    ]
