"""Per-workspace API tokens: created (and shown) once, listed without their secret, revoked.

A token is `rg_` + 256 random bits. The database keeps its SHA-256 and a short prefix to
recognise it in a list; the secret itself is returned by `create_token` and never again.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from replyguard.adapters.db import models as m
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.web_sessions import digest

PREFIX = "rg_"
TOUCH_EVERY = timedelta(minutes=5)


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


@dataclass(frozen=True, slots=True)
class TokenCaller:
    token_id: int
    workspace_id: int
    name: str
    touch_due: bool


def _view(row: m.ApiToken) -> TokenView:
    return TokenView(
        row.id, row.name, row.prefix, row.created_by, row.created_at, row.last_used_at, row.revoked_at
    )


def create_token(uow: UnitOfWork, name: str, created_by: str) -> tuple[TokenView, str]:
    """A new token of `uow`'s workspace and its secret (show it once). The caller commits."""
    name = " ".join(name.split())
    if not name or len(name) > 100:
        raise TokenError("a token needs a name of 1 to 100 characters")
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
        created_by=created_by[:320],
        created_at=uow.clock.now(),
    )
    uow.session.add(row)
    uow.session.flush()
    uow.add_event("api_token_created", token_id=row.id, name=name, by=created_by)
    return _view(row), secret


def list_tokens(uow: UnitOfWork) -> list[TokenView]:
    rows = uow.session.scalars(
        select(m.ApiToken).where(m.ApiToken.workspace_id == uow.workspace_id).order_by(m.ApiToken.id)
    )
    return [_view(r) for r in rows]


def revoke_token(uow: UnitOfWork, token_id: int, by: str) -> TokenView:
    """Revoke a token of this workspace (NotFound otherwise). The caller commits."""
    row = uow.session.scalar(
        select(m.ApiToken).where(m.ApiToken.id == token_id, m.ApiToken.workspace_id == uow.workspace_id)
    )
    if row is None:
        raise NotFound(f"no API token {token_id} in this workspace")
    if row.revoked_at is None:
        row.revoked_at = uow.clock.now()
        uow.add_event("api_token_revoked", token_id=row.id, name=row.name, by=by)
    return _view(row)


def find_token(uow: UnitOfWork, secret: str) -> TokenCaller | None:
    """The live token with this secret, in any workspace, or None. Reads only."""
    if not secret.startswith(PREFIX) or len(secret) > 200:
        return None
    row = uow.session.scalar(select(m.ApiToken).where(m.ApiToken.token_hash == digest(secret)))
    if row is None or row.revoked_at is not None:
        return None
    now = uow.clock.now()
    due = row.last_used_at is None or now - row.last_used_at >= TOUCH_EVERY
    return TokenCaller(row.id, row.workspace_id, row.name, due)


def touch_token(uow: UnitOfWork, token_id: int) -> None:
    uow.session.execute(
        update(m.ApiToken).where(m.ApiToken.id == token_id).values(last_used_at=uow.clock.now())
    )
