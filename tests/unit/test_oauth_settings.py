"""OAuth2 providers as configuration (issue 24, item 3): the real, documented endpoints and
scopes by default, each overridable from the environment (a test server, a sovereign cloud);
client secrets, tokens, states and verifiers are never in a repr."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from replyguard.adapters.oauth import Authorization, Grant, OAuthClient, xoauth2
from replyguard.settings import OAuthSettings


def test_the_defaults_are_the_providers_documented_endpoints_and_scopes() -> None:
    google = OAuthSettings().provider("google")
    assert google.authorize_url == "https://accounts.google.com/o/oauth2/v2/auth"
    assert google.token_url == "https://oauth2.googleapis.com/token"
    assert google.scope == "https://mail.google.com/"
    assert ("access_type", "offline") in google.authorize_params
    microsoft = OAuthSettings().provider("microsoft")
    assert microsoft.authorize_url == "https://login.microsoftonline.com/common/oauth2/v2.0/authorize"
    assert microsoft.token_url == "https://login.microsoftonline.com/common/oauth2/v2.0/token"
    assert microsoft.scope.split() == [
        "https://outlook.office.com/IMAP.AccessAsUser.All",
        "https://outlook.office.com/SMTP.Send",
        "offline_access",
    ]
    assert not google.configured and not microsoft.configured  # no client id: not offered
    with pytest.raises(ValueError, match="use google or microsoft"):
        OAuthSettings().provider("yahoo")


def test_the_environment_configures_and_overrides_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLYGUARD_MICROSOFT_TENANT", "contoso.onmicrosoft.com")
    monkeypatch.setenv("REPLYGUARD_MICROSOFT_CLIENT_ID", "ms-id")
    monkeypatch.setenv("REPLYGUARD_MICROSOFT_CLIENT_SECRET", "ms-very-secret")
    monkeypatch.setenv("REPLYGUARD_GOOGLE_TOKEN_URL", "http://127.0.0.1:8999/token")
    monkeypatch.setenv("REPLYGUARD_OAUTH_REFRESH_MARGIN_SECONDS", "120")
    found = OAuthSettings.from_env()
    microsoft = found.provider("microsoft")
    assert microsoft.configured and microsoft.client_id == "ms-id"
    assert (
        microsoft.token_url == "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token"
    )
    assert found.provider("google").token_url == "http://127.0.0.1:8999/token"
    assert found.refresh_margin.total_seconds() == 120
    assert "ms-very-secret" not in repr(found)
    assert found.redirect_for("https://rg.example.com") == "https://rg.example.com/mailboxes/oauth/callback"
    monkeypatch.setenv("REPLYGUARD_MICROSOFT_TENANT", "bad/tenant")
    with pytest.raises(ValueError, match="REPLYGUARD_MICROSOFT_TENANT"):
        OAuthSettings.from_env()


def test_tokens_states_and_secrets_stay_out_of_reprs() -> None:
    grant = Grant("access-abc", "refresh-def", datetime(2026, 12, 1, tzinfo=UTC))
    started = Authorization("https://example.test/auth?x=1", "state-ghi", "verifier-jkl")
    client = OAuthClient("id", "client-secret-mno", "https://a.test", "https://t.test", "s", "https://r.test")
    shown = repr(grant) + repr(started) + repr(client)
    for secret in ("access-abc", "refresh-def", "state-ghi", "verifier-jkl", "client-secret-mno"):
        assert secret not in shown


def test_the_xoauth2_string_is_the_documented_one() -> None:
    # https://developers.google.com/gmail/imap/xoauth2-protocol
    assert xoauth2("someuser@example.com", "ya29.vF9dft4q") == (
        "user=someuser@example.com\x01auth=Bearer ya29.vF9dft4q\x01\x01"
    )
