"""Signed-in browsers: server-side sessions with a per-session form (CSRF) token.

The cookie carries 256 random bits; the database keeps their SHA-256 only. A session ends
after `IDLE` without a request, after `LONGEST` in any case, at sign-out, when the person ends
it from their account page, when their password changes (every other session), or when their
user is disabled or removed — on the session's very next request, since every request reads
the session with its user. `last_seen_at` is written at most every `TOUCH_EVERY`, so reading a
page does not write to the database each time.

A session also carries its flash messages: what a form's redirect wants the next page to say
("Campaign created"), kept here rather than in the URL, so that a reload or a shared link
never says it again.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import delete, select, update

from replyguard.adapters.db import models as m
from replyguard.domain.access import Role
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.uow import UnitOfWork

if TYPE_CHECKING:
    from replyguard.service_layer.workspace.accounts import UserView

IDLE = timedelta(hours=12)
LONGEST = timedelta(days=7)
TOUCH_EVERY = timedelta(minutes=5)
MAX_FLASH = 5


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


@dataclass(frozen=True, slots=True)
class NewSession:
    token: str  # for the cookie only: never stored, never logged
    csrf_token: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Flash:
    kind: str  # ok | error
    text: str


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
    role: Role = Role.MEMBER
    must_change_password: bool = False
    flash: tuple[Flash, ...] = ()  # to show on this page; `take_flash` clears them


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: int
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime
    user_agent: str
    ip: str


def open_session(uow: UnitOfWork, user: UserView, *, user_agent: str = "", ip: str = "") -> NewSession:
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
            user_agent=user_agent[:200] or None,
            ip=ip[:64] or None,
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
        role=Role(user.role),
        must_change_password=user.must_change_password,
        flash=tuple(Flash(str(f[0]), str(f[1])) for f in session.flash or []),
    )


def touch(uow: UnitOfWork, session_id: int) -> None:
    """Slide the idle expiry of a session that is in use. The caller commits."""
    now = uow.clock.now()
    uow.session.execute(
        update(m.WebSession)
        .where(m.WebSession.id == session_id)
        .values(last_seen_at=now, expires_at=now + IDLE)
    )


def add_flash(uow: UnitOfWork, session_id: int, text: str, kind: str = "ok") -> None:
    """A message for the next page this session shows. The caller commits."""
    row = uow.session.get(m.WebSession, session_id)
    if row is not None and row.workspace_id == uow.workspace_id:
        row.flash = [*(row.flash or []), [kind, text[:500]]][-MAX_FLASH:]


def take_flash(uow: UnitOfWork, session_id: int) -> None:
    """The messages were shown: clear them. The caller commits."""
    uow.session.execute(update(m.WebSession).where(m.WebSession.id == session_id).values(flash=None))


def close_session(uow: UnitOfWork, token: str) -> None:
    """Sign out: the session row is deleted. The caller commits."""
    uow.session.execute(delete(m.WebSession).where(m.WebSession.token_hash == digest(token)))


def list_sessions(uow: UnitOfWork, user_id: int) -> list[SessionRow]:
    """The live sessions of a user of this workspace, the most recently used first."""
    now = uow.clock.now()
    rows = uow.session.scalars(
        select(m.WebSession)
        .where(
            m.WebSession.workspace_id == uow.workspace_id,
            m.WebSession.user_id == user_id,
            m.WebSession.expires_at > now,
            m.WebSession.created_at > now - LONGEST,
        )
        .order_by(m.WebSession.last_seen_at.desc(), m.WebSession.id.desc())
    )
    return [
        SessionRow(r.id, r.created_at, r.last_seen_at, r.expires_at, r.user_agent or "", r.ip or "")
        for r in rows
    ]


def end_session(uow: UnitOfWork, user_id: int, session_id: int) -> None:
    """End one session of this user (NotFound if it is not theirs). The caller commits."""
    gone = uow.session.execute(
        delete(m.WebSession).where(
            m.WebSession.id == session_id,
            m.WebSession.user_id == user_id,
            m.WebSession.workspace_id == uow.workspace_id,
        )
    )
    if not getattr(gone, "rowcount", 0):
        raise NotFound(f"no session {session_id} of yours")


def end_sessions(uow: UnitOfWork, user_id: int, *, keep: int | None = None) -> int:
    """End every session of a user of this workspace (but `keep`); how many. The caller commits."""
    query = delete(m.WebSession).where(
        m.WebSession.user_id == user_id, m.WebSession.workspace_id == uow.workspace_id
    )
    if keep is not None:
        query = query.where(m.WebSession.id != keep)
    return int(getattr(uow.session.execute(query), "rowcount", 0) or 0)
