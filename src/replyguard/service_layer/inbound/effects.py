"""One reply, one effect — whatever the transport did to its bytes.

The store already makes a re-delivery of the same bytes one row (ingest.dedupe_key: the
Message-ID and the body). Copies of one message can still differ in their bytes: a webhook
rebuilt from the provider's parsed fields next to the IMAP copy, an LMTP copy with the
Message-ID folded onto a second line, headers reordered, Received lines added. Each is
stored (nothing is lost), and at processing time the first copy that is applied takes the
message's *effect key*; a later copy with the same key is marked `duplicate` and points at it.

The key is the normalised Message-ID, the sender's address and whether the message failed
authentication. The sender is in it so that someone who learns a Message-ID cannot, by
sending first from his own address, make a lead's real reply a "duplicate"; the failed flag
is in it so that a forgery of her address, sent first, cannot either (it fails DMARC, hers
does not). A message without a Message-ID has no effect key: only its exact bytes dedupe.

Concurrency: on PostgreSQL a transaction-scoped advisory lock on the key makes a second copy
processed at the same time wait for the first one's commit, and then see its key; SQLite
transactions are serial anyway. A unique index on the key is the last line of defence. The
lock is taken before matching, whose thread read (any read after the lock) also finds the
copy holding the key: a message that answers our thread costs no read of its own for it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import BigInteger, Select, Table, bindparam, func, select

from replyguard.adapters.db import models as m
from replyguard.domain.authentication import Verdict
from replyguard.domain.message_ids import normalize_message_id
from replyguard.service_layer.inbound.stored import InboundRow
from replyguard.service_layer.uow import UnitOfWork


def effect_key(message_id: str | None, sender: str | None, verdict: Verdict) -> str | None:
    normal = normalize_message_id(message_id or "")
    if not normal:
        return None
    auth = "failed" if verdict is Verdict.FAIL else "ok"
    material = f"{auth}\0{normal.lower()}\0{(sender or '').strip().lower()}"
    return hashlib.sha256(material.encode("utf-8", "replace")).hexdigest()


#: Waits for a concurrent copy with the same key until it commits (transaction-scoped). Its
#: own statement, before any read of the key's holder: a statement sees the rows committed
#: before it began, so a read in the statement that waited would miss the copy it waited for.
_WAIT_FOR_KEY = select(func.pg_advisory_xact_lock(bindparam("lock", type_=BigInteger)))
#: Built from the table's columns (Core: no ORM work per call).
_INBOUND = cast(Table, m.InboundMessage.__table__)
_ROW = select(_INBOUND.c.id).where(
    _INBOUND.c.id == bindparam("own"), _INBOUND.c.workspace_id == bindparam("workspace")
)
#: A row not read under its lock (a fresh one, stored.py) locked, then the wait as above, in one
#: statement: the subquery's FOR UPDATE locks the row before the outer select calls the lock
#: function (NULL for a message without a key: no wait). The row first, then the key: the
#: order in which the reading path takes them.
_LOCK_ROW_AND_WAIT = select(_WAIT_FOR_KEY.selected_columns[0]).select_from(
    _ROW.with_for_update().subquery("locked")
)


def _holder_of_key(*columns: Any) -> Select[Any]:
    """The other row of this workspace that took the key: bound `workspace`, `effect_key`
    (the key) and `own` (the row being processed)."""
    return select(*columns).where(
        _INBOUND.c.workspace_id == bindparam("workspace"),
        _INBOUND.c.effect_key == bindparam("effect_key"),
        _INBOUND.c.id != bindparam("own"),
    )


_HOLDER = _holder_of_key(_INBOUND.c.id, _INBOUND.c.lead_id)
#: The holder's id and lead as two columns of another read (matching's thread read), which
#: so answers this question too; its parameters are `holder_params`. (At most one row holds
#: a key: a unique index.)
HOLDER_COLUMNS = (
    _holder_of_key(_INBOUND.c.id).limit(1).scalar_subquery(),
    _holder_of_key(_INBOUND.c.lead_id).limit(1).scalar_subquery(),
)


@dataclass(frozen=True, slots=True)
class FirstCopy:
    id: int
    lead_id: int | None


@dataclass(frozen=True, slots=True)
class Holder:
    """What a read of `HOLDER_COLUMNS` found, after `wait_for_copies`: the copy that took the
    key (None: no other row has it)."""

    first: FirstCopy | None

    @classmethod
    def of(cls, holder_id: int | None, lead_id: int | None) -> Holder:
        return cls(FirstCopy(holder_id, lead_id) if holder_id is not None else None)


def holder_params(key: str | None, own_id: int) -> dict[str, Any]:
    """The parameters of `HOLDER_COLUMNS` (but `workspace`); a message without a key has no
    holder (`effect_key = NULL` matches no row)."""
    return {"effect_key": key, "own": own_id}


def wait_for_copies(uow: UnitOfWork, row: InboundRow, key: str | None) -> None:
    """On PostgreSQL, wait for a copy with this key processed at the same moment to commit,
    so that the reads after this statement see it; lock `row` first if it is not yet (SQLite
    transactions are serial)."""
    if not uow.postgres:
        return
    lock = int(key[:15], 16) if key is not None else None
    if not row.locked:
        uow.session.execute(_LOCK_ROW_AND_WAIT, {"lock": lock, "own": row.id, "workspace": uow.workspace_id})
        row.locked = True
    elif lock is not None:
        uow.session.execute(_WAIT_FOR_KEY, {"lock": lock})


def claim_effect(
    uow: UnitOfWork, row: InboundRow, key: str | None, status: str, read: Holder | None = None
) -> FirstCopy | None:
    """The copy that already took this effect, or None after `row` took it (in the caller's
    transaction). An unmatched message takes nothing: a later copy may still match. Call
    `wait_for_copies` first; `read`: the holder as a read after it found it (None: read it)."""
    if key is None:
        return None
    earlier = read.first if read is not None else _holder(uow, key, row.id)
    if earlier is None and status != "unmatched":
        row.effect_key = key  # the unique index stays the last line of defence
    return earlier


def _holder(uow: UnitOfWork, key: str, own_id: int) -> FirstCopy | None:
    params = {"workspace": uow.workspace_id, **holder_params(key, own_id)}
    found = uow.session.execute(_HOLDER, params).one_or_none()
    return FirstCopy(found.id, found.lead_id) if found is not None else None
