"""The stored inbound row as its processing transaction sees it: read once, written once.

`ingest.process_stored` reads the row it processes (under its lock on PostgreSQL) and
`apply.apply_inbound` decides its new columns. Both work on an `InboundRow`, a plain value
rather than the ORM entity: the ORM would load every column, track each change and flush the
row twice (once at the first read that autoflushes, once at commit). Here the row is read
with the columns processing looks at, and every column processing may decide is written back
by one UPDATE just before the commit (`write_outcome`). Nothing in the transaction reads this
row's own columns in between: the effect-key check (effects.py) reads *other* rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Select, Table, bindparam, select, update

from replyguard.adapters.db import models as m
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

#: The row's outcome written back in one statement; its SET clause is the outcome columns,
#: taken from the parameters (`write_outcome` passes each of them).
_WRITE_OUTCOME = update(_INBOUND).where(
    _INBOUND.c.id == bindparam("inbound_id"), _INBOUND.c.workspace_id == bindparam("workspace")
)


def read_stored(uow: UnitOfWork, inbound_id: int) -> InboundRow:
    """The row to process, locked on PostgreSQL. NoResultFound if it is not in the workspace."""
    params = {"inbound_id": inbound_id, "workspace": uow.workspace_id}
    row = uow.session.execute(_READ[uow.postgres], params).one()
    return InboundRow(*row)


def write_outcome(uow: UnitOfWork, row: InboundRow) -> None:
    """Write the row's outcome columns (no commit). The unique index on the effect key is
    checked here: a copy that took the same key meanwhile makes this statement fail, and the
    whole transaction with it."""
    params: dict[str, Any] = {name: getattr(row, name) for name in _OUTCOME}
    uow.session.execute(_WRITE_OUTCOME, {**params, "inbound_id": row.id, "workspace": uow.workspace_id})
