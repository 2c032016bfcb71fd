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
know (`unknown`) is never sent again by the same key, and holds the thread like a sent one.
Sending never resumes the sequence.

An answer is sent like the worker sends a step (issue 20):
- it names the thread's version the person saw (`seen`): a newer message, decision or lead
  change refuses it with what changed; one answer per version (a second is refused with who
  answered and when, unless the person sends another on purpose, `another`);
- under the lead lock the lead is read again right before the transport is called, and again
  right before the point of no return (`before_commit`, before DATA): unsubscribed, bounced,
  suppressed, or a newer version → nothing is sent, the row says why (`refused`). On
  PostgreSQL the lock is held across the call (an unsubscribe waits for it, as it waits for the
  worker); on SQLite the write lock cannot be, so the last check reads the lead again;
- after it went out (or may have), the thread's version moves with an `answer` change: the
  thread waits on them, the draft is not offered again, and their next message reopens it.
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
from replyguard.domain.thread_actions import refusal
from replyguard.service_layer.rescue import thread_versions
from replyguard.service_layer.rescue.decision_base import get_thread
from replyguard.service_layer.rescue.thread_context import load_context, thread_facts, waiting_on_them
from replyguard.service_layer.runtime import Runtime
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
    idempotency_key: str | None = None  # default: the thread, version, subject and body
    seen: int | None = None  # the thread's version the person answered
    another: bool = False  # on purpose: although someone answered this version already


@dataclass(frozen=True, slots=True)
class SendResult:
    send_id: int
    state: str  # sent | failed | unknown
    message_id: str
    to: str
    duplicate: bool
    detail: str = ""


def default_key(thread_id: int, subject: str, body: str, version: int | None = None) -> str:
    """The same answer submitted twice on the same version is the same key."""
    seen = "" if version is None else f"\0v{version}"
    return hashlib.sha256(f"{thread_id}\0{subject}\0{body}{seen}".encode()).hexdigest()[:40]


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
    state, detail = _guarded_send(app, row, email)
    if state == "refused":
        raise SendRefused(f"not sent: {detail}")
    return SendResult(row.id, state, row.message_id, row.to_address, duplicate, detail)


def _guarded_send(app: Runtime, row: m.PersonSend, email: OutgoingEmail) -> tuple[str, str]:
    """Re-check under the lead lock, hand over, record: (state, detail)."""
    with app.uow() as uow:
        why = _recheck(uow, row)
        if why is not None:
            _record(uow, row, "refused", why)
            uow.commit()
            return "refused", why
        if not uow.postgres:
            uow.commit()  # SQLite: the write lock is not held across the call
        aborted: list[str] = []

        def before_commit() -> None:
            app.hooks.at("person_send_before_data")
            if uow.postgres:
                found = _recheck(uow, row)  # on the session that holds the lead lock
            else:
                with app.uow() as fresh:
                    found = _recheck(fresh, row)
            if found is not None:
                aborted.append(found)
                raise SendRefused(found)

        try:
            delivery = app.transport_for(row.mailbox_id).send(email, before_commit=before_commit)
            outcome = delivery.outcome
            detail = delivery.detail
        except Exception as exc:  # a transport raising is judged like the worker judges it
            outcome = Outcome.TRANSIENT if aborted else Outcome.UNKNOWN
            detail = f"transport raised {exc.__class__.__name__}"
        if aborted:
            state, detail = "refused", aborted[0]
        else:
            state = {Outcome.ACCEPTED: "sent", Outcome.UNKNOWN: "unknown"}.get(outcome, "failed")
        uow.lock_leads([row.lead_id])  # PostgreSQL: held already; SQLite: a new transaction
        _record(uow, row, state, detail)
        uow.commit()
    return state, detail


def _recheck(uow: UnitOfWork, row: m.PersonSend) -> str | None:
    """Why the answer may not go now (None: it may). Under the lead lock."""
    uow.lock_leads([row.lead_id])
    lead_state = uow.session.scalar(
        select(m.Lead.reply_state).where(m.Lead.id == row.lead_id).execution_options(populate_existing=True)
    )
    if lead_state in (ReplyState.UNSUBSCRIBED, ReplyState.BOUNCED):
        return f"the lead is {lead_state} now; nothing may be sent to it"
    if uow.session.scalar(
        select(m.Suppression.id).where(
            m.Suppression.workspace_id == uow.workspace_id, m.Suppression.address == row.to_address
        )
    ):
        return f"{row.to_address} is suppressed now; nothing may be sent to it"
    if row.thread_version is not None:
        try:
            thread_versions.check_seen(uow.session, uow.workspace_id, row.thread_id, row.thread_version)
        except thread_versions.VersionChanged as exc:
            return str(exc)
    return None


def _record(uow: UnitOfWork, row: m.PersonSend, state: str, detail: str) -> None:
    now = uow.clock.now()
    uow.session.execute(
        update(m.PersonSend)
        .where(m.PersonSend.id == row.id, m.PersonSend.state == "sending")
        .values(state=state, detail=detail[:2000], sent_at=now if state == "sent" else None)
    )
    uow.add_event(
        "person_reply_sent" if state != "refused" else "person_reply_refused",
        lead_id=row.lead_id,
        thread_id=row.thread_id,
        send_id=row.id,
        by=row.sent_by,
        state=state,
        message_id=row.message_id,
        detail=detail[:300],
    )
    if state in ("sent", "unknown"):
        # It went out, or may have: the thread waits on them (an unknown one is held: never
        # sent again by itself, and a second answer is one on purpose).
        what = "answer sent" if state == "sent" else "answer's outcome unknown (held, never resent)"
        thread_versions.bump(
            uow.session,
            workspace_id=uow.workspace_id,
            now=now,
            lead_id=row.lead_id,
            thread_id=row.thread_id,
            kind="answer",
            by=row.sent_by,
            summary=f"{what} to {row.to_address}: {row.subject}",
        )


def _prepare(uow: UnitOfWork, request: PersonReply, body: str) -> tuple[m.PersonSend, str]:
    """The row to send, and whether to send it: "new", "retry" (refused before) or "no"."""
    thread = get_thread(uow, request.thread_id)
    if thread.kind == ThreadKind.PROBABLE_REPLY:
        raise SendRefused("confirm which lead this message answers before answering it")
    uow.lock_leads([thread.lead_id])
    uow.session.refresh(thread)
    context = load_context(uow.session, uow.workspace_id, thread.lead_id)
    if context.lead_state in (ReplyState.UNSUBSCRIBED, ReplyState.BOUNCED) or context.mailbox_id is None:
        raise SendRefused(f"the lead is {context.lead_state}; nothing may be sent to it")
    try:
        subject = (
            check_header_value("subject", request.subject)
            if request.subject
            else reply_subject(thread.subject)
        )
    except UnsafeHeaderValue as exc:
        raise SendRefused(str(exc)) from exc
    version = thread_versions.current(uow.session, uow.workspace_id, thread.id)
    key = (request.idempotency_key or default_key(thread.id, subject, body, request.seen))[:64]
    existing = _by_key(uow, key)
    if existing is not None:
        return existing, "retry" if _claim_failed(uow, existing) else "no"
    if not request.another:
        _one_answer_per_version(uow, thread, request.seen if request.seen is not None else version)
    thread_versions.check_seen(uow.session, uow.workspace_id, thread.id, request.seen)
    now = uow.clock.now()
    facts = thread_facts(uow.session, thread, context, now, recommended=())
    why = refusal(facts, "send_another" if facts.waiting_on_them else "send_reply")
    if why is not None:
        raise SendRefused(why)
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
            thread_version=version,
            created_at=uow.clock.now(),
        )
        .on_conflict_do_nothing(index_elements=["workspace_id", "idempotency_key"])
        .returning(m.PersonSend.id)
    ).scalar()
    row = _by_key(uow, key)
    assert row is not None
    return row, "new" if inserted is not None else "no"


def _one_answer_per_version(uow: UnitOfWork, thread: m.RescueThread, version: int) -> None:
    """A second answer to the version someone answered already is refused (who, and when)."""
    answered = uow.session.scalars(
        select(m.PersonSend)
        .where(
            m.PersonSend.thread_id == thread.id,
            m.PersonSend.state.in_(["sending", "sent", "unknown"]),
            m.PersonSend.thread_version >= version,
        )
        .order_by(m.PersonSend.id.desc())
        .limit(1)
    ).first()
    if answered is None and waiting_on_them(uow.session, thread.id):
        answered = uow.session.scalars(
            select(m.PersonSend)
            .where(m.PersonSend.thread_id == thread.id, m.PersonSend.state.in_(["sent", "unknown"]))
            .order_by(m.PersonSend.id.desc())
            .limit(1)
        ).first()
    if answered is not None:
        what = "is answering" if answered.state == "sending" else "answered"
        raise SendRefused(
            f"{answered.sent_by} {what} at {answered.created_at:%H:%M} UTC ({answered.subject!r}, "
            f"{answered.state}): the thread waits on them. Send another only on purpose (--another)"
        )


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
