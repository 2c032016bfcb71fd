"""An LMTP (or plain SMTP) listener that feeds every delivered message to `ingest_raw`.

Put it behind the MTA that receives replies (Postfix `mailbox_transport = lmtp:inet:...`).
The delivery is acknowledged (250) only after `ingest_raw` returned, that is after the raw
message was durably stored; a storage error answers 451, a temporary failure, so the MTA
keeps the message and retries. Delivering the same message twice has one effect (the store
deduplicates). The database work runs in a worker thread, never on the event loop.

Lines: aiosmtpd splits DATA on CRLF and answers a permanent 500 to any "line" over 1,000
bytes; a message written with bare LF line ends is one such line up to its first CRLF, so a
real reply got a 500 and bounced. The line limit is therefore the message size limit (SIZE,
advertised): a message over it gets 552, which the MTA turns into a bounce to its sender.

There is no authentication: bind it to loopback or a private interface only.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP, Envelope, Session

from replyguard.bootstrap import App
from replyguard.service_layer.inbound.ingest import ingest_raw

log = logging.getLogger(__name__)

STORED = "250 2.0.0 Message stored"
NOT_STORED = "451 4.3.0 Could not store the message; try again later"
#: The largest message accepted (advertised as SIZE): `Settings.message_max_bytes` by default.
DATA_SIZE_LIMIT = 50 * 1024 * 1024


class IngestHandler:
    """aiosmtpd handler: DATA → `ingest_raw` in a thread → 250 or 451."""

    def __init__(self, app: App, source: str) -> None:
        self.app = app
        self.source = source

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or b""
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(None, ingest_raw, self.app, raw, self.source)
        except Exception:
            log.exception("%s: could not store a message from %s", self.source, session.peer)
            reply = NOT_STORED
        else:
            log.info("%s: inbound %s %s", self.source, result.inbound_id, result.status)
            reply = STORED
        if isinstance(server, LMTP):
            # LMTP answers DATA once per accepted recipient (RFC 2033 4.2); the message is
            # stored once, so every recipient gets the same answer.
            return "\r\n".join([reply] * max(1, len(envelope.rcpt_tos)))
        return reply


class Listener(Controller):
    """A threaded aiosmtpd server speaking LMTP (`lmtp=True`) or SMTP. `start()` / `stop()`."""

    def __init__(
        self,
        app: App,
        *,
        lmtp: bool = True,
        host: str = "127.0.0.1",
        port: int = 8024,
        data_size_limit: int = DATA_SIZE_LIMIT,
    ) -> None:
        self.lmtp, self.data_size_limit = lmtp, data_size_limit
        handler = IngestHandler(app, "lmtp" if lmtp else "smtp")
        super().__init__(handler, hostname=host, port=port, data_size_limit=data_size_limit)

    def factory(self) -> Any:
        # aiosmtpd reads the line limit from the class when it builds a connection's stream
        # reader; see the module docstring. Commands keep their own 512-byte limit.
        base = LMTP if self.lmtp else SMTP
        server_class = type(
            f"LongLines{base.__name__}", (base,), {"line_length_limit": self.data_size_limit + 2}
        )
        return server_class(self.handler, **self.SMTP_kwargs)
