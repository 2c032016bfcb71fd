"""Counting sign-in attempts for the limits of domain/throttle.py, in the database: the limits
hold across restarts and across several web processes.

A client is a browser that signed in to the account before (its `rg_device` cookie, kept here
as a digest and valid for `DEVICE_LIFE` after its last sign-in) or, failing that, its address.
Accounts are kept as digests of the address typed: people type passwords into the email field.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select

from replyguard.adapters.db import models as m
from replyguard.domain.throttle import LoginPolicy
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.web_sessions import digest

DEVICE_LIFE = timedelta(days=90)
_DEVICE = "device:"
_ADDRESS = "ip:"


def account_key(email: str) -> str:
    return hashlib.sha256(email.strip().lower().encode("utf-8", "replace")).hexdigest()


@dataclass(frozen=True, slots=True)
class Verdict:
    client: str  # what the attempt is recorded under
    known_device: bool
    limited_for: timedelta | None  # set: refused without looking at the password


def judge(uow: UnitOfWork, key: str, ip: str, device: str, policy: LoginPolicy) -> Verdict:
    """May this client try a password for this account now? Reads only."""
    now = uow.clock.now()
    known = bool(device) and len(device) <= 200 and _known_device(uow, key, device, now)
    client = f"{_DEVICE}{digest(device)[:40]}" if known else f"{_ADDRESS}{ip[:64]}"
    waits = [_pair_wait(uow, key, client, now, policy)]
    if not known:
        since = now - policy.window
        for column, value, limit in (
            (m.LoginAttempt.account_key, key, policy.per_account),
            (m.LoginAttempt.ip, ip[:64], policy.per_address),
        ):
            count, oldest = uow.session.execute(
                select(func.count(), func.min(m.LoginAttempt.at)).where(
                    column == value,
                    m.LoginAttempt.succeeded.is_(False),
                    m.LoginAttempt.client.startswith(_ADDRESS),
                    m.LoginAttempt.at > since,
                )
            ).one()
            if count >= limit and oldest is not None:
                waits.append(oldest + policy.window - now)
    longest = max((w for w in waits if w is not None), default=None)
    limited = max(longest, timedelta(seconds=1)) if longest is not None else None
    return Verdict(client, known, limited)


def _pair_wait(
    uow: UnitOfWork, key: str, client: str, now: datetime, policy: LoginPolicy
) -> timedelta | None:
    """The wait still due after this client's consecutive failures on this account."""
    pair = (m.LoginAttempt.account_key == key, m.LoginAttempt.client == client)
    last_ok = uow.session.scalar(select(func.max(m.LoginAttempt.at)).where(*pair, m.LoginAttempt.succeeded))
    start = max(now - policy.memory, last_ok) if last_ok else now - policy.memory
    count, last = uow.session.execute(
        select(func.count(), func.max(m.LoginAttempt.at)).where(
            *pair, m.LoginAttempt.succeeded.is_(False), m.LoginAttempt.at > start
        )
    ).one()
    if not count or last is None:
        return None
    due = last + policy.delay(int(count)) - now
    return due if due > timedelta(0) else None


def _known_device(uow: UnitOfWork, key: str, device: str, now: datetime) -> bool:
    found = uow.session.scalar(
        select(m.LoginDevice.last_used_at).where(
            m.LoginDevice.account_key == key, m.LoginDevice.token_hash == digest(device)
        )
    )
    return found is not None and found > now - DEVICE_LIFE


def record(uow: UnitOfWork, key: str, verdict: Verdict, ip: str, ok: bool, policy: LoginPolicy) -> None:
    """Remember an attempt (and forget the old ones). The caller commits, in every case."""
    now = uow.clock.now()
    uow.session.add(m.LoginAttempt(account_key=key, ip=ip[:64], client=verdict.client, succeeded=ok, at=now))
    uow.session.execute(delete(m.LoginAttempt).where(m.LoginAttempt.at < now - policy.memory))


def remember_device(uow: UnitOfWork, key: str, device: str) -> str:
    """After a successful sign-in: the device cookie to set (the same one when it is valid
    already, else a new one), now known for this account. The caller commits."""
    now = uow.clock.now()
    if not device or len(device) > 200:
        device = secrets.token_urlsafe(32)
    row = uow.session.scalar(
        select(m.LoginDevice).where(
            m.LoginDevice.account_key == key, m.LoginDevice.token_hash == digest(device)
        )
    )
    if row is None:
        uow.session.add(
            m.LoginDevice(account_key=key, token_hash=digest(device), created_at=now, last_used_at=now)
        )
    else:
        row.last_used_at = now
    uow.session.execute(delete(m.LoginDevice).where(m.LoginDevice.last_used_at < now - DEVICE_LIFE))
    return device


def recent_failures(uow: UnitOfWork, email: str, policy: LoginPolicy) -> int:
    """Failures of this account from clients it does not know, within the window: what the
    account-wide limit counts."""
    return int(
        uow.session.scalar(
            select(func.count()).where(
                m.LoginAttempt.account_key == account_key(email),
                m.LoginAttempt.succeeded.is_(False),
                m.LoginAttempt.client.startswith(_ADDRESS),
                m.LoginAttempt.at > uow.clock.now() - policy.window,
            )
        )
        or 0
    )


def unlock(uow: UnitOfWork, email: str) -> int:
    """An admin lifts every limit on this account: its failures are forgotten. The caller
    commits."""
    gone = uow.session.execute(
        delete(m.LoginAttempt).where(
            m.LoginAttempt.account_key == account_key(email), m.LoginAttempt.succeeded.is_(False)
        )
    )
    return int(getattr(gone, "rowcount", 0) or 0)
