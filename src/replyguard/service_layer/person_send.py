"""A person answers from a rescue thread: the one way replyguard sends anything but a step.

Contract (PRODUCT.md invariant 6, "no automatic reply"): `send_reply` is called only by an
entry point acting on a person's explicit request (`replyguard threads send`, later the web's
send button) and needs the name of that person. Nothing in the service layer, the worker, the
notice delivery or the model client calls it; tests/unit/test_no_automatic_reply.py checks
that by reading the code.

The email goes from the thread's mailbox through its own transport (`transport_for`: its SMTP
account when connected, the configured transport otherwise), threaded under
their message (In-Reply-To, References, `Re:`). Its idempotency key makes a double submit one
email: the row is written (`sending`) and committed before the transport is called, and a
second submit with the same key finds it and sends nothing. An outcome the transport cannot
know (`unknown`) is never sent again by the same key. Sending never resumes the sequence.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import Outcome
from replyguard.domain.addresses import UnsafeHeaderValue, check_header_value, domain_of
from replyguard.domain.drafts import reply_subject
from replyguard.domain.next_step import ThreadKind
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.domain.states import ReplyState, StepState
from replyguard.service_layer.decision_base import get_thread
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.thread_context import load_context
from replyguard.service_layer.uow import UnitOfWork

_ONE_ID = re.compile(r"^<[^<>\s@]+@[^<>\s@]+>$")
_MAX_BODY = 100_000


class SendRefused(ValueError):
    """The answer cannot be sent from this thread (the message says why)."""


@dataclass(frozen=True, slots=True)
class PersonReply:
    thread_id: int
    body: str
    by: str  # the person who sends it
    subject: str | None = None
    idempotency_key: str | None = None  # default: the thread, subject and body


@dataclass(frozen=True, slots=True)
class SendResult:
    send_id: int
    state: str  # sent | failed | unknown
    message_id: str
    to: str
    duplicate: bool
    detail: str = ""


def default_key(thread_id: int, subject: str, body: str) -> str:
    """The same answer submitted twice is the same key."""
    return hashlib.sha256(f"{thread_id}\0{subject}\0{body}".encode()).hexdigest()[:40]


def send_reply(app: Runtime, request: PersonReply) -> SendResult:
    """Send a person's answer once. Raises SendRefused when it may not be sent."""
    if not request.by.strip():
        raise SendRefused("sending needs the name of the person who sends")
    body = request.body.replace("\r\n", "\n")
    if not body.strip():
        raise SendRefused("the answer is empty")
    if len(body) > _MAX_BODY:
        raise SendRefused(f"the answer is longer than {_MAX_BODY} characters")
    with app.uow() as uow:
        row, send = _prepare(uow, request, body)
        uow.commit()
    duplicate = send != "new"
    if send == "no":
        return SendResult(row.id, row.state, row.message_id, row.to_address, True, row.detail or "")
    email = _email(app, row)
    delivery = app.transport_for(row.mailbox_id).send(email)
    state = {Outcome.ACCEPTED: "sent", Outcome.UNKNOWN: "unknown"}.get(delivery.outcome, "failed")
    with app.uow() as uow:
        now = uow.clock.now()
        uow.session.execute(
            update(m.PersonSend)
            .where(m.PersonSend.id == row.id, m.PersonSend.state == "sending")
            .values(state=state, detail=delivery.detail[:2000], sent_at=now if state == "sent" else None)
        )
        uow.add_event(
            "person_reply_sent",
            lead_id=row.lead_id,
            thread_id=row.thread_id,
            send_id=row.id,
            by=row.sent_by,
            state=state,
            message_id=row.message_id,
        )
        uow.commit()
    return SendResult(row.id, state, row.message_id, row.to_address, duplicate, delivery.detail)


def _prepare(uow: UnitOfWork, request: PersonReply, body: str) -> tuple[m.PersonSend, str]:
    """The row to send, and whether to send it: "new", "retry" (refused before) or "no"."""
    thread = get_thread(uow, request.thread_id)
    if thread.kind == ThreadKind.PROBABLE_REPLY:
        raise SendRefused("confirm which lead this message answers before answering it")
    uow.lock_leads([thread.lead_id])
    context = load_context(uow.session, uow.workspace_id, thread.lead_id)
    if context.lead_state == ReplyState.UNSUBSCRIBED or context.mailbox_id is None:
        raise SendRefused(f"the lead is {context.lead_state}; nothing may be sent to it")
    try:
        subject = (
            check_header_value("subject", request.subject)
            if request.subject
            else reply_subject(thread.subject)
        )
    except UnsafeHeaderValue as exc:
        raise SendRefused(str(exc)) from exc
    key = (request.idempotency_key or default_key(thread.id, subject, body))[:64]
    existing = _by_key(uow, key)
    if existing is not None:
        return existing, "retry" if _claim_failed(uow, existing) else "no"
    to = _recipient(uow, thread, context.email)
    if uow.session.scalar(
        select(m.Suppression.id).where(
            m.Suppression.workspace_id == uow.workspace_id, m.Suppression.address == to
        )
    ):
        raise SendRefused(f"{to} is suppressed; nothing may be sent to it")
    theirs, ours = _thread_ids(uow, thread)
    message_id = f"<rg-p.{key[:32]}@{domain_of(context.mailbox or '')}>"
    insert = (pg_insert if uow.postgres else sqlite_insert)(m.PersonSend)
    inserted = uow.session.execute(
        insert.values(
            workspace_id=uow.workspace_id,
            thread_id=thread.id,
            lead_id=thread.lead_id,
            mailbox_id=context.mailbox_id,
            idempotency_key=key,
            message_id=message_id,
            to_address=to,
            subject=subject,
            body=body,
            in_reply_to=theirs or (ours[-1] if ours else None),
            references=" ".join([*ours, *([theirs] if theirs else [])]) or None,
            state="sending",
            sent_by=request.by.strip()[:320],
            created_at=uow.clock.now(),
        )
        .on_conflict_do_nothing(index_elements=["workspace_id", "idempotency_key"])
        .returning(m.PersonSend.id)
    ).scalar()
    row = _by_key(uow, key)
    assert row is not None
    return row, "new" if inserted is not None else "no"


def _by_key(uow: UnitOfWork, key: str) -> m.PersonSend | None:
    return uow.session.scalar(
        select(m.PersonSend)
        .where(m.PersonSend.workspace_id == uow.workspace_id, m.PersonSend.idempotency_key == key)
        .execution_options(populate_existing=True)
    )


def _claim_failed(uow: UnitOfWork, row: m.PersonSend) -> bool:
    """A send the transport refused before accepting it may be tried again by the same key."""
    if row.state != "failed":
        return False
    claimed = uow.session.execute(
        update(m.PersonSend)
        .where(m.PersonSend.id == row.id, m.PersonSend.state == "failed")
        .values(state="sending")
    ).rowcount  # type: ignore[attr-defined]
    return bool(claimed)


def _recipient(uow: UnitOfWork, thread: m.RescueThread, primary: str) -> str:
    """Where their reply came from, when that is one of the contact's addresses."""
    if thread.reply_id is None:
        return primary
    sender = uow.session.scalar(select(m.Reply.from_address).where(m.Reply.id == thread.reply_id))
    known = set(
        uow.session.scalars(
            select(m.ContactAddress.address).where(m.ContactAddress.contact_id == thread.contact_id)
        )
    )
    return sender if sender and sender.lower() in known else primary


def _thread_ids(uow: UnitOfWork, thread: m.RescueThread) -> tuple[str | None, list[str]]:
    """(their Message-ID, our sent Message-IDs oldest first), only well-formed ones."""
    theirs = None
    if thread.reply_id is not None:
        theirs = uow.session.scalar(
            select(m.InboundMessage.message_id)
            .join(m.Reply, m.Reply.inbound_message_id == m.InboundMessage.id)
            .where(m.Reply.id == thread.reply_id)
        )
    ours = list(
        uow.session.scalars(
            select(m.Step.message_id)
            .where(m.Step.lead_id == thread.lead_id, m.Step.state == StepState.SENT)
            .order_by(m.Step.sent_at)
        )
    )
    valid = [i for i in ours if _ONE_ID.match(i)][-20:]
    return (theirs.strip() if theirs and _ONE_ID.match(theirs.strip()) else None), valid


def _email(app: Runtime, row: m.PersonSend) -> OutgoingEmail:
    with app.uow() as uow:
        mailbox = uow.session.get_one(m.Mailbox, row.mailbox_id)
        lead = uow.session.get_one(m.Lead, row.lead_id)
        contact = uow.session.get_one(m.Contact, lead.contact_id)
        return OutgoingEmail(
            send_key=f"p-{row.idempotency_key}",
            message_id=row.message_id,
            from_name=mailbox.from_name,
            from_address=mailbox.address,
            to_name=f"{contact.first_name} {contact.last_name}".strip(),
            to_address=row.to_address,
            subject=row.subject,
            body=row.body,
            date=app.clock.now(),
            in_reply_to=row.in_reply_to,
            references=row.references,
        )
