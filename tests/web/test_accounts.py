"""Users, passwords, the sign-in throttle, sessions and API tokens, at the service layer, on
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from argon2 import Type
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.access import AccessDenied, Level, Principal, Role
from replyguard.domain.clock import FixedClock
from replyguard.domain.throttle import LoginPolicy
from replyguard.service_layer.workspace import account_admin, accounts, api_tokens, web_sessions
from replyguard.service_layer.workspace.accounts import AccountError, SignIn, add_user, sign_in

PASSWORD = "correct horse battery staple"
POLICY = LoginPolicy()


def attempt(
    app: App,
    email: str,
    password: str,
    ip: str = "10.0.0.1",
    policy: LoginPolicy = POLICY,
    device: str = "",
) -> SignIn:
    with app.scoped.installation(write=True) as uow:
        outcome = sign_in(uow, email, password, ip, policy, device=device)
        uow.commit()
    return outcome


@pytest.fixture
def ann(app: App) -> App:
    with app.uow() as uow:
        add_user(uow, "Ann@Alpha.test", PASSWORD, name="Ann")
        uow.commit()
    return app


def user_id(app: App, email: str) -> int:
    with app.uow() as uow:
        return accounts.user_by_email(uow, email).id


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
        ("new@alpha.test", "short", "at least 12"),
        ("new@alpha.test", "password", "at least 12"),
        ("new@alpha.test", "aaaaaaaa", "at least 12"),
        ("new@alpha.test", "x" * 2000, "at most"),
        ("new@alpha.test", "1qaz2wsx3edc", "most common passwords"),  # in the shipped list
        ("new@alpha.test", "aaaaaaaaaaaa", "too easy to guess"),  # a repeat
        ("new@alpha.test", "passwordpassword", "too easy to guess"),
        ("new@alpha.test", "zxcvbnmasdfg", "too easy to guess"),  # a keyboard walk
        ("new@alpha.test", "new@alpha.test1", "too easy to guess"),  # their own address
    ],
)
def test_a_bad_user_or_password_is_refused_with_a_reason(
    ann: App, email: str, password: str, why: str
) -> None:
    with ann.uow() as uow, pytest.raises(AccountError, match=why):
        add_user(uow, email, password)


def test_the_first_user_of_a_workspace_is_its_owner_and_later_ones_members(ann: App) -> None:
    with ann.uow() as uow:
        bob = add_user(uow, "bob@alpha.test", PASSWORD)
        uow.commit()
        roles = {u.email: u.role for u in accounts.list_users(uow)}
    assert roles == {"ann@alpha.test": Role.OWNER, "bob@alpha.test": Role.MEMBER}
    assert bob.role is Role.MEMBER


def test_the_right_password_signs_in_and_a_wrong_one_does_not(ann: App) -> None:
    assert attempt(ann, "ANN@alpha.test ", PASSWORD).user is not None
    wrong = attempt(ann, "ann@alpha.test", PASSWORD + "!")
    assert wrong.user is None and wrong.limited_for is None
    unknown = attempt(ann, "nobody@alpha.test", PASSWORD)
    assert unknown.user is None and unknown.limited_for is None


def test_failures_from_one_client_meet_growing_waits(ann: App, clock: FixedClock) -> None:
    for _ in range(POLICY.free_failures):  # a person's typos cost nothing
        assert attempt(ann, "ann@alpha.test", "wrong password").limited_for is None
    waits = []
    for _ in range(5):
        refused = attempt(ann, "ann@alpha.test", PASSWORD)  # even the right one, during the wait
        assert refused.user is None and refused.limited_for is not None
        waits.append(refused.limited_for)
        clock.advance(refused.limited_for)
        assert attempt(ann, "ann@alpha.test", "wrong password").limited_for is None  # heard, wrong
    assert waits == sorted(waits) and waits[-1] >= 8 * waits[0]
    # The wait was this client's: the same account from elsewhere is heard at once.
    assert attempt(ann, "ann@alpha.test", PASSWORD, ip="10.9.9.9").user is not None


def test_strangers_failing_on_purpose_cannot_lock_the_owner_out(ann: App, clock: FixedClock) -> None:
    """The issue's attack: five wrong passwords from anywhere locked Ann out for 15 minutes.
    Now her own browser (known from an earlier sign-in) is never refused for their failures;
    new clients meet the account-wide limit only far above typing, and an admin lifts it."""
    first = attempt(ann, "ann@alpha.test", PASSWORD, ip="192.0.2.7")
    assert first.user is not None and first.device
    for n in range(POLICY.per_account):
        attempt(ann, "ann@alpha.test", "guess", ip=f"203.0.113.{n % 250}")
        clock.advance(timedelta(seconds=1))
    # A new client is refused now, before its password is looked at ...
    assert attempt(ann, "ann@alpha.test", PASSWORD, ip="198.51.100.1").limited_for is not None
    # ... but Ann's browser signs in, even from another address (a train, a phone network).
    mine = attempt(ann, "ann@alpha.test", PASSWORD, ip="198.51.100.2", device=first.device)
    assert mine.user is not None and mine.device == first.device
    # An admin unlocks the account for everybody.
    with ann.uow() as uow:
        forgotten = account_admin.unlock(uow, user_id(ann, "ann@alpha.test"), Principal.operator())
        uow.commit()
    assert forgotten == POLICY.per_account
    assert attempt(ann, "ann@alpha.test", PASSWORD, ip="198.51.100.1").user is not None


def test_a_forged_device_cookie_is_just_an_unknown_client(ann: App) -> None:
    policy = LoginPolicy(per_account=3)
    for n in range(3):
        attempt(ann, "ann@alpha.test", "guess", ip=f"203.0.113.{n}", policy=policy)
    forged = attempt(ann, "ann@alpha.test", PASSWORD, ip="203.0.113.9", policy=policy, device="x" * 43)
    assert forged.limited_for is not None


def test_one_address_trying_many_accounts_is_limited(ann: App) -> None:
    policy = LoginPolicy(per_address=3)
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


def open_for(app: App, email: str) -> web_sessions.NewSession:
    user = attempt(app, email, PASSWORD).user
    assert user is not None
    with app.scoped.installation(write=True) as uow:
        new = web_sessions.open_session(uow, user, user_agent="pytest", ip="10.0.0.1")
        uow.commit()
    return new


def live(app: App, token: str) -> web_sessions.SessionView | None:
    with app.scoped.installation() as uow:
        return web_sessions.find_session(uow, token)


def test_a_session_lives_by_its_cookie_value_and_ends_idle_or_at_sign_out(
    ann: App, clock: FixedClock
) -> None:
    new = open_for(ann, "ann@alpha.test")
    found = live(ann, new.token)
    assert found is not None and found.workspace_id == ann.workspace_id and found.role is Role.OWNER
    assert live(ann, new.token + "x") is None
    with ann.uow() as uow:
        stored = uow.session.scalars(select(m.WebSession.token_hash)).all()
    assert new.token not in stored
    clock.advance(web_sessions.IDLE + timedelta(seconds=1))
    assert live(ann, new.token) is None


def test_disabling_a_user_ends_their_sessions_and_tokens_at_once(ann: App) -> None:
    with ann.uow() as uow:
        add_user(uow, "rep@alpha.test", PASSWORD)
        uow.commit()
    rep = user_id(ann, "rep@alpha.test")
    session = open_for(ann, "rep@alpha.test")
    rep_principal = Principal("rep@alpha.test", Level.WRITE, Role.MEMBER, rep)
    with ann.uow() as uow:
        _view, secret = api_tokens.create_token(uow, "rep's script", rep_principal, scope=Level.WRITE)
        uow.commit()
    with ann.uow() as uow:
        account_admin.disable_user(uow, rep, Principal.operator())
        uow.commit()
    assert live(ann, session.token) is None
    with ann.scoped.installation() as uow:
        assert api_tokens.find_token(uow, secret) is None
    assert attempt(ann, "rep@alpha.test", PASSWORD).user is None
    with ann.uow() as uow:
        account_admin.enable_user(uow, rep, Principal.operator())
        uow.commit()
    assert attempt(ann, "rep@alpha.test", PASSWORD).user is not None
    with ann.scoped.installation() as uow:
        assert api_tokens.find_token(uow, secret) is None  # enabling gives back the account only


def test_a_workspace_keeps_an_owner_and_an_admin_cannot_touch_owners(ann: App) -> None:
    owner = user_id(ann, "ann@alpha.test")
    with ann.uow() as uow:
        add_user(uow, "adam@alpha.test", PASSWORD, role=Role.ADMIN)
        uow.commit()
    adam = Principal("adam@alpha.test", Level.ADMIN, Role.ADMIN, user_id(ann, "adam@alpha.test"))
    for change in (
        lambda uow: account_admin.disable_user(uow, owner, adam),
        lambda uow: account_admin.set_role(uow, owner, Role.MEMBER, adam),
        lambda uow: account_admin.reset_password(uow, owner, adam),
    ):
        with ann.uow() as uow, pytest.raises(AccessDenied):
            change(uow)
    with ann.uow() as uow, pytest.raises(AccessDenied):
        add_user(uow, "eve@alpha.test", PASSWORD, role=Role.OWNER, by=adam)
    with ann.uow() as uow, pytest.raises(AccountError, match="only owner"):
        account_admin.disable_user(uow, owner, Principal.operator())
    with ann.uow() as uow, pytest.raises(AccountError, match="your own account"):
        account_admin.set_role(uow, adam.user_id or 0, Role.MEMBER, adam)


def test_a_reset_password_must_be_changed_and_a_change_ends_other_sessions(ann: App) -> None:
    with ann.uow() as uow:
        add_user(uow, "rep@alpha.test", PASSWORD)
        uow.commit()
    rep = user_id(ann, "rep@alpha.test")
    before = open_for(ann, "rep@alpha.test")
    with ann.uow() as uow:
        reset = account_admin.reset_password(uow, rep, Principal.operator())
        uow.commit()
    assert reset.sessions_ended == 1 and live(ann, before.token) is None
    assert attempt(ann, "rep@alpha.test", PASSWORD).user is None
    signed = attempt(ann, "rep@alpha.test", reset.password).user
    assert signed is not None and signed.must_change_password
    with ann.scoped.installation(write=True) as uow:
        one = web_sessions.open_session(uow, signed)
        two = web_sessions.open_session(uow, signed)
        uow.commit()
    keep = live(ann, one.token)
    assert keep is not None
    new_password = "a lantern over the quiet harbour"
    with ann.uow() as uow, pytest.raises(AccountError, match="current password"):
        accounts.change_password(uow, rep, "not it", new_password, keep_session=keep.session_id)
    with ann.uow() as uow:
        accounts.change_password(uow, rep, reset.password, new_password, keep_session=keep.session_id)
        uow.commit()
    after = live(ann, one.token)
    assert after is not None and not after.must_change_password
    assert live(ann, two.token) is None


def test_a_token_cannot_make_a_token_with_more_rights_and_its_children_die_with_it(
    ann: App, clock: FixedClock
) -> None:
    scoped = ann.scoped
    with ann.uow() as uow:
        _p, parent_secret = api_tokens.create_token(
            uow,
            "parent",
            Principal.operator(),
            scope=Level.WRITE,
            expires_at=clock.now() + timedelta(days=30),
        )
        uow.commit()
    with scoped.installation() as uow:
        parent = api_tokens.find_token(uow, parent_secret)
    assert parent is not None
    with ann.uow() as uow, pytest.raises(AccessDenied, match="write scope at most"):
        api_tokens.create_token(uow, "escalated", parent.principal, scope=Level.ADMIN)
    with ann.uow() as uow:
        child, child_secret = api_tokens.create_token(uow, "child", parent.principal, scope=Level.WRITE)
        grandchild_view, grandchild = api_tokens.create_token(
            uow, "grandchild", Principal("x", Level.WRITE, None, None, child.id, child.expires_at)
        )
        uow.commit()
    assert child.expires_at == clock.now() + timedelta(days=30)  # never outlives its parent
    with ann.uow() as uow:
        api_tokens.revoke_token(uow, parent.token_id, Principal.operator())
        uow.commit()
    with scoped.installation() as uow:
        assert api_tokens.find_token(uow, child_secret) is None
        assert api_tokens.find_token(uow, grandchild) is None
    with ann.uow() as uow:
        listed = {t.name: t.revoked_at is not None for t in api_tokens.list_tokens(uow, Principal.operator())}
    assert listed == {"parent": True, "child": True, "grandchild": True}
    assert grandchild_view.parent_id == child.id


def test_a_token_dies_at_its_expiry(ann: App, clock: FixedClock) -> None:
    with ann.uow() as uow:
        _v, secret = api_tokens.create_token(
            uow, "short", Principal.operator(), expires_at=clock.now() + timedelta(hours=1)
        )
        uow.commit()
    scoped = ann.scoped
    with scoped.installation() as uow:
        assert api_tokens.find_token(uow, secret) is not None
    clock.advance(timedelta(hours=1))
    with scoped.installation() as uow:
        assert api_tokens.find_token(uow, secret) is None


def test_a_users_token_never_does_more_than_their_role(ann: App) -> None:
    with ann.uow() as uow:
        add_user(uow, "rep@alpha.test", PASSWORD, role=Role.ADMIN)
        uow.commit()
    rep = user_id(ann, "rep@alpha.test")
    with ann.uow() as uow:
        _v, secret = api_tokens.create_token(
            uow, "rep", Principal("rep@alpha.test", Level.ADMIN, Role.ADMIN, rep), scope=Level.ADMIN
        )
        account_admin.set_role(uow, rep, Role.READONLY, Principal.operator())
        uow.commit()
    with ann.scoped.installation() as uow:
        found = api_tokens.find_token(uow, secret)
    assert found is not None and found.scope is Level.ADMIN and found.level is Level.READ
