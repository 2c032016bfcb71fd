"""Sessions, form tokens, the sign-in rate limit and the headers of every page, through real
HTTP to the app under uvicorn, on SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from dataclasses import replace

import httpx
import pytest
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.entrypoints.http import create_app
from tests.web.conftest import Site
from tests.web.support import PASSWORD, serving, sign_in, signed_in


def token_count(site: Site) -> int:
    with site.alpha.app.uow() as uow:
        return uow.session.scalar(select(func.count()).select_from(m.ApiToken)) or 0


def test_a_page_without_a_session_sends_the_person_to_sign_in(site: Site) -> None:
    with httpx.Client(timeout=60, base_url=site.base) as client:
        response = client.get("/campaigns?state=sent")
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=%2Fcampaigns%3Fstate%3Dsent"


def test_signing_in_sets_an_httponly_samesite_cookie_secure_over_https(site: Site) -> None:
    with httpx.Client(timeout=60, base_url=site.base) as client:
        plain = sign_in(client, site.alpha.email)
    cookie = plain.headers["set-cookie"].lower()
    assert plain.status_code == 303
    assert (
        "rg_session=" in cookie and "httponly" in cookie and "samesite=lax" in cookie and "path=/" in cookie
    )
    assert "secure" not in cookie  # plain http on loopback: a Secure cookie would never come back
    # X-Forwarded-Proto from anyone is not believed: only from a proxy named as trusted.
    with httpx.Client(timeout=60, base_url=site.base, headers={"X-Forwarded-Proto": "https"}) as client:
        forged = sign_in(client, site.alpha.email)
    assert "secure" not in forged.headers["set-cookie"].lower()


def test_behind_a_trusted_proxy_the_cookie_is_secure_over_its_tls(site: Site) -> None:
    app = site.alpha.app
    proxied = replace(app, environment=replace(app.environment, trusted_proxies=("127.0.0.0/8",)))
    with (
        serving(create_app(proxied)) as behind,
        httpx.Client(timeout=60, base_url=behind, headers={"X-Forwarded-Proto": "https"}) as client,
    ):
        tls = sign_in(client, site.alpha.email)
    assert "; secure" in tls.headers["set-cookie"].lower()


def test_a_form_post_without_the_csrf_token_is_refused_and_changes_nothing(site: Site) -> None:
    with (
        signed_in(site.base, site.alpha.email) as (client, csrf),
        signed_in(site.base, site.alpha.email) as (other, _),
    ):
        before = token_count(site)
        missing = client.post("/settings/tokens", data={"name": "sneaky"})
        wrong = client.post("/settings/tokens", data={"name": "sneaky", "csrf_token": csrf[:-2] + "xx"})
        borrowed = other.post("/settings/tokens", data={"name": "sneaky", "csrf_token": csrf})
        ok = client.post("/settings/tokens", data={"name": "kept", "csrf_token": csrf})
        header = client.post("/settings/tokens", data={"name": "by header"}, headers={"X-CSRF-Token": csrf})
    assert (missing.status_code, wrong.status_code, borrowed.status_code) == (403, 403, 403)
    assert "form expired" in missing.text
    assert ok.status_code == 200 and header.status_code == 200
    assert token_count(site) == before + 2  # the two with the token, none of the others


def test_a_cross_site_post_is_refused_even_with_the_token(site: Site) -> None:
    before = token_count(site)
    with signed_in(site.base, site.alpha.email) as (client, csrf):
        for headers in ({"Origin": "http://evil.test"}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}):
            response = client.post(
                "/settings/tokens", data={"name": "x", "csrf_token": csrf}, headers=headers
            )
            assert response.status_code == 403, headers
    assert token_count(site) == before


def test_the_sign_in_form_needs_its_own_token(site: Site) -> None:
    with httpx.Client(timeout=60, base_url=site.base) as client:
        response = client.post("/login", data={"email": site.alpha.email, "password": PASSWORD})
    assert response.status_code == 403
    assert "rg_session" not in response.headers.get("set-cookie", "")


def test_a_wrong_password_is_rate_limited(site: Site) -> None:
    with httpx.Client(timeout=60, base_url=site.base) as client:
        for _ in range(3):  # a person's typos: free
            wrong = sign_in(client, site.alpha.email, "not the password")
            assert wrong.status_code == 401 and "Wrong email or password" in wrong.text
        limited = sign_in(client, site.alpha.email, PASSWORD)  # then a wait, right password or not
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) > 0
    assert "Too many failed sign-ins" in limited.text
    assert "rg_session" not in limited.headers.get("set-cookie", "")


def test_signing_out_ends_the_session(site: Site) -> None:
    with signed_in(site.base, site.alpha.email) as (client, csrf):
        stolen = client.cookies["rg_session"]
        assert client.post("/logout", data={"csrf_token": csrf}).status_code == 303
    with httpx.Client(timeout=60, base_url=site.base, cookies={"rg_session": stolen}) as replay:
        assert replay.get("/campaigns").status_code == 303


@pytest.mark.parametrize("target", ["//evil.test/x", "https://evil.test/", "/\\evil.test"])
def test_after_sign_in_the_next_page_is_always_on_this_site(site: Site, target: str) -> None:
    with httpx.Client(timeout=60, base_url=site.base) as client:
        page = client.get("/login", params={"next": target})
        token = page.text.split('name="login_token" value="')[1].split('"')[0]
        response = client.post(
            "/login",
            data={"email": site.alpha.email, "password": PASSWORD, "login_token": token, "next": target},
        )
    assert response.status_code == 303
    assert response.headers["location"] == "/inbox"  # home: the Reply Rescue inbox


def test_pages_carry_a_strict_content_security_policy_and_framing_refusal(site: Site) -> None:
    with signed_in(site.base, site.alpha.email) as (client, _):
        responses = {p: client.get(p) for p in ("/campaigns", "/leads", "/inbound", "/reports", "/login")}
    for path, response in responses.items():
        csp = response.headers["content-security-policy"]
        script = next(d for d in csp.split(";") if d.strip().startswith("script-src"))
        assert script.strip() == "script-src 'self'", path
        assert "frame-ancestors 'none'" in csp
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["cache-control"] == "no-store"


def test_no_password_token_or_session_reaches_the_log(site: Site, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with serving(create_app(site.alpha.app), log_level="debug") as base:
        with signed_in(base, site.alpha.email) as (client, _):
            client.get("/api/v1/me", headers={"Authorization": f"Bearer {site.alpha.token}"})
            session = client.cookies["rg_session"]
        with httpx.Client(timeout=60, base_url=base) as stranger:
            sign_in(stranger, site.alpha.email, "a wrong password 12345")
    # The server's records only: the test's own HTTP client logs the responses it receives.
    server = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    logged = "\n".join(f"{r.getMessage()} {r.args}" for r in server)
    assert "/api/v1/me" in logged  # the access log was on
    for secret in (PASSWORD, "a wrong password 12345", site.alpha.token, session):
        assert secret not in logged
