"""Inbound messages kept for a person: refused at the door, and the retries of quarantined ones.

A message whose processing failed every attempt is **quarantined** by ingest.py (its status,
error and attempts recorded, an event written, a notice asking a person to look; the sources
have moved on long before). A message over a limit at the door is **refused**: its reason and
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

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.inbound.status import InboundStatus, check_inbound_move
from replyguard.domain.inbound.storable import storable_text
from replyguard.service_layer.inbound.ingest import (
    MAX_SOURCE,
    IngestResult,
    insert_once,
    notify_kept,
    process_stored,
)
from replyguard.service_layer.runtime import Runtime

log = logging.getLogger(__name__)

#: A row younger than this may still be in its first processing: `retry_stored` leaves it.
SETTLE = timedelta(minutes=1)


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
            notify_kept(
                uow, "inbound_refused", row, "Refused at the door; the original stays with the source."
            )
        uow.commit()
    log.warning("%s: refused (kept as inbound %s): %s", source, inbound_id, reason)
    return inbound_id


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
