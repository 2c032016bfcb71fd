"""Connected mailboxes: each mailbox's own SMTP submission server and IMAP account.

`connect_mailbox` stores a mailbox's URLs without their passwords and its passwords encrypted
(`adapters/secret_box.py`: one Fernet token of a small JSON object); without a key it refuses
before anything is written. A password given inside a URL (`smtps://dana:pw@host`) is taken
out of it and encrypted like one from a file, never stored in the URL. `stored_account` reads
an account back with its passwords (for the composition root's `App.transport_for` and for
`check_account`); `list_mailboxes` and every other view show only whether a password is stored.

The process's default transport (REPLYGUARD_TRANSPORT) still sends for a mailbox that has no
SMTP URL of its own (the demo's Maildir, a shared relay).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.imap_check import Check, check_imap
from replyguard.adapters.imap_source import ImapUrlError, parse_imap_url
from replyguard.adapters.oauth import TokenSource
from replyguard.adapters.secret_box import NoSecretKey, SecretBox, SecretUnreadable
from replyguard.adapters.transports.base import Outcome
from replyguard.adapters.transports.smtp import SCHEMES, SmtpSettings, SmtpTransport, redact_url
from replyguard.domain.addresses import check_header_value, normalize_address
from replyguard.service_layer.scoped import Scoped
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.mailboxes import (
    MailboxNotFound,
    MailboxSettings,
    _validate,
    campaigns_of,
)

log = logging.getLogger(__name__)

#: A new mailbox's settings when `mailbox add` is not told them (`mailbox set` changes them).
DEFAULT_DAILY_CAP = 50
DEFAULT_TIMEZONE = "UTC"


class AccountError(ValueError):
    """An account that cannot be stored as given (a URL, a folder, a missing password)."""


@dataclass(frozen=True, slots=True)
class Account:
    """What `mailbox add` is given. `password`: for both servers, unless a URL holds its own."""

    smtp_url: str | None = None
    imap_url: str | None = None
    password: str | None = field(default=None, repr=False)
    folders: tuple[str, ...] = ()
    sent_folder: str | None = None


@dataclass(frozen=True, slots=True)
class StoredAccount:
    """A mailbox's account as stored, with its passwords decrypted: never shown or logged."""

    mailbox_id: int
    address: str
    smtp_url: str | None
    imap_url: str | None
    folders: tuple[str, ...]
    sent_folder: str | None
    smtp_password: str | None = field(default=None, repr=False)
    imap_password: str | None = field(default=None, repr=False)
    #: An OAuth2 mailbox's provider, and what gives it an access token at each login.
    oauth_provider: str | None = None
    token: TokenSource | None = field(default=None, repr=False, compare=False)

    def smtp_settings(self) -> SmtpSettings | None:
        """The SMTP settings to send with, logged in as the mailbox itself."""
        if self.smtp_url is None:
            return None
        parsed = SmtpSettings.from_url(self.smtp_url)
        if self.token is not None:
            return replace(parsed, username=parsed.username or self.address, oauth_token=self.token)
        if self.smtp_password is None:
            return parsed
        return replace(parsed, username=parsed.username or self.address, password=self.smtp_password)

    def imap_urls(self) -> list[str]:
        """One IMAP URL per watched folder, with the password in it (for the poller only)."""
        if self.imap_url is None or self.imap_password is None:
            return []
        with_password = _with_password(self.imap_url, self.imap_password)
        return [_with_folder(with_password, folder) for folder in self.folders or ("INBOX",)]


def split_password(url: str) -> tuple[str, str | None]:
    """`url` without its password, and the password (URL-decoded), if it held one."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise AccountError(f"malformed URL {redact_url(url)}") from None
    if parts.password is None:
        return urlunsplit(parts), None
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{user}@{host}" if user else host
    return urlunsplit(parts._replace(netloc=netloc)), unquote(parts.password)


def _with_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    if parts.username:
        return url
    return urlunsplit(parts._replace(netloc=f"{quote(user, safe='')}@{parts.netloc}"))


def with_password(url: str, password: str) -> str:
    """`url` (stored without its password) with the password put back, for a connection."""
    return _with_password(url, password)


def _with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))


def _with_folder(url: str, folder: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path="/" + quote(folder, safe="")))


def _check_smtp(url: str) -> str:
    scheme = urlsplit(url).scheme.lower()
    if scheme not in SCHEMES:
        raise AccountError(
            f"--smtp: use smtp+starttls://user@host:587 or smtps://user@host:465, got {redact_url(url)}"
        )
    try:
        SmtpSettings.from_url(url)
    except ValueError as exc:
        raise AccountError(f"--smtp: {exc}") from None
    return url


def _check_imap(url: str) -> str:
    try:
        parse_imap_url(_with_password(url, "x"))
    except (ImapUrlError, ValueError) as exc:
        raise AccountError(f"--imap: {exc}") from None
    return url


def _check_folder(name: str, what: str) -> str:
    check_header_value(what, name)
    if not name.strip() or len(name) > 200:
        raise AccountError(f"{what}: a folder name of 1 to 200 characters, got {name!r}")
    return name.strip()


def _secret_of(box: SecretBox | None, smtp: str | None, imap: str | None) -> str | None:
    if smtp is None and imap is None:
        return None
    if box is None:
        raise NoSecretKey("store the mailbox's password")
    return box.encrypt(json.dumps({"smtp": smtp, "imap": imap}))


def connect_mailbox(
    uow: UnitOfWork,
    box: SecretBox | None,
    address: str,
    account: Account,
    settings: MailboxSettings | None = None,
) -> dict[str, Any]:
    """Connect `address` to its own servers (a new mailbox, or one a campaign created).

    A password without a key is refused (NoSecretKey) before anything is written; an IMAP
    account without a password too (AccountError). Returns the mailbox as `list_mailboxes`
    shows it."""
    address = normalize_address(address)
    smtp_url = smtp_password = imap_url = imap_password = None
    if account.smtp_url:
        smtp_url, smtp_password = split_password(_check_smtp(account.smtp_url))
        smtp_password = smtp_password or account.password
    if account.imap_url:
        imap_url, imap_password = split_password(account.imap_url)
        imap_password = imap_password or account.password
        if imap_password is None:
            raise AccountError("--imap: the IMAP account needs a password (--password-file)")
        imap_url = _check_imap(_with_user(imap_url, address))
    if smtp_url is None and imap_url is None:
        raise AccountError("give --smtp, --imap or both")
    if smtp_url is not None and smtp_password is not None:
        smtp_url = _with_user(smtp_url, address)
    folders = tuple(_check_folder(f, "--folder") for f in account.folders)
    if imap_url is not None and not folders:
        folders = (unquote(urlsplit(imap_url).path.lstrip("/")) or "INBOX",)
    sent = _check_folder(account.sent_folder, "--sent-folder") if account.sent_folder else None
    secret = _secret_of(box, smtp_password, imap_password)

    mailbox = _find(uow, address)
    wanted = settings or MailboxSettings()
    _validate(wanted)
    if mailbox is None:
        mailbox = m.Mailbox(
            workspace_id=uow.workspace_id,
            address=address,
            from_name=wanted.from_name or address.partition("@")[0],
            daily_cap=wanted.daily_cap or DEFAULT_DAILY_CAP,
            timezone=wanted.timezone or DEFAULT_TIMEZONE,
            status="active",
        )
        uow.session.add(mailbox)
    else:
        for name in ("from_name", "daily_cap", "timezone"):
            value = getattr(wanted, name)
            if value is not None:
                setattr(mailbox, name, value)
    mailbox.smtp_url, mailbox.imap_url = smtp_url, imap_url
    mailbox.imap_folders = list(folders) if imap_url else None
    mailbox.sent_folder = sent
    mailbox.secret = secret
    # A password replaces an OAuth2 grant (and its refusal): the mailbox logs in with it now.
    mailbox.oauth_provider = mailbox.token_expires_at = mailbox.grant_revoked_at = None
    mailbox.connected_at = uow.clock.now()
    uow.session.flush()
    uow.add_event("mailbox_connected", mailbox=address, smtp=smtp_url, imap=imap_url, folders=list(folders))
    return describe(uow, mailbox)


def disconnect_mailbox(uow: UnitOfWork, address: str) -> str:
    """Forget a mailbox's account and its passwords. A mailbox no campaign sends from goes
    altogether ("removed"); one that campaigns use stays, sending through the default
    transport again ("disconnected")."""
    mailbox = _find(uow, normalize_address(address))
    if mailbox is None:
        raise MailboxNotFound(f"no mailbox {address}")
    if campaigns_of(uow, mailbox.id):
        mailbox.smtp_url = mailbox.imap_url = mailbox.secret = mailbox.sent_folder = None
        mailbox.imap_folders = None
        mailbox.oauth_provider = mailbox.token_expires_at = mailbox.grant_revoked_at = None
        mailbox.connected_at = mailbox.connected_by = None
        uow.add_event("mailbox_disconnected", mailbox=mailbox.address)
        return "disconnected"
    uow.session.delete(mailbox)
    uow.add_event("mailbox_removed", mailbox=mailbox.address)
    return "removed"


def passwords_of(secret: str | None, box: SecretBox | None, address: str) -> dict[str, str | None]:
    """The passwords a stored secret holds ({"smtp": ..., "imap": ...}). Raises NoSecretKey
    or SecretUnreadable."""
    if secret is None:
        return {}
    if box is None:
        raise NoSecretKey(f"read the password of {address}")
    found: dict[str, str | None] = json.loads(box.decrypt(secret))
    return found


def smtp_settings_of(address: str, smtp_url: str, secret: str | None, box: SecretBox | None) -> SmtpSettings:
    """The SMTP settings a connected mailbox sends with, logged in as itself."""
    password = passwords_of(secret, box, address).get("smtp")
    parsed = SmtpSettings.from_url(smtp_url)
    if password is None:
        return parsed
    return replace(parsed, username=parsed.username or address, password=password)


#: What gives an OAuth2 mailbox (by id) an access token at each login (`App.oauth_token`).
TokenFor = Callable[[int], TokenSource]


def stored_account(
    uow: UnitOfWork,
    box: SecretBox | None,
    *,
    mailbox_id: int | None = None,
    address: str | None = None,
    token_for: TokenFor | None = None,
) -> StoredAccount | None:
    """A mailbox's account with its passwords (or, connected by OAuth2, what gives it a token),
    or None for a mailbox with no account. Raises MailboxNotFound, NoSecretKey (a password is
    stored and no key is configured) or SecretUnreadable (no configured key opens it)."""
    query = select(m.Mailbox).where(m.Mailbox.workspace_id == uow.workspace_id)
    if mailbox_id is not None:
        query = query.where(m.Mailbox.id == mailbox_id)
    else:
        query = query.where(m.Mailbox.address == normalize_address(address or ""))
    mailbox = uow.session.scalar(query)
    if mailbox is None:
        raise MailboxNotFound(f"no mailbox {address or mailbox_id}")
    if mailbox.smtp_url is None and mailbox.imap_url is None:
        return None
    passwords = passwords_of(mailbox.secret, box, mailbox.address)
    return StoredAccount(
        mailbox.id,
        mailbox.address,
        mailbox.smtp_url,
        mailbox.imap_url,
        tuple(mailbox.imap_folders or ()),
        mailbox.sent_folder,
        passwords.get("smtp"),
        passwords.get("imap"),
        mailbox.oauth_provider,
        token_for(mailbox.id) if token_for is not None and mailbox.oauth_provider else None,
    )


def sends_by_own_smtp(uow: UnitOfWork) -> bool:
    """Whether any mailbox of the workspace sends through an SMTP server of its own."""
    found = uow.session.scalar(
        select(m.Mailbox.id)
        .where(m.Mailbox.workspace_id == uow.workspace_id, m.Mailbox.smtp_url.is_not(None))
        .limit(1)
    )
    return found is not None


@dataclass(frozen=True, slots=True)
class OAuthFolder:
    """A watched folder of a mailbox connected by OAuth2: its URL (no password in it) and the
    mailbox whose grant gives the poller a token at each login."""

    url: str
    mailbox_id: int


def watched_sources(uow: UnitOfWork, box: SecretBox | None) -> dict[str, str | OAuthFolder]:
    """Every watched folder of every connected mailbox: {source key: IMAP URL with the
    password, or an OAuthFolder}. A mailbox whose password cannot be read is left out, with a
    warning that names it (and never the password); so is one whose OAuth2 grant was refused
    (it waits to be connected again)."""
    found: dict[str, str | OAuthFolder] = {}
    mailboxes = uow.session.scalars(
        select(m.Mailbox)
        .where(m.Mailbox.workspace_id == uow.workspace_id, m.Mailbox.imap_url.is_not(None))
        .order_by(m.Mailbox.id)
    ).all()
    for mailbox in mailboxes:
        if mailbox.oauth_provider is not None:
            if mailbox.grant_revoked_at is None and mailbox.imap_url is not None:
                for folder in mailbox.imap_folders or ("INBOX",):
                    url = _with_folder(mailbox.imap_url, folder)
                    found[parse_imap_url(_with_password(url, "x")).key] = OAuthFolder(url, mailbox.id)
            continue
        try:
            password = passwords_of(mailbox.secret, box, mailbox.address).get("imap")
        except (NoSecretKey, SecretUnreadable) as exc:
            log.warning("not watching %s: %s", mailbox.address, exc)
            continue
        if password is None or mailbox.imap_url is None:
            continue
        with_password = _with_password(mailbox.imap_url, password)
        for folder in mailbox.imap_folders or ("INBOX",):
            url = _with_folder(with_password, folder)
            found[parse_imap_url(url).key] = url
    return found


def describe(uow: UnitOfWork, mailbox: m.Mailbox) -> dict[str, Any]:
    """A mailbox as people see it: its settings, servers and whether a password is stored."""
    return {
        "address": mailbox.address,
        "from_name": mailbox.from_name,
        "daily_cap": mailbox.daily_cap,
        "timezone": mailbox.timezone,
        "status": mailbox.status,
        "paused_reason": mailbox.paused_reason,
        "smtp": mailbox.smtp_url,
        "imap": mailbox.imap_url,
        "folders": list(mailbox.imap_folders or ()),
        "sent_folder": mailbox.sent_folder,
        "password_stored": mailbox.secret is not None and mailbox.oauth_provider is None,
        "oauth": mailbox.oauth_provider,
        "grant_refused": mailbox.grant_revoked_at is not None,
        "campaigns": campaigns_of(uow, mailbox.id),
    }


def rotate_secrets(scoped: Scoped, box: SecretBox) -> int:
    """Re-encrypt every stored secret of every workspace with the newest key (the first).
    Each workspace is one transaction; an unreadable secret stops the rotation before its
    workspace changes (SecretUnreadable). Returns how many secrets were re-encrypted."""
    with scoped.installation() as uow:
        workspaces = list(uow.session.scalars(select(m.Workspace.id).order_by(m.Workspace.id)))
    done = 0
    for workspace_id in workspaces:
        with scoped.write(workspace_id) as uow:
            mailboxes = uow.session.scalars(
                select(m.Mailbox).where(m.Mailbox.workspace_id == workspace_id, m.Mailbox.secret.is_not(None))
            ).all()
            for mailbox in mailboxes:
                assert mailbox.secret is not None
                mailbox.secret = box.rotate(mailbox.secret)
                done += 1
            if mailboxes:
                uow.add_event("secrets_rotated", count=len(mailboxes))
            uow.commit()
    return done


def _find(uow: UnitOfWork, address: str) -> m.Mailbox | None:
    return uow.session.scalar(
        select(m.Mailbox).where(m.Mailbox.workspace_id == uow.workspace_id, m.Mailbox.address == address)
    )


def check_account(account: StoredAccount, *, timeout: float = 30.0) -> list[Check]:
    """Log in to the mailbox's SMTP and IMAP servers as it would to send and read, and say in
    words what works and what does not. Nothing is sent, and no folder is changed."""
    found: list[Check] = []
    settings = account.smtp_settings()
    if settings is None:
        found.append(Check("sending (SMTP)", True, "no SMTP account: the default transport sends for it"))
    else:
        checked = SmtpTransport(replace(settings, timeout=min(settings.timeout, timeout))).check()
        worked = checked.outcome is Outcome.ACCEPTED
        found.append(Check("sending (SMTP)", worked, _smtp_words(checked.detail)))
    if account.imap_url is None:
        found.append(Check("reading (IMAP)", True, "no IMAP account: replies come from the other sources"))
    elif account.token is not None:
        source = parse_imap_url(account.imap_url, token=account.token)
        found.extend(check_imap(source, account.folders or ("INBOX",), account.sent_folder, timeout=timeout))
    elif account.imap_password is None:
        found.append(Check("reading (IMAP)", False, "no IMAP password is stored"))
    else:
        source = parse_imap_url(_with_password(account.imap_url, account.imap_password))
        found.extend(check_imap(source, account.folders or ("INBOX",), account.sent_folder, timeout=timeout))
    return found


def _smtp_words(detail: str) -> str:
    """The transport's detail, with its usual causes said plainly."""
    if "535" in detail or ("Authentication" in detail and "refused" in detail):
        return f"the server refused the login (wrong user or password?): {detail}"
    if "ConnectionRefused" in detail or "Connection refused" in detail:
        return f"nothing answers there (connection refused): {detail}"
    return detail
