"""Hostile input at the connected-mailbox surfaces, and the password kept out of every answer,
page, log line and repr (issue 24, items 1 and 2). Through real HTTP on SQLite and PostgreSQL:
every answer is a 4xx or a success, never a 5xx, and never carries the password."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import text

from replyguard.adapters.secret_box import SecretBox, new_key
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.mailbox_accounts import (
    Account,
    check_account,
    connect_mailbox,
    rotate_secrets,
    stored_account,
)
from replyguard.settings import Environment
from tests.support.scenario import simple_workspace
from tests.support.smtp_servers import RecordingSmtpServer
from tests.web.conftest import Site, quick_password_hashes, site
from tests.web.support import api_client, signed_in

__all__ = ["quick_password_hashes", "site"]

#: A password with every character a URL, a shell or a JSON string treats specially.
PASSWORD = "p@ss:w/rd?#%25 ünï\"'\\;&="
HOSTILE = [
    "",
    " ",
    "a\r\nBcc: x@evil.test",
    "\x00",
    "\ud800",
    "x" * 5000,
    "smtps://u:pw@[::1",
    "smtp://127.0.0.1:99999",
    "imaps://user@host:993/INBOX\r\nA1 DELETE INBOX",
    "javascript:alert(1)",
    "../../etc/passwd",
]
FIELDS = ("address", "smtp", "imap", "folders", "sent_folder", "timezone")


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_never_make_a_5xx_nor_show_the_password(site: Site, value: str) -> None:
    site.alpha.app.secret_keys = (new_key(),)
    good = {"address": "dana@alpha.test", "smtp": "smtps://mail.alpha.test", "password": PASSWORD}
    answers: list[httpx.Response] = []
    with api_client(site.base, site.alpha.token) as api:
        for field in FIELDS:
            wanted: object = [value] if field == "folders" else value
            body = json.dumps({**good, field: wanted})  # escapes what UTF-8 cannot carry
            answers.append(
                api.post("/api/v1/mailboxes", content=body, headers={"Content-Type": "application/json"})
            )
    formable = value.encode("utf-8", "replace").decode("utf-8") == value
    if formable:
        with signed_in(site.base, site.alpha.email) as (page, csrf):
            for field in FIELDS[:-1]:
                answers.append(page.post("/mailboxes", data={**good, field: value, "csrf_token": csrf}))
    for response in answers:
        assert response.status_code < 500, response.text[:300]
        assert PASSWORD not in response.text and json.dumps(PASSWORD)[1:-1] not in response.text
    with site.alpha.app.engine.connect() as conn:
        stored = conn.execute(text("SELECT smtp_url, imap_url, imap_folders, secret FROM mailboxes")).all()
    assert all(PASSWORD not in str(row) for row in stored)


def test_the_password_is_in_no_log_line_and_no_repr(
    app: App, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key = new_key()
    app.secret_keys = (key,)
    simple_workspace(app, 2)
    with RecordingSmtpServer(auth=("rep@seller.test", "the real one")) as server:
        url = f"smtp://127.0.0.1:{server.port}?starttls=off"
        with app.uow() as uow:
            connect_mailbox(uow, app.secret_box(), "rep@seller.test", Account(url, None, PASSWORD))
            uow.commit()
        clock.advance(timedelta(hours=4))
        report = Worker(app).run_once()  # refused: the mailbox is paused, its owner told
        assert report.sent == 0 and server.auth_attempts
        with app.uow() as uow:
            account = stored_account(uow, app.secret_box(), address="rep@seller.test")
            assert account is not None
            checks = check_account(account, timeout=10)
            reason = uow.session.execute(text("SELECT paused_reason FROM mailboxes")).scalar_one()
        assert rotate_secrets(app.scoped, SecretBox([new_key(), key])) == 1
    assert not checks[0].ok and reason
    shown = [
        caplog.text,
        reason,
        *(c.words for c in checks),
        repr(account),
        repr(app),
        repr(app.secret_box()),
    ]
    shown.append(repr(Environment(secret_keys=(key,))))
    for where in shown:
        assert PASSWORD not in where and key not in where, where


@pytest.mark.parametrize("bad", ["x" * 44, "half-a-secret-key", "good,bad", "Zm9v" * 11])
def test_a_malformed_key_is_refused_without_repeating_it(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLYGUARD_SECRET_KEY", bad)
    with pytest.raises(ValueError, match="is not a key") as refused:
        Environment.read()
    assert all(part not in str(refused.value) for part in bad.split(","))
