"""Mailboxes: their own settings (sender name, daily cap, the day the cap counts in), set in
one place, and the pause a server's refusal of the mailbox itself puts on them.

A campaign file may state a mailbox's settings; `campaigns.py` checks them against the
mailbox here and refuses a file that disagrees (two campaigns cannot silently override each
other). `set_mailbox` is where a shared mailbox's settings change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, func, select, update

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import check_header_value, normalize_address
from replyguard.domain.campaign_spec import CampaignSpecError
from replyguard.domain.schedule import load_zone
from replyguard.service_layer.uow import UnitOfWork

_MB = cast(Table, m.Mailbox.__table__)
_C = cast(Table, m.Campaign.__table__)
_E = cast(Table, m.Enrollment.__table__)
_N = cast(Table, m.Notice.__table__)
_EV = cast(Table, m.Event.__table__)


class MailboxNotFound(LookupError):
    pass


class GrantRefused(ValueError):
    """A mailbox whose OAuth2 grant the provider refused: only connecting it again helps."""


@dataclass(frozen=True, slots=True)
class MailboxSettings:
    from_name: str | None = None
    daily_cap: int | None = None
    timezone: str | None = None
    #: 0 removes the limit.
    max_connections: int | None = None
    per_minute: int | None = None


#: Limits a person can remove (0 is stored as no limit).
_LIMITS = ("max_connections", "per_minute")


def find_mailbox(uow: UnitOfWork, address: str) -> m.Mailbox:
    mailbox = uow.session.scalar(
        select(m.Mailbox).where(
            m.Mailbox.workspace_id == uow.workspace_id, m.Mailbox.address == normalize_address(address)
        )
    )
    if mailbox is None:
        known = uow.session.scalars(
            select(m.Mailbox.address).where(m.Mailbox.workspace_id == uow.workspace_id)
        ).all()
        raise MailboxNotFound(f"no mailbox {address} (known: {', '.join(known) or 'none'})")
    return mailbox


def campaigns_of(uow: UnitOfWork, mailbox_id: int) -> list[str]:
    return list(
        uow.session.scalars(
            select(m.Campaign.name).where(m.Campaign.mailbox_id == mailbox_id).order_by(m.Campaign.id)
        )
    )


def disagreements(mailbox: m.Mailbox, wanted: MailboxSettings) -> dict[str, tuple[Any, Any]]:
    """Settings a file states that differ from the mailbox's: {name: (mailbox's, file's)}."""
    current = {
        "from_name": mailbox.from_name,
        "daily_cap": mailbox.daily_cap,
        "timezone": mailbox.timezone,
        "max_connections": mailbox.max_connections,
        "per_minute": mailbox.per_minute,
    }
    wanted_values = {
        name: (None if name in _LIMITS and value == 0 else value)
        for name, value in vars_of(wanted).items()
        if value is not None
    }
    return {name: (current[name], value) for name, value in wanted_values.items() if value != current[name]}


def vars_of(settings: MailboxSettings) -> dict[str, Any]:
    return {
        "from_name": settings.from_name,
        "daily_cap": settings.daily_cap,
        "timezone": settings.timezone,
        "max_connections": settings.max_connections,
        "per_minute": settings.per_minute,
    }


def set_mailbox(uow: UnitOfWork, address: str, settings: MailboxSettings) -> dict[str, tuple[Any, Any]]:
    """Change a mailbox's own settings (for every campaign that sends from it). Returns what
    changed: {name: (before, after)}."""
    mailbox = find_mailbox(uow, address)
    _validate(settings)
    changes = disagreements(mailbox, settings)
    for name, (_before, after) in changes.items():
        setattr(mailbox, name, after)
    if changes:
        uow.add_event(
            "mailbox_changed",
            mailbox=mailbox.address,
            changes={k: [str(b), str(a)] for k, (b, a) in changes.items()},
        )
    return changes


def _validate(settings: MailboxSettings) -> None:
    if settings.daily_cap is not None and settings.daily_cap < 1:
        raise CampaignSpecError(f"daily cap must be at least 1, got {settings.daily_cap}")
    for name in _LIMITS:
        value = getattr(settings, name)
        if value is not None and not 0 <= value <= 100_000:
            raise CampaignSpecError(f"{name.replace('_', ' ')} must be 0 (no limit) to 100000, got {value}")
    if settings.from_name is not None:
        if not settings.from_name.strip():
            raise CampaignSpecError("the sender name may not be empty")
        check_header_value("from_name", settings.from_name)
    if settings.timezone is not None:
        load_zone(settings.timezone)


def resume_mailbox(uow: UnitOfWork, address: str) -> bool:
    """A person fixed what the server refused: the mailbox sends again. False if it was not paused."""
    mailbox = find_mailbox(uow, address)
    if mailbox.status == "active":
        return False
    if mailbox.grant_revoked_at is not None:
        raise GrantRefused(
            f"{mailbox.address}: the provider refused its OAuth2 grant, so resuming would not help:"
            f" connect it again (`replyguard mailbox add {mailbox.address} --oauth {mailbox.oauth_provider}`"
            " or the Mailboxes page); it resumes by itself then"
        )
    mailbox.status, mailbox.paused_reason, mailbox.paused_at = "active", None, None
    uow.add_event("mailbox_resumed", mailbox=mailbox.address)
    return True


def pause_mailbox(
    conn: Connection,
    *,
    workspace_id: int,
    mailbox_id: int,
    lead_id: int | None,
    reason: str,
    now: datetime,
    recommendation: str | None = None,
    also_tell: Sequence[str] = (),
    again: bool = False,
) -> bool:
    """A server refused the mailbox itself (credentials, sender, relaying, reputation, a
    revoked OAuth2 grant): stop claiming from it and tell the owners of its campaigns (and
    `also_tell`). Returns False if it was paused already; `again`: tell them all the same, with
    the new reason (a grant refused while paused for something else)."""
    paused = conn.execute(
        update(_MB)
        .where(_MB.c.id == mailbox_id, _MB.c.status == "active")
        .values(status="paused", paused_reason=reason[:2000], paused_at=now)
    ).rowcount
    if not paused and not again:
        return False
    if not paused:
        conn.execute(update(_MB).where(_MB.c.id == mailbox_id).values(paused_reason=reason[:2000]))
    address = conn.execute(select(_MB.c.address).where(_MB.c.id == mailbox_id)).scalar_one()
    owners = conn.execute(select(_C.c.owner, _C.c.name).where(_C.c.mailbox_id == mailbox_id)).all()
    payload = {
        "kind": "mailbox_paused",
        "mailbox": address,
        "reason": reason,
        "campaigns": [name for _, name in owners],
        "recommendation": recommendation
        or f"Fix the mailbox (password, sender, relay), then: replyguard mailbox resume {address}",
    }
    for owner in sorted({owner for owner, _ in owners} | set(also_tell)):
        conn.execute(
            _N.insert().values(
                workspace_id=workspace_id,
                lead_id=lead_id,
                reply_id=None,
                recipient=owner,
                kind="mailbox_paused",
                payload=payload,
                created_at=now,
            )
        )
    conn.execute(
        _EV.insert().values(
            workspace_id=workspace_id,
            lead_id=lead_id,
            step_id=None,
            kind="mailbox_paused",
            at=now,
            data={"mailbox": address, "reason": reason},
        )
    )
    return bool(paused)


def list_mailboxes(uow: UnitOfWork) -> list[dict[str, Any]]:
    rows = uow.session.execute(
        select(m.Mailbox, func.count(m.Campaign.id))
        .outerjoin(m.Campaign, m.Campaign.mailbox_id == m.Mailbox.id)
        .where(m.Mailbox.workspace_id == uow.workspace_id)
        .group_by(m.Mailbox.id)
        .order_by(m.Mailbox.address)
    ).all()
    return [
        {
            "address": mb.address,
            "from_name": mb.from_name,
            "daily_cap": mb.daily_cap,
            "timezone": mb.timezone,
            "status": mb.status,
            "paused_reason": mb.paused_reason,
            # Its own servers (URLs without a password), or None: the default transport.
            "smtp": mb.smtp_url,
            "imap": mb.imap_url,
            "folders": list(mb.imap_folders or ()),
            "sent_folder": mb.sent_folder,
            "password_stored": mb.secret is not None and mb.oauth_provider is None,
            "oauth": mb.oauth_provider,
            "grant_refused": mb.grant_revoked_at is not None,
            "campaigns": campaigns_of(uow, mb.id),
            "campaign_count": count,
        }
        for mb, count in rows
    ]
