""" "Connect with Google" on the Mailboxes page (issue 24, item 3): Chromium follows the code
flow with PKCE to the local authorization server (tests/support/oauth_server.py) and back,
through the page's own Content-Security-Policy (its form-action names the provider's origin);
the grant is stored, never shown. The state is bound to the web session that started it:
another session, or the same state twice, connects nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.secret_box import new_key
from replyguard.service_layer.workspace.mailbox_oauth import revoke_grant
from replyguard.settings import OAuthSettings, google_provider
from tests.support.oauth_server import CLIENT_ID, CLIENT_SECRET, AuthorizationServer
from tests.web.conftest import Site
from tests.web.support import PASSWORD, signed_in

ADDRESS = "dana@alpha.test"


@pytest.fixture
def authz(site: Site) -> Iterator[AuthorizationServer]:
    callback = f"{site.base}/mailboxes/oauth/callback"
    with AuthorizationServer((callback,), approve_as=ADDRESS) as server:
        app = site.alpha.app
        app.secret_keys = (new_key(),)
        google = replace(
            google_provider(),
            authorize_url=f"{server.url}/authorize",
            token_url=f"{server.url}/token",
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
        )
        app.oauth = OAuthSettings(providers=(google,), redirect_url=callback)
        yield server


def _tokens(site: Site) -> list[str]:
    with site.alpha.app.uow() as uow:
        return [t for t in uow.session.scalars(select(m.Mailbox.secret)).all() if t]


def test_connect_with_google_in_the_browser(site: Site, authz: AuthorizationServer, browser: Browser) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{site.base}/login")
    page.fill("#email", site.alpha.email)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/(inbox|campaigns)"))
    page.goto(f"{site.base}/mailboxes")
    form = page.locator("#connect-oauth")
    form.locator("input[name=address]").fill(ADDRESS)
    with page.expect_request(re.compile(re.escape(authz.url) + "/authorize")) as sent:
        form.get_by_role("button", name="Connect with Google").click()
    asked = parse_qs(urlsplit(sent.value.url).query)
    assert asked["code_challenge_method"] == ["S256"] and asked["login_hint"] == [ADDRESS]
    assert asked["scope"] == ["https://mail.google.com/"] and asked["access_type"] == ["offline"]
    expect(page).to_have_url(f"{site.base}/mailboxes")
    expect(page.locator("[data-flash]")).to_contain_text(f"{ADDRESS} connected with Google")
    row = page.locator(f"tr[data-mailbox='{ADDRESS}']")
    expect(row.locator("[data-oauth=google]")).to_contain_text("signed in with Google")
    [token] = authz.tokens
    html = page.content()
    assert token.access_token not in html and token.refresh_token not in html
    assert all(token.refresh_token not in secret for secret in _tokens(site))  # encrypted
    context.close()


def test_a_state_works_once_and_only_in_the_session_that_started_it(
    site: Site, authz: AuthorizationServer
) -> None:
    with signed_in(site.base, site.alpha.email) as (mine, csrf):
        listed = mine.get("/mailboxes")
        assert authz.url in listed.headers["content-security-policy"]  # form-action names it
        started = mine.post(
            "/mailboxes/oauth/start", data={"csrf_token": csrf, "address": ADDRESS, "provider": "google"}
        )
        assert started.status_code == 303 and started.headers["location"].startswith(authz.url)
        back = httpx.get(started.headers["location"]).headers["location"]
        callback = back.removeprefix(site.base)

        with signed_in(site.base, site.alpha.email) as (other, _):  # the same person, elsewhere
            stolen = other.get(callback)
            assert stolen.status_code == 303
            assert "not started here" in other.get("/mailboxes").text
        assert _tokens(site) == []

        # The state was used up by the attempt: the right session cannot use it either now.
        assert mine.get(callback).status_code == 303
        assert "not started here" in mine.get("/mailboxes").text
        assert _tokens(site) == []

        unknown = mine.post(
            "/mailboxes/oauth/start", data={"csrf_token": csrf, "address": ADDRESS, "provider": "yahoo"}
        )
        assert unknown.status_code == 303 and "no OAuth2 provider" in mine.get("/mailboxes").text


def _flow(client: httpx.Client, csrf: str, base: str) -> None:
    """Start, let the provider approve, come back: the Mailboxes page's whole round trip."""
    form = {"csrf_token": csrf, "address": ADDRESS, "provider": "google"}
    started = client.post("/mailboxes/oauth/start", data=form)
    back = httpx.get(started.headers["location"]).headers["location"]
    assert client.get(back.removeprefix(base)).status_code == 303


def test_a_refused_grant_offers_reconnect_and_reconnecting_resumes(
    site: Site, authz: AuthorizationServer
) -> None:
    app = site.alpha.app
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        _flow(page, csrf, site.base)
        with app.uow() as uow:
            mailbox = uow.session.scalars(select(m.Mailbox)).one()
            mailbox_id, secret = mailbox.id, mailbox.secret
        assert revoke_grant(
            app.scoped,
            workspace_id=app.workspace_id,
            mailbox_id=mailbox_id,
            secret=secret,
            why="invalid_grant",
        )
        listed = page.get("/mailboxes").text
        assert "access refused, connect it again" in listed and "Reconnect with Google" in listed
        assert f"/mailboxes/{mailbox_id}/resume" not in listed  # resuming would not help
        refused = page.post(f"/mailboxes/{mailbox_id}/resume", data={"csrf_token": csrf})
        assert refused.status_code == 303 and "resuming would not help" in page.get("/mailboxes").text

        _flow(page, csrf, site.base)  # the Reconnect button posts the same form
        with app.uow() as uow:
            status, refused_at = uow.session.execute(
                select(m.Mailbox.status, m.Mailbox.grant_revoked_at).where(m.Mailbox.id == mailbox_id)
            ).one()
        assert status == "active" and refused_at is None
        assert "Reconnect with Google" not in page.get("/mailboxes").text
