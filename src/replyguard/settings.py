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


#: The public URL when REPLYGUARD_PUBLIC_URL is not set: right for a trial on this machine only.
DEFAULT_PUBLIC_URL = "http://localhost:8000"


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
    #: Where `replyguard serve` is reached from outside: List-Unsubscribe links and the links
    #: in notices start with it (REPLYGUARD_PUBLIC_URL).
    public_url: str = DEFAULT_PUBLIC_URL
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
    #: The authserv-ids of our own receiving side (env REPLYGUARD_AUTHSERV_ID, comma-separated,
    #: e.g. "mx.google.com"): only Authentication-Results headers naming one of them are
    #: believed. Empty: the topmost header is (see domain/authentication.py).
    authserv_ids: tuple[str, ...] = ()

    @property
    def public_url_unset(self) -> bool:
        """REPLYGUARD_PUBLIC_URL was not set: unsubscribe links point at this machine."""
        return self.public_url == DEFAULT_PUBLIC_URL

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
            public_url=(os.environ.get("REPLYGUARD_PUBLIC_URL") or defaults.public_url).rstrip("/"),
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
            authserv_ids=tuple(
                part.strip().lower()
                for part in os.environ.get("REPLYGUARD_AUTHSERV_ID", "").split(",")
                if part.strip()
            ),
        )


def _url(name: str) -> str | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.startswith(("http://", "https://")):
        raise ValueError(f"{name} must be an http:// or https:// URL")
    return raw


@dataclass(frozen=True, slots=True)
class NotifySettings:
    """Where notices go (`replyguard notify`). Secrets and webhook URLs (a Slack URL is itself a
    secret) are kept out of repr so that they are never logged."""

    #: An email to the thread's owner through the configured transport (REPLYGUARD_NOTIFY_EMAIL).
    email: bool = True
    webhook_url: str | None = field(default=None, repr=False)
    #: Standard Webhooks secret, `whsec_` + base64 (REPLYGUARD_NOTIFY_WEBHOOK_SECRET).
    webhook_secret: str | None = field(default=None, repr=False)
    slack_url: str | None = field(default=None, repr=False)
    timeout: float = 10.0
    retry_base: timedelta = timedelta(seconds=30)
    retry_cap: timedelta = timedelta(hours=1)
    #: About two days of retries at the cap before a delivery is given up (and shown as failed).
    max_attempts: int = 60
    lease: timedelta = timedelta(minutes=2)

    @classmethod
    def from_env(cls) -> NotifySettings:
        defaults = cls()
        webhook_url = _url("REPLYGUARD_NOTIFY_WEBHOOK_URL")
        secret = _secret("REPLYGUARD_NOTIFY_WEBHOOK_SECRET")
        if webhook_url and not secret:
            raise ValueError(
                "REPLYGUARD_NOTIFY_WEBHOOK_URL needs REPLYGUARD_NOTIFY_WEBHOOK_SECRET (whsec_...)"
            )
        return cls(
            email=os.environ.get("REPLYGUARD_NOTIFY_EMAIL", "1") not in ("0", "false", "no", "off"),
            webhook_url=webhook_url,
            webhook_secret=secret,
            slack_url=_url("REPLYGUARD_NOTIFY_SLACK_URL"),
            timeout=_seconds("REPLYGUARD_NOTIFY_TIMEOUT_SECONDS", defaults.timeout).total_seconds(),
            retry_base=_seconds("REPLYGUARD_NOTIFY_RETRY_BASE_SECONDS", defaults.retry_base.total_seconds()),
        )


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """An optional OpenAI-compatible endpoint for intents and drafts; off unless a URL is set."""

    url: str | None = None  # the API base, e.g. http://127.0.0.1:8080/v1
    model: str = "default"
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 20.0

    @classmethod
    def from_env(cls) -> ModelSettings:
        return cls(
            url=_url("REPLYGUARD_MODEL_URL"),
            model=os.environ.get("REPLYGUARD_MODEL", "default") or "default",
            api_key=_secret("REPLYGUARD_MODEL_KEY"),
            timeout=_seconds("REPLYGUARD_MODEL_TIMEOUT_SECONDS", 20).total_seconds(),
        )
