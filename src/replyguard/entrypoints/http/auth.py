"""Webhook authentication checks: pure functions, constant-time compares, no I/O.

Each returns normally or raises `Rejected` with a reason meant for logs, never for the caller.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from datetime import datetime, timedelta

from replyguard.domain.provider_retries import CLOCK_SKEW

MAX_TOKEN = 200


class Rejected(Exception):
    """The request is not provably from the provider; answer 401/403 and record nothing."""


def same(given: str, expected: str) -> bool:
    """Constant-time equality of two strings (any characters; compared as UTF-8 bytes)."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


def verify_mailgun(
    signing_key: str, timestamp: str, token: str, signature: str, *, now: datetime, max_age: timedelta
) -> None:
    """Mailgun: hex HMAC-SHA256(signing key, timestamp + token) == signature, signed at most
    `max_age` ago (Mailgun retries with the original timestamp) and at most the clock skew ahead.

    Age alone does not stop a replay: the caller claims the token once (webhook_nonces).
    """
    if not timestamp or not token or not signature or len(token) > MAX_TOKEN:
        raise Rejected("signature fields missing or malformed")
    expected = hmac.new(signing_key.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()
    if not same(signature.lower(), expected):
        raise Rejected("signature mismatch")
    try:
        signed_at = datetime.fromtimestamp(int(timestamp), tz=now.tzinfo)
    except (ValueError, OverflowError, OSError):
        raise Rejected("timestamp is not a number of seconds") from None
    if signed_at - now > CLOCK_SKEW:
        raise Rejected(f"timestamp {timestamp} is more than {CLOCK_SKEW} ahead of now")
    if now - signed_at > max_age:
        raise Rejected(f"timestamp {timestamp} is older than {max_age}, past the provider's retries")


def verify_basic(authorization: str | None, user: str, password: str) -> None:
    """HTTP Basic credentials equal to (user, password); both compared in full, constant time."""
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() != "basic":
        raise Rejected("no basic credentials")
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise Rejected("malformed basic credentials") from None
    given_user, sep, given_password = decoded.partition(":")
    user_ok = same(given_user, user)
    password_ok = same(given_password, password)
    if not (sep and user_ok and password_ok):
        raise Rejected("wrong basic credentials")


def verify_secret(given: str | None, secret: str) -> None:
    """A shared secret carried in the URL, compared in constant time."""
    if not given or not same(given, secret):
        raise Rejected("wrong or missing URL secret")
