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
transactions are serial anyway. A unique index on the key is the last line of defence.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy import BigInteger, bindparam, func, select

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
#: own statement, before the read of `_HOLDER`: a statement sees the rows committed before it
#: began, so a read in the statement that waited would miss the copy it waited for.
_WAIT_FOR_KEY = select(func.pg_advisory_xact_lock(bindparam("lock", type_=BigInteger)))
#: The other row of this workspace that took the key, if any.
_HOLDER = select(m.InboundMessage.id, m.InboundMessage.lead_id).where(
    m.InboundMessage.workspace_id == bindparam("workspace"),
    m.InboundMessage.effect_key == bindparam("key"),
    m.InboundMessage.id != bindparam("own"),
)


@dataclass(frozen=True, slots=True)
class FirstCopy:
    id: int
    lead_id: int | None


def claim_effect(uow: UnitOfWork, row: InboundRow, key: str | None, status: str) -> FirstCopy | None:
    """The copy that already took this effect, or None after `row` took it (in the caller's
    transaction). An unmatched message takes nothing: a later copy may still match."""
    if key is None:
        return None
    if uow.postgres:
        # Copies processed at the same moment wait here for each other's commit, so the
        # second one sees the first one's key below. (SQLite transactions are serial.)
        uow.session.execute(_WAIT_FOR_KEY, {"lock": int(key[:15], 16)})
    earlier = _holder(uow, key, row.id)
    if earlier is None and status != "unmatched":
        row.effect_key = key  # the unique index stays the last line of defence
    return earlier


def _holder(uow: UnitOfWork, key: str, own_id: int) -> FirstCopy | None:
    params = {"workspace": uow.workspace_id, "key": key, "own": own_id}
    found = uow.session.execute(_HOLDER, params).one_or_none()
    return FirstCopy(found.id, found.lead_id) if found is not None else None
