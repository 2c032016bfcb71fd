"""Settings read from the environment once, in the composition root.

This module and `bootstrap` are the only ones that read the environment
(tests/unit/test_environment.py holds everything else to it): `Environment.read()` is every
REPLYGUARD_* variable a process uses, parsed once at start-up, where a value that does not
parse is one clear error; nothing reaches for the environment afterwards.
"""

from __future__ import annotations

import base64
import binascii
import getpass
import ipaddress
import os
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path


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
    #: Send slots per worker process (REPLYGUARD_SEND_SLOTS): threads that each send one batch
    #: at a time, so that a server's latency per message does not set the worker's pace (see
    #: service_layer/sending/slots.py). A hard crash holds at most one batch per slot.
    send_slots: int = 1
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
    #: Send each email with its own signed return path, `mailbox+bounces-KEY.SIG@domain`
    #: (VERP), so that every bounce names the email it is about (domain/trust.py). Off
    #: (REPLYGUARD_VERP=0) for a relay that refuses an envelope sender other than the mailbox.
    verp: bool = True

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
            send_slots=(
                _count("REPLYGUARD_SEND_SLOTS")
                if os.environ.get("REPLYGUARD_SEND_SLOTS")
                else defaults.send_slots
            ),
            authserv_ids=tuple(
                part.strip().lower()
                for part in os.environ.get("REPLYGUARD_AUTHSERV_ID", "").split(",")
                if part.strip()
            ),
            verp=os.environ.get("REPLYGUARD_VERP", "1").strip().lower() not in ("0", "false", "no", "off"),
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


#: The real, documented endpoints (overridable: REPLYGUARD_<PROVIDER>_AUTHORIZE_URL and
#: _TOKEN_URL, for a test server or a sovereign cloud). IMAP and SMTP with OAuth2 is the path
#: for both; the Gmail API and Microsoft Graph are needed only where an admin turned IMAP/SMTP
#: off (docs/architecture.md).
GOOGLE_AUTHORIZE_URL = "https://accounts.google.com/o/oauth2/v2/auth"
GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"  # noqa: S105 - a URL, not a secret
GOOGLE_SCOPE = "https://mail.google.com/"
MICROSOFT_AUTHORIZE_URL = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize"
MICROSOFT_TOKEN_URL = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"  # noqa: S105
MICROSOFT_SCOPE = (
    "https://outlook.office.com/IMAP.AccessAsUser.All https://outlook.office.com/SMTP.Send offline_access"
)


@dataclass(frozen=True, slots=True)
class OAuthProvider:
    """One OAuth2 provider of mailboxes: its endpoints, scope, servers and our client there."""

    name: str  # "google" | "microsoft"
    label: str
    authorize_url: str
    token_url: str
    scope: str
    #: The mailbox's servers, `{address}` filled in (a connected mailbox may override them).
    smtp_url: str
    imap_url: str
    authorize_params: tuple[tuple[str, str], ...] = ()
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)

    @property
    def configured(self) -> bool:
        return self.client_id is not None


def _provider_from_env(base: OAuthProvider) -> OAuthProvider:
    prefix = f"REPLYGUARD_{base.name.upper()}_"
    return OAuthProvider(
        name=base.name,
        label=base.label,
        authorize_url=_url(prefix + "AUTHORIZE_URL") or base.authorize_url,
        token_url=_url(prefix + "TOKEN_URL") or base.token_url,
        scope=base.scope,
        smtp_url=os.environ.get(prefix + "SMTP_URL", "").strip() or base.smtp_url,
        imap_url=os.environ.get(prefix + "IMAP_URL", "").strip() or base.imap_url,
        authorize_params=base.authorize_params,
        client_id=os.environ.get(prefix + "CLIENT_ID", "").strip() or None,
        client_secret=_secret(prefix + "CLIENT_SECRET"),
    )


def google_provider() -> OAuthProvider:
    return OAuthProvider(
        name="google",
        label="Google",
        authorize_url=GOOGLE_AUTHORIZE_URL,
        token_url=GOOGLE_TOKEN_URL,
        scope=GOOGLE_SCOPE,
        smtp_url="smtp+starttls://{address}@smtp.gmail.com:587",
        imap_url="imaps://{address}@imap.gmail.com:993/INBOX",
        # A refresh token every time, not only at the first consent.
        authorize_params=(("access_type", "offline"), ("prompt", "consent")),
    )


def microsoft_provider(tenant: str = "common") -> OAuthProvider:
    return OAuthProvider(
        name="microsoft",
        label="Microsoft",
        authorize_url=MICROSOFT_AUTHORIZE_URL.format(tenant=tenant),
        token_url=MICROSOFT_TOKEN_URL.format(tenant=tenant),
        scope=MICROSOFT_SCOPE,
        smtp_url="smtp+starttls://{address}@smtp.office365.com:587",
        imap_url="imaps://{address}@outlook.office365.com:993/INBOX",
    )


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """OAuth2 for Google and Microsoft mailboxes: our client at each (REPLYGUARD_GOOGLE_CLIENT_ID
    and _CLIENT_SECRET, REPLYGUARD_MICROSOFT_CLIENT_ID, _CLIENT_SECRET and _TENANT), where the
    provider sends a person back (REPLYGUARD_OAUTH_REDIRECT_URL, by default the public URL's
    /mailboxes/oauth/callback) and how long before expiry an access token is renewed."""

    providers: tuple[OAuthProvider, ...] = (google_provider(), microsoft_provider())
    redirect_url: str | None = None
    refresh_margin: timedelta = timedelta(minutes=5)

    def provider(self, name: str) -> OAuthProvider:
        for provider in self.providers:
            if provider.name == name:
                return provider
        raise ValueError(f"no OAuth2 provider {name!r}: use google or microsoft")

    def redirect_for(self, public_url: str) -> str:
        return self.redirect_url or f"{public_url}/mailboxes/oauth/callback"

    @classmethod
    def from_env(cls) -> OAuthSettings:
        tenant = os.environ.get("REPLYGUARD_MICROSOFT_TENANT", "").strip() or "common"
        if not all(c.isalnum() or c in "-." for c in tenant):
            raise ValueError(
                "REPLYGUARD_MICROSOFT_TENANT must be common, organizations, a domain or a tenant id"
            )
        return cls(
            providers=(_provider_from_env(google_provider()), _provider_from_env(microsoft_provider(tenant))),
            redirect_url=_url("REPLYGUARD_OAUTH_REDIRECT_URL"),
            refresh_margin=_seconds("REPLYGUARD_OAUTH_REFRESH_MARGIN_SECONDS", 300),
        )


def _cookie_secure() -> str:
    secure = os.environ.get("REPLYGUARD_COOKIE_SECURE", "auto").strip().lower() or "auto"
    if secure not in ("auto", "always", "never"):
        raise ValueError(f"REPLYGUARD_COOKIE_SECURE must be auto, always or never, got {secure!r}")
    return secure


def trusted_proxies(raw: str) -> tuple[str, ...]:
    """REPLYGUARD_TRUSTED_PROXIES: addresses or networks (comma- or space-separated) of the
    reverse proxies in front of the app. ValueError for anything else, "*" included: a proxy
    is named, never assumed."""
    found = []
    for item in raw.replace(",", " ").split():
        try:
            network = ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(
                f"REPLYGUARD_TRUSTED_PROXIES: {item!r} is not an IP address or network"
                " (e.g. 127.0.0.1, 10.0.0.0/8)"
            ) from None
        found.append(str(network) if "/" in item else str(network.network_address))
    return tuple(found)


def _fernet_key(key: str) -> bool:
    try:
        return len(base64.urlsafe_b64decode(key.encode("ascii"))) == 32 and len(key) == 44
    except (binascii.Error, ValueError):
        return False


def secret_keys() -> tuple[str, ...]:
    """The keys that encrypt secrets at rest, newest first: REPLYGUARD_SECRET_KEY (one key, or
    several comma-separated) or REPLYGUARD_SECRET_KEY_FILE (a file, one key a line, `#`
    comments). Neither set: no key (storing a secret is then refused). Errors never repeat a
    key."""
    inline = os.environ.get("REPLYGUARD_SECRET_KEY", "").strip()
    path = os.environ.get("REPLYGUARD_SECRET_KEY_FILE", "").strip()
    if inline and path:
        raise ValueError("set REPLYGUARD_SECRET_KEY or REPLYGUARD_SECRET_KEY_FILE, not both")
    name, raw = "REPLYGUARD_SECRET_KEY", inline
    if path:
        name = "REPLYGUARD_SECRET_KEY_FILE"
        try:
            raw = Path(path).read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{name}: cannot read {path}: {exc.__class__.__name__}") from None
        if not raw.strip():
            raise ValueError(f"{name}: {path} holds no key")
    lines = [line.split("#", 1)[0] for line in raw.splitlines()]
    keys = tuple(part.strip() for line in lines for part in line.split(",") if part.strip())
    for number, key in enumerate(keys, 1):
        if not _fernet_key(key):
            raise ValueError(
                f"{name}: key {number} is not a key (32 bytes in url-safe base64, 44 characters):"
                " make one with `replyguard secrets new-key`"
            )
    return keys


@dataclass(frozen=True, slots=True)
class Environment:
    """Everything a process takes from its environment, read once by `bootstrap`.

    The command line's global options win over the first four (`--db`, `--now`,
    `--transport`, `--workspace`). Values with secrets are kept out of repr.
    """

    database_url: str | None = None
    now: str | None = None
    transport: str | None = None
    workspace: str | None = None
    settings: Settings = field(default_factory=Settings)
    notify: NotifySettings = field(default_factory=NotifySettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    oauth: OAuthSettings = field(default_factory=OAuthSettings)
    #: The session cookie's Secure flag: auto (https requests), always or never.
    cookie_secure: str = "auto"
    metrics_token: str | None = field(default=None, repr=False)
    log_format: str | None = None
    #: Reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (off: none).
    trusted_proxies: tuple[str, ...] = ()
    #: IMAP folders to poll (REPLYGUARD_IMAP_URL, space-separated): they hold passwords.
    imap_urls: tuple[str, ...] = field(default=(), repr=False)
    #: Keys for secrets at rest, newest first (REPLYGUARD_SECRET_KEY or _FILE): never shown.
    secret_keys: tuple[str, ...] = field(default=(), repr=False)
    #: glibc's own MALLOC_ARENA_MAX: when set, `up` and `serve` leave the arenas to it
    #: (entrypoints/allocator.py).
    malloc_arena_max: str | None = None

    @classmethod
    def read(cls) -> Environment:
        """Parse every REPLYGUARD_* setting; raises ValueError naming the first that does not parse."""
        return cls(
            database_url=os.environ.get("REPLYGUARD_DATABASE_URL") or None,
            now=os.environ.get("REPLYGUARD_NOW") or None,
            transport=os.environ.get("REPLYGUARD_TRANSPORT") or None,
            workspace=os.environ.get("REPLYGUARD_WORKSPACE") or None,
            settings=Settings.from_env(),
            notify=NotifySettings.from_env(),
            model=ModelSettings.from_env(),
            oauth=OAuthSettings.from_env(),
            cookie_secure=_cookie_secure(),
            metrics_token=os.environ.get("REPLYGUARD_METRICS_TOKEN") or None,
            log_format=os.environ.get("REPLYGUARD_LOG_FORMAT") or None,
            malloc_arena_max=os.environ.get("MALLOC_ARENA_MAX") or None,
            trusted_proxies=trusted_proxies(os.environ.get("REPLYGUARD_TRUSTED_PROXIES", "")),
            imap_urls=tuple(os.environ.get("REPLYGUARD_IMAP_URL", "").split()),
            secret_keys=secret_keys(),
        )


def debug_requested() -> bool:
    """REPLYGUARD_DEBUG=1: the command line lets an error through with its traceback. Read when
    an error is reported, which may be before (or because) the environment failed to parse."""
    return os.environ.get("REPLYGUARD_DEBUG", "") == "1"


def acting_user() -> str:
    """Who acts when a command is not told (`--by`): REPLYGUARD_USER, else the login name."""
    try:
        return os.environ.get("REPLYGUARD_USER") or getpass.getuser()
    except (KeyError, OSError):
        return "cli"
