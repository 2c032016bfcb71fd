"""Hostile input at the account surfaces — sign-in, tokens, users, one's own account — through
real HTTP on SQLite and PostgreSQL: every answer is a 4xx with nothing created, never a 5xx."""

from __future__ import annotations

import json

import httpx
import pytest
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from tests.web.conftest import Site, quick_password_hashes, site
from tests.web.support import PASSWORD, api_client, sign_in, signed_in

__all__ = ["quick_password_hashes", "site"]

HOSTILE_TEXT = [
    "",
    " ",
    "a\r\nBcc: x@evil.test",
    "\x00",
    "\ud800",
    "x" * 5000,
    "<script>alert(1)</script>",
    "admin ",
    "ADMIN",
    "-1",
    "9" * 40,
    "../../etc/passwd",
]


def counts(site: Site) -> tuple[int, int]:
    with site.alpha.app.uow() as uow:
        users = uow.session.scalar(select(func.count()).select_from(m.User)) or 0
        tokens = uow.session.scalar(select(func.count()).select_from(m.ApiToken)) or 0
    return users, tokens


@pytest.mark.parametrize("value", HOSTILE_TEXT)
def test_hostile_values_in_every_account_form_are_refused_in_one_piece(site: Site, value: str) -> None:
    before = counts(site)
    answers = []
    formable = value.encode("utf-8", "replace").decode("utf-8") == value  # a form is UTF-8 bytes
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        answers += (
            []
            if not formable
            else [
                page.post("/settings/tokens", data={"name": value, "scope": value, "csrf_token": csrf}),
                page.post("/settings/tokens", data={"name": "ok", "expires_in": value, "csrf_token": csrf}),
                page.post("/settings/users", data={"email": value, "role": value, "csrf_token": csrf}),
                page.post("/settings/users/1/role", data={"role": value, "csrf_token": csrf}),
                page.post(
                    "/account/password",
                    data={"current": value, "password": value, "confirm": value, "csrf_token": csrf},
                ),
            ]
        )
    with api_client(site.base, site.alpha.token) as api:

        def post(path: str, body: dict[str, str]) -> httpx.Response:
            # json.dumps escapes what UTF-8 cannot carry (an unpaired surrogate as \ud800).
            return api.post(path, content=json.dumps(body), headers={"Content-Type": "application/json"})

        answers += [
            post("/api/v1/tokens", {"name": value, "scope": value}),
            post("/api/v1/tokens", {"name": "ok", "expires_at": value}),
            post("/api/v1/users", {"email": value, "role": value}),
            post("/api/v1/users/1/role", {"role": value}),
        ]
    for response in answers:
        assert 400 <= response.status_code < 500 or response.status_code in (200, 303), response.text[:200]
        assert response.status_code < 500
    users, tokens = counts(site)
    assert users == before[0]
    assert tokens <= before[1] + 1  # only the well-formed token of the second form, at most


@pytest.mark.parametrize(
    "expires_at",
    ["1999-01-01T00:00:00Z", "2026-12-07T06:00:00", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00"],
)
def test_a_token_expiry_in_the_past_or_far_away_is_an_answer_not_a_crash(site: Site, expires_at: str) -> None:
    with api_client(site.base, site.alpha.token) as api:
        made = api.post("/api/v1/tokens", json={"name": f"t {expires_at}", "expires_at": expires_at})
    assert made.status_code in (201, 422), made.text


@pytest.mark.parametrize(
    "cookies",
    [
        {"rg_device": "x" * 5000},
        {"rg_device": "%00%ff\\"},
        {"rg_session": "y" * 5000},
        {"rg_session": "", "rg_device": ""},
    ],
)
def test_forged_or_huge_cookies_at_sign_in_are_unknown_clients(site: Site, cookies: dict[str, str]) -> None:
    with httpx.Client(base_url=site.base, cookies=cookies, timeout=30) as client:
        assert sign_in(client, site.alpha.email, "not the password 123").status_code == 401
        assert sign_in(client, site.alpha.email, PASSWORD).status_code == 303


@pytest.mark.parametrize("forwarded", ["", "garbage", "1.2.3.4, 5.6.7.8", "::1", "x" * 300, "999.1.1.1"])
def test_any_forwarded_header_is_harmless(site: Site, forwarded: str) -> None:
    with httpx.Client(base_url=site.base, headers={"X-Forwarded-For": forwarded}, timeout=30) as client:
        assert sign_in(client, site.alpha.email).status_code == 303
    with site.alpha.app.uow() as uow:
        assert set(uow.session.scalars(select(m.LoginAttempt.ip))) == {"127.0.0.1"}
