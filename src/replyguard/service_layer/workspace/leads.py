"""Leads: importing contacts into a product, finding them by any address, and their summary.

Every row is checked against the columns' sizes before anything is written: a value too long
for the database is a line-numbered error for that row on every database (PostgreSQL would
refuse it and SQLite would keep it). A re-imported contact whose data changed has its queued
emails rendered again (`rendering.refresh_leads`), so the To header, subject and body agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, func, select

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import base_address, domain_of, normalize_address
from replyguard.domain.leads_csv import LeadRow, RowError
from replyguard.domain.states import ReplyState, StepState
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaigns import get_or_create_product
from replyguard.service_layer.workspace.rendering import refresh_leads


class LeadNotFound(LookupError):
    pass


def _length(column: Any) -> int:
    return int(column.property.columns[0].type.length)


def _data_of(contact: m.Contact) -> tuple[Any, ...] | None:
    """What templates can read of a contact (None for one not yet stored)."""
    if contact.id is None:
        return None
    return (
        contact.first_name,
        contact.last_name,
        contact.company,
        contact.title,
        contact.timezone,
        contact.owner,
        dict(contact.fields or {}),
    )


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    errors: list[RowError] = field(default_factory=list)


#: The longest value each lead field may hold (the database columns' sizes).
_LIMITS: dict[str, int] = {
    "email": _length(m.ContactAddress.address),
    "first_name": _length(m.Contact.first_name),
    "last_name": _length(m.Contact.last_name),
    "company": _length(m.Contact.company),
    "title": _length(m.Contact.title),
    "timezone": _length(m.Contact.timezone),
    "owner": _length(m.Contact.owner),
}
#: Custom columns are stored as JSON and used in templates: a generous, finite size.
CUSTOM_FIELD_LIMIT = 2000


def row_problem(row: LeadRow) -> str | None:
    """Why a parsed row cannot be stored as it is, or None."""
    values: dict[str, str | None] = {
        "email": row.email,
        "first_name": row.first_name,
        "last_name": row.last_name,
        "company": row.company,
        "title": row.title,
        "timezone": row.timezone,
        "owner": row.owner,
    }
    for name, value in values.items():
        if value is not None and len(value) > _LIMITS[name]:
            return f"column {name!r} is {len(value)} characters long; at most {_LIMITS[name]} fit"
    for address in row.alt_emails:
        if len(address) > _LIMITS["email"]:
            return f"alternate address {address[:40]}... is longer than {_LIMITS['email']} characters"
    for name, value in row.custom.items():
        if len(value) > CUSTOM_FIELD_LIMIT:
            return f"column {name!r} is {len(value)} characters long; at most {CUSTOM_FIELD_LIMIT} fit"
    return None


def import_row(uow: UnitOfWork, product: m.Product, row: LeadRow, report: ImportReport) -> None:
    addresses = (row.email, *row.alt_emails)
    found = uow.session.execute(
        select(m.ContactAddress.address, m.ContactAddress.contact_id).where(
            m.ContactAddress.workspace_id == uow.workspace_id,
            m.ContactAddress.address.in_(addresses),
        )
    ).all()
    owners = {contact_id for _, contact_id in found}
    if len(owners) > 1:
        report.errors.append(
            RowError(
                row.line,
                f"addresses {', '.join(addresses)} belong to different contacts; row skipped",
            )
        )
        return
    now = uow.clock.now()
    if owners:
        contact = uow.session.get_one(m.Contact, owners.pop())
        report.updated += 1
    else:
        contact = m.Contact(workspace_id=uow.workspace_id, created_at=now, fields={})
        uow.session.add(contact)
        report.created += 1
    before = _data_of(contact)
    contact.first_name, contact.last_name = row.first_name, row.last_name
    contact.company, contact.title = row.company, row.title
    contact.timezone = row.timezone or contact.timezone
    contact.owner = row.owner or contact.owner
    contact.fields = {**(contact.fields or {}), **row.custom}
    uow.session.flush()
    if before is not None and before != _data_of(contact):
        lead_ids = list(uow.session.scalars(select(m.Lead.id).where(m.Lead.contact_id == contact.id)))
        refresh_leads(uow, lead_ids, why="lead data changed")
    known = {address for address, _ in found}
    for address in addresses:
        if address not in known:
            uow.session.add(
                m.ContactAddress(
                    workspace_id=uow.workspace_id,
                    contact_id=contact.id,
                    address=address,
                    domain=domain_of(address),
                    is_primary=address == row.email and not known,
                )
            )
    lead = uow.session.scalar(
        select(m.Lead).where(m.Lead.contact_id == contact.id, m.Lead.product_id == product.id)
    )
    if lead is None:
        uow.session.add(
            m.Lead(
                workspace_id=uow.workspace_id,
                contact_id=contact.id,
                product_id=product.id,
                reply_state=ReplyState.ACTIVE,
                reply_state_updated_at=now,
                created_at=now,
            )
        )
    uow.session.flush()


def import_leads(uow: UnitOfWork, product_name: str, rows: list[LeadRow | RowError]) -> ImportReport:
    """Import parsed rows; each good row is its own savepoint, so one bad row loses nothing else."""
    report = ImportReport()
    product = get_or_create_product(uow, product_name)
    for row in rows:
        if isinstance(row, RowError):
            report.errors.append(row)
            continue
        problem = row_problem(row)
        if problem is not None:
            report.errors.append(RowError(row.line, f"{problem}; row skipped"))
            continue
        with uow.session.begin_nested():
            import_row(uow, product, row, report)
    uow.add_event(
        "leads_imported",
        product=product_name,
        created=report.created,
        updated=report.updated,
        errors=len(report.errors),
    )
    return report


def contact_for_address(uow: UnitOfWork, address: str) -> m.Contact | None:
    """The contact that owns `address`, case-insensitive and tolerant of `+tag` variants."""
    normal = normalize_address(address)
    candidates = {normal, base_address(normal)}
    contact_id = uow.session.scalar(
        select(m.ContactAddress.contact_id).where(
            m.ContactAddress.workspace_id == uow.workspace_id,
            m.ContactAddress.address.in_(candidates),
        )
    )
    return uow.session.get(m.Contact, contact_id) if contact_id is not None else None


def find_lead(uow: UnitOfWork, email: str, product_name: str) -> m.Lead:
    contact = contact_for_address(uow, email)
    if contact is None:
        raise LeadNotFound(f"no contact with address {email}")
    lead = uow.session.scalar(
        select(m.Lead)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(
            m.Lead.contact_id == contact.id,
            m.Product.name == product_name,
            m.Lead.workspace_id == uow.workspace_id,
        )
    )
    if lead is None:
        raise LeadNotFound(f"{email} is not a lead of product {product_name!r}")
    return lead


_ADDRESSES = (  # built once (bound value: contact); the reply transaction reads it each time
    select(m.ContactAddress.address)
    .where(m.ContactAddress.contact_id == bindparam("contact"))
    .order_by(m.ContactAddress.is_primary.desc(), m.ContactAddress.id)
)


def contact_addresses(uow: UnitOfWork, contact_id: int) -> list[str]:
    """Every address of the contact, the primary first."""
    return list(uow.session.scalars(_ADDRESSES, {"contact": contact_id}))


def primary_address(uow: UnitOfWork, contact_id: int) -> str:
    return contact_addresses(uow, contact_id)[0]


_QUEUED = (StepState.AWAITING_APPROVAL, StepState.SCHEDULED, StepState.CLAIMED)


def lead_summary(uow: UnitOfWork, email: str) -> dict[str, Any]:
    """What `leads show EMAIL --json` prints: the contact and, per product, its lead."""
    contact = contact_for_address(uow, email)
    if contact is None:
        raise LeadNotFound(f"no contact with address {email}")
    addresses = uow.session.execute(
        select(m.ContactAddress.address, m.ContactAddress.is_primary)
        .where(m.ContactAddress.contact_id == contact.id)
        .order_by(m.ContactAddress.is_primary.desc(), m.ContactAddress.id)
    ).all()
    products = []
    for lead, product_name in uow.session.execute(
        select(m.Lead, m.Product.name)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(m.Lead.contact_id == contact.id)
        .order_by(m.Product.name)
    ):
        counts = dict(
            uow.session.execute(
                select(m.Step.state, func.count()).where(m.Step.lead_id == lead.id).group_by(m.Step.state)
            ).all()
        )
        next_due = uow.session.scalar(
            select(func.min(m.Step.due_at)).where(m.Step.lead_id == lead.id, m.Step.state.in_(_QUEUED))
        )
        products.append(
            {
                "product": product_name,
                "reply_state": lead.reply_state,
                "reply_state_updated_at": lead.reply_state_updated_at.isoformat(),
                "last_reply_id": lead.last_reply_id,
                "paused_until": lead.paused_until.isoformat() if lead.paused_until else None,
                "hold_reason": lead.hold_reason,
                "steps": {
                    "queued": sum(counts.get(s, 0) for s in _QUEUED),
                    "awaiting_approval": counts.get(StepState.AWAITING_APPROVAL, 0),
                    "sending": counts.get(StepState.SENDING, 0),
                    "sent": counts.get(StepState.SENT, 0),
                    "cancelled": counts.get(StepState.CANCELLED, 0),
                    "failed": counts.get(StepState.FAILED, 0),
                    "unknown": counts.get(StepState.UNKNOWN, 0),
                },
                "next_due_at": next_due.isoformat() if next_due else None,
            }
        )
    return {
        "email": str(addresses[0][0]),
        "alternates": [str(a) for a, primary in addresses if not primary],
        "name": f"{contact.first_name} {contact.last_name}".strip(),
        "company": contact.company,
        "timezone": contact.timezone,
        "products": products,
    }


def answered_subject(uow: UnitOfWork, lead_id: int) -> str | None:
    """ "Re: <subject>" of the last email the sequence sent this lead, for a reply recorded by
    hand without a subject: the thread, its draft and a person's answer then carry the
    conversation's subject ("Re: your message" otherwise). None when nothing was sent."""
    last = uow.session.scalar(
        select(m.Step.subject)
        .where(
            m.Step.workspace_id == uow.workspace_id,
            m.Step.lead_id == lead_id,
            m.Step.state == StepState.SENT,
            m.Step.subject.is_not(None),
        )
        .order_by(m.Step.sent_at.desc(), m.Step.id.desc())
        .limit(1)
    )
    return f"Re: {last}" if last else None
