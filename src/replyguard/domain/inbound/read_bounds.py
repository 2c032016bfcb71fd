"""Bounded cost per message: what the classifier reads of a message, cut BEFORE parsing.

Contract: `bound(raw)` returns `(data, cuts)`: the bytes the parser may see and one evidence
entry per cut ("limit:..."), so a person can tell what was not read. The raw message itself is
stored whole by ingest; only classification reads less. Why these numbers:

- a header value over 32 KB is cut (References keeps its LAST 32 KB: our own Message-ID is
  among the newest ids, at the end); a header block over 256 KB is cut. Real headers are a few
  KB; a 760 KB Subject or 50,000 encoded words are attacks.
- the parser reads at most 1 MB of a message: the text a person writes, the DSN fields and the
  returned headers of a bounce all come before attachments; a 25 MB message is a 1 MB one.
- decoded text is cut at 64 KB (`MAX_TEXT_CHARS`), HTML at 256 KB: no rule reads further
  than the first screens, and every text rule is then linear in a bounded input.
- HTML is read up to its 4,000th tag: converting costs per tag, and nested or repeated tags
  cost seconds; a reply's own words come before the quoted history.
- MIME nesting deeper than 20 levels is flattened by cutting the message where it starts.
"""

from __future__ import annotations

import re

MAX_PARSE_BYTES = 1_000_000
MAX_HEADER_BLOCK = 256_000
MAX_HEADER_VALUE = 32_000
MAX_TEXT_CHARS = 64_000
MAX_HTML_CHARS = 256_000
MAX_DEPTH = 20
MAX_HTML_TAGS = 4_000

_BLANK = re.compile(rb"\r?\n\r?\n")
_FIELD_START = re.compile(rb"^[^\s:][^:\r\n]{0,200}:", re.MULTILINE)
_MULTIPART = re.compile(rb"^content-type:[ \t]*multipart/", re.IGNORECASE | re.MULTILINE)


def _split(data: bytes) -> tuple[bytes, bytes, bytes]:
    found = _BLANK.search(data, 0, MAX_HEADER_BLOCK * 4)
    if not found:
        return data, b"", b""
    return data[: found.start()], data[found.start() : found.end()], data[found.end() :]


def _cut_fields(head: bytes, cuts: list[str]) -> bytes:
    starts = [m.start() for m in _FIELD_START.finditer(head)] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    out: list[bytes] = []
    for begin, end in zip(starts, [*starts[1:], len(head)], strict=True):
        field = head[begin:end]
        if len(field) > MAX_HEADER_VALUE:
            name = field.split(b":", 1)[0].decode("ascii", "replace")[:40]
            if name.lower() == "references":
                tail = field[-MAX_HEADER_VALUE:]
                field = b"References: " + tail[tail.find(b"<") :] if b"<" in tail else b"References: \r\n"
            else:
                field = field[:MAX_HEADER_VALUE].rstrip(b"=?\r\n") + b"\r\n"
            cuts.append(f"limit:header-cut:{name}:{end - begin}-bytes")
        out.append(field if field.endswith(b"\n") else field + b"\r\n")
    return b"".join(out).rstrip(b"\r\n")


def _cut_depth(body: bytes, cuts: list[str]) -> bytes:
    """Cut where the 21st nested multipart starts (counted by Content-Type lines: cheap and
    an upper bound of the real depth)."""
    if body.lower().count(b"multipart/") <= MAX_DEPTH:
        return body  # the usual case, decided by a C scan (the regex is case-insensitive: slow)
    count = 0
    for match in _MULTIPART.finditer(body):
        count += 1  # noqa: SIM113
        if count > MAX_DEPTH:
            cuts.append(f"limit:mime-nesting-cut:{MAX_DEPTH}")
            return body[: match.start()]
    return body


def bound(raw: bytes) -> tuple[bytes, tuple[str, ...]]:
    """The bytes to parse and what was cut; see the module docstring."""
    cuts: list[str] = []
    head, sep, body = _split(raw)
    if len(head) > MAX_HEADER_VALUE:
        head = _cut_fields(head, cuts)
    if len(head) > MAX_HEADER_BLOCK:
        cuts.append(f"limit:header-block-cut:{len(head)}-bytes")
        head = head[:MAX_HEADER_BLOCK]
        head = head[: head.rfind(b"\n")] if b"\n" in head else head
    room = max(0, MAX_PARSE_BYTES - len(head))
    if len(body) > room:
        cuts.append(f"limit:body-cut:read-{room}-of-{len(body)}-bytes")
        body = body[:room]
        body = body[: body.rfind(b"\n") + 1] if b"\n" in body else body
    body = _cut_depth(body, cuts)
    return head + (sep or b"\r\n\r\n") + body, tuple(cuts)


def cut_tags(html: str, cuts: list[str]) -> str:
    """HTML cut after its first MAX_HTML_TAGS tags: the converter's cost is per tag, and a
    reply's own words come before the quoted history that makes long HTML long."""
    at, seen = 0, 0
    while seen < MAX_HTML_TAGS:
        at = html.find("<", at) + 1
        if at == 0:
            return html
        seen += 1
    cuts.append(f"limit:html-tags-cut:{MAX_HTML_TAGS}")
    return html[: at - 1]


def cut_text(text: str, limit: int, name: str, cuts: list[str]) -> str:
    """`text` cut to `limit` characters, noting the cut in `cuts`."""
    if len(text) <= limit:
        return text
    cuts.append(f"limit:{name}-cut:{limit}-of-{len(text)}-chars")
    return text[:limit]
