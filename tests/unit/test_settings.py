"""Settings come from the environment once; secrets never show in repr."""

from __future__ import annotations

import pytest

from replyguard.settings import Environment, Settings


def test_webhook_secrets_and_limits_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLYGUARD_MAILGUN_SIGNING_KEY", "mg-key")
    monkeypatch.setenv("REPLYGUARD_POSTMARK_USER", "pm")
    monkeypatch.setenv("REPLYGUARD_POSTMARK_PASSWORD", "pm-pass")
    monkeypatch.setenv("REPLYGUARD_SENDGRID_SECRET", "sg-secret")
    monkeypatch.setenv("REPLYGUARD_INBOUND_MAX_BYTES", "1000")
    settings = Settings.from_env()
    assert (settings.mailgun_signing_key, settings.postmark_user, settings.postmark_password) == (
        "mg-key",
        "pm",
        "pm-pass",
    )
    assert settings.sendgrid_secret == "sg-secret" and settings.inbound_max_bytes == 1000
    for secret in ("mg-key", "pm-pass", "sg-secret"):
        assert secret not in repr(settings)


def test_unset_secrets_mean_disabled_and_bad_numbers_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REPLYGUARD_MAILGUN_SIGNING_KEY", "REPLYGUARD_SENDGRID_SECRET"):
        monkeypatch.delenv(name, raising=False)
    assert Settings.from_env().mailgun_signing_key is None
    monkeypatch.setenv("REPLYGUARD_LEASE_SECONDS", "soon")
    with pytest.raises(ValueError, match="REPLYGUARD_LEASE_SECONDS"):
        Settings.from_env()


def test_send_batch_is_automatic_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPLYGUARD_SEND_BATCH", raising=False)
    assert Settings.from_env().send_batch is None
    monkeypatch.setenv("REPLYGUARD_SEND_BATCH", "25")
    assert Settings.from_env().send_batch == 25
    monkeypatch.setenv("REPLYGUARD_SEND_BATCH", "0")
    with pytest.raises(ValueError, match="REPLYGUARD_SEND_BATCH"):
        Settings.from_env()


@pytest.mark.parametrize(
    ("value", "url", "unset"),
    [
        (None, "http://localhost:8000", True),
        ("", "http://localhost:8000", True),  # set but empty: the same as not set
        ("https://rg.example.test/", "https://rg.example.test", False),
    ],
)
def test_the_public_url_and_whether_it_was_set(
    monkeypatch: pytest.MonkeyPatch, value: str | None, url: str, unset: bool
) -> None:
    if value is None:
        monkeypatch.delenv("REPLYGUARD_PUBLIC_URL", raising=False)
    else:
        monkeypatch.setenv("REPLYGUARD_PUBLIC_URL", value)
    settings = Settings.from_env()
    assert (settings.public_url, settings.public_url_unset) == (url, unset)


def test_trusted_proxies_are_named_addresses_or_networks_never_assumed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Environment.read().trusted_proxies == ()
    monkeypatch.setenv("REPLYGUARD_TRUSTED_PROXIES", "127.0.0.1, 10.0.0.0/8")
    assert Environment.read().trusted_proxies == ("127.0.0.1", "10.0.0.0/8")
    for bad in ("*", "proxy.example", "10.0.0.0/33"):
        monkeypatch.setenv("REPLYGUARD_TRUSTED_PROXIES", bad)
        with pytest.raises(ValueError, match="REPLYGUARD_TRUSTED_PROXIES"):
            Environment.read()
