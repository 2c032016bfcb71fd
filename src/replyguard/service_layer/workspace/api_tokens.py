"""Per-workspace API tokens: created (and shown) once, listed without their secret, revoked.

A token is `rg_` + 256 random bits. The database keeps its SHA-256 and a short prefix to
recognise it in a list; the secret itself is returned by `create_token` and never again.

Rights: a token has a scope (read, write or admin: domain/access.py) and acts for a person
(`user_id`: never more than their role, and dead once they are disabled or removed) or for
the operator (made at the command line). Who makes a token cannot give it more than they
have. A token made with another token's credentials is its child: it cannot outlive it (not
later, not after it is revoked, not after its person is disabled) — `find_token` checks the
whole line of parents at every request, so a child made in the same instant as a revoke dies
too, and `revoke_token` marks the line revoked for the list.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from replyguard.adapters.db import models as m
from replyguard.domain.access import AccessDenied, Level, Principal, Role, plain_name, token_level
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.web_sessions import digest

PREFIX = "rg_"
TOUCH_EVERY = timedelta(minutes=5)
#: A token made by a token made by a token ...: how deep a line may go.
MAX_DEPTH = 5


class TokenError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class TokenView:
    id: int
    name: str
    prefix: str
    created_by: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    scope: str = "read"
    expires_at: datetime | None = None
    user_id: int | None = None
    parent_id: int | None = None
    user: str | None = None  # the address of the person it acts for


@dataclass(frozen=True, slots=True)
class TokenCaller:
    token_id: int
    workspace_id: int
    name: str
    touch_due: bool
    scope: Level = Level.READ
    level: Level = Level.READ  # the scope, capped by the person's role
    user_id: int | None = None
    role: Role | None = None
    expires_at: datetime | None = None

    @property
    def principal(self) -> Principal:
        # An operator's token manages users as an admin, never as an owner.
        acting = self.role if self.role is not None else Role.ADMIN
        return Principal(f"api token {self.name}", self.level, acting, self.user_id, self.token_id,
                         self.expires_at)  # fmt: skip


def _view(row: m.ApiToken, user: str | None = None) -> TokenView:
    return TokenView(
        row.id, row.name, row.prefix, row.created_by, row.created_at, row.last_used_at, row.revoked_at,
        row.scope, row.expires_at, row.user_id, row.parent_id, user,
    )  # fmt: skip


def create_token(
    uow: UnitOfWork,
    name: str,
    by: Principal,
    *,
    scope: Level = Level.READ,
    expires_at: datetime | None = None,
    for_user: int | None = None,
) -> tuple[TokenView, str]:
    """A new token of `uow`'s workspace and its secret (show it once). The caller commits.

    It acts for `by`'s person (or, from the operator only, for `for_user`), with at most
    `by`'s rights, and never outlives the token `by` acts with. AccessDenied or TokenError."""
    try:
        name = plain_name(name, "a token's name", 100)
    except ValueError as exc:
        raise TokenError(str(exc)) from None
    if not name:
        raise TokenError("a token needs a name of 1 to 100 characters")
    now = uow.clock.now()
    if scope > by.level:
        raise AccessDenied(f"{by.label} may make tokens of {by.level.label} scope at most, not {scope.label}")
    user_id = by.user_id
    if for_user is not None:
        if by.role is not None:
            raise AccessDenied("only the operator makes a token for another person")
        user_id = _user_for(uow, for_user, scope).id
    if by.token_id is not None:
        if by.token_expires_at is not None and (expires_at is None or expires_at > by.token_expires_at):
            expires_at = by.token_expires_at  # a child never outlives its parent
        if _depth(uow, by.token_id) >= MAX_DEPTH:
            raise TokenError(f"a token made by a token may be at most {MAX_DEPTH} deep")
    if expires_at is not None and expires_at <= now:
        raise TokenError("the expiry must be in the future")
    taken = uow.session.scalar(
        select(m.ApiToken.id).where(m.ApiToken.workspace_id == uow.workspace_id, m.ApiToken.name == name)
    )
    if taken is not None:
        raise TokenError(f"this workspace already has a token named {name!r}")
    secret = PREFIX + secrets.token_urlsafe(32)
    row = m.ApiToken(
        workspace_id=uow.workspace_id,
        name=name,
        token_hash=digest(secret),
        prefix=secret[: len(PREFIX) + 6],
        created_by=by.label[:320],
        created_at=now,
        scope=scope.label,
        expires_at=expires_at,
        user_id=user_id,
        parent_id=by.token_id,
    )
    uow.session.add(row)
    uow.session.flush()
    uow.add_event("api_token_created", token_id=row.id, name=name, by=by.label, scope=scope.label)
    return _view(row), secret


def _user_for(uow: UnitOfWork, user_id: int, scope: Level) -> m.User:
    user = uow.session.get(m.User, user_id)
    if user is None or user.workspace_id != uow.workspace_id or user.disabled_at is not None:
        raise NotFound(f"no enabled user {user_id} in this workspace")
    if scope > Role(user.role).level:
        raise AccessDenied(
            f"{user.email} is {user.role}: a token for them has {Role(user.role).level.label} scope at most"
        )
    return user


def _depth(uow: UnitOfWork, token_id: int | None) -> int:
    depth = 0
    while token_id is not None and depth <= MAX_DEPTH:
        token_id = uow.session.scalar(select(m.ApiToken.parent_id).where(m.ApiToken.id == token_id))
        depth += 1
    return depth


def list_tokens(uow: UnitOfWork, by: Principal) -> list[TokenView]:
    rows = uow.session.execute(
        select(m.ApiToken, m.User.email)
        .outerjoin(m.User, m.User.id == m.ApiToken.user_id)
        .where(m.ApiToken.workspace_id == uow.workspace_id)
        .order_by(m.ApiToken.id)
    ).all()
    return [_view(r, email) for r, email in rows if _may_see(uow, by, r)]


def _may_see(uow: UnitOfWork, by: Principal, row: m.ApiToken) -> bool:
    if by.level >= Level.ADMIN:
        return True
    if by.token_id is not None:
        return _in_line(uow, row, by.token_id)
    return by.user_id is not None and row.user_id == by.user_id


def _in_line(uow: UnitOfWork, row: m.ApiToken, ancestor: int) -> bool:
    """Is `row` the token `ancestor` or one it made (directly or not)?"""
    current: int | None = row.id
    for _ in range(MAX_DEPTH + 2):
        if current is None:
            return False
        if current == ancestor:
            return True
        current = uow.session.scalar(select(m.ApiToken.parent_id).where(m.ApiToken.id == current))
    return False


def revoke_token(uow: UnitOfWork, token_id: int, by: Principal) -> TokenView:
    """Revoke a token of this workspace and every token made with it. NotFound when there is
    no such token, AccessDenied when it is not `by`'s to revoke. The caller commits."""
    row = uow.session.scalar(
        select(m.ApiToken).where(m.ApiToken.id == token_id, m.ApiToken.workspace_id == uow.workspace_id)
    )
    if row is None:
        raise NotFound(f"no API token {token_id} in this workspace")
    if not _may_see(uow, by, row):
        raise AccessDenied(f"{by.label} may revoke its own tokens only; this one is not")
    _revoke_line(uow, [row.id], by.label)
    uow.session.refresh(row)
    return _view(row)


def revoke_tokens_of_user(uow: UnitOfWork, user_id: int, by: str) -> int:
    """A user is disabled or removed: every token acting for them ends. The caller commits."""
    ids = list(
        uow.session.scalars(
            select(m.ApiToken.id).where(
                m.ApiToken.user_id == user_id, m.ApiToken.workspace_id == uow.workspace_id
            )
        )
    )
    return _revoke_line(uow, ids, by)


def _revoke_line(uow: UnitOfWork, ids: list[int], by: str) -> int:
    now, revoked, frontier = uow.clock.now(), 0, list(ids)
    seen: set[int] = set()
    while frontier:
        rows = uow.session.scalars(
            select(m.ApiToken).where(m.ApiToken.id.in_(frontier), m.ApiToken.workspace_id == uow.workspace_id)
        ).all()
        seen.update(frontier)
        for row in rows:
            if row.revoked_at is None:
                row.revoked_at = now
                revoked += 1
                uow.add_event("api_token_revoked", token_id=row.id, name=row.name, by=by)
        uow.session.flush()
        children = uow.session.scalars(select(m.ApiToken.id).where(m.ApiToken.parent_id.in_(frontier)))
        frontier = [c for c in children if c not in seen]
    return revoked


def find_token(uow: UnitOfWork, secret: str) -> TokenCaller | None:
    """The live token with this secret, in any workspace, or None. Reads only.

    Live: not revoked, not expired, its person (if any) enabled, and the same of every token
    in its line of parents."""
    if not secret.startswith(PREFIX) or len(secret) > 200:
        return None
    row = uow.session.scalar(select(m.ApiToken).where(m.ApiToken.token_hash == digest(secret)))
    if row is None:
        return None
    now = uow.clock.now()
    role: Role | None = None
    expires = row.expires_at
    current: m.ApiToken | None = row
    for _ in range(MAX_DEPTH + 2):
        if current is None:
            break
        if current.revoked_at is not None or (current.expires_at is not None and current.expires_at <= now):
            return None
        if current.user_id is not None:
            user = uow.session.get(m.User, current.user_id)
            if user is None or user.disabled_at is not None or user.workspace_id != row.workspace_id:
                return None
            if current is row:
                role = Role(user.role)
        if current.expires_at is not None and (expires is None or current.expires_at < expires):
            expires = current.expires_at
        current = uow.session.get(m.ApiToken, current.parent_id) if current.parent_id else None
    else:
        return None  # a line deeper than any `create_token` makes
    due = row.last_used_at is None or now - row.last_used_at >= TOUCH_EVERY
    scope = Level.parse(row.scope)
    return TokenCaller(row.id, row.workspace_id, row.name, due, scope, token_level(scope, role),
                       row.user_id, role, expires)  # fmt: skip


def touch_token(uow: UnitOfWork, token_id: int) -> None:
    uow.session.execute(
        update(m.ApiToken).where(m.ApiToken.id == token_id).values(last_used_at=uow.clock.now())
    )
