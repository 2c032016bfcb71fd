"""Mail source pollers: the read cursor of each source, and the lease that lets one poller run.

A source is identified by its key (the URL without its password, plus the folder). Each
function here is one short transaction of its own, so a poller never holds a database
transaction open while it waits on the network.

Only one poller may read a source at a time, across machines. On PostgreSQL that is a
session advisory lock held on a dedicated connection for the poller's life: if the process or
its connection dies, PostgreSQL releases the lock and the next poller takes over at once. On
SQLite (one machine) the `lease_owner`/`lease_until` columns are the lease; a poller that died
without releasing it is replaced once `lease_until` has passed.

The poller itself (`adapters/imap_source.ImapPoller`) is wired from these parts by the
composition root (`App.imap_poller`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, Connection, CursorResult, or_, select, text, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from replyguard.adapters.db import models as m
from replyguard.adapters.imap_source import Cursor, Fetched
from replyguard.domain.inbound.status import InboundStatus, history_source, replayed_source
from replyguard.service_layer.inbound.ingest import IngestResult, ingest_raw
from replyguard.service_layer.inbound.quarantine import keep_refused
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.uow import UnitOfWork

log = logging.getLogger(__name__)

LEASE_TTL = timedelta(seconds=60)


def _row(uow: UnitOfWork, key: str) -> m.MailboxCursor:
    """The cursor row of `key`, created at (no UIDVALIDITY, UID 0) when missing."""
    query = select(m.MailboxCursor).where(
        m.MailboxCursor.workspace_id == uow.workspace_id, m.MailboxCursor.source_key == key
    )
    found = uow.session.scalars(query).one_or_none()
    if found is not None:
        return found
    row = m.MailboxCursor(
        workspace_id=uow.workspace_id, source_key=key, last_uid=0, updated_at=uow.clock.now()
    )
    try:
        with uow.session.begin_nested():
            uow.session.add(row)
    except IntegrityError:
        # Another poller created it between our read and our insert.
        return uow.session.scalars(query).one()
    return row


def read_cursor(app: Runtime, key: str) -> Cursor:
    """The cursor, read when a poll round has reached the folder: also stamps `checked_at`,
    so `replyguard audit --config` can tell a source that answers from one that fails."""
    with app.uow() as uow:
        row = _row(uow, key)
        row.checked_at = uow.clock.now()  # AUDIT (issue 13): the source answered just now
        uow.commit()
        return Cursor(
            row.uidvalidity,
            row.last_uid,
            row.history_until_uid,
            row.replay_before,
            advanced_at=row.updated_at,
        )


def begin_cursor(
    app: Runtime,
    key: str,
    uidvalidity: int,
    last_uid: int,
    history_until_uid: int | None,
    replay_before: datetime | None = None,
) -> None:
    """Start reading `key` under `uidvalidity` after `last_uid` (a first start, or a folder
    whose UIDs were reassigned); UIDs up to `history_until_uid` are history or, with
    `replay_before`, old mail read again when dated before it."""
    with app.uow() as uow:
        row = _row(uow, key)
        row.uidvalidity, row.last_uid, row.history_until_uid = uidvalidity, last_uid, history_until_uid
        row.replay_before = replay_before
        row.updated_at = uow.clock.now()
        uow.commit()


def account_prefix(key: str) -> str:
    """`imaps://user@host:993/` of a source key: what every folder of that account shares."""
    return key[: key.index("/", key.index("://") + 3) + 1]


def renamed_cursor(app: Runtime, key: str, uidvalidity: int) -> Cursor | None:
    """The cursor of another folder of the same account read under `uidvalidity`: the same
    folder before a rename. None when there is none, or more than one (no guessing)."""
    prefix = account_prefix(key)
    with app.uow() as uow:
        rows = uow.session.scalars(
            select(m.MailboxCursor).where(
                m.MailboxCursor.workspace_id == uow.workspace_id,
                m.MailboxCursor.source_key != key,
                m.MailboxCursor.uidvalidity == uidvalidity,
            )
        ).all()
        same = [r for r in rows if r.source_key.startswith(prefix)]
        if len(same) != 1:
            return None
        row = same[0]
        return Cursor(row.uidvalidity, row.last_uid, None, None, advanced_at=row.updated_at)


def advance_cursor(app: Runtime, key: str, uidvalidity: int, last_uid: int) -> None:
    """Record that every message up to `last_uid` under `uidvalidity` is stored.

    Never moves backwards within one UIDVALIDITY, so a stale poller cannot undo a newer one's
    progress; a different UIDVALIDITY always replaces the old one (the folder was recreated).
    """
    with app.uow() as uow:
        row = _row(uow, key)
        if row.uidvalidity != uidvalidity or last_uid > row.last_uid:
            row.uidvalidity, row.last_uid, row.updated_at = uidvalidity, last_uid, uow.clock.now()
        uow.commit()


@dataclass(frozen=True, slots=True)
class DbCursorStore:
    """The poller's cursor port, backed by `mailbox_cursors`."""

    app: Runtime
    key: str

    def load(self) -> Cursor:
        return read_cursor(self.app, self.key)

    def save(self, uidvalidity: int, last_uid: int) -> None:
        advance_cursor(self.app, self.key, uidvalidity, last_uid)

    def begin(
        self,
        uidvalidity: int,
        last_uid: int,
        history_until_uid: int | None,
        replay_before: datetime | None = None,
    ) -> None:
        begin_cursor(self.app, self.key, uidvalidity, last_uid, history_until_uid, replay_before)

    def renamed_from(self, uidvalidity: int) -> Cursor | None:
        return renamed_cursor(self.app, self.key, uidvalidity)


def ingest_fetched(
    app: Runtime, report: Callable[[IngestResult], None] | None = None
) -> Callable[[Fetched], None]:
    """The poller's handler: store (and process) each message, or keep a refused one's header.

    A history message is stored under the source `imap-history`: it informs and never stops
    a lead as a fresh reply, unless it answers our email; old mail read again under a new
    UIDVALIDITY under `imap-reread-history`: it only informs, whatever it answers. Raises
    only when the store fails (the cursor then stays put).
    """

    def handle(message: Fetched) -> None:
        source = (
            replayed_source("imap")
            if message.replayed
            else history_source("imap")
            if message.history
            else "imap"
        )
        if message.refused is not None:
            inbound_id = keep_refused(app, message.raw, source, message.refused)
            result = IngestResult(inbound_id, False, InboundStatus.REFUSED, detail=message.refused)
        else:
            result = ingest_raw(app, message.raw, source)
        if report is not None:
            report(result)

    return handle


def advisory_key(workspace_id: int, key: str) -> int:
    """A signed 64-bit lock number for `pg_try_advisory_lock`, stable across machines."""
    digest = hashlib.sha256(f"replyguard-poller:{workspace_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def default_owner() -> str:
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class SourceLease:
    """The right to poll one source. `acquire` and `renew` return False while another holds it.

    Not thread-safe: one lease object belongs to one poller.
    """

    def __init__(self, app: Runtime, key: str, owner: str | None = None, ttl: timedelta = LEASE_TTL) -> None:
        self.app, self.key, self.ttl = app, key, ttl
        self.owner = owner or default_owner()
        self._lock_conn: Connection | None = None

    def acquire(self) -> bool:
        """Take the lease if it is free or already ours; database errors propagate."""
        if not self.app.postgres:
            return self._write_row_lease(only_if_free=True)
        if self._lock_conn is None and not self._take_advisory_lock():
            return False
        self._write_row_lease(only_if_free=False)  # for people to see; the lock decides
        return True

    def renew(self) -> bool:
        """Prove the lease is still ours; False means: stop reading the source now."""
        if self.app.postgres:
            if self._lock_conn is None:
                return False
            try:
                # The lock lives exactly as long as this session, so a live session still holds it.
                self._lock_conn.execute(text("SELECT 1"))
            except SQLAlchemyError:
                self._drop_lock_connection()
                return False
        return self.acquire()

    def release(self) -> None:
        """Give the lease up at once (a stopping poller), so the next one need not wait."""
        self._drop_lock_connection()
        try:
            with self.app.uow() as uow:
                uow.session.execute(
                    update(m.MailboxCursor)
                    .where(*self._filter(uow), m.MailboxCursor.lease_owner == self.owner)
                    .values(lease_owner=None, lease_until=None)
                )
                uow.commit()
        except SQLAlchemyError as exc:
            # An expired row lease is as good as a released one; the next poller just waits.
            log.warning("could not clear the lease of %s: %s", self.key, exc.__class__.__name__)

    def _take_advisory_lock(self) -> bool:
        conn = self.app.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            got = conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": self._lock_number()})
        except SQLAlchemyError:
            conn.invalidate()
            conn.close()
            raise
        if not got:
            conn.close()
            return False
        self._lock_conn = conn
        return True

    def _lock_number(self) -> int:
        return advisory_key(self.app.workspace_id, self.key)

    def _drop_lock_connection(self) -> None:
        conn, self._lock_conn = self._lock_conn, None
        if conn is not None:
            # Closing the session releases its advisory locks; invalidating keeps the pool from
            # handing a session that still holds the lock to someone else.
            conn.invalidate()
            conn.close()

    def _filter(self, uow: UnitOfWork) -> tuple[ColumnElement[bool], ...]:
        return (m.MailboxCursor.workspace_id == uow.workspace_id, m.MailboxCursor.source_key == self.key)

    def _write_row_lease(self, *, only_if_free: bool) -> bool:
        with self.app.uow() as uow:
            _row(uow, self.key)
            now = uow.clock.now()
            conditions = list(self._filter(uow))
            if only_if_free:
                conditions.append(
                    or_(
                        m.MailboxCursor.lease_owner.is_(None),
                        m.MailboxCursor.lease_owner == self.owner,
                        m.MailboxCursor.lease_until < now,
                    )
                )
            result = uow.session.execute(
                update(m.MailboxCursor)
                .where(*conditions)
                .values(lease_owner=self.owner, lease_until=now + self.ttl)
                .execution_options(synchronize_session=False)
            )
            uow.commit()
        return cast(CursorResult[Any], result).rowcount == 1
