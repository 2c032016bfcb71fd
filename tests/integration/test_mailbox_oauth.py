"""The OAuth2 life cycle of a connected mailbox, end to end (issue 24, item 3): connect, send
and read with XOAUTH2, refresh before expiry, a revoked grant pauses the mailbox and tells its
owners how to reconnect, and reconnecting resumes it.

Every party is real: a local authorization server built from Authlib's server parts
(tests/support/oauth_server.py: code flow with PKCE, refresh, RFC 7662 introspection), a
private Dovecot whose oauth2 passdb introspects each XOAUTH2 token there, and an aiosmtpd
server whose XOAUTH2 mechanism does the same. The "provider" is Google's configuration with
its endpoints and servers pointed at them, as REPLYGUARD_GOOGLE_* would."""

from __future__ import annotations

import email
import email.policy
import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.oauth import Grant
from replyguard.adapters.secret_box import SecretBox, new_key
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import import_leads
from replyguard.service_layer.workspace.mailbox_accounts import watched_sources
from replyguard.service_layer.workspace.mailbox_oauth import connect_oauth
from replyguard.service_layer.workspace.mailboxes import GrantRefused, resume_mailbox
from replyguard.settings import OAuthSettings, google_provider, microsoft_provider
from tests.support.imap_server import DovecotServer, dovecot_or_skip
from tests.support.oauth_server import CLIENT_ID, CLIENT_SECRET, AuthorizationServer, XOAuth2SmtpServer
from tests.support.scenario import campaign_toml, csv_of, enroll_all
from tests.support.tls import CertPair, TlsUnavailable, self_signed_cert

DANA = "dana@alpha.test"
ADMIN = "admin@seller.test"  # who connected the mailbox: told too when its grant is refused
REDIRECT = "http://127.0.0.1:9/mailboxes/oauth/callback"  # never opened: the code is read off it


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertPair:
    try:
        return self_signed_cert(tmp_path_factory.mktemp("tls"))
    except TlsUnavailable as exc:
        pytest.skip(f"no TLS in this environment: {exc}")


@pytest.fixture
def provider_side(certs: CertPair) -> Iterator[tuple[AuthorizationServer, XOAuth2SmtpServer, DovecotServer]]:
    with AuthorizationServer((REDIRECT,), approve_as=DANA) as authz:
        dovecot = DovecotServer(
            dovecot_or_skip(), {DANA: "not-the-way-in"}, oauth2_introspection=authz.introspection_url
        )
        with XOAuth2SmtpServer(authz, tls=certs) as smtp, dovecot:
            yield authz, smtp, dovecot


@pytest.fixture
def wall() -> FixedClock:
    """The real clock the provider's token lifetimes count in, moved by the test."""
    return FixedClock(datetime.now(UTC))


def _configure(
    app: App,
    wall: FixedClock,
    authz: AuthorizationServer,
    smtp: XOAuth2SmtpServer,
    dovecot: DovecotServer,
    certs: CertPair,
) -> None:
    app.secret_keys = (new_key(),)
    app.wall_clock = wall
    google = replace(
        google_provider(),
        authorize_url=f"{authz.url}/authorize",
        token_url=f"{authz.url}/token",
        smtp_url=f"smtp+starttls://{{address}}@127.0.0.1:{smtp.port}?cafile={certs.cert}",
        imap_url=f"imap://{{address}}@127.0.0.1:{dovecot.port}/INBOX?starttls=no",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
    )
    app.oauth = OAuthSettings(providers=(google,), redirect_url=REDIRECT)


def _sign_in(app: App, provider: str = "google") -> Grant:
    """What a person does in the browser: the authorization URL, the provider's consent (the
    local server approves as Dana), the redirect back with the code."""
    client = app.oauth_client(provider)
    started = client.begin(login_hint=DANA)
    assert "code_challenge_method=S256" in started.url
    back = httpx.get(started.url).headers["location"]
    return client.finish(back, started.state, started.code_verifier, app.wall_clock.now())


def _connect(app: App, provider: str = "google") -> None:
    grant = _sign_in(app, provider)
    with app.uow() as uow:
        connect_oauth(uow, app.secret_box(), app.oauth.provider(provider), DANA, grant, by=ADMIN)
        uow.commit()


def _lead(app: App, email: str) -> None:
    with app.uow() as uow:
        import_leads(uow, "P", list(read_leads(csv_of([{"email": email, "first_name": "Lee"}]))))
        uow.commit()
    enroll_all(app, "C")


def _mailbox(app: App) -> m.Mailbox:
    with app.uow() as uow:
        found = uow.session.scalar(select(m.Mailbox).where(m.Mailbox.address == DANA))
        assert found is not None
        uow.session.expunge(found)
        return found


def _reply(n: int) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = f"lead{n}@one.test", DANA, f"Re: Hello {n}"
    msg["Message-ID"] = f"<answer{n}@one.test>"
    msg.set_content("Tell me more.\n")
    return msg.as_bytes()


def test_connect_refresh_revoke_and_reconnect(
    app: App,
    clock: FixedClock,
    wall: FixedClock,
    provider_side: tuple[AuthorizationServer, XOAuth2SmtpServer, DovecotServer],
    certs: CertPair,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    authz, smtp, dovecot = provider_side
    _configure(app, wall, authz, smtp, dovecot, certs)
    clock.advance(timedelta(hours=4))  # Monday 10:00 UTC: inside the sending window

    with app.uow() as uow:
        create_campaign(uow, campaign_toml("C", "P", mailbox=DANA))  # Dana owns it
        uow.commit()

    # Connect: the grant is stored encrypted, nothing of it in the clear.
    _connect(app)
    stored = _mailbox(app)
    assert stored.oauth_provider == "google" and stored.status == "active"
    tokens = json.loads(SecretBox(app.secret_keys).decrypt(stored.secret or ""))["oauth"]
    assert tokens["refresh_token"] not in (stored.secret or "")
    first_access = tokens["access_token"]

    # Send and read, each logged in with XOAUTH2 as the mailbox itself (a folder's first read
    # starts from now: what is there already is not a reply).
    assert list(app.mailbox_pollers().run_once().values()) == [0]
    _lead(app, "lead1@one.test")
    assert Worker(app).run_once().sent == 1
    [sent] = smtp.wait_for_messages(1)
    assert sent.authenticated and sent.tls and smtp.xoauth2_logins == [(DANA, True)]
    dovecot.append(_reply(1), user=DANA)
    assert list(app.mailbox_pollers().run_once().values()) == [1]
    assert authz.refreshes == 0  # the token had an hour left: none was asked for

    # Refresh before expiry: with less than the margin (5 minutes) left, the next login asks
    # the provider for a new token first, stores it, and both servers take it.
    wall.advance(timedelta(minutes=56))
    _lead(app, "lead2@one.test")
    assert Worker(app).run_once().sent == 1
    assert authz.refreshes == 1 and len(smtp.wait_for_messages(2)) == 2
    renewed = json.loads(SecretBox(app.secret_keys).decrypt(_mailbox(app).secret or ""))["oauth"]
    assert renewed["access_token"] != first_access and authz.active(renewed["access_token"])
    assert _mailbox(app).token_expires_at == wall.now() + timedelta(hours=1)
    dovecot.append(_reply(2), user=DANA)
    assert list(app.mailbox_pollers().run_once().values()) == [1]
    assert authz.refreshes == 1

    # Revoked: Dana removes the app's access in her account. The servers refuse the token, the
    # refresh is refused (invalid_grant): the mailbox pauses, its owners are told how to
    # reconnect, the email waits unharmed and the poller stops watching it.
    authz.revoke(DANA)
    _lead(app, "lead3@one.test")
    report = Worker(app).run_once()
    assert report.sent == 0 and len(smtp.accepted()) == 2
    paused = _mailbox(app)
    assert paused.status == "paused" and paused.grant_revoked_at is not None
    assert "refused the mailbox's OAuth2 grant" in (paused.paused_reason or "")
    with app.uow() as uow:
        notices = uow.session.execute(
            select(m.Notice.recipient, m.Notice.payload).where(m.Notice.kind == "mailbox_paused")
        ).all()
        waiting = uow.session.scalars(
            select(m.Step.state).where(m.Step.to_address == "lead3@one.test", m.Step.position == 1)
        ).all()
        assert watched_sources(uow, app.secret_box()) == {}
    assert sorted(recipient for recipient, _ in notices) == [ADMIN, DANA]
    for _, payload in notices:
        assert f"replyguard mailbox add {DANA} --oauth google" in payload["recommendation"]
        assert "Connect with Google" in payload["recommendation"]
    # The notices go out through the notice outbox like any other (here: email through the
    # default transport, the tests' Maildir), saying why and how to reconnect.
    assert app.notice_delivery().run_once().delivered == 4  # with the two replies' notices
    told = {
        str(msg["To"]): msg.get_content()
        for msg in (
            email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
            for path in (Path(app.transport_spec.removeprefix("maildir:")) / "new").iterdir()
        )
        if isinstance(msg, EmailMessage) and "paused" in msg.get_content()
    }
    assert sorted(told) == [ADMIN, DANA]
    assert all(f"Mailbox {DANA} paused" in text and "--oauth google" in text for text in told.values())
    assert waiting == ["scheduled"]  # not failed, no attempt used: it goes when the mailbox does

    # Resuming would not help (the next login would be refused again): it says to reconnect.
    with app.uow() as uow, pytest.raises(GrantRefused, match="--oauth google"):
        resume_mailbox(uow, DANA)

    # Reconnect: the mailbox resumes by itself and the waiting email goes out.
    _connect(app)
    assert _mailbox(app).status == "active" and _mailbox(app).grant_revoked_at is None
    assert Worker(app).run_once().sent == 1
    assert len(smtp.wait_for_messages(3)) == 3
    dovecot.append(_reply(3), user=DANA)
    assert list(app.mailbox_pollers().run_once().values()) == [1]

    # No token, refresh token or client secret in any log line of the whole life cycle (but
    # the local authorization server's own: Authlib's server parts log what they issue).
    server_side = ("authlib.oauth2.rfc6749.grants", "authlib.oauth2.rfc6749.authorization_server")
    logged = [r.getMessage() for r in caplog.records if not r.name.startswith(server_side)]
    secrets = [s for t in authz.tokens for s in (t.access_token, t.refresh_token) if s] + [CLIENT_SECRET]
    leaked = [line for line in logged if any(s in line for s in secrets)]
    assert len(secrets) >= 4 and len(logged) > 10 and not leaked, leaked[:5]


def test_a_rotated_refresh_token_replaces_the_stored_one(
    app: App, clock: FixedClock, wall: FixedClock, certs: CertPair
) -> None:
    """Microsoft gives a new refresh token with each refresh and retires the old one: the new
    one is stored (encrypted), so the refresh after it works too."""
    with (
        AuthorizationServer((REDIRECT,), approve_as=DANA, rotate_refresh_tokens=True) as authz,
        XOAuth2SmtpServer(authz, tls=certs) as smtp,
    ):
        app.secret_keys, app.wall_clock = (new_key(),), wall
        microsoft = replace(
            microsoft_provider("contoso.example"),
            authorize_url=f"{authz.url}/authorize",
            token_url=f"{authz.url}/token",
            smtp_url=f"smtp+starttls://{{address}}@127.0.0.1:{smtp.port}?cafile={certs.cert}",
            imap_url="imap://{address}@127.0.0.1:1/INBOX?starttls=no",
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
        )
        app.oauth = OAuthSettings(providers=(microsoft,), redirect_url=REDIRECT)
        clock.advance(timedelta(hours=4))
        with app.uow() as uow:
            create_campaign(uow, campaign_toml("C", "P", mailbox=DANA))
            uow.commit()
        _connect(app, "microsoft")
        for n in range(3):
            if n:
                wall.advance(timedelta(minutes=56))  # within the margin: refreshed first
            _lead(app, f"lead{n}@one.test")
            assert Worker(app).run_once().sent == 1
        assert authz.refreshes == 2 and len(smtp.wait_for_messages(3)) == 3
        stored = json.loads(SecretBox(app.secret_keys).decrypt(_mailbox(app).secret or ""))["oauth"]
        first, second, newest = authz.tokens
        assert first.refresh_used and second.refresh_used and not newest.refresh_used
        assert stored["refresh_token"] == newest.refresh_token != first.refresh_token
        assert _mailbox(app).status == "active"


def test_a_grant_no_configured_key_opens_pauses_the_mailbox_without_calling_it_revoked(
    app: App, clock: FixedClock, wall: FixedClock, certs: CertPair
) -> None:
    """Our own problem (a key replaced without `secrets rotate`): the send is refused as the
    mailbox's, the mailbox pauses and its owners are told; the grant is not marked refused,
    so putting the key back and resuming is enough."""
    with (
        AuthorizationServer((REDIRECT,), approve_as=DANA) as authz,
        XOAuth2SmtpServer(authz, tls=certs) as smtp,
    ):
        app.wall_clock = wall
        google = replace(
            google_provider(),
            authorize_url=f"{authz.url}/authorize",
            token_url=f"{authz.url}/token",
            smtp_url=f"smtp+starttls://{{address}}@127.0.0.1:{smtp.port}?cafile={certs.cert}",
            imap_url="imap://{address}@127.0.0.1:1/INBOX?starttls=no",
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
        )
        app.oauth = OAuthSettings(providers=(google,), redirect_url=REDIRECT)
        kept = app.secret_keys = (new_key(),)
        clock.advance(timedelta(hours=4))
        with app.uow() as uow:
            create_campaign(uow, campaign_toml("C", "P", mailbox=DANA))
            uow.commit()
        _connect(app)
        app.secret_keys = (new_key(),)  # replaced without `secrets rotate`
        _lead(app, "lead1@one.test")

        assert Worker(app).run_once().sent == 0 and smtp.accepted() == []
        paused = _mailbox(app)
        assert paused.status == "paused" and paused.grant_revoked_at is None
        assert "cannot be used" in (paused.paused_reason or "") and authz.refreshes == 0

        app.secret_keys = kept
        with app.uow() as uow:
            assert resume_mailbox(uow, DANA)
            uow.commit()
        assert Worker(app).run_once().sent == 1 and len(smtp.wait_for_messages(1)) == 1
