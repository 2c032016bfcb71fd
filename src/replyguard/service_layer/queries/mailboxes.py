"""The mailboxes view: each sending identity, its settings, its own servers (never a password),
the campaigns that share it, and whether a server's refusal of the mailbox itself has paused
it (send_record pauses a mailbox whose sender is refused; a person resumes it:
`mailboxes.resume_mailbox`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import normalize_address
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.uow import UnitOfWork


@dataclass(frozen=True, slots=True)
class MailboxRow:
    id: int
    address: str
    from_name: str
    daily_cap: int
    timezone: str
    status: str  # active | paused
    paused_reason: str | None
    paused_at: datetime | None
    campaigns: list[str]
    #: Its own servers (URLs without a password); None: the default transport sends for it.
    smtp: str | None = None
    imap: str | None = None
    folders: tuple[str, ...] = ()
    sent_folder: str | None = None
    #: Whether a password is stored (encrypted); the password itself is never read here.
    password_stored: bool = False
    #: Connected by OAuth2 ("google", "microsoft"), and whether the provider refused the grant
    #: (the mailbox then waits to be connected again). Tokens are never read here.
    oauth: str | None = None
    grant_refused: bool = False
    #: Its sending limits beside the daily cap (None: no limit): SMTP connections open at once,
    #: emails in any minute.
    max_connections: int | None = None
    per_minute: int | None = None


def list_mailboxes(uow: UnitOfWork) -> list[MailboxRow]:
    """Every mailbox of the workspace, paused ones first."""
    rows = uow.session.scalars(
        select(m.Mailbox).where(m.Mailbox.workspace_id == uow.workspace_id).order_by(m.Mailbox.address)
    ).all()
    campaigns: dict[int, list[str]] = defaultdict(list)
    for mailbox_id, name in uow.session.execute(
        select(m.Campaign.mailbox_id, m.Campaign.name)
        .where(m.Campaign.workspace_id == uow.workspace_id)
        .order_by(m.Campaign.name)
    ):
        campaigns[mailbox_id].append(name)
    found = [
        MailboxRow(
            mb.id,
            mb.address,
            mb.from_name,
            mb.daily_cap,
            mb.timezone,
            mb.status,
            mb.paused_reason,
            mb.paused_at,
            campaigns.get(mb.id, []),
            mb.smtp_url,
            mb.imap_url,
            tuple(mb.imap_folders or ()),
            mb.sent_folder,
            mb.secret is not None and mb.oauth_provider is None,
            mb.oauth_provider,
            mb.grant_revoked_at is not None,
            mb.max_connections,
            mb.per_minute,
        )
        for mb in rows
    ]
    return sorted(found, key=lambda row: row.status == "active")


def mailbox_address(uow: UnitOfWork, mailbox_id: int) -> str:
    address = uow.session.scalar(
        select(m.Mailbox.address).where(
            m.Mailbox.id == mailbox_id, m.Mailbox.workspace_id == uow.workspace_id
        )
    )
    if address is None:
        raise NotFound(f"no mailbox {mailbox_id}")
    return address


def mailbox_row(uow: UnitOfWork, mailbox_id: int) -> MailboxRow:
    for row in list_mailboxes(uow):
        if row.id == mailbox_id:
            return row
    raise NotFound(f"no mailbox {mailbox_id}")


def mailbox_id(uow: UnitOfWork, address: str) -> int:
    found = uow.session.scalar(
        select(m.Mailbox.id).where(
            m.Mailbox.workspace_id == uow.workspace_id, m.Mailbox.address == normalize_address(address)
        )
    )
    if found is None:
        raise NotFound(f"no mailbox {address}")
    return found
