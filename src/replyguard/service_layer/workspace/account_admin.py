"""Managing the users of a workspace: roles, disabling (a rep who left), enabling, removing,
resetting a password, ending sessions, lifting the sign-in limits.

Who may do what is domain/access.py: an admin manages members, read-only users and admins; only
an owner acts on owners; the operator at the command line (`by=None`... a `Principal.operator`)
may do anything. Nobody disables, removes or demotes themselves (another admin must), and a
workspace always keeps one enabled owner.

Disabling ends everything the person holds at once: their sessions are deleted (the browser is
signed out on its next request) and every token acting for them is revoked, with the tokens
made from those. Enabling again gives back the account, not the tokens. Each function is one
use case; the caller commits.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select, update

from replyguard.adapters.db import models as m
from replyguard.domain.access import Principal, Role, check_role_change
from replyguard.domain.passwords import temporary_password
from replyguard.domain.throttle import LoginPolicy
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace import login_throttle
from replyguard.service_layer.workspace.accounts import (
    AccountError,
    UserView,
    choose_password,
    get_user,
    view,
)
from replyguard.service_layer.workspace.api_tokens import revoke_tokens_of_user
from replyguard.service_layer.workspace.web_sessions import end_sessions


@dataclass(frozen=True, slots=True)
class Reset:
    user: UserView
    password: str  # to hand to the person once: they choose their own at the next sign-in
    sessions_ended: int


def _target(uow: UnitOfWork, user_id: int, by: Principal, new: Role | None) -> m.User:
    user = get_user(uow, user_id)
    check_role_change(by.role, Role(user.role), new)
    if by.user_id == user.id and new is not Role(user.role):
        raise AccountError("you cannot do this to your own account: ask another admin or owner")
    return user


def _last_owner(uow: UnitOfWork, user: m.User) -> bool:
    if user.role != Role.OWNER or user.disabled_at is not None:
        return False
    owners = uow.session.scalar(
        select(func.count()).where(
            m.User.workspace_id == uow.workspace_id, m.User.role == Role.OWNER, m.User.disabled_at.is_(None)
        )
    )
    return (owners or 0) <= 1


def set_role(uow: UnitOfWork, user_id: int, role: Role, by: Principal) -> UserView:
    user = _target(uow, user_id, by, role)
    if role is not Role.OWNER and _last_owner(uow, user):
        raise AccountError(f"{user.email} is the only owner: make someone else owner first")
    if user.role != role:
        uow.add_event("user_role_changed", email=user.email, role=role.value, was=user.role, by=by.label)
        user.role = role.value
    return view(user)


def disable_user(uow: UnitOfWork, user_id: int, by: Principal) -> UserView:
    """The person can no longer sign in; their sessions and tokens end now."""
    user = _target(uow, user_id, by, None)
    if _last_owner(uow, user):
        raise AccountError(f"{user.email} is the only owner: make someone else owner first")
    if user.disabled_at is None:
        user.disabled_at = uow.clock.now()
    sessions = end_sessions(uow, user.id)
    tokens = revoke_tokens_of_user(uow, user.id, by.label)
    uow.add_event(
        "user_disabled", email=user.email, by=by.label, sessions_ended=sessions, tokens_revoked=tokens
    )
    return view(user)


def enable_user(uow: UnitOfWork, user_id: int, by: Principal) -> UserView:
    user = _target(uow, user_id, by, None)
    if user.disabled_at is not None:
        user.disabled_at = None
        uow.add_event("user_enabled", email=user.email, by=by.label)
    return view(user)


def remove_user(uow: UnitOfWork, user_id: int, by: Principal) -> str:
    """The user is deleted; their sessions go, their tokens are revoked (and kept, revoked, in
    the list), what they did stays in the events under their address. Returns the address."""
    user = _target(uow, user_id, by, None)
    if _last_owner(uow, user):
        raise AccountError(f"{user.email} is the only owner: make someone else owner first")
    email = user.email
    end_sessions(uow, user.id)
    tokens = revoke_tokens_of_user(uow, user.id, by.label)
    # A revoked token keeps its row for the list, no longer pointing at a user who is gone.
    uow.session.execute(update(m.ApiToken).where(m.ApiToken.user_id == user.id).values(user_id=None))
    uow.session.delete(user)
    uow.add_event("user_removed", email=email, by=by.label, tokens_revoked=tokens)
    return email


def reset_password(uow: UnitOfWork, user_id: int, by: Principal, password: str | None = None) -> Reset:
    """A new password (the given one, or a random one), which the person must replace at
    their next sign-in; their sessions end."""
    user = _target(uow, user_id, by, None)
    password = password or temporary_password()
    user.password_hash = choose_password(uow, password, user.email, user.name)
    user.must_change_password = True
    ended = end_sessions(uow, user.id)
    uow.add_event("user_password_reset", email=user.email, by=by.label, sessions_ended=ended)
    return Reset(view(user), password, ended)


def sign_out_everywhere(uow: UnitOfWork, user_id: int, by: Principal) -> int:
    user = _target(uow, user_id, by, None)
    ended = end_sessions(uow, user.id)
    uow.add_event("user_signed_out", email=user.email, by=by.label, sessions_ended=ended)
    return ended


def unlock(uow: UnitOfWork, user_id: int, by: Principal) -> int:
    """Lift the sign-in limits of this user's account (its failures are forgotten)."""
    user = _target(uow, user_id, by, None)
    forgotten = login_throttle.unlock(uow, user.email)
    uow.add_event("user_unlocked", email=user.email, by=by.label, failures_forgotten=forgotten)
    return forgotten


@dataclass(frozen=True, slots=True)
class UserRow:
    user: UserView
    sessions: int
    tokens: int
    failures: int  # recent sign-in failures from clients the account does not know


def user_rows(uow: UnitOfWork, policy: LoginPolicy) -> list[UserRow]:
    """Every user of the workspace with what the admin page shows beside them."""
    now = uow.clock.now()
    ws = uow.workspace_id
    sessions = dict(
        uow.session.execute(
            select(m.WebSession.user_id, func.count())
            .where(m.WebSession.workspace_id == ws, m.WebSession.expires_at > now)
            .group_by(m.WebSession.user_id)
        ).all()
    )
    tokens = dict(
        uow.session.execute(
            select(m.ApiToken.user_id, func.count())
            .where(m.ApiToken.workspace_id == ws, m.ApiToken.revoked_at.is_(None))
            .group_by(m.ApiToken.user_id)
        ).all()
    )
    users = uow.session.scalars(select(m.User).where(m.User.workspace_id == ws).order_by(m.User.email))
    return [
        UserRow(view(u), sessions.get(u.id, 0), tokens.get(u.id, 0),
                login_throttle.recent_failures(uow, u.email, policy))
        for u in users
    ]  # fmt: skip
