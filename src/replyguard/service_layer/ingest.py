"""Inbound mail: store first, then classify, match and apply — every source feeds this.

`ingest_raw` is the one entry point for every source (files, mbox, Maildir, stdin, IMAP,
webhooks, the LMTP listener). Two transactions:

1. **Store** the raw bytes (invariant 5). A message with the same Message-ID and body as
   one already stored is a duplicate: nothing more happens. Sources acknowledge delivery
   (HTTP 2xx, IMAP flag, LMTP 250) only after this commit.
2. **Process** the stored row, once: classify, match to a lead, and apply the effect through
   the reply transaction (`record_reply`) in the same transaction that marks the row done.
   A message that cannot be parsed is kept with its error; one that matches no lead is kept
   in the unmatched list. Nothing is dropped.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import getaddresses

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.inbound.classify import Classification, classify_message
from replyguard.domain.inbound.parse import MessageParseError, header, parse_message
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.matching import Match, match_message, recipients_of
from replyguard.service_layer.replies import (
    SOFT_BOUNCE_LIMIT,
    IncomingReply,
    hold_probable,
    record_reply,
    soft_bounces_of,
)
from replyguard.service_layer.uow import UnitOfWork

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IngestResult:
    inbound_id: int
    duplicate: bool
    status: str  # matched | probable | unmatched | unparsable
    kind: str | None = None
    lead_ids: tuple[int, ...] = ()
    detail: str = ""
    evidence: tuple[str, ...] = field(default=())


def dedupe_key(raw: bytes) -> tuple[str, str | None]:
    """(key, Message-ID): the same Message-ID and body give the same key, whatever Received
    headers the path added; a message without Message-ID is keyed by all its bytes."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = raw.partition(b"\n\n")
    message_id = None
    for line in head.splitlines():
        if line[:11].lower() == b"message-id:":
            message_id = line[11:].strip().decode("ascii", "replace")[:900] or None
            break
    digest = hashlib.sha256()
    if message_id:
        digest.update(b"mid\0" + message_id.encode() + b"\0" + body.replace(b"\r\n", b"\n").rstrip())
    else:
        digest.update(b"raw\0" + raw)
    return digest.hexdigest(), message_id


def store_raw(uow: UnitOfWork, raw: bytes, source: str) -> tuple[int, bool]:
    """Store the bytes; returns (inbound id, whether it was already stored). The caller commits.

    One `INSERT ... ON CONFLICT DO NOTHING`: two processes storing the same message at once
    get one row, and the loser learns the winner's id.
    """
    key, message_id = dedupe_key(raw)
    insert = (pg_insert if uow.postgres else sqlite_insert)(m.InboundMessage)
    inserted = uow.session.execute(
        insert.values(
            workspace_id=uow.workspace_id,
            dedupe_key=key,
            message_id=message_id,
            source=source[:40],
            raw=raw,
            received_at=uow.clock.now(),
            status="stored",
        )
        .on_conflict_do_nothing(index_elements=["workspace_id", "dedupe_key"])
        .returning(m.InboundMessage.id)
    ).scalar()
    if inserted is not None:
        return inserted, False
    existing = uow.session.scalar(
        select(m.InboundMessage.id).where(
            m.InboundMessage.workspace_id == uow.workspace_id, m.InboundMessage.dedupe_key == key
        )
    )
    assert existing is not None
    return existing, True


def ingest_raw(app: App, raw: bytes, source: str) -> IngestResult:
    """Store, then process. Safe to call again with the same message: one effect only."""
    with app.uow() as uow:
        inbound_id, duplicate = store_raw(uow, raw, source)
        uow.commit()
    result = process_stored(app, inbound_id)
    if duplicate:
        return IngestResult(
            result.inbound_id,
            True,
            result.status,
            result.kind,
            result.lead_ids,
            "already received",
            result.evidence,
        )
    return result


def process_stored(app: App, inbound_id: int) -> IngestResult:
    """Process a stored message exactly once (a second call returns the first outcome)."""
    with app.uow() as uow:
        query = select(m.InboundMessage).where(
            m.InboundMessage.id == inbound_id, m.InboundMessage.workspace_id == uow.workspace_id
        )
        if uow.postgres:
            query = query.with_for_update()
        row = uow.session.scalars(query).one()
        if row.status != "stored":
            return _result_of(row, duplicate=True)
        try:
            msg = parse_message(row.raw)
            classification = classify_message(msg)
        except (MessageParseError, ValueError, LookupError) as exc:
            row.status, row.error, row.processed_at = "unparsable", str(exc)[:2000], uow.clock.now()
            uow.add_event("inbound_unparsable", inbound_id=row.id, error=str(exc)[:500])
            uow.commit()
            return _result_of(row, duplicate=False)
        match = match_message(uow, classification, recipients_of(msg), header(msg, "subject"))
        result = _apply(uow, app, row, classification, match)
        uow.commit()
        return result


def _apply(uow: UnitOfWork, app: App, row: m.InboundMessage, c: Classification, match: Match) -> IngestResult:
    now = uow.clock.now()
    kind = match.kind_override or c.kind
    evidence = (*c.evidence, *match.evidence)
    row.kind, row.processed_at = kind, now
    if match.status == "matched":
        lead_id = match.lead_ids[0]
        sender = (c.bounce.recipient if c.bounce and c.bounce.recipient else c.from_address) or ""
        if kind is ReplyKind.BOUNCE_SOFT and soft_bounces_of(uow, sender) + 1 >= SOFT_BOUNCE_LIMIT:
            kind, evidence = ReplyKind.BOUNCE_HARD, (*evidence, f"bounce:soft-repeated-{SOFT_BOUNCE_LIMIT}")
            row.kind = kind
        record_reply(
            uow,
            lead_id,
            IncomingReply(
                kind=kind,
                received_at=_received(row, c),
                return_date=c.return_date,
                text=c.reply_text[:20000],
                subject=c.subject[:1000],
                from_address=sender.lower() or None,
                evidence=evidence,
                source=row.source,
                inbound_message_id=row.id,
                left_company=c.left_company,
                new_contact=c.new_contact,
            ),
            app.settings,
            app.failpoints,
        )
        row.status, row.lead_id = "matched", lead_id
    elif match.status == "probable" and kind in (ReplyKind.HUMAN_REPLY, ReplyKind.UNSUBSCRIBE):
        hold_probable(
            uow,
            match.lead_ids,
            inbound_id=row.id,
            sender=c.from_address or "",
            subject=c.subject,
            text=c.reply_text,
            why=", ".join(match.evidence),
        )
        row.status = "probable"
    else:
        row.status = "unmatched"
        uow.add_event("inbound_unmatched", inbound_id=row.id, kind=kind, sender=c.from_address)
    return _result_of(row, duplicate=False, lead_ids=match.lead_ids, evidence=evidence)


def _received(row: m.InboundMessage, c: Classification) -> datetime:
    # Our own clock, not the sender's Date header: "crossed" sends are measured against the
    # moment the reply reached us, and a Date header can say anything.
    return row.received_at


def _result_of(
    row: m.InboundMessage, *, duplicate: bool, lead_ids: tuple[int, ...] = (), evidence: tuple[str, ...] = ()
) -> IngestResult:
    leads = lead_ids or ((row.lead_id,) if row.lead_id else ())
    return IngestResult(row.id, duplicate, row.status, row.kind, leads, row.error or "", evidence)


def addresses_in(value: str) -> list[str]:
    return [addr.lower() for _name, addr in getaddresses([value]) if "@" in addr]
