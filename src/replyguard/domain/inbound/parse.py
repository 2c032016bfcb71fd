"""Bytes to a parsed message, and the few safe readers every rule uses.

Contract: `parse_message` never raises anything but `MessageParseError`, and the readers
below (`header`, `body_parts`, `decode_part`) never raise at all: inbound mail is hostile or
broken often enough that one bad header must not lose a reply. Undecodable bytes become
replacement characters; unknown charsets fall back to UTF-8 then Latin-1.

Why compat32: the message is an `EmailMessage`, but parsed with the compat32 policy and its
headers decoded here (RFC 2047 words, raw 8-bit UTF-8, folding). policy.default builds a
structured header object on every read and made parsing plus classification about 7 times
slower (about 250 messages per second on the corpus, far from our 1,000), while the rules only
need text. `header()` gives the same answer for a message parsed with either policy, so
callers may pass their own policy.default messages to `classify_message`.
"""

from __future__ import annotations

import codecs
import email.header
import re
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser

from replyguard.domain.inbound.htmltext import html_to_text
from replyguard.domain.inbound.read_bounds import MAX_HTML_CHARS, MAX_TEXT_CHARS, bound, cut_tags, cut_text

_PARSER = BytesParser(_class=EmailMessage, policy=policy.compat32)
# Charsets that mail clients label wrongly all the time: iso-8859-1 text written on Windows
# carries cp1252 quotes and dashes, and gb2312 is really gbk.
_CHARSET_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "us-ascii": "cp1252", "gb2312": "gbk"}
_MAX_PARTS = 200
_SURROGATE = re.compile("[\udc80-\udcff]")  # raw 8-bit header bytes, as compat32 keeps them


class MessageParseError(ValueError):
    """The input cannot be read as an email message at all (empty, not bytes, no headers)."""


@dataclass(frozen=True, slots=True)
class Body:
    """The displayable text of a message's own body (not of attached or returned messages)."""

    plain: str
    html: str
    cuts: tuple[str, ...] = ()  # "limit:..." evidence: what of the text was not read


def parse_message(raw: bytes) -> EmailMessage:
    """Parse raw RFC 5322 bytes. Raises MessageParseError only, and only for non-mail input."""
    if not isinstance(raw, bytes | bytearray | memoryview):
        raise MessageParseError("a message must be bytes")
    data = bytes(raw).lstrip(b"\r\n")  # some fixtures and mbox exports start with blank lines
    if not data.strip():
        raise MessageParseError("the message is empty")
    if data.startswith(b"From ") and b"\n" in data:
        data = data.split(b"\n", 1)[1]  # an mbox "From " envelope line is not a header
    data, cuts = bound(data)  # bounded cost: headers and size cut before the parser sees them
    try:
        msg = _PARSER.parsebytes(data)
    except Exception as exc:  # the stdlib parser has rare internal errors on garbage
        raise MessageParseError(f"unreadable message: {exc.__class__.__name__}") from exc
    if not isinstance(msg, EmailMessage) or not list(_safe_keys(msg)):
        raise MessageParseError("no header found: this is not an email message")
    msg.replyguard_limits = cuts  # type: ignore[attr-defined]
    return msg


_HEADER_FIELD = re.compile(rb"[!-9;-~]+[ \t]*:")


def not_mail(raw: bytes) -> str | None:
    """Why `raw` is not an email message at all, or None when it may be one: it is empty, or
    it does not begin with a header field (`Name: value`), the way `parse_message` would find
    no header. Cheap: only the first line is read. What a file must pass before it is stored,
    so that a README or a CSV given to `ingest` by mistake is refused, not kept for good."""
    data = bytes(raw).lstrip(b"\r\n")
    if not data.strip():
        return "it is empty"
    if data.startswith(b"From ") and b"\n" in data:
        data = data.split(b"\n", 1)[1]  # an mbox "From " envelope line is not a header
    if not _HEADER_FIELD.match(data):
        return "no header section (an email begins with lines like 'From: ...')"
    return None


def limits_of(msg: Message) -> tuple[str, ...]:
    """The 'limit:...' evidence of what `parse_message` did not read of this message."""
    cuts = getattr(msg, "replyguard_limits", ())
    return tuple(cuts) if isinstance(cuts, tuple) else ()


def _safe_keys(msg: Message) -> list[str]:
    try:
        return list(msg.keys())
    except Exception:
        return []


def _decode_words(value: str) -> str:
    try:
        return str(email.header.make_header(email.header.decode_header(value)))
    except Exception:  # a malformed encoded word: show it as it came
        return value


def _text_of_raw(value: str) -> str:
    """A raw header value as text: 8-bit bytes read as UTF-8 (else cp1252), words decoded."""
    if _SURROGATE.search(value):
        data = value.encode("utf-8", "surrogateescape")
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError:
            value = data.decode("cp1252", errors="replace")
    if "=?" in value:
        value = _decode_words(value)
    return " ".join(value.split())


_FIRST = "_replyguard_first"  # lower-cased name -> first raw value, built once per message
_DECODED = "_replyguard_decoded"  # lower-cased name -> decoded value, filled as asked


def _first_values(msg: Message) -> dict[str, str]:
    first = getattr(msg, _FIRST, None)
    if isinstance(first, dict):
        return first
    first = {}
    for key, raw in msg.raw_items():
        first.setdefault(key.lower(), str(raw))
    setattr(msg, _FIRST, first)
    setattr(msg, _DECODED, {})
    return first


def header(msg: Message, name: str) -> str:
    """The first such header's decoded value, '' when absent; never raises. The rules ask a
    message for the same headers many times: names and decoded values are kept on the message
    (which the classifier never changes) after the first read."""
    wanted = name.lower()
    raw = _first_values(msg).get(wanted)
    if raw is None:
        return ""
    decoded: dict[str, str] = getattr(msg, _DECODED)
    value = decoded.get(wanted)
    if value is None:
        value = decoded[wanted] = _text_of_raw(raw)
    return value


def header_names(msg: Message) -> set[str]:
    """Lower-cased names of every header present."""
    return {k.lower() for k in _safe_keys(msg)}


def raw_header(msg: Message, name: str) -> str | None:
    """The undecoded header value, or None when absent (to tell `<>` from missing)."""
    for key, raw in msg.raw_items():
        if key.lower() == name.lower():
            return str(raw).strip()
    return None


_TEXT = "_replyguard_text"  # a part's decoded text, kept on the part: the rules read it twice
_CTYPE = "_replyguard_ctype"  # a part's content type, kept on the part: asked dozens of times


def content_type(part: Message) -> str:
    """`part.get_content_type()`, computed once per part (the stdlib parses the header each time)."""
    cached = getattr(part, _CTYPE, None)
    if isinstance(cached, str):
        return cached
    ctype = part.get_content_type()
    setattr(part, _CTYPE, ctype)
    return ctype


def decode_part(part: Message) -> str:
    """A leaf part's payload as text, whatever its transfer encoding and charset claim.
    Decoded once per part object."""
    cached = getattr(part, _TEXT, None)
    if isinstance(cached, str):
        return cached
    text = _decode_part(part)
    setattr(part, _TEXT, text)
    return text


def _decode_part(part: Message) -> str:
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if not isinstance(payload, bytes):
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    try:
        declared = (part.get_content_charset() or "utf-8").lower()
    except Exception:
        declared = "utf-8"
    charset = _CHARSET_ALIASES.get(declared, declared)
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"
    try:
        return payload.decode(charset)
    except (UnicodeDecodeError, LookupError):
        try:
            return payload.decode("utf-8")
        except UnicodeDecodeError:
            return payload.decode("cp1252", errors="replace")


def _is_attachment(part: Message) -> bool:
    try:
        return (part.get_content_disposition() or "") == "attachment"
    except Exception:
        return False


def body_parts(msg: Message) -> list[Message]:
    """Leaf parts of the message's own body, in order; never descends into attached messages."""
    out: list[Message] = []
    stack: list[Message] = [msg]
    while stack and len(out) < _MAX_PARTS:
        part = stack.pop(0)
        ctype = content_type(part)
        if ctype.startswith("message/"):
            continue  # returned or forwarded messages are not this sender's words
        if part.is_multipart():
            payload = part.get_payload()
            if isinstance(payload, list):
                stack[0:0] = [p for p in payload if isinstance(p, Message)]
            continue
        out.append(part)
    return out


_OWN_PARTS = "_replyguard_own_parts"  # the list, kept on the message: several rules ask for it


def own_parts(msg: Message) -> list[Message]:
    """Every part of the message itself, containers included, but not of attached messages.
    Computed once per message object (the classifier's rules each ask; the parts never change
    after parsing)."""
    cached = getattr(msg, _OWN_PARTS, None)
    if isinstance(cached, list):
        return cached
    out = _own_parts(msg)
    setattr(msg, _OWN_PARTS, out)
    return out


def _own_parts(msg: Message) -> list[Message]:
    out: list[Message] = []
    stack: list[Message] = [msg]
    while stack and len(out) < _MAX_PARTS:
        part = stack.pop(0)
        out.append(part)
        if part is not msg and content_type(part) in {"message/rfc822", "message/global"}:
            continue
        payload = part.get_payload() if part.is_multipart() else None
        if isinstance(payload, list) and not content_type(part).startswith("message/"):
            stack[0:0] = [p for p in payload if isinstance(p, Message)]
    return out


def extract_body(msg: Message) -> Body:
    """The first inline text/plain and text/html of the message's own body."""
    plain = html = ""
    for part in body_parts(msg):
        ctype = content_type(part)
        if _is_attachment(part):
            continue
        if (ctype == "text/plain" or ctype.startswith("multipart/")) and not plain.strip():
            # A multipart whose boundary never appears is left as one text leaf by the parser.
            plain = decode_part(part)
        elif ctype == "text/html" and not html.strip():
            html = decode_part(part)
    cuts: list[str] = []
    plain = cut_text(plain, MAX_TEXT_CHARS, "text", cuts)
    html = cut_tags(cut_text(html, MAX_HTML_CHARS, "html", cuts), cuts)
    return Body(plain=plain.replace("\r\n", "\n").replace("\r", "\n"), html=html, cuts=tuple(cuts))


def body_text(body: Body) -> str:
    """The full body as plain text: text/plain when present, otherwise the HTML rendered."""
    if body.plain.strip():
        return body.plain
    return html_to_text(body.html) if body.html else ""
