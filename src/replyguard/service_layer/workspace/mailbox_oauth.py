"""Mailboxes connected by OAuth2 (Google, Microsoft): the grant stored, kept fresh, and lost.

A grant is stored like a password (`mailboxes.secret`, one Fernet token of
`{"oauth": {"access_token", "refresh_token"}}`), with its provider and the access token's
expiry beside it in the clear. `connect_oauth` stores one (a new mailbox, or a reconnect: a
mailbox paused because its grant was refused sends again). The web's "Connect with ..." keeps
its request between the two halves of the flow (`remember_request` / `take_request`: the
state bound to the web session, the PKCE verifier encrypted, ten minutes at most).

`access_token` is what the SMTP transport and the IMAP poller call when they log in: the
stored token while it has more than the margin left, otherwise a refreshed one (stored again
only if no other process refreshed it meanwhile). A provider that refuses the grant pauses the
mailbox and tells its owners how to reconnect (`revoke_grant`), in one transaction, then
raises GrantRevoked. No token is ever logged, shown or put in an event.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from sqlalchemy import delete, select, update

from replyguard.adapters.db import models as m
from replyguard.adapters.oauth import (
    Authorization,
    AuthorizationFailed,
    Grant,
    GrantRevoked,
    GrantUnusable,
    OAuthClient,
)
from replyguard.adapters.secret_box import NoSecretKey, SecretBox, SecretUnreadable
from replyguard.domain.addresses import normalize_address
from replyguard.service_layer.scoped import Scoped
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.mailbox_accounts import (
    AccountError,
    _check_imap,
    _check_smtp,
    describe,
)
from replyguard.service_layer.workspace.mailboxes import MailboxSettings, _validate, pause_mailbox
from replyguard.settings import OAuthProvider

#: How long a person has between "Connect with ..." and coming back to the callback.
REQUEST_TTL = timedelta(minutes=10)
DEFAULT_DAILY_CAP = 50


@dataclass(frozen=True, slots=True)
class PendingRequest:
    address: str
    provider: str
    by: str
    code_verifier: str = field(repr=False)


def _state_hash(state: str) -> str:
    return hashlib.sha256(state.encode("utf-8")).hexdigest()


def reconnect_words(address: str, label: str, name: str) -> str:
    """How a person connects the mailbox again, on the web and from the command line."""
    return (
        f"Connect it again: on the Mailboxes page, 'Connect with {label}' for {address}, or"
        f" `replyguard mailbox add {address} --oauth {name}`; it resumes by itself once connected."
    )


def remember_request(
    uow: UnitOfWork,
    box: SecretBox | None,
    *,
    session_id: int,
    address: str,
    provider: str,
    authorization: Authorization,
    by: str,
) -> None:
    """Keep a web "Connect with ..." until its callback (the verifier encrypted)."""
    if box is None:
        raise NoSecretKey("store the mailbox's OAuth2 grant")
    now = uow.clock.now()
    uow.session.execute(
        delete(m.OAuthRequest).where(
            m.OAuthRequest.workspace_id == uow.workspace_id, m.OAuthRequest.created_at < now - REQUEST_TTL
        )
    )
    uow.session.add(
        m.OAuthRequest(
            workspace_id=uow.workspace_id,
            session_id=session_id,
            state_hash=_state_hash(authorization.state),
            address=normalize_address(address),
            provider=provider,
            verifier=box.encrypt(authorization.code_verifier),
            by=by,
            created_at=now,
        )
    )


def take_request(uow: UnitOfWork, box: SecretBox | None, *, state: str, session_id: int) -> PendingRequest:
    """The request a callback answers, used up (a state works once, in the session that
    started it, within REQUEST_TTL). Raises AuthorizationFailed; a state tried from another
    session is used up all the same (commit before re-raising)."""
    if box is None:
        raise NoSecretKey("read the mailbox's OAuth2 request")
    found = uow.session.scalar(
        select(m.OAuthRequest).where(
            m.OAuthRequest.workspace_id == uow.workspace_id, m.OAuthRequest.state_hash == _state_hash(state)
        )
    )
    if found is None:
        raise AuthorizationFailed("this sign-in was not started here (or was used already): start again")
    uow.session.delete(found)
    uow.session.flush()
    if found.session_id != session_id:
        raise AuthorizationFailed("this sign-in was not started here (or was used already): start again")
    if found.created_at < uow.clock.now() - REQUEST_TTL:
        raise AuthorizationFailed("this sign-in took too long: start again")
    return PendingRequest(found.address, found.provider, found.by, box.decrypt(found.verifier))


def connect_oauth(
    uow: UnitOfWork,
    box: SecretBox | None,
    provider: OAuthProvider,
    address: str,
    grant: Grant,
    *,
    by: str,
    smtp_url: str | None = None,
    imap_url: str | None = None,
    settings: MailboxSettings | None = None,
) -> dict[str, Any]:
    """Store a mailbox's OAuth2 grant with its provider's servers (or the ones given). A
    mailbox paused because its grant was refused sends again. Returns the mailbox as shown."""
    if box is None:
        raise NoSecretKey("store the mailbox's OAuth2 grant")
    if grant.refresh_token is None:
        raise AccountError(
            f"{provider.label} gave no refresh token: remove the app's access and connect again"
        )
    address = normalize_address(address)
    smtp = _check_smtp(smtp_url or provider.smtp_url.format(address=quote(address, safe="")))
    imap = _check_imap(imap_url or provider.imap_url.format(address=quote(address, safe="")))
    wanted = settings or MailboxSettings()
    _validate(wanted)
    mailbox = uow.session.scalar(
        select(m.Mailbox).where(m.Mailbox.workspace_id == uow.workspace_id, m.Mailbox.address == address)
    )
    if mailbox is None:
        mailbox = m.Mailbox(
            workspace_id=uow.workspace_id,
            address=address,
            from_name=wanted.from_name or address.partition("@")[0],
            daily_cap=wanted.daily_cap or DEFAULT_DAILY_CAP,
            timezone=wanted.timezone or "UTC",
            status="active",
        )
        uow.session.add(mailbox)
    resumed = mailbox.grant_revoked_at is not None and mailbox.status == "paused"
    if resumed:
        mailbox.status, mailbox.paused_reason, mailbox.paused_at = "active", None, None
    mailbox.smtp_url, mailbox.imap_url = smtp, imap
    mailbox.imap_folders = mailbox.imap_folders or ["INBOX"]
    mailbox.secret = _sealed(box, grant)
    mailbox.oauth_provider = provider.name
    mailbox.token_expires_at = grant.expires_at
    mailbox.grant_revoked_at = None
    mailbox.connected_by = by
    mailbox.connected_at = uow.clock.now()
    uow.session.flush()
    uow.add_event("mailbox_connected", mailbox=address, oauth=provider.name, smtp=smtp, imap=imap, by=by)
    if resumed:
        uow.add_event("mailbox_resumed", mailbox=address, why="connected again")
    return describe(uow, mailbox)


def _sealed(box: SecretBox, grant: Grant) -> str:
    tokens = {"access_token": grant.access_token, "refresh_token": grant.refresh_token}
    return box.encrypt(json.dumps({"smtp": None, "imap": None, "oauth": tokens}))


def _tokens(box: SecretBox | None, secret: str | None, address: str) -> dict[str, str]:
    if secret is None:
        raise GrantRevoked(f"{address} has no OAuth2 grant stored")
    if box is None:
        raise NoSecretKey(f"read the OAuth2 grant of {address}")
    found: dict[str, str] = json.loads(box.decrypt(secret)).get("oauth") or {}
    if not found.get("refresh_token"):
        raise GrantRevoked(f"{address} has no OAuth2 grant stored")
    return found


def access_token(
    scoped: Scoped,
    box: SecretBox | None,
    client_for: Callable[[str], OAuthClient],
    *,
    workspace_id: int,
    mailbox_id: int,
    now: Callable[[], datetime],
    margin: timedelta,
    renew: bool = False,
) -> str:
    """A usable access token for the mailbox, refreshed when less than `margin` is left (or
    whatever is left, with `renew`: a server refused the stored one).
    Raises GrantRevoked (after pausing the mailbox and telling its owners), GrantUnusable (no
    key opens it, no client for its provider) or TokenUnavailable (try later)."""
    with scoped.read(workspace_id) as uow:
        mailbox = uow.session.get(m.Mailbox, mailbox_id)
        if mailbox is None or mailbox.workspace_id != workspace_id or mailbox.oauth_provider is None:
            raise GrantRevoked(f"mailbox {mailbox_id} is not connected by OAuth2")
        address, provider, secret = mailbox.address, mailbox.oauth_provider, mailbox.secret
        expires_at, revoked = mailbox.token_expires_at, mailbox.grant_revoked_at
    if revoked is not None:
        raise GrantRevoked(f"the {provider} grant of {address} was refused; it waits to be connected again")
    try:
        tokens = _tokens(box, secret, address)
        if not renew and expires_at is not None and expires_at - margin > now():
            return tokens["access_token"]
        client = client_for(provider)
    except (NoSecretKey, SecretUnreadable, ValueError) as exc:  # ours to fix: nothing to refresh
        raise GrantUnusable(f"the OAuth2 grant of {address} cannot be used: {exc}") from None
    try:
        grant = client.refresh(tokens["refresh_token"], now())
    except GrantRevoked as exc:
        revoke_grant(scoped, workspace_id=workspace_id, mailbox_id=mailbox_id, secret=secret, why=str(exc))
        raise
    assert box is not None
    with scoped.write(workspace_id) as uow:
        # Stored only over the grant it was refreshed from: a reconnect meanwhile wins.
        uow.session.execute(
            update(m.Mailbox)
            .where(m.Mailbox.id == mailbox_id, m.Mailbox.secret == secret)
            .values(secret=_sealed(box, grant), token_expires_at=grant.expires_at)
        )
        uow.add_event("mailbox_token_refreshed", mailbox=address)
        uow.commit()
    return grant.access_token


def revoke_grant(scoped: Scoped, *, workspace_id: int, mailbox_id: int, secret: str | None, why: str) -> bool:
    """The provider refused the mailbox's grant: pause it and tell its owners (and whoever
    connected it) how to reconnect. False when a reconnect or another process got there first."""
    with scoped.write(workspace_id) as uow:
        mailbox = uow.session.get(m.Mailbox, mailbox_id)
        if mailbox is None or mailbox.secret != secret or mailbox.grant_revoked_at is not None:
            return False
        now = uow.clock.now()
        provider = mailbox.oauth_provider or "google"
        label = {"google": "Google", "microsoft": "Microsoft"}.get(provider, provider)
        mailbox.grant_revoked_at = now
        reason = f"{label} refused the mailbox's OAuth2 grant (access removed or expired): {why}"
        pause_mailbox(
            uow.session.connection(),
            workspace_id=workspace_id,
            mailbox_id=mailbox_id,
            lead_id=None,
            reason=reason,
            now=now,
            recommendation=reconnect_words(mailbox.address, label, provider),
            also_tell=(mailbox.connected_by,) if mailbox.connected_by else (),
            again=True,
        )
        uow.commit()
    return True
