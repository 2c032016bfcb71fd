"""Send keys and Message-IDs.

A step's `send_key` is an HMAC of its workspace secret, enrollment and position: stable across
retries, workers and restarts, unguessable from outside. Its Message-ID is derived from the
key, so a reply's In-Reply-To leads straight back to the step, and the same step can never be
sent under two identities.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from replyguard.domain.addresses import strip_comments

_OUR_ID = re.compile(r"^<rg\.([0-9a-f]{32})@[^<>@]+>$", re.IGNORECASE)
# An id in angle brackets (whatever whitespace a fold left inside), or a bare `local@domain`
# token: clients and gateways write both, and some drop the brackets altogether.
_ID_TOKEN = re.compile(r"<([^<>]*)>|([^\s<>,;\"]+@[^\s<>,;\"]+)")
# Whitespace a fold left, and control characters (a NUL cannot be stored, nor is it ever a real
# part of an id).
_SPACE = re.compile(r"[\s\x00-\x1f\x7f]+")
#: Ids read from one header at most: a References header of a long thread has a few hundred.
MAX_IDS = 1000
#: Ids kept in a message's References (ours always among them, then the newest).
MAX_REFERENCES = 50


def send_key(workspace_secret: str, enrollment_id: int, position: int) -> str:
    message = f"{enrollment_id}:{position}".encode()
    return hmac.new(workspace_secret.encode(), message, hashlib.sha256).hexdigest()[:32]


def message_id_for(key: str, domain: str) -> str:
    return f"<rg.{key}@{domain}>"


def message_ids_in(header_value: str) -> list[str]:
    """Every Message-ID in a header value, in order, each as `<local@domain>` without spaces.

    Real headers are not what RFC 5322 draws: ids without angle brackets, a fold or spaces
    inside the brackets (`< id@x >`), a comment glued after an id (`<id@x>(Dana)`), phrases
    between ids (old `In-Reply-To: Dana's message of ... <id@x>`). Comments are dropped first,
    so an id quoted inside one does not count. At most MAX_IDS ids are read.
    """
    found: list[str] = []
    for match in _ID_TOKEN.finditer(strip_comments(header_value or "")):
        inner = _SPACE.sub("", match.group(1) if match.group(1) is not None else match.group(2))
        if inner:
            found.append(f"<{inner}>")
            if len(found) >= MAX_IDS:
                break
    return found


def normalize_message_id(header_value: str) -> str | None:
    """A message's own Message-ID as one canonical string (the first id found), or None."""
    ids = message_ids_in(header_value)
    return ids[0][:998] if ids else None


def send_key_of(message_id: str) -> str | None:
    """The send key inside one of our Message-IDs (`<rg.KEY@domain>`), else None."""
    found = _OUR_ID.match(message_id)
    return found.group(1).lower() if found else None


def send_keys_in(header_value: str) -> list[str]:
    """Our send keys referenced in an In-Reply-To or References header, newest first."""
    keys = (send_key_of(mid) for mid in reversed(message_ids_in(header_value)))
    return [key for key in keys if key]


def parent_id(ids: list[str]) -> str | None:
    """The In-Reply-To id to follow: ours when one is listed (even after a foreign one)."""
    return next((mid for mid in ids if send_key_of(mid)), ids[0] if ids else None)


def thread_references(ids: list[str], limit: int = MAX_REFERENCES) -> tuple[str, ...]:
    """At most `limit` ids of a References list, in their order: every one of ours first,
    then the newest of the others (a References list runs oldest first, and a long one may
    hold our id anywhere — at its root, or near its end)."""
    ours = [i for i, mid in enumerate(ids) if send_key_of(mid)][-limit:]
    room = limit - len(ours)
    others = [i for i, mid in enumerate(ids) if not send_key_of(mid)]
    keep = set(ours) | set(others[len(others) - room :] if room > 0 else [])
    return tuple(mid for i, mid in enumerate(ids) if i in keep)


def unsubscribe_token(workspace_secret: str, key: str) -> str:
    """`KEY.SIG`: names the step, and proves we issued it (RFC 8058 one-click, mailto)."""
    sig = hmac.new(workspace_secret.encode(), f"unsubscribe:{key}".encode(), hashlib.sha256).hexdigest()
    return f"{key}.{sig[:20]}"


def check_unsubscribe_token(workspace_secret: str, token: str) -> str | None:
    """The send key inside a valid token, or None (compared in constant time)."""
    key, _, _sig = token.partition(".")
    return key if hmac.compare_digest(unsubscribe_token(workspace_secret, key), token) else None


def bounce_token(workspace_secret: str, key: str) -> str:
    """`KEY.SIG` of the return path (VERP): a bounce sent to it names the step, and the
    signature proves we wrote the address, so it cannot be made up for another lead."""
    sig = hmac.new(workspace_secret.encode(), f"bounce:{key}".encode(), hashlib.sha256).hexdigest()
    return f"{key}.{sig[:20]}"


def check_bounce_token(workspace_secret: str, token: str) -> str | None:
    """The send key inside a valid bounce token, or None (compared in constant time)."""
    key, _, _sig = token.partition(".")
    return key if hmac.compare_digest(bounce_token(workspace_secret, key), token) else None


#: The tag of our return path: `local+bounces-KEY.SIG@domain`.
BOUNCE_TAG = "+bounces-"


def bounce_address(workspace_secret: str, key: str, from_address: str) -> str:
    """The envelope sender of one send: the From mailbox with a signed tag naming the step."""
    local, _, domain = from_address.partition("@")
    return f"{local}{BOUNCE_TAG}{bounce_token(workspace_secret, key)}@{domain}"
