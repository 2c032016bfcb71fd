"""Web users: Argon2id password hashes, and signing in under a rate limit.

Passwords are hashed with argon2-cffi's defaults (Argon2id, RFC 9106's low-memory profile);
a hash made with older parameters is replaced at the next sign-in. Signing in checks the rate
limit before the password, spends the same work for an unknown address as for a known one,
and records every attempt in `login_attempts`: in the database, so that the limit holds
across restarts and across several web processes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, select
from sqlalchemy.orm import InstrumentedAttribute

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import InvalidAddress, UnsafeHeaderValue, normalize_address
from replyguard.service_layer.uow import UnitOfWork

MIN_PASSWORD = 8  # NIST SP 800-63B's minimum for a chosen password
MAX_PASSWORD = 1024
PRODUCTION_HASHER = PasswordHasher()
_HASHER = PRODUCTION_HASHER


class AccountError(ValueError):
    """A user cannot be created or changed as asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class LoginPolicy:
    """At most `per_account` failures for one address and `per_ip` from one client address
    within `window`; then sign-ins are refused until the oldest failure leaves the window."""

    window: timedelta = timedelta(minutes=15)
    per_account: int = 5
    per_ip: int = 20


@dataclass(frozen=True, slots=True)
class UserView:
    id: int
    workspace_id: int
    email: str
    name: str
    created_at: datetime
    last_login_at: datetime | None
    disabled: bool


@dataclass(frozen=True, slots=True)
class SignIn:
    """The outcome: `user` when the password was right; otherwise `limited_for` is set when
    the rate limit refused without looking at the password."""

    user: UserView | None
    limited_for: timedelta | None = None


def account_key(email: str) -> str:
    return hashlib.sha256(email.strip().lower().encode("utf-8", "replace")).hexdigest()


def _view(user: m.User) -> UserView:
    return UserView(
        user.id,
        user.workspace_id,
        user.email,
        user.name,
        user.created_at,
        user.last_login_at,
        user.disabled_at is not None,
    )


def check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"a password needs at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise AccountError(f"a password may have at most {MAX_PASSWORD} characters")


def add_user(uow: UnitOfWork, email: str, password: str, *, name: str = "") -> UserView:
    """A user of `uow`'s workspace. The caller commits."""
    try:
        address = normalize_address(email)
    except (InvalidAddress, UnsafeHeaderValue) as exc:
        raise AccountError(str(exc)) from None
    check_password(password)
    if uow.session.scalar(select(m.User.id).where(m.User.email == address)) is not None:
        raise AccountError(f"a user with the address {address} already exists")
    user = m.User(
        workspace_id=uow.workspace_id,
        email=address,
        name=name.strip()[:200],
        password_hash=_HASHER.hash(password),
        created_at=uow.clock.now(),
    )
    uow.session.add(user)
    uow.session.flush()
    uow.add_event("user_added", email=address)
    return _view(user)


def list_users(uow: UnitOfWork) -> list[UserView]:
    rows = uow.session.scalars(
        select(m.User).where(m.User.workspace_id == uow.workspace_id).order_by(m.User.email)
    )
    return [_view(u) for u in rows]


@cache
def _dummy_hash() -> str:
    # Verified against when the address is unknown, so that both cases cost the same time.
    return _HASHER.hash("replyguard: no such user")


def _failures(
    uow: UnitOfWork, column: InstrumentedAttribute[str], value: str, since: datetime
) -> tuple[int, datetime | None]:
    """Failures for `value` since `since` (and since its last success), and the oldest one."""
    last_ok = uow.session.scalar(
        select(func.max(m.LoginAttempt.at)).where(column == value, m.LoginAttempt.succeeded.is_(True))
    )
    start = max(since, last_ok) if last_ok else since
    count, oldest = uow.session.execute(
        select(func.count(), func.min(m.LoginAttempt.at)).where(
            column == value, m.LoginAttempt.succeeded.is_(False), m.LoginAttempt.at > start
        )
    ).one()
    return int(count), oldest


def sign_in(uow: UnitOfWork, email: str, password: str, ip: str, policy: LoginPolicy) -> SignIn:
    """Check the rate limit, then the password; record the attempt. The caller commits in
    every case (a failure must be remembered)."""
    now = uow.clock.now()
    key, ip = account_key(email), ip[:64]
    since = now - policy.window
    for column, value, limit in (
        (m.LoginAttempt.account_key, key, policy.per_account),
        (m.LoginAttempt.ip, ip, policy.per_ip),
    ):
        count, oldest = _failures(uow, column, value, since)
        if count >= limit and oldest is not None:
            return SignIn(None, limited_for=max(oldest + policy.window - now, timedelta(seconds=1)))
    user = uow.session.scalar(select(m.User).where(m.User.email == email.strip().lower()))
    ok = _verify(user.password_hash if user else _dummy_hash(), password[:MAX_PASSWORD])
    ok = ok and user is not None and user.disabled_at is None
    uow.session.add(m.LoginAttempt(account_key=key, ip=ip, succeeded=ok, at=now))
    uow.session.execute(delete(m.LoginAttempt).where(m.LoginAttempt.at < now - timedelta(days=1)))
    if not ok or user is None:
        return SignIn(None)
    if _HASHER.check_needs_rehash(user.password_hash):
        user.password_hash = _HASHER.hash(password)
    user.last_login_at = now
    return SignIn(_view(user))


def _verify(hashed: str, password: str) -> bool:
    try:
        return _HASHER.verify(hashed, password)
    except (VerificationError, InvalidHashError):
        return False
