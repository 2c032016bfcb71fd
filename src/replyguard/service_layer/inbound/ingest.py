"""Inbound mail: store first, then classify, match and apply — every source feeds this.

`ingest_raw` is the one entry point for every source (files, mbox, Maildir, stdin, IMAP,
webhooks, the LMTP listener). Two transactions:

1. **Store** the raw bytes (invariant 5). A message with the same Message-ID and body as
   one already stored is a duplicate: nothing more happens. Sources acknowledge delivery
   (HTTP 2xx, IMAP flag, LMTP 250) only after this commit.
2. **Process** the stored row, once: classify, then `inbound_apply.apply_inbound` decides
   who is speaking, matches, dedupes copies and applies the effect through the reply
   transaction (`record_reply`) in the same transaction that marks the row done. A message
   that cannot be parsed is kept with its error; one that matches no lead is kept in the
   unmatched list; our own sent mail is kept as `ours`; a second copy of a message already
   applied is kept as a `duplicate` of it. Nothing is dropped.

Nothing blocks anything: the text of a message is made storable (domain/inbound/storable.py)
before any write; a message that still fails to process is tried `MAX_ATTEMPTS` times, then
quarantined for a person (service_layer/inbound/quarantine.py). Only the store can fail `ingest_raw`:
once it has committed, every source acknowledges and moves on. A message over the limits of
domain/inbound/limits.py is stored as `refused` and not processed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from email.message import EmailMessage
from email.utils import getaddresses
from typing import Any, cast

from sqlalchemy import Table, bindparam, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import SQLAlchemyError

from replyguard.adapters.db import models as m
from replyguard.domain.inbound.classify import Classification, classify_message
from replyguard.domain.inbound.limits import MessageLimits, over_limit
from replyguard.domain.inbound.parse import MessageParseError, parse_message
from replyguard.domain.inbound.status import SOURCE_LENGTH, InboundStatus, check_inbound_move, is_history
from replyguard.domain.inbound.storable import MAX_MESSAGE_ID, storable_classification, storable_text
from replyguard.domain.message_ids import normalize_message_id
from replyguard.service_layer.inbound.apply import apply_inbound
from replyguard.service_layer.inbound.stored import InboundRow, fresh_row, read_stored, write_outcome
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.uow import UnitOfWork

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IngestResult:
    inbound_id: int
    duplicate: bool
    # an InboundStatus: stored (to be retried), matched, probable, unmatched, unparsable,
    # ours, suspect, history, duplicate, quarantined, refused
    status: str
    kind: str | None = None
    lead_ids: tuple[int, ...] = ()
    detail: str = ""
    evidence: tuple[str, ...] = field(default=())


def dedupe_key(raw: bytes) -> tuple[str, str | None]:
    """(key, Message-ID): the same Message-ID and body give the same key, whatever Received
    headers the path added or however it folded the Message-ID; a message without one is
    keyed by all its bytes. The Message-ID is normalised (domain/message_ids.py)."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = raw.partition(b"\n\n")
    message_id = _message_id_of(head)
    digest = hashlib.sha256()
    if message_id:
        digest.update(b"mid\0" + message_id.encode() + b"\0" + body.replace(b"\r\n", b"\n").rstrip())
    else:
        digest.update(b"raw\0" + raw)
    return digest.hexdigest(), message_id


def _message_id_of(head: bytes) -> str | None:
    """The Message-ID of a raw header block with its continuation lines: Exchange Online folds
    a long id onto the next line (`Message-ID:` CRLF SP `<...>`)."""
    lines = head.splitlines()
    for index, line in enumerate(lines):
        if line[:11].lower() == b"message-id:":
            value = [line[11:]]
            for more in lines[index + 1 :]:
                if more[:1] not in (b" ", b"\t"):
                    break
                value.append(more)
            return normalize_message_id(b" ".join(value).decode("utf-8", "replace"))
    return None


#: Processing attempts of one stored message before it is quarantined for a person.
MAX_ATTEMPTS = 3
#: The longest source name an inbound row keeps (`inbound_messages.source`); a reply records
#: only the source's channel (`channel_of`), which fits `replies.source`.
MAX_SOURCE = SOURCE_LENGTH

#: Work that must commit together with the store, or not at all (a webhook's replay token).
WithStore = Callable[[UnitOfWork], None]


_INBOUND = cast(Table, m.InboundMessage.__table__)


def _insert_once_statement(postgres: bool) -> Any:
    """`INSERT ... ON CONFLICT (workspace_id, dedupe_key) DO NOTHING RETURNING id` in the
    dialect's words, built once: its VALUES are the parameters it is executed with."""
    insert = (pg_insert if postgres else sqlite_insert)(_INBOUND)
    once = insert.on_conflict_do_nothing(index_elements=["workspace_id", "dedupe_key"])
    return once.returning(_INBOUND.c.id)


#: By whether the database is PostgreSQL.
_INSERT_ONCE = {postgres: _insert_once_statement(postgres) for postgres in (False, True)}
#: The id of the row stored under a dedupe key (the winner of a lost `_INSERT_ONCE`).
_STORED_UNDER = select(_INBOUND.c.id).where(
    _INBOUND.c.workspace_id == bindparam("workspace"), _INBOUND.c.dedupe_key == bindparam("key")
)


def insert_once(uow: UnitOfWork, key: str, **values: Any) -> tuple[int, bool]:
    """Insert an inbound row unless one with `key` exists; (its id, whether it existed).

    One `INSERT ... ON CONFLICT DO NOTHING`: two processes storing the same message at once
    get one row, and the loser learns the winner's id (the row it stored is left as it is).
    The caller commits.
    """
    row = {"workspace_id": uow.workspace_id, "dedupe_key": key, "received_at": uow.clock.now(), **values}
    # (`values` may give the received time itself: `_store` keeps the one it stored.)
    inserted = uow.session.execute(_INSERT_ONCE[uow.postgres], row).scalar()
    if inserted is not None:
        return inserted, False
    existing = uow.session.scalar(_STORED_UNDER, {"workspace": uow.workspace_id, "key": key})
    assert existing is not None
    return existing, True


def store_raw(
    uow: UnitOfWork, raw: bytes, source: str, *, refused: str | None = None, history: bool = False
) -> tuple[int, bool]:
    """Store the bytes; returns (inbound id, whether it was already stored). The caller commits.

    The Message-ID column gets a storable copy (a NUL in a Message-ID once failed the store
    itself); the raw bytes are kept exactly. `refused`: the reason the message is over a limit,
    stored with it as its error and status `refused`. `history`: stored with a new row only;
    a copy already stored keeps its own (a copy stored live stays live).
    """
    inbound_id, existed, _ = _store(uow, raw, source, refused=refused, history=history)
    return inbound_id, existed


def _store(
    uow: UnitOfWork, raw: bytes, source: str, *, refused: str | None, history: bool
) -> tuple[int, bool, InboundRow | None]:
    """`store_raw`, and the row as stored when this call inserted it as `stored` (what
    processing would read back; None for a copy stored before, or one refused)."""
    key, message_id = dedupe_key(raw)
    if message_id is not None:
        message_id = storable_text(message_id, MAX_MESSAGE_ID)[0] or None
    stored_source = storable_text(source, MAX_SOURCE)[0]
    received_at = uow.clock.now().astimezone(UTC)  # as the column gives it back
    inbound_id, existed = insert_once(
        uow,
        key,
        received_at=received_at,
        message_id=message_id,
        source=stored_source,
        raw=raw,
        status=InboundStatus.REFUSED if refused else InboundStatus.STORED,
        error=refused,
        history=history,
    )
    if existed or refused is not None:
        return inbound_id, existed, None
    return inbound_id, existed, fresh_row(inbound_id, raw, stored_source, received_at, history=history)


def stored_id(app: Runtime, raw: bytes) -> int | None:
    """The id of the inbound row these bytes were stored as, if they were."""
    key, _ = dedupe_key(raw)
    with app.uow() as uow:
        return uow.session.scalar(
            select(m.InboundMessage.id).where(
                m.InboundMessage.workspace_id == uow.workspace_id, m.InboundMessage.dedupe_key == key
            )
        )


def ingest_raw(
    app: Runtime,
    raw: bytes,
    source: str,
    *,
    with_store: WithStore | None = None,
    limits: MessageLimits | None = None,
    history: bool = False,
) -> IngestResult:
    """Store, then process. Safe to call again with the same message: one effect only.

    `history=True`: the caller imports the message from a mailbox's past (an IMAP folder's
    existing mail, an mbox export), not a live delivery. The flag is stored with the row, so
    a later `process_stored` honours it too: such a message only informs (an event on the
    lead's timeline) unless it proves it is newer than our first email to the lead — it
    answers one of our Message-IDs, or its Date is at or after that email
    (domain/reply_policy.py: predates_first_send). A copy already stored live stays live.

    Raises only when the store fails (nothing was kept: the source must not acknowledge).
    After the store has committed it never raises: a failure to process is retried, then
    quarantined, and the result says so.
    """
    history = history or is_history(source)  # `imap-history`, `file-history`: imports of old mail
    refused = over_limit(raw, limits or MessageLimits(max_bytes=app.settings.message_max_bytes))
    with app.uow() as uow:
        if with_store is not None:
            with_store(uow)
        inbound_id, duplicate, fresh = _store(uow, raw, source, refused=refused, history=history)
        if refused is not None and not duplicate:
            notify_refused(uow, inbound_id)
        uow.commit()
    if refused is not None:
        log.warning("%s: inbound %s refused: %s", source, inbound_id, refused)
        return IngestResult(inbound_id, duplicate, InboundStatus.REFUSED, detail=refused)
    # A row stored just now is processed as stored, without reading it back (stored.py).
    result = process_stored(app, inbound_id, fresh=fresh)
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


def process_stored(app: Runtime, inbound_id: int, *, fresh: InboundRow | None = None) -> IngestResult:
    """Process a stored message exactly once (a second call returns the first outcome).

    `fresh`: the row as `ingest_raw` has just stored it, processed without reading it back
    (stored.py says how that stays once); a retry reads the row.

    Never raises: any failure — a bug, a value a column refuses, a lost connection — is tried
    again up to MAX_ATTEMPTS times in all, then the message is quarantined. If even that
    cannot be recorded (the database is gone), the row stays `stored` for `retry_stored`.
    """
    error = ""
    for _attempt in range(MAX_ATTEMPTS):
        try:
            return _process_once(app, inbound_id, fresh)
        except Exception as exc:  # whatever it is, it must not block the messages behind it
            error = f"{exc.__class__.__name__}: {str(exc).splitlines()[0][:500] if str(exc) else ''}"
            log.warning("inbound %s: processing failed: %s", inbound_id, error)
        fresh = None
    return quarantine(app, inbound_id, error, attempts=MAX_ATTEMPTS)


#: A message parsed and classified, or why it could not be.
Parsed = tuple[EmailMessage, Classification] | str


def _parse(raw: bytes) -> Parsed:
    try:
        msg = parse_message(raw)
        return msg, storable_classification(classify_message(msg))
    except (MessageParseError, ValueError, LookupError) as exc:
        return storable_text(str(exc), 2000)[0]


def _process_once(app: Runtime, inbound_id: int, fresh: InboundRow | None) -> IngestResult:
    # A fresh row is parsed and classified before its transaction begins: it holds the
    # database (SQLite's write lock) only for the reads and writes.
    parsed = _parse(fresh.raw) if fresh is not None else None
    with app.uow() as uow:
        if fresh is not None and parsed is not None:
            row = fresh
        else:
            row = read_stored(uow, inbound_id)
            if row.status != InboundStatus.STORED:
                return _result_of(row, duplicate=True)
            parsed = _parse(row.raw)
        if isinstance(parsed, str):
            row.status, row.error, row.processed_at = InboundStatus.UNPARSABLE, parsed, uow.clock.now()
            uow.add_event("inbound_unparsable", inbound_id=row.id, error=parsed[:500])
            return _finish(uow, row)
        applied = apply_inbound(uow, app, row, *parsed)
        return _finish(uow, row, lead_ids=applied.lead_ids, evidence=applied.evidence)


def _finish(
    uow: UnitOfWork, row: InboundRow, *, lead_ids: tuple[int, ...] = (), evidence: tuple[str, ...] = ()
) -> IngestResult:
    """Write the row's outcome and commit; if another process processed the row meanwhile,
    roll all of this back and return that outcome instead (only a fresh row can meet one)."""
    if not write_outcome(uow, row):
        uow.session.rollback()
        log.info("inbound %s: processed meanwhile by another process", row.id)
        return _result_of(read_stored(uow, row.id), duplicate=True)
    uow.commit()
    return _result_of(row, duplicate=False, lead_ids=lead_ids, evidence=evidence)


def _result_of(
    row: InboundRow, *, duplicate: bool, lead_ids: tuple[int, ...] = (), evidence: tuple[str, ...] = ()
) -> IngestResult:
    leads = lead_ids or ((row.lead_id,) if row.lead_id else ())
    return IngestResult(row.id, duplicate, row.status, row.kind, leads, row.error or "", evidence)


def addresses_in(value: str) -> list[str]:
    return [addr.lower() for _name, addr in getaddresses([value]) if "@" in addr]


# Kept for a person: a message whose processing failed every attempt, or one stored whole but
# over a limit, waits in the inbound list with a notice (retried by quarantine.py).

#: Who is told when a notice concerns no lead and no campaign owner exists.
NOBODY = "owner@unknown.invalid"


def quarantine(app: Runtime, inbound_id: int, error: str, *, attempts: int) -> IngestResult:
    """Record that processing failed `attempts` more times and quarantine the message.

    Never raises: when even this cannot be written the row stays `stored` (logged), and
    `retry_stored` takes it up later.
    """
    try:
        with app.uow() as uow:
            row = uow.session.get_one(m.InboundMessage, inbound_id, with_for_update=uow.postgres)
            if row.status != InboundStatus.STORED:  # another process got it done meanwhile
                return result_of(row)
            row.status = check_inbound_move(row.status, InboundStatus.QUARANTINED)
            row.error = storable_text(error, 2000)[0]
            row.attempts += attempts
            row.processed_at = uow.clock.now()
            uow.add_event("inbound_quarantined", inbound_id=row.id, error=row.error[:500])
            notify_kept(uow, "inbound_quarantined", row, "Processing failed every attempt: look, then retry.")
            uow.commit()
            log.error("inbound %s quarantined after %s attempts: %s", inbound_id, row.attempts, row.error)
            return result_of(row)
    except SQLAlchemyError as exc:
        log.error("inbound %s: could not record its failure (%s); kept as stored", inbound_id, exc.__class__)
        return IngestResult(inbound_id, False, InboundStatus.STORED, detail=error)


def notify_refused(uow: UnitOfWork, inbound_id: int) -> None:
    """Tell a person about a message stored whole but refused for its shape (see limits.py).

    The caller commits, with the store of that message.
    """
    row = uow.session.get_one(m.InboundMessage, inbound_id)
    notify_kept(uow, "inbound_refused", row, "Over a limit, so not processed: read it and act.")


def notify_kept(uow: UnitOfWork, kind: str, row: m.InboundMessage, recommendation: str) -> None:
    owner = uow.session.scalar(
        select(m.Campaign.owner)
        .where(m.Campaign.workspace_id == uow.workspace_id)
        .order_by(m.Campaign.id)
        .limit(1)
    )
    payload: dict[str, Any] = {
        "type": "inbound.kept",
        "kind": kind,
        "inbound_id": row.id,
        "source": row.source,
        "message_id": row.message_id,
        "error": (row.error or "")[:1000],
        "recommendation": recommendation,
    }
    uow.session.add(
        m.Notice(
            workspace_id=uow.workspace_id,
            lead_id=None,
            reply_id=None,
            recipient=owner or NOBODY,
            kind=kind,
            payload=payload,
            created_at=uow.clock.now(),
        )
    )


def result_of(row: m.InboundMessage) -> IngestResult:
    leads = (row.lead_id,) if row.lead_id else ()
    return IngestResult(row.id, False, row.status, row.kind, leads, row.error or "")
