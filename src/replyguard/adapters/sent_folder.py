"""A copy of each sent email in the mailbox's Sent folder, by IMAP APPEND (marked \\Seen, dated
when it was handed over), for a provider that does not keep one itself
(`domain.sent_copies.provider_saves_sent`).

The copy is a courtesy to the person who owns the mailbox: it is appended after the send is
recorded, outside every lock, and a failure to append changes nothing about the send (it is
logged without the password, and the email stays sent). One connection per append, closed at
once: appends are as frequent as sends, and an idle IMAP session would only time out.
"""

from __future__ import annotations

import logging
import ssl
from datetime import datetime

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError

from replyguard.adapters.imap_source import ImapSource

log = logging.getLogger(__name__)


class SentFolder:
    """Appends to one account's Sent folder (`source.folder`)."""

    def __init__(
        self, source: ImapSource, *, timeout: float = 30.0, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.source = source
        self.timeout = timeout
        self.ssl_context = ssl_context

    def __repr__(self) -> str:
        return f"SentFolder({self.source.key!r})"

    def append(self, message: bytes, when: datetime) -> bool:
        """Append `message`; False (and a warning) when the server could not take it."""
        source = self.source
        try:
            client = IMAPClient(
                source.host,
                port=source.port,
                ssl=source.tls == "ssl",
                ssl_context=self.ssl_context,
                timeout=self.timeout,
            )
        except (OSError, IMAPClientError) as exc:
            log.warning("no copy in %s: cannot connect (%s)", source.key, exc.__class__.__name__)
            return False
        try:
            if source.tls == "starttls":
                client.starttls(self.ssl_context)
            client.login(source.user, source.password)
            client.append(source.folder, message, flags=(b"\\Seen",), msg_time=when)
            return True
        except (OSError, IMAPClientError) as exc:
            log.warning("no copy in %s: %s", source.key, exc.__class__.__name__)
            return False
        finally:
            try:
                client.logout()
            except (OSError, IMAPClientError):
                client.shutdown()
