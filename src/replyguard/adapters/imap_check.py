"""Log in to an IMAP account and look at its folders, changing nothing: `mailbox test`.

Each answer is a `Check`: what was tried, whether it worked, and in words what happened (a
refused login, a server that does not answer, a folder that does not exist). Passwords appear
in no answer: the server's own words are scrubbed of it before they are shown.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError, LoginError

from replyguard.adapters.imap_source import ImapSource
from replyguard.adapters.oauth import TokenUnavailable


@dataclass(frozen=True, slots=True)
class Check:
    what: str  # "sending (SMTP)", "reading (IMAP)", "folder INBOX", ...
    ok: bool
    words: str


def _scrub(text: str, password: str) -> str:
    return text.replace(password, "***") if password else text


def check_imap(
    source: ImapSource,
    folders: Sequence[str],
    sent_folder: str | None = None,
    *,
    timeout: float = 30.0,
    ssl_context: ssl.SSLContext | None = None,
) -> list[Check]:
    """Connect, log in, then EXAMINE each folder (read-only: nothing is marked or moved)."""
    where = f"{source.host}:{source.port}"
    try:
        client = IMAPClient(
            source.host, port=source.port, ssl=source.tls == "ssl", ssl_context=ssl_context, timeout=timeout
        )
    except (OSError, IMAPClientError) as exc:
        return [Check("reading (IMAP)", False, f"cannot connect to {where}: {_reason(exc)}")]
    try:
        if source.tls == "starttls":
            client.starttls(ssl_context)
        source.login(client)
    except TokenUnavailable as exc:
        client.shutdown()
        return [Check("reading (IMAP)", False, f"no OAuth2 access token for {source.user}: {exc}")]
    except LoginError as exc:
        client.shutdown()
        said = _scrub(str(exc), source.password)
        return [Check("reading (IMAP)", False, f"{where} refused the login of {source.user}: {said}")]
    except (OSError, IMAPClientError) as exc:
        client.shutdown()
        return [Check("reading (IMAP)", False, f"{where} did not let us log in: {_reason(exc)}")]
    secured = "TLS" if source.tls != "none" else "no TLS (loopback)"
    found = [Check("reading (IMAP)", True, f"logged in to {where} ({secured}) as {source.user}")]
    looks = [(folder, "watched folder") for folder in folders]
    if sent_folder:
        looks.append((sent_folder, "Sent folder"))
    try:
        for folder, role in looks:
            found.append(_examine(client, folder, role))
    finally:
        try:
            client.logout()
        except (OSError, IMAPClientError):
            client.shutdown()
    return found


def _examine(client: IMAPClient, folder: str, role: str) -> Check:
    try:
        info = client.select_folder(folder, readonly=True)
    except (OSError, IMAPClientError) as exc:
        return Check(f"{role} {folder}", False, f"cannot open {folder!r}: {_reason(exc)}")
    count = int(info.get(b"EXISTS", 0))
    return Check(f"{role} {folder}", True, f"{folder!r} opens ({count} message(s))")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (nothing listens on that port)"
    if isinstance(exc, socket.timeout | TimeoutError):
        return "no answer in time"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({exc.reason or exc.__class__.__name__})"
    if isinstance(exc, socket.gaierror):
        return "the host name does not resolve"
    text = str(exc).strip()
    return text[:300] if text else exc.__class__.__name__
