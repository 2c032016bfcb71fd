"""Users, sign-in and its rate limit, sessions and API tokens, at the service layer, on
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from argon2 import Type
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer import accounts, api_tokens, web_sessions
from replyguard.service_layer.accounts import AccountError, LoginPolicy, SignIn, add_user, sign_in

PASSWORD = "correct horse battery staple"
POLICY = LoginPolicy(window=timedelta(minutes=15), per_account=5, per_ip=20)


def attempt(
    app: App, email: str, password: str, ip: str = "10.0.0.1", policy: LoginPolicy = POLICY
) -> SignIn:
    with app.scoped.installation(write=True) as uow:
        outcome = sign_in(uow, email, password, ip, policy)
        uow.commit()
    return outcome


@pytest.fixture
def ann(app: App) -> App:
    with app.uow() as uow:
        add_user(uow, "Ann@Alpha.test", PASSWORD, name="Ann")
        uow.commit()
    return app


def test_a_password_is_stored_as_an_argon2id_hash_only(ann: App) -> None:
    with ann.uow() as uow:
        email, hashed = uow.session.execute(select(m.User.email, m.User.password_hash)).one()
    assert email == "ann@alpha.test"
    assert hashed.startswith("$argon2id$")
    assert PASSWORD not in hashed


@pytest.mark.parametrize(
    ("email", "password", "why"),
    [
        ("ann@alpha.test", PASSWORD, "already exists"),
        ("not-an-address", PASSWORD, "not a valid email address"),
        ("new@alpha.test", "short", "at least 8"),
        ("new@alpha.test", "x" * 2000, "at most"),
    ],
)
def test_a_bad_user_is_refused_with_a_reason(ann: App, email: str, password: str, why: str) -> None:
    with ann.uow() as uow, pytest.raises(AccountError, match=why):
        add_user(uow, email, password)


def test_the_right_password_signs_in_and_a_wrong_one_does_not(ann: App) -> None:
    assert attempt(ann, "ANN@alpha.test ", PASSWORD).user is not None
    wrong = attempt(ann, "ann@alpha.test", PASSWORD + "!")
    assert wrong.user is None and wrong.limited_for is None
    unknown = attempt(ann, "nobody@alpha.test", PASSWORD)
    assert unknown.user is None and unknown.limited_for is None


def test_five_failures_lock_the_account_even_for_the_right_password(ann: App, clock: FixedClock) -> None:
    for _ in range(5):
        assert attempt(ann, "ann@alpha.test", "wrong password").limited_for is None
    locked = attempt(ann, "ann@alpha.test", PASSWORD)
    assert locked.user is None
    assert locked.limited_for is not None and locked.limited_for <= timedelta(minutes=15)
    # Another client address does not lift an account's limit...
    assert attempt(ann, "ann@alpha.test", PASSWORD, ip="10.9.9.9").limited_for is not None
    # ...and the limit ends once the failures have left the window.
    clock.advance(timedelta(minutes=15, seconds=1))
    assert attempt(ann, "ann@alpha.test", PASSWORD).user is not None


def test_a_success_starts_the_account_count_again(ann: App, clock: FixedClock) -> None:
    for _ in range(4):
        attempt(ann, "ann@alpha.test", "wrong password")
    clock.advance(timedelta(seconds=1))
    assert attempt(ann, "ann@alpha.test", PASSWORD).user is not None
    clock.advance(timedelta(seconds=1))
    for _ in range(4):
        attempt(ann, "ann@alpha.test", "wrong password")
    assert attempt(ann, "ann@alpha.test", PASSWORD).user is not None


def test_one_client_address_trying_many_accounts_is_limited(ann: App) -> None:
    policy = LoginPolicy(window=timedelta(minutes=15), per_account=5, per_ip=3)
    for n in range(3):
        attempt(ann, f"guess{n}@alpha.test", "wrong password", policy=policy)
    assert attempt(ann, "ann@alpha.test", PASSWORD, policy=policy).limited_for is not None
    assert attempt(ann, "ann@alpha.test", PASSWORD, ip="10.0.0.2", policy=policy).user is not None


def test_attempts_keep_no_readable_address(ann: App) -> None:
    attempt(ann, "ann@alpha.test", "typed my password in the email field")
    with ann.uow() as uow:
        keys = uow.session.scalars(select(m.LoginAttempt.account_key)).all()
    assert keys and all("@" not in k and len(k) == 64 for k in keys)


def test_production_hashes_use_argon2id_with_rfc_9106_parameters() -> None:
    # The web tests sign in with cheaper parameters (conftest.py); the product never does.
    hasher = accounts.PRODUCTION_HASHER
    assert hasher.type is Type.ID
    assert hasher.time_cost >= 3 and hasher.memory_cost >= 64 * 1024


def test_a_session_lives_by_its_cookie_value_and_ends_idle_or_at_sign_out(
    ann: App, clock: FixedClock
) -> None:
    scoped = ann.scoped
    user = attempt(ann, "ann@alpha.test", PASSWORD).user
    assert user is not None
    with scoped.installation(write=True) as uow:
        new = web_sessions.open_session(uow, user)
        uow.commit()
    with scoped.installation() as uow:
        found = web_sessions.find_session(uow, new.token)
        assert found is not None and found.workspace_id == ann.workspace_id
        assert web_sessions.find_session(uow, new.token + "x") is None
        stored = uow.session.scalars(select(m.WebSession.token_hash)).all()
    assert new.token not in stored
    clock.advance(web_sessions.IDLE + timedelta(seconds=1))
    with scoped.installation() as uow:
        assert web_sessions.find_session(uow, new.token) is None


def test_api_tokens_are_shown_once_kept_as_digests_and_revocable(ann: App) -> None:
    scoped = ann.scoped
    with ann.uow() as uow:
        view, secret = api_tokens.create_token(uow, "crm sync", "ann@alpha.test")
        uow.commit()
    assert secret.startswith("rg_") and view.prefix == secret[:9]
    with scoped.installation() as uow:
        caller = api_tokens.find_token(uow, secret)
        assert caller is not None and caller.workspace_id == ann.workspace_id
        assert secret not in {t.token_hash for t in uow.session.scalars(select(m.ApiToken))}
    with ann.uow() as uow:
        api_tokens.revoke_token(uow, view.id, "ann@alpha.test")
        uow.commit()
    with scoped.installation() as uow:
        assert api_tokens.find_token(uow, secret) is None
