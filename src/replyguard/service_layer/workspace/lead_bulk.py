"""The Leads page's bulk actions on people: enroll in a campaign, stop, assign an owner.

A person (a contact) is a lead in one or several products; each action applies to their leads
under the rules of the single-lead action, through its own function — enrolling through
`enrollment.enroll_leads` (already enrolled, not active, suppressed, mid-sequence: skipped
with the reason), stopping through `rescue.actions.move_by_person` (the lock, the event, the
cancellation of queued steps; a lead a person may not stop is skipped with the reason), and
assigning by setting the contact's owner and rendering their queued emails again, as an
import that changes the owner does. The people are taken in chunks of CHUNK, each chunk one
transaction: a chunk that commits stays committed.

Every chunk first checks that each chosen person is of this workspace; one that is not (an
id of another workspace, or none at all) refuses the whole request before anything is
written, with the same words either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.states import IllegalTransition, ReplyState
from replyguard.service_layer.queries.products import require_product
from replyguard.service_layer.rescue.actions import move_by_person
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.accounts import user_by_email
from replyguard.service_layer.workspace.campaigns import find_campaign
from replyguard.service_layer.workspace.enrollment import EnrollReport, enroll_leads
from replyguard.service_layer.workspace.leads import LeadNotFound
from replyguard.service_layer.workspace.rendering import refresh_leads

CHUNK = 100
#: The most people one request may name (a page of the Leads list is 50).
MOST = 500

NewUow = Callable[[], UnitOfWork]


@dataclass
class BulkReport:
    changed: int = 0  # leads stopped, or people assigned
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (who, why)


def _chunks(new_uow: NewUow, ids: Sequence[int]) -> Iterator[list[int]]:
    """The chosen people in chunks, once each of them is known to be of this workspace (so an
    id of another one refuses the request before a first chunk commits)."""
    unique = sorted(set(ids))[:MOST]
    with new_uow() as uow:
        for start in range(0, len(unique), CHUNK):
            _people(uow, unique[start : start + CHUNK])
    for start in range(0, len(unique), CHUNK):
        yield unique[start : start + CHUNK]


def _people(uow: UnitOfWork, contact_ids: list[int]) -> dict[int, str]:
    """{contact id: primary address} of these people; LeadNotFound if any is not ours."""
    found = dict(
        uow.session.execute(
            select(m.Contact.id, m.ContactAddress.address)
            .join(
                m.ContactAddress, (m.ContactAddress.contact_id == m.Contact.id) & m.ContactAddress.is_primary
            )
            .where(m.Contact.workspace_id == uow.workspace_id, m.Contact.id.in_(contact_ids))
        ).all()
    )
    missing = [i for i in contact_ids if i not in found]
    if missing:
        raise LeadNotFound(f"no person {missing[0]} in this workspace; nothing was changed")
    return found


def _leads(uow: UnitOfWork, contact_ids: list[int], product_id: int | None) -> list[m.Lead]:
    """The people's leads (of one product), the audit's canaries left out."""
    query = select(m.Lead).where(
        m.Lead.workspace_id == uow.workspace_id,
        m.Lead.contact_id.in_(contact_ids),
        m.Lead.audit_run_id.is_(None),
    )
    if product_id is not None:
        query = query.where(m.Lead.product_id == product_id)
    return list(uow.session.scalars(query.order_by(m.Lead.id)))


def enroll_people(new_uow: NewUow, campaign: str, contact_ids: Sequence[int]) -> EnrollReport:
    """Enroll each person's lead of the campaign's product. LookupError for an unknown campaign
    or a person not of this workspace, before anything is written."""
    report = EnrollReport()
    for chunk in _chunks(new_uow, contact_ids):
        with new_uow() as uow:
            people = _people(uow, chunk)
            found = find_campaign(uow, campaign)
            product = uow.session.get_one(m.Product, found.product_id)
            leads = _leads(uow, chunk, found.product_id)
            for contact_id in sorted(set(chunk) - {lead.contact_id for lead in leads}):
                report.skipped.append((people[contact_id], f"not a lead of product {product.name!r}"))
            enroll_leads(uow, found.name, [lead.id for lead in leads], report)
            uow.commit()
    return report


def stop_people(
    new_uow: NewUow, contact_ids: Sequence[int], *, product: str | None, by: str, why: str
) -> BulkReport:
    """Stop each person's leads (of `product`, else every product), as a person's stop of
    each: queued steps cancelled, an event naming `by`. ProductNotFound / LookupError before
    anything is written."""
    report = BulkReport()
    for chunk in _chunks(new_uow, contact_ids):
        with new_uow() as uow:
            people = _people(uow, chunk)
            product_id = None
            if product:
                require_product(uow, product)
                product_id = uow.session.scalar(
                    select(m.Product.id).where(
                        m.Product.workspace_id == uow.workspace_id, m.Product.name == product
                    )
                )
            names = _product_names(uow)
            for lead in _leads(uow, chunk, product_id):
                who = f"{people[lead.contact_id]} ({names[lead.product_id]})"
                if lead.reply_state == ReplyState.STOPPED:
                    report.skipped.append((who, "already stopped"))  # no second event
                    continue
                try:
                    move_by_person(uow, lead, ReplyState.STOPPED, why=why, by=by)
                except IllegalTransition:
                    report.skipped.append((who, f"lead is {lead.reply_state}"))
                    continue
                report.changed += 1
            uow.commit()
    return report


def assign_people(new_uow: NewUow, contact_ids: Sequence[int], owner: str, *, by: str) -> BulkReport:
    """Make `owner` (a user of this workspace: NotFound otherwise) the owner of each person;
    their queued emails are rendered again (a template may name the owner)."""
    report = BulkReport()
    for chunk in _chunks(new_uow, contact_ids):
        with new_uow() as uow:
            people = _people(uow, chunk)
            user = user_by_email(uow, owner)
            if user.disabled_at is not None:
                raise LookupError(f"{user.email} is disabled; choose a user who can sign in")
            changed = []
            for contact_id in chunk:
                contact = uow.session.get_one(m.Contact, contact_id)
                if contact.owner == user.email:
                    report.skipped.append((people[contact_id], f"already {user.email}'s"))
                    continue
                before, contact.owner = contact.owner, user.email
                for lead in _leads(uow, [contact_id], None):
                    uow.add_event("lead_assigned", lead_id=lead.id, before=before, after=user.email, by=by)
                changed.append(contact_id)
            uow.session.flush()
            refresh_leads(uow, [lead.id for lead in _leads(uow, changed, None)], why="owner changed")
            report.changed += len(changed)
            uow.commit()
    return report


def _product_names(uow: UnitOfWork) -> dict[int, str]:
    return dict(
        uow.session.execute(
            select(m.Product.id, m.Product.name).where(m.Product.workspace_id == uow.workspace_id)
        ).all()
    )
