"""Rescue threads: the one place where a lead that waits for a person is handed over.

`open_thread` opens a thread, or updates the lead's thread that is not done yet, and writes its
notice into the outbox (`service_layer/rescue/notices.py`) — in the caller's transaction, so the thread
and its notice commit with whatever made the lead wait, or not at all.

**Every site that makes a lead wait for a person calls it**, in the same transaction:

- `replies.record_reply` (human reply, unsubscribe, absence longer than the pause limit,
  left-the-company notice, hard bounce with another address) through `on_reply`;
- `replies.hold_probable` (a probable reply: one thread per inbound message);
- the worker's unknown send outcome (`WorkerContext.unknown`) through `open_thread_on`, which
  takes the worker's Core `Connection` (a `Session(bind=conn)` joins its transaction).

A new hold site (e.g. a step that failed for good) calls `open_thread(session, ..., lead_id,
Handoff(kind=..., reason=...))` — or `open_thread_on(conn, ...)` from Core code — right where
it moves the lead, under the lead lock, and adds its kind to `domain/next_step.ThreadKind`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, insert, inspect, select
from sqlalchemy.orm import Session

from replyguard.adapters.db import models as m
from replyguard.domain.intent import IntentResult, detect_intent
from replyguard.domain.next_step import ThreadKind
from replyguard.domain.states import ReplyKind, ThreadState
from replyguard.service_layer.rescue import notices, thread_versions
from replyguard.service_layer.rescue.thread_context import (
    Preread,
    ThreadContext,
    load_context,
    next_step_for,
)
from replyguard.settings import Settings

#: Records an event of the transaction: `UnitOfWork.add_event`'s signature (kind, lead_id=,
#: step_id=, data as keywords).
AddEvent = Callable[..., None]

_T = cast(Table, m.RescueThread.__table__)
#: A new thread's row, its id read back (bound values: the columns its object has set).
_INSERT_THREAD = insert(_T).returning(_T.c.id)
_THREAD_COLUMNS = tuple(attr.key for attr in inspect(m.RescueThread).column_attrs)


@dataclass(frozen=True, slots=True)
class Handoff:
    """What made a lead wait for a person, as the hold site knows it."""

    kind: ThreadKind
    reason: str | None = None
    reply_id: int | None = None
    text: str | None = None
    subject: str | None = None
    evidence: tuple[str, ...] = ()
    received_at: datetime | None = None
    inbound_message_id: int | None = None
    step_id: int | None = None
    candidates: tuple[dict[str, Any], ...] = ()
    state_before: str | None = None
    new_contact: str | None = None
    absent_until: date | None = None
    sender: str | None = None  # a probable reply: who wrote it
    crossed: bool = False
    notify: bool = True


@dataclass
class ThreadRef:
    id: int
    created: bool
    notice_id: int | None = None
    intent: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def open_thread(
    session: Session,
    *,
    workspace_id: int,
    now: datetime,
    lead_id: int,
    handoff: Handoff,
    settings: Settings,
    preread: Preread | None = None,
    add_event: AddEvent | None = None,
) -> ThreadRef:
    """Open (or update) the thread of `lead_id` for `handoff`, and queue its notice.

    Must run under the lead lock, in the transaction that moved the lead. Never commits.
    `preread`: what the caller already read under that lock (the reply transaction).
    `add_event`: how the thread's and the notice's events are recorded (the unit of work's
    `add_event`, which may batch them); by default added to the session.
    """
    add_event = add_event or _session_events(session, workspace_id, now)
    context = load_context(session, workspace_id, lead_id, preread)
    none_yet = preread is not None and preread.has_thread is False
    if none_yet and handoff.kind is not ThreadKind.PROBABLE_REPLY:
        thread = None
    else:
        thread = _existing(session, workspace_id, lead_id, handoff)
    created = thread is None
    if thread is None:
        # Not added to the session: written below, once complete, by one prebuilt INSERT.
        thread = m.RescueThread(
            workspace_id=workspace_id,
            lead_id=lead_id,
            product_id=context.product_id,
            contact_id=context.contact_id,
            mailbox_id=context.mailbox_id,
            owner=context.owner,
            state=ThreadState.OPEN,
            state_before=handoff.state_before,
            evidence=[],
            intent_data={},
            candidates=[],
            actions=[],
            created_at=now,
            updated_at=now,
        )
    _apply(thread, handoff, context, now)
    with session.no_autoflush:  # a thread being updated is written once, with its next step
        thread.next_step, thread.actions = next_step_for(thread, context, now, settings, session)
    if created:
        thread.version = thread_versions.FIRST_MOVE  # its first move, written with the row
        thread.id = _insert(session, thread)
        from_reply = handoff.reply_id is not None
        thread_versions.log_first_move(
            session,
            thread,
            now=now,
            kind="message" if from_reply else "handoff",
            summary=_summary(handoff, from_reply),
        )
    else:
        session.flush()
    if not created and handoff.reply_id is None:
        # A reply moved the versions of the lead's threads already (`replies._apply`); a new
        # thread (above), or a hold that is not a message, moves its own here.
        thread_versions.bump(
            session,
            workspace_id=workspace_id,
            now=now,
            thread_id=thread.id,
            kind="handoff",
            summary=_summary(handoff, from_reply=False),
        )
    ref = ThreadRef(thread.id, created, intent=thread.intent)

    add_event(
        "thread_opened" if created else "thread_updated",
        lead_id=thread.lead_id,
        step_id=handoff.step_id,
        thread_id=thread.id,
        kind=handoff.kind.value,
        intent=thread.intent,
    )
    if handoff.notify:
        ref.notice_id = notices.queue_notice(session, thread, context, now, settings, created=created)
        add_event(
            "notice_created",
            lead_id=thread.lead_id,
            notice_id=ref.notice_id,
            thread_id=thread.id,
            recipient=thread.assignee or thread.owner,
        )
    return ref


def _insert(session: Session, thread: m.RescueThread) -> int:
    """Write a new thread, complete, with one INSERT ... RETURNING id: the columns its object
    has set (the others take their defaults, as in a flush), without the ORM's flush."""
    known = vars(thread)
    values = {key: known[key] for key in _THREAD_COLUMNS if key in known}
    return int(session.execute(_INSERT_THREAD, values).scalar_one())


def _session_events(session: Session, workspace_id: int, now: datetime) -> AddEvent:
    """Events added to the session (a unit of work's session stamps them with its `tx`)."""

    def add(kind: str, /, *, lead_id: int | None = None, step_id: int | None = None, **data: Any) -> None:
        session.add(
            m.Event(workspace_id=workspace_id, lead_id=lead_id, step_id=step_id, kind=kind, at=now, data=data)
        )

    return add


def _summary(handoff: Handoff, from_reply: bool) -> str:
    if from_reply:
        return thread_versions.message_summary(handoff.sender, handoff.kind.value, handoff.text)
    return f"{handoff.kind.value.replace('_', ' ')}: {handoff.reason or ''}".rstrip(": ")


def open_thread_on(
    conn: Connection, *, workspace_id: int, now: datetime, lead_id: int, handoff: Handoff, settings: Settings
) -> ThreadRef:
    """`open_thread` for Core code that holds a `Connection` in a transaction (the worker)."""
    # rollback_only: the caller's transaction is joined as it is, savepoint or not, and closing
    # this session leaves it alone. (The default would open a SAVEPOINT of its own when the
    # caller is inside one — a lead import's row — and roll it back on close: a lead held,
    # and no thread or notice to say so.)
    with Session(bind=conn, expire_on_commit=False, join_transaction_mode="rollback_only") as session:
        ref = open_thread(
            session, workspace_id=workspace_id, now=now, lead_id=lead_id, handoff=handoff, settings=settings
        )
        session.flush()
    return ref


def thread_kind(kind: ReplyKind, left_company: bool) -> ThreadKind:
    """The thread a reply that needs a person opens."""
    return {
        ReplyKind.HUMAN_REPLY: ThreadKind.HUMAN_REPLY,
        ReplyKind.UNSUBSCRIBE: ThreadKind.UNSUBSCRIBE,
        ReplyKind.OUT_OF_OFFICE: ThreadKind.LONG_ABSENCE,
        ReplyKind.BOUNCE_HARD: ThreadKind.BOUNCE,
    }.get(kind, ThreadKind.LEFT_COMPANY if left_company else ThreadKind.HUMAN_REPLY)


def _existing(session: Session, workspace_id: int, lead_id: int, handoff: Handoff) -> m.RescueThread | None:
    query = select(m.RescueThread).where(
        m.RescueThread.workspace_id == workspace_id, m.RescueThread.state != ThreadState.DONE
    )
    if handoff.kind is ThreadKind.PROBABLE_REPLY:
        query = query.where(m.RescueThread.inbound_message_id == handoff.inbound_message_id)
    else:
        query = query.where(
            m.RescueThread.lead_id == lead_id, m.RescueThread.kind != ThreadKind.PROBABLE_REPLY
        )
    return session.scalars(query.order_by(m.RescueThread.id.desc()).limit(1)).first()


def _apply(thread: m.RescueThread, handoff: Handoff, context: ThreadContext, now: datetime) -> None:
    # A reply outranks an unknown outcome that comes after it: the person still has to answer,
    # and the unknown step is listed in the thread either way.
    keep_kind = thread.kind == ThreadKind.HUMAN_REPLY and handoff.kind is ThreadKind.UNKNOWN_OUTCOME
    if not keep_kind:
        thread.kind = handoff.kind
    thread.state, thread.snoozed_until, thread.updated_at = ThreadState.OPEN, None, now
    thread.reason = handoff.reason or thread.reason
    thread.crossed = thread.crossed or handoff.crossed
    thread.step_id = handoff.step_id or thread.step_id
    thread.inbound_message_id = handoff.inbound_message_id or thread.inbound_message_id
    thread.subject = handoff.subject or thread.subject or context.last_subject
    if handoff.candidates:
        thread.candidates = list(handoff.candidates)
    if handoff.new_contact or handoff.absent_until or handoff.sender:
        thread.intent_data = {
            **(thread.intent_data or {}),
            "new_contact": handoff.new_contact,
            "absent_until": handoff.absent_until.isoformat() if handoff.absent_until else None,
            "sender": handoff.sender,
        }
    if handoff.reply_id is not None or handoff.text is not None:
        thread.reply_id = handoff.reply_id or thread.reply_id
        thread.text = handoff.text
        thread.evidence = list(handoff.evidence)
    if handoff.kind in (ThreadKind.HUMAN_REPLY, ThreadKind.PROBABLE_REPLY) and handoff.text is not None:
        result: IntentResult = detect_intent(
            handoff.text,
            handoff.subject or "",
            sent=handoff.received_at or now,
            own_addresses=context.own_addresses,
        )
        thread.intent = result.intent.value
        thread.intent_data = {**(thread.intent_data or {}), **result.to_json()}
        if handoff.kind is ThreadKind.HUMAN_REPLY:
            thread.model_state = "pending"  # a model, when one is configured, drafts after commit
