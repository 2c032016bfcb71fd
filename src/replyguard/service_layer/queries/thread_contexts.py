"""`thread_context.load_context` for a page of threads at once.

`load_context` reads one lead in about eight queries; the inbox shows up to 200 threads, and
recomputes each one's next step from its lead as it is now (thread_views' promise). This
reads the same `ThreadContext` for many leads in six queries, whatever their number.
tests/web/test_queries.py checks that both give equal contexts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.domain.next_step import OtherProduct
from replyguard.domain.states import StepState
from replyguard.service_layer.rescue.thread_context import CAMPAIGN_COLUMNS, LIVE, QUEUED, ThreadContext
from replyguard.service_layer.uow import UnitOfWork

_UNKNOWN_OWNER = "owner@unknown.invalid"  # load_context's own fallback


def contexts_for(uow: UnitOfWork, lead_ids: Iterable[int]) -> dict[int, ThreadContext]:
    """The context of each lead of this workspace in `lead_ids` (others are left out)."""
    ids = sorted(set(lead_ids))
    if not ids:
        return {}
    session = uow.session
    leads = session.execute(
        select(
            m.Lead.id,
            m.Lead.reply_state,
            m.Lead.paused_until,
            m.Lead.product_id,
            m.Product.name,
            m.Contact.id,
            m.Contact.first_name,
            m.Contact.last_name,
            m.Contact.company,
            m.Contact.owner,
        )
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .join(m.Contact, m.Contact.id == m.Lead.contact_id)
        .where(m.Lead.id.in_(ids), m.Lead.workspace_id == uow.workspace_id)
    ).all()
    contact_ids = sorted({row[5] for row in leads})
    addresses = _addresses(uow, contact_ids)
    campaigns = _campaigns(uow, ids)
    subjects = _last_subjects(uow, ids)
    others = _other_products(uow, contact_ids)
    unknown = _unknown_steps(uow, ids)
    found = {}
    for lead_id, state, paused, product_id, product, contact_id, first, last, company, owner in leads:
        mine = campaigns.get(lead_id, [])
        head = mine[0] if mine else None
        found[lead_id] = ThreadContext(
            lead_id=lead_id,
            lead_state=state,
            paused_until=paused,
            product_id=product_id,
            product=product,
            contact_id=contact_id,
            name=f"{first} {last}".strip(),
            company=company,
            email=addresses.get(contact_id, [""])[0],
            mailbox_id=head[3] if head else None,
            mailbox=head[4] if head else None,
            from_name=head[5] if head else "",
            campaigns=tuple(c[1] for c in mine),
            campaign_ids=tuple(c[0] for c in mine),
            owner=(head[2] if head else None) or owner or _UNKNOWN_OWNER,
            own_addresses=frozenset(addresses.get(contact_id, [])) | {c[4] for c in mine},
            last_subject=subjects.get(lead_id),
            other_products=tuple(o for lid, o in others.get(contact_id, []) if lid != lead_id),
            unknown_steps=unknown.get(lead_id, 0),
        )
    return found


def _unknown_steps(uow: UnitOfWork, lead_ids: list[int]) -> dict[int, int]:
    """Each lead's steps of unknown outcome, for every lead in one read (a page of the inbox
    asked once per row before: fifty round trips)."""
    rows = uow.session.execute(
        select(m.Step.lead_id, func.count())
        .where(m.Step.lead_id.in_(lead_ids), m.Step.state == StepState.UNKNOWN)
        .group_by(m.Step.lead_id)
    ).all()
    return {int(lead_id): int(n) for lead_id, n in rows}


def waiting_on_them(uow: UnitOfWork, thread_ids: list[int]) -> dict[int, bool]:
    """`thread_context.waiting_on_them` for many threads in one read: whether each thread's
    last message-or-answer change is an answer."""
    last: dict[int, tuple[int, int, str]] = {}
    TC = m.ThreadChange
    for thread_id, version, change_id, kind in uow.session.execute(
        select(TC.thread_id, TC.version, TC.id, TC.kind).where(
            TC.thread_id.in_(thread_ids), TC.kind.in_(["message", "answer"])
        )
    ):
        if thread_id not in last or (version, change_id) > last[thread_id][:2]:
            last[thread_id] = (version, change_id, kind)
    return {thread_id: last.get(thread_id, (0, 0, ""))[2] == "answer" for thread_id in thread_ids}


def _addresses(uow: UnitOfWork, contact_ids: list[int]) -> dict[int, list[str]]:
    rows = uow.session.execute(
        select(m.ContactAddress.contact_id, m.ContactAddress.address)
        .where(m.ContactAddress.contact_id.in_(contact_ids))
        .order_by(m.ContactAddress.contact_id, m.ContactAddress.is_primary.desc(), m.ContactAddress.id)
    ).all()
    found: dict[int, list[str]] = defaultdict(list)
    for contact_id, address in rows:
        found[contact_id].append(address)
    return found


def _campaigns(uow: UnitOfWork, lead_ids: list[int]) -> dict[int, list[Any]]:
    rows = uow.session.execute(
        select(m.Enrollment.lead_id, *CAMPAIGN_COLUMNS)
        .join(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
        .join(m.Mailbox, m.Mailbox.id == m.Campaign.mailbox_id)
        .where(m.Enrollment.lead_id.in_(lead_ids))
        .order_by(m.Enrollment.id)
    ).all()
    found: dict[int, list[Any]] = defaultdict(list)
    for lead_id, *rest in rows:
        found[lead_id].append(rest)
    return found


def _last_subjects(uow: UnitOfWork, lead_ids: list[int]) -> dict[int, str | None]:
    rows = uow.session.execute(
        select(m.Step.lead_id, m.Step.subject, m.Step.sent_at).where(
            m.Step.lead_id.in_(lead_ids), m.Step.state == StepState.SENT
        )
    ).all()
    latest: dict[int, tuple[datetime, str | None]] = {}
    for lead_id, subject, sent_at in rows:
        if sent_at is not None and (lead_id not in latest or sent_at > latest[lead_id][0]):
            latest[lead_id] = (sent_at, subject)
    return {lead_id: subject for lead_id, (_, subject) in latest.items()}


def _other_products(uow: UnitOfWork, contact_ids: list[int]) -> dict[int, list[tuple[int, OtherProduct]]]:
    """Every live lead of these contacts, with its next queued step, by contact."""
    live = uow.session.execute(
        select(m.Lead.id, m.Lead.contact_id, m.Product.name, m.Lead.reply_state)
        .join(m.Product, m.Product.id == m.Lead.product_id)
        .where(m.Lead.contact_id.in_(contact_ids), m.Lead.reply_state.in_(LIVE))
        .order_by(m.Product.name)
    ).all()
    nxt: dict[int, tuple[datetime | None, str | None]] = {}
    if live:
        queued = uow.session.execute(
            select(m.Step.lead_id, m.Step.due_at, m.Step.subject).where(
                m.Step.lead_id.in_([row[0] for row in live]), m.Step.state.in_(QUEUED)
            )
        ).all()
        for step_lead, due_at, step_subject in queued:
            first = nxt.get(step_lead, (None, None))[0]
            if first is None or due_at < first:
                nxt[step_lead] = (due_at, step_subject)
    found: dict[int, list[tuple[int, OtherProduct]]] = defaultdict(list)
    for lead_id, contact_id, product, state in live:
        due, subject = nxt.get(lead_id, (None, None))
        found[contact_id].append((lead_id, OtherProduct(product, state, due, subject)))
    return found
