"""The stored inbound row as its processing transaction sees it: read once, written once.

`ingest.process_stored` reads the row it processes (under its lock on PostgreSQL) and
`apply.apply_inbound` decides its new columns. Both work on an `InboundRow`, a plain value
rather than the ORM entity: the ORM would load every column, track each change and flush the
row twice (once at the first read that autoflushes, once at commit). Here the row is read
with the columns processing looks at, and every column processing may decide is written back
by one UPDATE just before the commit (`write_outcome`). Nothing in the transaction reads this
row's own columns in between: the effect-key check (effects.py) reads *other* rows.

A row `ingest_raw` has just inserted is not read back at all: it knows every column it stored
(`fresh_row`), and a new row has no outcome yet. Between its two transactions another process
may have taken the row (a redelivery of the same bytes, a retry), so the UPDATE writes only a
row still `stored`: when another process committed an outcome first, it writes nothing, and
the caller rolls its whole transaction back and returns that outcome. One effect either way.
On PostgreSQL the fresh row is locked by the first statement of its processing (with the wait
for copies of its effect key, effects.wait_for_copies), before any lead: in the order the
reading path takes them, so that two processes of one row never wait on each other in a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, Select, Table, bindparam, select, update

from replyguard.adapters.db import models as m
from replyguard.domain.inbound.status import InboundStatus
from replyguard.service_layer.uow import UnitOfWork

_INBOUND = cast(Table, m.InboundMessage.__table__)


@dataclass(slots=True)
class InboundRow:
    """One stored message being processed. `raw`, `source`, `received_at` and `history` are
    what was stored; the other fields are its outcome, set by processing."""

    id: int
    raw: bytes
    source: str
    received_at: datetime
    history: bool
    status: str
    error: str | None
    kind: str | None
    lead_id: int | None
    processed_at: datetime | None
    sender: str | None
    auth: dict[str, Any] | None
    effect_key: str | None
    duplicate_of: int | None
    #: Locked by this transaction (PostgreSQL): `read_stored` reads it under its lock; a fresh
    #: row is locked by effects.wait_for_copies.
    locked: bool = True


#: The outcome columns, in `InboundRow` order: what `write_outcome` writes back.
_OUTCOME = (
    "status",
    "error",
    "kind",
    "lead_id",
    "processed_at",
    "sender",
    "auth",
    "effect_key",
    "duplicate_of",
)
_COLUMNS = ("id", "raw", "source", "received_at", "history", *_OUTCOME)


def _read_statements() -> dict[bool, Select[Any]]:
    """The read of one row by id in the workspace; locking (FOR UPDATE) on PostgreSQL, where
    two processes may pick up the same stored row; SQLite's transaction holds the write lock."""
    read = select(*(_INBOUND.c[name] for name in _COLUMNS)).where(
        _INBOUND.c.id == bindparam("inbound_id"), _INBOUND.c.workspace_id == bindparam("workspace")
    )
    return {False: read, True: read.with_for_update()}


#: Built once at import (the compiled form is cached by its statement): by whether it locks.
_READ = _read_statements()

#: The row's outcome written back in one statement, if it is still `stored`; its SET clause is
#: the outcome columns, taken from the parameters (`write_outcome` passes each of them).
_WRITE_OUTCOME = update(_INBOUND).where(
    _INBOUND.c.id == bindparam("inbound_id"),
    _INBOUND.c.workspace_id == bindparam("workspace"),
    _INBOUND.c.status == InboundStatus.STORED,
)


def read_stored(uow: UnitOfWork, inbound_id: int) -> InboundRow:
    """The row to process, locked on PostgreSQL. NoResultFound if it is not in the workspace."""
    params = {"inbound_id": inbound_id, "workspace": uow.workspace_id}
    row = uow.session.execute(_READ[uow.postgres], params).one()
    return InboundRow(*row)


def fresh_row(
    inbound_id: int, raw: bytes, source: str, received_at: datetime, *, history: bool
) -> InboundRow:
    """The row `ingest.store_raw` has just inserted as `stored`, as `read_stored` would read it."""
    return InboundRow(
        id=inbound_id,
        raw=raw,
        source=source,
        received_at=received_at,
        history=history,
        status=InboundStatus.STORED,
        error=None,
        kind=None,
        lead_id=None,
        processed_at=None,
        sender=None,
        auth=None,
        effect_key=None,
        duplicate_of=None,
        locked=False,
    )


def write_outcome(uow: UnitOfWork, row: InboundRow) -> bool:
    """Write the row's outcome columns (no commit); False if the row is no longer `stored`
    (another process processed it meanwhile: the caller rolls back). The unique index on the
    effect key is checked here: a copy that took the same key meanwhile makes this statement
    fail, and the whole transaction with it."""
    params: dict[str, Any] = {name: getattr(row, name) for name in _OUTCOME}
    params.update(inbound_id=row.id, workspace=uow.workspace_id)
    written = uow.session.execute(_WRITE_OUTCOME, params)
    return cast(CursorResult[Any], written).rowcount == 1
