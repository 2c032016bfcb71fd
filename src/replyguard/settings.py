"""Settings read from the environment once, in the composition root."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta


def _seconds(name: str, default: float) -> timedelta:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return timedelta(seconds=default)
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {raw!r}")
    return timedelta(seconds=value)


def _secret(name: str) -> str | None:
    """An optional secret: unset or empty means "not configured"."""
    return os.environ.get(name) or None


def _count(name: str) -> int:
    raw = os.environ.get(name, "")
    if not raw.isdigit() or not 1 <= int(raw) <= 1000:
        raise ValueError(f"{name} must be a whole number from 1 to 1000, got {raw!r}")
    return int(raw)


def _bytes(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or int(raw) <= 0:
        raise ValueError(f"{name} must be a positive number of bytes, got {raw!r}")
    return int(raw)


@dataclass(frozen=True, slots=True)
class Settings:
    #: How long a claim stays valid before another worker may recover it. Must exceed the
    #: transport timeout, or SQLite (which does not hold a lock across the call) would see
    #: live sends as abandoned.
    lease: timedelta = timedelta(minutes=5)
    #: Backoff for transient transport errors: base * 2**(attempt-1), capped.
    retry_base: timedelta = timedelta(minutes=2)
    retry_cap: timedelta = timedelta(hours=2)
    max_attempts: int = 8
    claim_batch: int = 20
    #: Claimed steps re-checked, marked and recorded together (each email is still handed over
    #: on its own). Larger batches send faster; the price is paid only on a hard crash (kill
    #: -9, power loss) during a batch: every step of it whose outcome the transport cannot
    #: prove is held for a person, and replies to the batch's leads wait for the batch to
    #: finish. None: 10 for transports that can prove outcomes (Maildir), 1 for SMTP.
    send_batch: int | None = None
    #: Out-of-office: pause when no return date is found, and the longest pause we trust.
    default_pause: timedelta = timedelta(days=7)
    max_pause: timedelta = timedelta(days=60)
    public_url: str = "http://localhost:8000"
    poll_interval: float = 1.0
    #: Inbound webhook secrets. A provider whose secret is missing is disabled (its endpoint
    #: answers 404), never open. Kept out of repr so that they are never logged.
    mailgun_signing_key: str | None = field(default=None, repr=False)
    postmark_user: str | None = field(default=None, repr=False)
    postmark_password: str | None = field(default=None, repr=False)
    sendgrid_secret: str | None = field(default=None, repr=False)
    #: The largest inbound request body (webhook POST) accepted; larger ones get 413. Postmark
    #: sends every attachment twice (in `Attachments` and inside `RawEmail`, both base64):
    #: its 35 MB of attachments make about 95 MB of JSON.
    inbound_max_bytes: int = 100 * 1024 * 1024
    #: The largest message accepted from any source (LMTP SIZE, IMAP, files, a webhook's
    #: message); see domain/inbound/limits.py for the header, part and nesting limits.
    message_max_bytes: int = 50 * 1024 * 1024
    #: Webhook requests read and processed at once; more wait for a retry (429, or 503 for
    #: SendGrid, which retries only 5xx), each with Retry-After. Memory is about three times
    #: the body per request.
    inbound_max_concurrent: int = 4
    #: TEST-ONLY, NEVER IN PRODUCTION: skip the lead lock and the re-check at send time
    #: (env REPLYGUARD_UNSAFE_SKIP_RECHECK=1). It exists so the fault campaign can prove its
    #: checker catches a broken guard (tests/integration/test_torture_short.py).
    unsafe_skip_recheck: bool = False

    @classmethod
    def from_env(cls) -> Settings:
        defaults = cls()
        return cls(
            lease=_seconds("REPLYGUARD_LEASE_SECONDS", defaults.lease.total_seconds()),
            retry_base=_seconds("REPLYGUARD_RETRY_BASE_SECONDS", defaults.retry_base.total_seconds()),
            default_pause=_seconds(
                "REPLYGUARD_DEFAULT_PAUSE_SECONDS", defaults.default_pause.total_seconds()
            ),
            max_pause=_seconds("REPLYGUARD_MAX_PAUSE_SECONDS", defaults.max_pause.total_seconds()),
            public_url=os.environ.get("REPLYGUARD_PUBLIC_URL", defaults.public_url).rstrip("/"),
            mailgun_signing_key=_secret("REPLYGUARD_MAILGUN_SIGNING_KEY"),
            postmark_user=_secret("REPLYGUARD_POSTMARK_USER"),
            postmark_password=_secret("REPLYGUARD_POSTMARK_PASSWORD"),
            sendgrid_secret=_secret("REPLYGUARD_SENDGRID_SECRET"),
            inbound_max_bytes=_bytes("REPLYGUARD_INBOUND_MAX_BYTES", defaults.inbound_max_bytes),
            message_max_bytes=_bytes("REPLYGUARD_MESSAGE_MAX_BYTES", defaults.message_max_bytes),
            inbound_max_concurrent=(
                _count("REPLYGUARD_INBOUND_MAX_CONCURRENT")
                if os.environ.get("REPLYGUARD_INBOUND_MAX_CONCURRENT")
                else defaults.inbound_max_concurrent
            ),
            send_batch=_count("REPLYGUARD_SEND_BATCH") if os.environ.get("REPLYGUARD_SEND_BATCH") else None,
            unsafe_skip_recheck=os.environ.get("REPLYGUARD_UNSAFE_SKIP_RECHECK", "") == "1",
        )
