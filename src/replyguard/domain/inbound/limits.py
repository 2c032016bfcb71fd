"""Limits on one inbound message, checked on its bytes before any parsing. Pure.

Every source enforces the size while it reads (HTTP body, LMTP DATA, IMAP RFC822.SIZE, file
size), so that nothing over it is ever held in memory whole. `over_limit` is the check on the
bytes once they are here, before the parser sees them: size, the header section, and how
many MIME parts and multipart containers the message declares. The defaults sit well above
what providers deliver (SendGrid 30 MB, Postmark 35 MB of attachments, Gmail 25 MB); a
message over them is crafted or broken, and is kept for a person instead of processed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIB = 1024 * 1024

_BOUNDARY = re.compile(rb'boundary\s*=\s*"?([^";\r\n]{1,200})')  # on a lower-cased copy


@dataclass(frozen=True, slots=True)
class MessageLimits:
    max_bytes: int = 50 * MIB
    max_header_bytes: int = 1 * MIB  # everything before the first blank line
    max_parts: int = 10_000  # MIME delimiter lines
    max_multiparts: int = 100  # boundary parameters: multipart containers at any depth


#: How much of a refused message is kept: its header section, up to this.
HEAD_BYTES = 64 * 1024


def head_of(data: bytes, cap: int = HEAD_BYTES) -> bytes:
    """The header section of `data` (with its blank line), at most `cap` bytes."""
    end = header_length(data, cap)
    end += 2 if data[end : end + 2] == b"\n\n" else 3  # past "\n\n" or "\n\r\n"
    return data[: min(end, cap)]


def header_length(raw: bytes, within: int | None = None) -> int:
    """Bytes before the first blank line (the whole message when there is none), looking
    only at the first `within` bytes: past them the answer is "more than `within`"."""
    end = len(raw) if within is None else min(len(raw), within + 3)
    ends = [i for i in (raw.find(b"\n\n", 0, end), raw.find(b"\n\r\n", 0, end)) if i >= 0]
    return min(ends) if ends else end


def over_limit(raw: bytes, limits: MessageLimits) -> str | None:
    """Why `raw` exceeds `limits`, in words for a person; None when it does not.

    Linear in the size with small constants (C-level searches), whatever the content.
    """
    if len(raw) > limits.max_bytes:
        return f"message of {len(raw)} bytes is over the limit of {limits.max_bytes}"
    if header_length(raw, limits.max_header_bytes) > limits.max_header_bytes:
        return f"header section is over the limit of {limits.max_header_bytes} bytes"
    boundaries = set()
    # Parameter names are case-insensitive, values are not: search a lower-cased copy (five
    # times faster than a case-insensitive search) and read each value from the original.
    for found in _BOUNDARY.finditer(raw.lower()):
        boundaries.add(raw[found.start(1) : found.end(1)].strip())
        if len(boundaries) > limits.max_multiparts:
            return f"more than {limits.max_multiparts} multipart containers"
    # Every delimiter line starts with "--": counting those is an upper bound, and only a
    # message past it is counted exactly, boundary by boundary.
    if raw.count(b"\n--") > limits.max_parts:
        parts = sum(raw.count(b"\n--" + boundary) for boundary in boundaries)
        if parts > limits.max_parts:
            return f"{parts} MIME parts is over the limit of {limits.max_parts}"
    return None
