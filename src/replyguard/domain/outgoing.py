"""An outgoing email as a value, and how it becomes RFC 5322 bytes.

Built with the stdlib `email` package and `policy.SMTP` (CRLF line ends). Every header value
is checked for CR, LF and NUL before it is set, whatever the caller already checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime

from replyguard.domain.addresses import UnsafeHeaderValue, check_header_value, format_address

_MSG_IDS = re.compile(r"^<[^<>\s@]+@[^<>\s@]+>(?: <[^<>\s@]+@[^<>\s@]+>)*$")

# RFC 5322 allows 998 octets a line. Folding at 78 would turn long header values without
# spaces (List-Unsubscribe URLs) into encoded words, which receivers then cannot act on.
SMTP_POLICY = policy.SMTP.clone(max_line_length=998)


@dataclass(frozen=True, slots=True)
class OutgoingEmail:
    send_key: str
    message_id: str
    from_name: str
    from_address: str
    to_name: str
    to_address: str
    subject: str
    body: str
    date: datetime
    in_reply_to: str | None = None
    references: str | None = None
    unsubscribe_url: str | None = None
    unsubscribe_mailto: str | None = None
    #: The envelope sender (MAIL FROM): our signed return path for this send (VERP,
    #: message_ids.bounce_address), so a bounce names the email; None: the From address.
    return_path: str | None = None


def build_message(email: OutgoingEmail) -> EmailMessage:
    msg = EmailMessage(policy=SMTP_POLICY)
    msg["From"] = format_address(email.from_name, email.from_address)
    msg["To"] = format_address(email.to_name, email.to_address)
    msg["Subject"] = check_header_value("subject", email.subject)
    msg["Date"] = format_datetime(email.date)
    msg["Message-ID"] = _ids("Message-ID", email.message_id)
    if email.in_reply_to:
        msg["In-Reply-To"] = _ids("In-Reply-To", email.in_reply_to)
    if email.references:
        msg["References"] = _ids("References", email.references)
    targets = []
    if email.unsubscribe_url:
        targets.append(f"<{check_header_value('unsubscribe URL', email.unsubscribe_url)}>")
    if email.unsubscribe_mailto:
        targets.append(f"<mailto:{check_header_value('unsubscribe address', email.unsubscribe_mailto)}>")
    if targets:
        msg["List-Unsubscribe"] = ", ".join(targets)
        if email.unsubscribe_url:
            # RFC 8058: the receiver may POST "List-Unsubscribe=One-Click" to the URL.
            msg["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    msg["X-Replyguard-Send-Key"] = email.send_key
    msg.set_content(email.body)
    return msg


def _ids(field: str, value: str) -> str:
    """Message-ID style headers: only well-formed `<local@domain>` lists get through."""
    check_header_value(field, value)
    if not _MSG_IDS.match(value):
        raise UnsafeHeaderValue(f"{field} is not a list of <id@domain> message ids: {value!r}")
    return value


def message_bytes(email: OutgoingEmail) -> bytes:
    return build_message(email).as_bytes(policy=SMTP_POLICY)
