"""Web users: Argon2id password hashes, roles, passwords people choose, and signing in under the
throttle of domain/throttle.py.

Passwords are hashed with argon2-cffi's defaults (Argon2id, RFC 9106's low-memory profile);
a hash made with older parameters is replaced at the next sign-in. A password must pass
domain/passwords.py (12 characters or more, not a common one, not guessable from a pattern).
Signing in checks the throttle before the password, spends the same work for an unknown
address as for a known one, and records every attempt (service_layer/workspace/login_throttle.py).

Managing other users (roles, disabling, removing, resetting a password) is
`account_admin.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.domain.access import Principal, Role, check_role_change, plain_name
from replyguard.domain.addresses import InvalidAddress, UnsafeHeaderValue, normalize_address
from replyguard.domain.passwords import MAX_LENGTH, WeakPassword, check_password
from replyguard.domain.throttle import LoginPolicy
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace import login_throttle
from replyguard.service_layer.workspace.login_throttle import account_key
from replyguard.service_layer.workspace.web_sessions import end_sessions

MAX_PASSWORD = MAX_LENGTH
PRODUCTION_HASHER = PasswordHasher()
_HASHER = PRODUCTION_HASHER


class AccountError(ValueError):
    """A user cannot be created or changed as asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class UserView:
    id: int
    workspace_id: int
    email: str
    name: str
    created_at: datetime
    last_login_at: datetime | None
    disabled: bool
    role: Role = Role.MEMBER
    must_change_password: bool = False


@dataclass(frozen=True, slots=True)
class SignIn:
    """The outcome: `user` when the password was right; otherwise `limited_for` is set when
    the throttle refused without looking at the password. `device`: the cookie value that
    marks this browser as known to the account (set it after a success)."""

    user: UserView | None
    limited_for: timedelta | None = None
    device: str = ""


def view(user: m.User) -> UserView:
    return UserView(
        user.id, user.workspace_id, user.email, user.name, user.created_at, user.last_login_at,
        user.disabled_at is not None, Role(user.role), user.must_change_password,
    )  # fmt: skip


def choose_password(uow: UnitOfWork, password: str, email: str, name: str = "") -> str:
    """The Argon2id hash of a password the person may choose; AccountError otherwise."""
    workspace = uow.session.scalar(select(m.Workspace.name).where(m.Workspace.id == uow.workspace_id))
    try:
        check_password(password, [email, name, workspace or "", "replyguard"])
    except WeakPassword as exc:
        raise AccountError(str(exc)) from None
    return _HASHER.hash(password)


def add_user(
    uow: UnitOfWork,
    email: str,
    password: str,
    *,
    name: str = "",
    role: Role | None = None,
    by: Principal | None = None,
    temporary: bool = False,
) -> UserView:
    """A user of `uow`'s workspace. The first user of a workspace is its owner; later ones are
    members unless `role` says otherwise. `temporary`: they choose their own password at their
    first sign-in. `by` (None: the operator) must be allowed to give that role. The caller
    commits."""
    try:
        address = normalize_address(email)
    except (InvalidAddress, UnsafeHeaderValue) as exc:
        raise AccountError(str(exc)) from None
    if uow.session.scalar(select(m.User.id).where(m.User.email == address)) is not None:
        raise AccountError(f"a user with the address {address} already exists")
    try:
        name = plain_name(name, "a name", 200)
    except ValueError as exc:
        raise AccountError(str(exc)) from None
    first = not uow.session.scalar(
        select(func.count()).select_from(m.User).where(m.User.workspace_id == uow.workspace_id)
    )
    role = role or (Role.OWNER if first else Role.MEMBER)
    check_role_change(by.role if by else None, role, role)
    user = m.User(
        workspace_id=uow.workspace_id,
        email=address,
        name=name,
        password_hash=choose_password(uow, password, address, name),
        created_at=uow.clock.now(),
        role=role.value,
        must_change_password=temporary,
    )
    uow.session.add(user)
    uow.session.flush()
    uow.add_event("user_added", email=address, role=role.value, by=by.label if by else "cli")
    return view(user)


def list_users(uow: UnitOfWork) -> list[UserView]:
    rows = uow.session.scalars(
        select(m.User).where(m.User.workspace_id == uow.workspace_id).order_by(m.User.email)
    )
    return [view(u) for u in rows]


def get_user(uow: UnitOfWork, user_id: int) -> m.User:
    user = uow.session.get(m.User, user_id)
    if user is None or user.workspace_id != uow.workspace_id:
        raise NotFound(f"no user {user_id} in this workspace")
    return user


def user_by_email(uow: UnitOfWork, email: str) -> m.User:
    """The user of this workspace with this address, or NotFound naming the users there are."""
    address = email.strip().lower()
    user = uow.session.scalar(
        select(m.User).where(m.User.workspace_id == uow.workspace_id, m.User.email == address)
    )
    if user is None:
        known = [u.email for u in list_users(uow)]
        raise NotFound(f"no user {address!r} in this workspace (users: {', '.join(known) or 'none'})")
    return user


def workspace_member(uow: UnitOfWork, email: str) -> str:
    """The address of an enabled user of this workspace (whom a thread may be assigned to);
    AccountError naming them otherwise."""
    address = email.strip().lower()
    users = list_users(uow)
    if not any(u.email == address and not u.disabled for u in users):
        known = ", ".join(u.email for u in users if not u.disabled) or "none"
        raise AccountError(f"{email.strip()[:320]!r} is not a user of this workspace (users: {known})")
    return address


def change_password(uow: UnitOfWork, user_id: int, current: str, new: str, *, keep_session: int) -> None:
    """A person changes their own password: the current one first. Their other sessions end.
    AccountError. The caller commits."""
    user = get_user(uow, user_id)
    if not _verify(user.password_hash, current[:MAX_PASSWORD]):
        raise AccountError("the current password is not right")
    if new == current:
        raise AccountError("the new password must differ from the current one")
    user.password_hash = choose_password(uow, new, user.email, user.name)
    user.must_change_password = False
    ended = end_sessions(uow, user.id, keep=keep_session)
    uow.add_event("user_password_changed", email=user.email, by=user.email, sessions_ended=ended)


@cache
def _dummy_hash() -> str:
    # Verified against when the address is unknown, so that both cases cost the same time.
    return _HASHER.hash("replyguard: no such user")


def sign_in(
    uow: UnitOfWork, email: str, password: str, ip: str, policy: LoginPolicy, *, device: str = ""
) -> SignIn:
    """Check the throttle, then the password; record the attempt. The caller commits in every
    case (a failure must be remembered). `device`: the browser's `rg_device` cookie."""
    key = account_key(email)
    verdict = login_throttle.judge(uow, key, ip, device, policy)
    if verdict.limited_for is not None:
        return SignIn(None, limited_for=verdict.limited_for)
    user = uow.session.scalar(select(m.User).where(m.User.email == email.strip().lower()))
    ok = _verify(user.password_hash if user else _dummy_hash(), password[:MAX_PASSWORD])
    ok = ok and user is not None and user.disabled_at is None
    login_throttle.record(uow, key, verdict, ip, ok, policy)
    if not ok or user is None:
        return SignIn(None)
    if _HASHER.check_needs_rehash(user.password_hash):
        user.password_hash = _HASHER.hash(password)
    user.last_login_at = uow.clock.now()
    return SignIn(view(user), device=login_throttle.remember_device(uow, key, device))


def _verify(hashed: str, password: str) -> bool:
    try:
        return _HASHER.verify(hashed, password)
    except (VerificationError, InvalidHashError, UnicodeEncodeError):
        return False
