"""Inbound messages kept for a person: quarantined, refused, and their retries.

A message whose processing failed every attempt is **quarantined**: its status, error and
attempts are recorded, an event is written and a notice asks a person to look; the sources
have moved on long before. A message over a limit at the door is **refused**: its reason and
its head are kept (with a notice), nothing else happens. A person retries a quarantined
message with `replyguard inbound retry ID` once its cause is fixed.

`retry_stored` processes rows still `stored` after a while: a process that crashed between
the store and the processing, or a database that went away after the store. The long-running
commands (`serve`, `listen`, `poll`) run it periodically and `ingest` runs it first.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from replyguard.adapters.db import models as m
from replyguard.domain.inbound.status import InboundStatus, check_inbound_move
from replyguard.domain.inbound.storable import storable_text
from replyguard.service_layer.inbound.ingest import MAX_SOURCE, IngestResult, insert_once, process_stored
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.uow import UnitOfWork

log = logging.getLogger(__name__)

#: A row younger than this may still be in its first processing: `retry_stored` leaves it.
SETTLE = timedelta(minutes=1)
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
                return _result(row)
            row.status = check_inbound_move(row.status, InboundStatus.QUARANTINED)
            row.error = storable_text(error, 2000)[0]
            row.attempts += attempts
            row.processed_at = uow.clock.now()
            uow.add_event("inbound_quarantined", inbound_id=row.id, error=row.error[:500])
            _notify(uow, "inbound_quarantined", row, "Processing failed every attempt: look, then retry.")
            uow.commit()
            log.error("inbound %s quarantined after %s attempts: %s", inbound_id, row.attempts, row.error)
            return _result(row)
    except SQLAlchemyError as exc:
        log.error("inbound %s: could not record its failure (%s); kept as stored", inbound_id, exc.__class__)
        return IngestResult(inbound_id, False, InboundStatus.STORED, detail=error)


def keep_refused(app: Runtime, head: bytes, source: str, reason: str) -> int:
    """Keep what a person needs about a message refused at the door: its head and the reason.

    Returns the inbound id. A provider retrying the same refused request finds the same row.
    """
    # Keyed by what was seen, not by the head's Message-ID: two refusals with nothing read
    # are one row only when they are the same refusal (the same source, reason and head).
    key = hashlib.sha256(b"refused\0%s\0%s\0%s" % (source.encode(), reason.encode(), head)).hexdigest()
    with app.uow() as uow:
        inbound_id, existed = insert_once(
            uow,
            key,
            message_id=None,
            source=storable_text(source, MAX_SOURCE)[0],
            raw=head,
            status=InboundStatus.REFUSED,
            error=storable_text(reason, 2000)[0],
        )
        if not existed:
            row = uow.session.get_one(m.InboundMessage, inbound_id)
            _notify(uow, "inbound_refused", row, "Refused at the door; the original stays with the source.")
        uow.commit()
    log.warning("%s: refused (kept as inbound %s): %s", source, inbound_id, reason)
    return inbound_id


def notify_refused(uow: UnitOfWork, inbound_id: int) -> None:
    """Tell a person about a message stored whole but refused for its shape (see limits.py).

    The caller commits, with the store of that message.
    """
    row = uow.session.get_one(m.InboundMessage, inbound_id)
    _notify(uow, "inbound_refused", row, "Over a limit, so not processed: read it and act.")


def retry_stored(app: Runtime, *, settle: timedelta = SETTLE, limit: int = 100) -> list[IngestResult]:
    """Process rows left `stored` for longer than `settle` (oldest first, at most `limit`)."""
    with app.uow() as uow:
        ids = list(
            uow.session.scalars(
                select(m.InboundMessage.id)
                .where(
                    m.InboundMessage.workspace_id == uow.workspace_id,
                    m.InboundMessage.status == InboundStatus.STORED,
                    m.InboundMessage.received_at <= uow.clock.now() - settle,
                )
                .order_by(m.InboundMessage.id)
                .limit(limit)
            )
        )
    return [process_stored(app, inbound_id) for inbound_id in ids]


def retry(app: Runtime, inbound_ids: Iterable[int]) -> list[IngestResult]:
    """A person's retry: quarantined (or still stored) messages are processed again.

    LookupError for an id that is not in this workspace; IllegalInboundMove for a message
    that was processed already (its outcome stands; nothing is applied twice).
    """
    ids = list(dict.fromkeys(inbound_ids))
    with app.uow() as uow:
        for inbound_id in ids:
            row = uow.session.get(m.InboundMessage, inbound_id)
            if row is None or row.workspace_id != uow.workspace_id:
                raise LookupError(f"no inbound message {inbound_id} in this workspace")
            if row.status != InboundStatus.STORED:
                row.status = check_inbound_move(row.status, InboundStatus.STORED)
                uow.add_event("inbound_retried", inbound_id=row.id)
        uow.commit()
    return [process_stored(app, inbound_id) for inbound_id in ids]


def _notify(uow: UnitOfWork, kind: str, row: m.InboundMessage, recommendation: str) -> None:
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


def _result(row: m.InboundMessage) -> IngestResult:
    leads = (row.lead_id,) if row.lead_id else ()
    return IngestResult(row.id, False, row.status, row.kind, leads, row.error or "")


class Sweeper:
    """`retry_stored` every `interval` seconds on a thread of its own, for long-running sources.

    `with Sweeper(app): ...` — the thread stops (and is joined) on the way out. A failed sweep
    is logged and tried again at the next interval.
    """

    def __init__(self, app: Runtime, interval: float = SETTLE.total_seconds()) -> None:
        self.app, self.interval = app, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="inbound-sweeper", daemon=True)

    def __enter__(self) -> Sweeper:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                done = retry_stored(self.app)
            except Exception as exc:  # the next sweep tries again
                log.warning("inbound sweep failed: %s", exc.__class__.__name__)
                continue
            if done:
                log.info("inbound sweep processed %s messages left stored", len(done))
