"""How each inbound source is doing: the last completed read and the last error.

Written by the pollers (`pollers.py` wires a `RecordedHealth` into each), read by the
inbound page and /metrics. An error message is stored without the source's password (a
server may echo what it was sent) and cut to 500 characters.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sqlalchemy import update
from sqlalchemy.exc import SQLAlchemyError

from replyguard.adapters.db import models as m
from replyguard.service_layer.runtime import Runtime

log = logging.getLogger(__name__)


def redact(message: str, secret: str) -> str:
    text = message.replace(secret, "…") if secret else message
    return text[:500]


@dataclass(frozen=True, slots=True)
class RecordedHealth:
    """The poller's health port, backed by its `mailbox_cursors` row. Never raises: a
    database that is down must not stop the poller (it retries on its own)."""

    app: Runtime
    key: str
    secret: str = field(default="", repr=False)

    def polled(self) -> None:
        self._write(last_poll_at=self.app.clock.now())

    def failed(self, message: str) -> None:
        self._write(
            last_error=redact(message, self.secret),
            last_error_at=self.app.clock.now(),
            error_count=m.MailboxCursor.error_count + 1,
        )

    def _write(self, **values: object) -> None:
        try:
            with self.app.uow() as uow:
                uow.session.execute(
                    update(m.MailboxCursor)
                    .where(
                        m.MailboxCursor.workspace_id == uow.workspace_id,
                        m.MailboxCursor.source_key == self.key,
                    )
                    .values(**values)
                )
                uow.commit()
        except SQLAlchemyError as exc:
            log.warning("could not record the health of %s: %s", self.key, exc.__class__.__name__)
