"""Signed-in browsers: server-side sessions with a per-session form (CSRF) token.

The cookie carries 256 random bits; the database keeps their SHA-256 only. A session ends
after `IDLE` without a request, after `LONGEST` in any case, at sign-out, or when its user is
disabled. `last_seen_at` is written at most every `TOUCH_EVERY`, so reading a page does not
write to the database each time.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update

from replyguard.adapters.db import models as m
from replyguard.service_layer.accounts import UserView
from replyguard.service_layer.uow import UnitOfWork

IDLE = timedelta(hours=12)
LONGEST = timedelta(days=7)
TOUCH_EVERY = timedelta(minutes=5)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


@dataclass(frozen=True, slots=True)
class NewSession:
    token: str  # for the cookie only: never stored, never logged
    csrf_token: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class SessionView:
    session_id: int
    user_id: int
    email: str
    name: str
    workspace_id: int
    workspace: str
    csrf_token: str
    touch_due: bool  # `touch` should be called (outside this read)


def open_session(uow: UnitOfWork, user: UserView) -> NewSession:
    """A new session for a user who just signed in. The caller commits."""
    now = uow.clock.now()
    token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    expires = now + IDLE
    uow.session.add(
        m.WebSession(
            workspace_id=user.workspace_id,
            user_id=user.id,
            token_hash=digest(token),
            csrf_token=csrf,
            created_at=now,
            last_seen_at=now,
            expires_at=expires,
        )
    )
    uow.session.execute(delete(m.WebSession).where(m.WebSession.expires_at < now))
    return NewSession(token, csrf, expires)


def find_session(uow: UnitOfWork, token: str) -> SessionView | None:
    """The live session of this cookie value, or None. Reads only."""
    if not token or len(token) > 200:
        return None
    now = uow.clock.now()
    row = uow.session.execute(
        select(m.WebSession, m.User, m.Workspace.name)
        .join(m.User, m.User.id == m.WebSession.user_id)
        .join(m.Workspace, m.Workspace.id == m.WebSession.workspace_id)
        .where(m.WebSession.token_hash == digest(token))
    ).one_or_none()
    if row is None:
        return None
    session, user, workspace = row
    alive = (
        session.expires_at > now
        and session.created_at + LONGEST > now
        and user.disabled_at is None
        and user.workspace_id == session.workspace_id
    )
    if not alive:
        return None
    return SessionView(
        session.id,
        user.id,
        user.email,
        user.name,
        session.workspace_id,
        workspace,
        session.csrf_token,
        touch_due=now - session.last_seen_at >= TOUCH_EVERY,
    )


def touch(uow: UnitOfWork, session_id: int) -> None:
    """Slide the idle expiry of a session that is in use. The caller commits."""
    now = uow.clock.now()
    uow.session.execute(
        update(m.WebSession)
        .where(m.WebSession.id == session_id)
        .values(last_seen_at=now, expires_at=now + IDLE)
    )


def close_session(uow: UnitOfWork, token: str) -> None:
    """Sign out: the session row is deleted. The caller commits."""
    uow.session.execute(delete(m.WebSession).where(m.WebSession.token_hash == digest(token)))
