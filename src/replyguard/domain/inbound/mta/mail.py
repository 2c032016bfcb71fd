"""The parts of a bounce the per-MTA readers look at, extracted once.

Contract: `Mail.of(msg, subject, fallback)` never raises. `notice` is the human-readable text of
the bounce: every text/plain part of its own (attachments too: appliances send the report as
"deliveryproblems.txt"), before the returned copy of our message; `fallback` (the classifier's
text, HTML rendered) when there is none. `dsn` is the fields of its message/delivery-status
parts as "Name: value" lines, per-recipient blocks separated by blank lines; `lines` both, in
that order, as sisimai reads a flattened bounce.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email import message_from_string
from email.message import Message

from replyguard.domain.inbound.parse import content_type, decode_part, header, own_parts

_MAX_DSN = 20_000
_MAX_NOTICE = 64_000
_RETURNED = frozenset({"message/rfc822", "message/global", "text/rfc822-headers", "message/rfc822-headers"})
# Exim, qmail and others paste the returned message after a line like these.
_RETURNED_COPY = re.compile(
    r"^[-\s]*(?:This is a copy of|Below this line is a copy|Original message follows|"
    r"--- Below this line|Undelivered message follows|Original message as received|"
    r"-+ ?Header of the (?:source|original) (?:mail|message)|-+ ?Original message ?-+|"
    r"-+ ?Message truncated|-+ ?The header of the original message)",
    re.IGNORECASE | re.MULTILINE,
)


_COPY_WORDS = ("copy", "below this line", "original message", "message follows", "message as received",
               "header of the", "message truncated")  # fmt: skip


def returned_copy_cut(text: str) -> str:
    """`text` up to the line that introduces a returned copy of the original message."""
    lowered = text.lower()
    if not any(word in lowered for word in _COPY_WORDS):
        return text  # a case-insensitive line scan costs more than this check
    return _RETURNED_COPY.split(text, 1)[0]


_MAX_LINES = 2_000


@dataclass(frozen=True, slots=True)
class Mail:
    msg: Message
    subject: str
    notice: str
    dsn: str
    lines: tuple[str, ...]
    _raw_headers: dict[str, list[str]]  # lower-cased name -> raw values, in order

    @classmethod
    def of(cls, msg: Message, subject: str, fallback: str) -> Mail:
        notice = (_notice(msg) or fallback).replace("\r\n", "\n").replace("\r", "\n")
        dsn = _dsn_text(msg)
        text = notice + ("\n\n" + dsn if dsn else "")
        raw: dict[str, list[str]] = {}
        for key, value in msg.raw_items():
            raw.setdefault(key.lower(), []).append(str(value))
        return cls(msg, subject, notice, dsn, tuple(text.split("\n")[:_MAX_LINES]), raw)

    def header(self, name: str) -> str:
        """The first such header, decoded ('' when absent)."""
        return header(self.msg, name) if name.lower() in self._raw_headers else ""

    def headers(self, name: str) -> list[str]:
        """Every raw value of a header (Received: appears many times)."""
        return self._raw_headers.get(name.lower(), [])[:50]


def _notice(msg: Message) -> str:
    texts: list[str] = []
    size = 0
    for part in own_parts(msg):
        ctype = content_type(part)
        if ctype in _RETURNED:
            break
        if ctype.startswith("multipart/") and not part.is_multipart():
            text = _unfolded_multipart(part)
        elif ctype != "text/plain" or part.is_multipart():
            continue
        else:
            text = decode_part(part)[:_MAX_NOTICE]
        texts.append(text)
        size += len(text)
        if size > _MAX_NOTICE:
            break
    return returned_copy_cut("\n".join(texts))[:_MAX_NOTICE]


_LOST_BOUNDARY = re.compile(r'^\s*boundary="?([^"\s;]+)"?', re.IGNORECASE)


def _unfolded_multipart(part: Message) -> str:
    """The text/plain parts of a multipart whose boundary parameter sits on an unfolded line
    (Exchange Online writes "...; differences=Content-Type;" then "boundary=..." unindented),
    which leaves the parser one undivided text. '' when the boundary cannot be recovered."""
    payload = part.get_payload()
    raw = payload if isinstance(payload, str) else ""
    found = _LOST_BOUNDARY.match(raw)
    if not found:
        return ""
    texts = []
    for chunk in raw.split("--" + found.group(1))[1:20]:
        inner = message_from_string(chunk.lstrip("\r\n"))
        if content_type(inner) == "text/plain":
            texts.append(decode_part(inner))
    return "\n".join(texts)[:_MAX_NOTICE]


def _utf8(value: str) -> str:
    """A DSN field as written: 8-bit bytes (RFC 6533's UTF-8 fields, or a server's localised
    diagnostic) are kept by the parser as surrogates; read them as UTF-8."""
    try:
        return value.encode("ascii", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return value  # already text


def _dsn_text(msg: Message) -> str:
    blocks: list[str] = []
    for part in own_parts(msg):
        if content_type(part) != "message/delivery-status":
            continue
        payload = part.get_payload()
        if isinstance(payload, list):
            for block in payload:
                if isinstance(block, Message):
                    blocks.append("\n".join(f"{k}: {_utf8(str(v))}" for k, v in block.raw_items()))
        else:
            blocks.append(decode_part(part))
    return "\n\n".join(blocks).replace("\r\n", "\n")[:_MAX_DSN]
