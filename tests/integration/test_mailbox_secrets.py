"""Secrets at rest: a connected mailbox's passwords are stored encrypted, rotated by command,
and never stored at all without a key (issue 24, item 2). On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text

from replyguard.adapters.db import models as m
from replyguard.adapters.secret_box import NoSecretKey, SecretBox, SecretUnreadable, new_key
from replyguard.bootstrap import App
from replyguard.service_layer.workspace.mailbox_accounts import (
    Account,
    AccountError,
    connect_mailbox,
    disconnect_mailbox,
    rotate_secrets,
    stored_account,
)
from replyguard.service_layer.workspace.mailboxes import MailboxNotFound, list_mailboxes
from tests.support.scenario import simple_workspace

PASSWORD = "correct horse battery staple 7"
SMTP = "smtp+starttls://smtp.alpha.test:587"
IMAP = "imaps://imap.alpha.test:993/INBOX"


def _raw_row(app: App, address: str) -> dict[str, object]:
    with app.engine.connect() as conn:
        row = conn.execute(
            text("SELECT smtp_url, imap_url, secret FROM mailboxes WHERE address = :a"), {"a": address}
        ).one()
    return dict(row._mapping)


def test_the_stored_secret_is_ciphertext_that_only_the_key_opens(app: App) -> None:
    box = SecretBox([new_key()])
    with app.uow() as uow:
        shown = connect_mailbox(uow, box, "dana@alpha.test", Account(SMTP, IMAP, PASSWORD))
        uow.commit()
    row = _raw_row(app, "dana@alpha.test")
    assert PASSWORD not in str(row) and PASSWORD.replace(" ", "%20") not in str(row)
    assert row["smtp_url"] == "smtp+starttls://dana%40alpha.test@smtp.alpha.test:587"
    assert row["imap_url"] == "imaps://dana%40alpha.test@imap.alpha.test:993/INBOX"
    assert shown["password_stored"] is True and PASSWORD not in str(shown)
    with app.uow() as uow:
        account = stored_account(uow, box, address="dana@alpha.test")
    assert account is not None
    assert account.smtp_password == PASSWORD and account.imap_password == PASSWORD
    assert PASSWORD not in repr(account)
    with app.uow() as uow, pytest.raises(SecretUnreadable):
        stored_account(uow, SecretBox([new_key()]), address="dana@alpha.test")


def test_a_password_inside_a_url_is_taken_out_and_encrypted(app: App) -> None:
    box = SecretBox([new_key()])
    with app.uow() as uow:
        connect_mailbox(
            uow, box, "sam@beta.test", Account("smtps://sam:p%40ss%2Fword@mail.beta.test", None, None)
        )
        uow.commit()
    row = _raw_row(app, "sam@beta.test")
    assert row["smtp_url"] == "smtps://sam@mail.beta.test" and "p%40ss" not in str(row)
    with app.uow() as uow:
        account = stored_account(uow, box, address="sam@beta.test")
    assert account is not None and account.smtp_password == "p@ss/word"


def test_without_a_key_a_password_is_refused_and_nothing_is_stored(app: App) -> None:
    with app.uow() as uow, pytest.raises(NoSecretKey, match="no secret key is configured") as refused:
        connect_mailbox(uow, None, "dana@alpha.test", Account(SMTP, IMAP, PASSWORD))
    assert "REPLYGUARD_SECRET_KEY" in str(refused.value) and PASSWORD not in str(refused.value)
    with app.uow() as uow:
        assert uow.session.scalar(select(m.Mailbox).where(m.Mailbox.address == "dana@alpha.test")) is None


def test_rotation_reencrypts_every_secret_with_the_newest_key(app: App) -> None:
    old, new = new_key(), new_key()
    with app.uow() as uow:
        for address in ("dana@alpha.test", "sam@beta.test"):
            connect_mailbox(uow, SecretBox([old]), address, Account(SMTP, None, PASSWORD))
        uow.commit()
    before = _raw_row(app, "dana@alpha.test")["secret"]
    assert rotate_secrets(app.scoped, SecretBox([new, old])) == 2
    after = _raw_row(app, "dana@alpha.test")["secret"]
    assert after != before and PASSWORD not in str(after)
    with app.uow() as uow:
        account = stored_account(uow, SecretBox([new]), address="dana@alpha.test")  # old key gone
        assert account is not None and account.smtp_password == PASSWORD
        with pytest.raises(SecretUnreadable):
            stored_account(uow, SecretBox([old]), address="dana@alpha.test")


def test_an_imap_account_needs_a_password_and_a_url_must_be_one_we_speak(app: App) -> None:
    box = SecretBox([new_key()])
    with app.uow() as uow:
        with pytest.raises(AccountError, match="needs a password"):
            connect_mailbox(uow, box, "dana@alpha.test", Account(None, IMAP, None))
        with pytest.raises(AccountError, match="smtp"):
            connect_mailbox(uow, box, "dana@alpha.test", Account("http://x.test", None, PASSWORD))
        with pytest.raises(AccountError, match="give --smtp, --imap or both"):
            connect_mailbox(uow, box, "dana@alpha.test", Account(None, None, PASSWORD))


def test_remove_forgets_the_account_and_keeps_a_mailbox_campaigns_use(app: App) -> None:
    simple_workspace(app, 1)  # its campaign sends from rep@seller.test
    box = SecretBox([new_key()])
    with app.uow() as uow:
        connect_mailbox(uow, box, "rep@seller.test", Account(SMTP, None, PASSWORD))
        connect_mailbox(uow, box, "solo@alpha.test", Account(SMTP, None, PASSWORD))
        uow.commit()
    with app.uow() as uow:
        assert disconnect_mailbox(uow, "rep@seller.test") == "disconnected"
        assert disconnect_mailbox(uow, "solo@alpha.test") == "removed"
        uow.commit()
    assert _raw_row(app, "rep@seller.test") == {"smtp_url": None, "imap_url": None, "secret": None}
    with app.uow() as uow:
        assert [mb["address"] for mb in list_mailboxes(uow)] == ["rep@seller.test"]
        with pytest.raises(MailboxNotFound):
            disconnect_mailbox(uow, "solo@alpha.test")
