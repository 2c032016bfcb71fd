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

_OUR_ID = re.compile(r"<?rg\.([0-9a-f]{32})@[^>\s]+>?", re.IGNORECASE)


def send_key(workspace_secret: str, enrollment_id: int, position: int) -> str:
    message = f"{enrollment_id}:{position}".encode()
    return hmac.new(workspace_secret.encode(), message, hashlib.sha256).hexdigest()[:32]


def message_id_for(key: str, domain: str) -> str:
    return f"<rg.{key}@{domain}>"


def send_keys_in(header_value: str) -> list[str]:
    """Our send keys referenced in an In-Reply-To or References header, newest first."""
    return [m.lower() for m in reversed(_OUR_ID.findall(header_value or ""))]


def unsubscribe_token(workspace_secret: str, key: str) -> str:
    """`KEY.SIG`: names the step, and proves we issued it (RFC 8058 one-click, mailto)."""
    sig = hmac.new(workspace_secret.encode(), f"unsubscribe:{key}".encode(), hashlib.sha256).hexdigest()
    return f"{key}.{sig[:20]}"


def check_unsubscribe_token(workspace_secret: str, token: str) -> str | None:
    """The send key inside a valid token, or None (compared in constant time)."""
    key, _, _sig = token.partition(".")
    return key if hmac.compare_digest(unsubscribe_token(workspace_secret, key), token) else None
