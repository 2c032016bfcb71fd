"""Rebuild a MIME message from a provider's parsed fields (when it did not send raw MIME).

The result must thread like the original: every header the provider passed on (Message-ID,
In-Reply-To, References, Auto-Submitted, ...) is kept. It must also be deterministic: a
provider retrying the same payload must produce the same bytes, so that the store recognises
the duplicate; boundaries are therefore derived from the content, never random.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage

log = logging.getLogger(__name__)

#: Headers the rebuilt body defines itself; copying the original's would describe the wrong body.
STRUCTURAL = frozenset({"content-type", "content-transfer-encoding", "mime-version", "content-length"})
_HEADER_NAME = re.compile(r"^[!-9;-~]{1,76}$")
#: Headers copied into a rebuilt message; a real one has a few dozen (Received chains included).
MAX_HEADERS = 1000
_BREAKS = re.compile(r"[\r\n\0]+[ \t]*")


@dataclass(frozen=True, slots=True)
class Attachment:
    filename: str
    content_type: str
    data: bytes


def compose(
    headers: Iterable[tuple[str, str]],
    text: str | None,
    html: str | None,
    attachments: Sequence[Attachment] = (),
) -> bytes:
    """A CRLF MIME message with `headers` (in order), a text and/or HTML body, attachments.

    Header values are unfolded and stripped of CR/LF/NUL; a header the email package refuses
    is dropped with a log line rather than failing the whole message.
    """
    msg = EmailMessage(policy=policy.SMTP)
    for count, (name, value) in enumerate(headers):
        if count >= MAX_HEADERS:
            log.warning("dropped headers past the first %s while rebuilding a message", MAX_HEADERS)
            break
        if name.lower() in STRUCTURAL or not _HEADER_NAME.match(name):
            continue
        try:
            msg[name] = _BREAKS.sub(" ", value).strip()
        except (ValueError, TypeError, IndexError) as exc:
            log.warning("dropped header %s while rebuilding a message: %s", name, exc)
    if text is not None or html is None:
        msg.set_content(text or "")
        if html is not None:
            msg.add_alternative(html, subtype="html")
    else:
        msg.set_content(html, subtype="html")
    for item in attachments:
        _attach(msg, item)
    _fix_boundaries(msg)
    return _serialise(msg)


def _serialise(msg: EmailMessage) -> bytes:
    try:
        return msg.as_bytes()
    except UnicodeEncodeError:
        # A header that cannot be written in ASCII without changing its meaning (a non-ASCII
        # Message-ID: an encoded word there would be another id) is written as raw UTF-8, as
        # RFC 6532 allows and as the copy the mail server received has it. Deterministic:
        # the same payload always takes the same path.
        return msg.as_bytes(policy=policy.SMTPUTF8)


def _attach(msg: EmailMessage, item: Attachment) -> None:
    maintype, _, subtype = item.content_type.partition(";")[0].strip().lower().partition("/")
    if maintype in ("", "multipart", "message", "text") or not subtype:
        # Bytes content for these types needs special handling by the email package; the
        # attachment's bytes matter here, not its exact type.
        maintype, subtype = "application", "octet-stream"
    msg.add_attachment(item.data, maintype=maintype, subtype=subtype, filename=item.filename or None)


def _fix_boundaries(msg: EmailMessage) -> None:
    # The digest of the message without boundaries decides them: same content, same bytes.
    parts = [p for p in msg.walk() if p.is_multipart()]
    if not parts:
        return
    for index, part in enumerate(parts):
        part.set_boundary(f"rg-placeholder-{index}")
    seed = hashlib.sha256(_serialise(msg)).hexdigest()[:32]
    for index, part in enumerate(parts):
        part.set_boundary(f"=_rg_{seed}_{index}")


def header_pairs(block: str) -> list[tuple[str, str]]:
    """(name, unfolded value) pairs from a raw header block, in order (SendGrid `headers`)."""
    pairs: list[tuple[str, str]] = []
    for line in block.replace("\r\n", "\n").split("\n"):
        if line[:1] in (" ", "\t") and pairs:
            name, value = pairs[-1]
            pairs[-1] = (name, f"{value} {line.strip()}")
        elif ":" in line:
            name, _, value = line.partition(":")
            pairs.append((name.strip(), value.strip()))
    return pairs
