"""The inbound page: messages kept for a person (unmatched, probable, unparsable, suspect,
quarantined, refused), each with the rescue thread it opened, the suppression list, and the
health of each inbound source."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from email.parser import BytesHeaderParser
from email.policy import compat32
from typing import Any

from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.domain.inbound.parse import MessageParseError, extract_body, header, parse_message
from replyguard.service_layer.queries import NotFound, Page, bounds, like_pattern, paged
from replyguard.service_layer.uow import UnitOfWork

KEPT = ("unmatched", "probable", "unparsable", "suspect", "quarantined", "refused")
#: A person may process these again (`quarantine.retry`): quarantined ones, and stored ones
#: that a crash left behind.
RETRYABLE = ("quarantined", "stored")
STATUSES = (*KEPT, "matched", "stored")
_HEAD_BYTES = 16384  # enough for the headers a list shows; the body is read on the message page
_SHOWN_HEADERS = ("From", "To", "Cc", "Reply-To", "Subject", "Date", "Message-ID", "In-Reply-To")


@dataclass(frozen=True, slots=True)
class InboundRow:
    id: int
    received_at: datetime
    status: str
    kind: str | None
    source: str
    message_id: str | None
    sender: str
    subject: str
    error: str | None
    lead_id: int | None
    thread_id: int | None = None  # the rescue thread it opened (a probable reply's, a reply's)


@dataclass(frozen=True, slots=True)
class InboundMessageView:
    row: InboundRow
    headers: list[tuple[str, str]]
    text: str
    html: str  # as received: the web layer sanitises it before anyone sees it
    size: int
    held_lead_ids: list[int]


@dataclass(frozen=True, slots=True)
class SuppressionRow:
    id: int
    address: str
    reason: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class SourceHealth:
    id: int
    source: str
    last_uid: int
    last_poll_at: datetime | None
    lag: timedelta | None  # since the last completed read
    last_error: str | None
    last_error_at: datetime | None
    error_count: int
    polled_by: str | None
    status: str  # ok | failing | stale | waiting


def _headers_of(head: bytes) -> tuple[str, str]:
    try:
        msg = BytesHeaderParser(policy=compat32).parsebytes(head.split(b"\r\n\r\n")[0].split(b"\n\n")[0])
    except Exception:  # a header block the stdlib cannot read at all
        return "", ""
    return header(msg, "from"), header(msg, "subject")


def _row(r: Any, head: bytes, thread_id: int | None = None) -> InboundRow:
    """From a model or a row of `_COLUMNS` (the same attribute names)."""
    sender, subject = _headers_of(head)
    return InboundRow(
        r.id,
        r.received_at,
        r.status,
        r.kind,
        r.source,
        r.message_id,
        sender,
        subject,
        r.error,
        r.lead_id,
        thread_id,
    )


def threads_of(uow: UnitOfWork, inbound_ids: list[int]) -> dict[int, int]:
    """The latest rescue thread each message opened: a probable reply's own thread, or the
    thread of the reply it was recorded as."""
    if not inbound_ids:
        return {}
    direct = uow.session.execute(
        select(m.RescueThread.inbound_message_id, m.RescueThread.id).where(
            m.RescueThread.workspace_id == uow.workspace_id,
            m.RescueThread.inbound_message_id.in_(inbound_ids),
        )
    ).all()
    by_reply = uow.session.execute(
        select(m.Reply.inbound_message_id, m.RescueThread.id)
        .join(m.RescueThread, m.RescueThread.reply_id == m.Reply.id)
        .where(m.Reply.workspace_id == uow.workspace_id, m.Reply.inbound_message_id.in_(inbound_ids))
    ).all()
    found: dict[int, int] = {}
    for inbound_id, thread_id in [*by_reply, *direct]:
        if inbound_id is not None:
            found[int(inbound_id)] = max(thread_id, found.get(int(inbound_id), 0))
    return found


_COLUMNS = (
    m.InboundMessage.id,
    m.InboundMessage.received_at,
    m.InboundMessage.status,
    m.InboundMessage.kind,
    m.InboundMessage.source,
    m.InboundMessage.message_id,
    m.InboundMessage.error,
    m.InboundMessage.lead_id,
)


def inbound_counts(uow: UnitOfWork) -> dict[str, int]:
    rows = uow.session.execute(
        select(m.InboundMessage.status, func.count())
        .where(m.InboundMessage.workspace_id == uow.workspace_id)
        .group_by(m.InboundMessage.status)
    ).all()
    found = {status: int(n) for status, n in rows}
    return {status: found.get(status, 0) for status in STATUSES}


def list_inbound(uow: UnitOfWork, status: str, *, page: int = 1, per_page: int = 50) -> Page[InboundRow]:
    """Messages with this status, newest first."""
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    offset, limit = bounds(page, per_page)
    rows = uow.session.execute(
        select(*_COLUMNS, func.substr(m.InboundMessage.raw, 1, _HEAD_BYTES))
        .where(m.InboundMessage.workspace_id == uow.workspace_id, m.InboundMessage.status == status)
        .order_by(m.InboundMessage.id.desc())
        .offset(offset)
        .limit(limit)
    ).all()
    threads = threads_of(uow, [r.id for r in rows])
    return paged([_row(r, bytes(r[-1] or b""), threads.get(r.id)) for r in rows], page, per_page)


def inbound_message(uow: UnitOfWork, inbound_id: int) -> InboundMessageView:
    row = uow.session.scalar(
        select(m.InboundMessage).where(
            m.InboundMessage.id == inbound_id, m.InboundMessage.workspace_id == uow.workspace_id
        )
    )
    if row is None:
        raise NotFound(f"no inbound message {inbound_id}")
    raw = bytes(row.raw)
    headers: list[tuple[str, str]] = []
    text = html = ""
    try:
        msg = parse_message(raw)
    except MessageParseError:
        text = raw[:20000].decode("utf-8", "replace")
    else:
        headers = [(name, value) for name in _SHOWN_HEADERS if (value := header(msg, name))]
        body = extract_body(msg)
        text, html = body.plain, body.html
    held = uow.session.scalars(
        select(m.Event.lead_id).where(
            m.Event.workspace_id == uow.workspace_id,
            m.Event.kind == "probable_reply_held",
            m.Event.data["inbound_id"].as_integer() == row.id,
        )
    )
    return InboundMessageView(
        _row(row, raw[:_HEAD_BYTES], threads_of(uow, [row.id]).get(row.id)),
        headers,
        text,
        html,
        len(raw),
        sorted({i for i in held if i}),
    )


def list_suppressions(
    uow: UnitOfWork, q: str = "", *, page: int = 1, per_page: int = 50
) -> Page[SuppressionRow]:
    query = select(m.Suppression).where(m.Suppression.workspace_id == uow.workspace_id)
    if q.strip():
        query = query.where(m.Suppression.address.like(like_pattern(q), escape="\\"))
    offset, limit = bounds(page, per_page)
    rows = uow.session.scalars(query.order_by(m.Suppression.id.desc()).offset(offset).limit(limit))
    return paged([SuppressionRow(s.id, s.address, s.reason, s.created_at) for s in rows], page, per_page)


def source_health(uow: UnitOfWork, *, stale_after: timedelta = timedelta(minutes=5)) -> list[SourceHealth]:
    """Every inbound source (IMAP folder) this workspace reads, with how well it is doing."""
    now = uow.clock.now()
    rows = uow.session.scalars(
        select(m.MailboxCursor)
        .where(m.MailboxCursor.workspace_id == uow.workspace_id)
        .order_by(m.MailboxCursor.source_key)
    )
    found = []
    for c in rows:
        lag = now - c.last_poll_at if c.last_poll_at else None
        if c.last_error_at and (c.last_poll_at is None or c.last_error_at > c.last_poll_at):
            status = "failing"
        elif lag is None:
            status = "waiting"
        elif lag > stale_after:
            status = "stale"
        else:
            status = "ok"
        live = c.lease_owner if c.lease_until and c.lease_until > now else None
        found.append(
            SourceHealth(
                c.id,
                c.source_key,
                c.last_uid,
                c.last_poll_at,
                lag,
                c.last_error,
                c.last_error_at,
                c.error_count,
                live,
                status,
            )
        )
    return found
