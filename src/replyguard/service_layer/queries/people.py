"""The Leads page: one row per person (a contact), with the product(s) they are a lead of.

A contact may be a lead in several products, each with its own reply state; the page lists
the person once and their leads in the row, so a bulk action chooses people and applies to
each of their leads under the single-lead rules (`service_layer/workspace/lead_bulk.py`).
The audit's canaries are left out, as in `leads list`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import or_, select

from replyguard.adapters.db import models as m
from replyguard.service_layer.queries import Page, bounds, like_pattern, paged
from replyguard.service_layer.uow import UnitOfWork


@dataclass(frozen=True, slots=True)
class PersonLead:
    lead_id: int
    product: str
    reply_state: str
    reply_state_updated_at: datetime


@dataclass(frozen=True, slots=True)
class PersonRow:
    contact_id: int
    email: str
    name: str
    company: str
    owner: str | None
    leads: list[PersonLead]  # by product name

    @property
    def first_lead_id(self) -> int:
        return self.leads[0].lead_id


def search_people(
    uow: UnitOfWork, q: str = "", *, state: str | None = None, page: int = 1, per_page: int = 50
) -> Page[PersonRow]:
    """People with a lead whose any address, name or company contains `q` (case-insensitive)
    and, with `state`, a lead in that reply state; newest contact first."""
    ws = uow.workspace_id
    chosen = select(m.Lead.contact_id).where(m.Lead.workspace_id == ws, m.Lead.audit_run_id.is_(None))
    if state:
        chosen = chosen.where(m.Lead.reply_state == state)
    query = select(m.Contact).where(m.Contact.workspace_id == ws, m.Contact.id.in_(chosen))
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
    offset, limit = bounds(page, per_page)
    contacts = list(uow.session.scalars(query.order_by(m.Contact.id.desc()).offset(offset).limit(limit)))
    ids = [c.id for c in contacts]
    primary = dict(
        uow.session.execute(
            select(m.ContactAddress.contact_id, m.ContactAddress.address).where(
                m.ContactAddress.contact_id.in_(ids), m.ContactAddress.is_primary
            )
        ).all()
    )
    leads: dict[int, list[PersonLead]] = {}
    for lead, product in uow.session.execute(
        select(m.Lead, m.Product.name)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(m.Lead.contact_id.in_(ids), m.Lead.audit_run_id.is_(None))
        .order_by(m.Product.name)
    ):
        leads.setdefault(lead.contact_id, []).append(
            PersonLead(lead.id, product, lead.reply_state, lead.reply_state_updated_at)
        )
    rows = [
        PersonRow(
            c.id,
            primary.get(c.id, ""),
            f"{c.first_name} {c.last_name}".strip(),
            c.company,
            c.owner,
            leads.get(c.id, []),
        )
        for c in contacts
    ]
    return paged(rows, page, per_page)


@dataclass(frozen=True, slots=True)
class BulkChoices:
    """What the Leads page's bulk form offers: campaigns to enroll in (not archived), products
    to stop in, users to give people to (who can sign in)."""

    campaigns: list[tuple[str, str]]  # (campaign, its product)
    products: list[str]
    users: list[str]


def bulk_choices(uow: UnitOfWork) -> BulkChoices:
    ws = uow.workspace_id
    campaigns = uow.session.execute(
        select(m.Campaign.name, m.Product.name)
        .join(m.Product, m.Product.id == m.Campaign.product_id)
        .where(m.Campaign.workspace_id == ws, m.Campaign.status != "archived")
        .order_by(m.Campaign.name)
    ).all()
    products = uow.session.scalars(
        select(m.Product.name).where(m.Product.workspace_id == ws).order_by(m.Product.name)
    )
    users = uow.session.scalars(
        select(m.User.email)
        .where(m.User.workspace_id == ws, m.User.disabled_at.is_(None))
        .order_by(m.User.email)
    )
    return BulkChoices([(c, p) for c, p in campaigns], list(products), list(users))
