"""`replyguard mailbox add|test|list|remove` and `secrets new-key|rotate` through the real CLI,
against a real aiosmtpd server and a private Dovecot (issue 24, items 1 and 2).

`mailbox test` logs in to both and says in words what works and what does not: against the
real servers, a wrong password and a closed port. The password appears in no output."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import Ran, clean_env, run_cli
from tests.support.imap_server import PASSWORD, USER, DovecotServer, dovecot_or_skip
from tests.support.smtp_servers import RecordingSmtpServer
from tests.support.tls import CertPair, TlsUnavailable, self_signed_cert

ADDRESS = "rep@alpha.test"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertPair:
    try:
        return self_signed_cert(tmp_path_factory.mktemp("tls"))
    except TlsUnavailable as exc:
        pytest.skip(f"no TLS in this environment: {exc}")


@pytest.fixture(scope="module")
def dovecot() -> Iterator[DovecotServer]:
    with DovecotServer(dovecot_or_skip()) as server:
        yield server


@pytest.fixture
def smtp(certs: CertPair) -> Iterator[RecordingSmtpServer]:
    with RecordingSmtpServer(auth=(USER, PASSWORD), tls=certs) as server:
        yield server


class Cli:
    def __init__(self, root: Path, key: str | None = None) -> None:
        self.root, self.key = root, key

    def run(self, *args: str, key: str | None = None, input: str = "") -> Ran:
        env = clean_env(
            REPLYGUARD_DATABASE_URL=f"sqlite:///{self.root / 'rg.db'}",
            REPLYGUARD_TRANSPORT=f"maildir:{self.root / 'outbox'}",
            COLUMNS="1000",
        )
        if key or self.key:
            env["REPLYGUARD_SECRET_KEY"] = key or self.key or ""
        ran = run_cli(args, env=env, cwd=self.root, input=input)
        assert "Traceback" not in ran.stderr, ran.stderr
        # The password is never shown, whatever the command and however it ends.
        assert PASSWORD not in ran.stdout + ran.stderr, ran
        return ran


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once it is closed


def _add(cli: Cli, smtp_url: str, imap_url: str, password: str) -> Ran:
    (cli.root / "pw.txt").write_text(password + "\n", encoding="utf-8")
    return cli.run(
        "mailbox", "add", ADDRESS, "--smtp", smtp_url, "--imap", imap_url, "--password-file", "pw.txt"
    )


def test_mailbox_test_says_what_works_and_what_does_not(
    tmp_path: Path, smtp: RecordingSmtpServer, dovecot: DovecotServer, certs: CertPair
) -> None:
    cli = Cli(tmp_path)
    assert cli.run("init").returncode == 0
    cli.key = cli.run("secrets", "new-key").stdout.strip()
    smtp_url = f"smtp+starttls://{USER}@127.0.0.1:{smtp.port}?cafile={certs.cert}"
    imap_url = f"imap://{USER}@127.0.0.1:{dovecot.port}/INBOX?starttls=no"

    added = _add(cli, smtp_url, imap_url, PASSWORD)
    assert added.returncode == 0, added.stderr
    assert "password stored encrypted: yes" in added.stdout

    good = cli.run("mailbox", "test", ADDRESS)
    assert good.returncode == 0, good.stdout + good.stderr
    assert (
        f"works  sending (SMTP): connected to smtp+starttls://{USER}:***@127.0.0.1:{smtp.port} (TLS)"
        in good.stdout
    )
    assert f"logged in as {USER}" in good.stdout
    assert f"works  reading (IMAP): logged in to 127.0.0.1:{dovecot.port}" in good.stdout
    assert "works  watched folder INBOX" in good.stdout
    assert smtp.accepted() == [] and smtp.data_commands == 0  # nothing was sent

    # `poll` with no URL: every connected mailbox's folders (a first start reads from now).
    polled = cli.run("poll", "--once")
    assert polled.returncode == 0, polled.stderr
    assert polled.stdout.strip() == f"imap://{USER}@127.0.0.1:{dovecot.port}/INBOX: 0 new messages"

    # A wrong password: both servers refuse it, in words, and the command fails in one line.
    assert _add(cli, smtp_url, imap_url, "not-the-password").returncode == 0
    wrong = cli.run("mailbox", "test", ADDRESS)
    assert wrong.returncode == 1
    assert "FAILS  sending (SMTP): the server refused the login" in wrong.stdout
    assert f"FAILS  reading (IMAP): 127.0.0.1:{dovecot.port} refused the login of {USER}" in wrong.stdout
    assert len(wrong.stderr.splitlines()) == 1 and "2 of 2 checks failed" in wrong.stderr
    assert "not-the-password" not in wrong.stdout + wrong.stderr

    # Nothing listens: said so, for each server.
    closed = _closed_port()
    assert (
        _add(
            cli,
            f"smtps://{USER}@127.0.0.1:{closed}",
            f"imap://{USER}@127.0.0.1:{closed}/INBOX?starttls=no",
            PASSWORD,
        ).returncode
        == 0
    )
    down = cli.run("mailbox", "test", ADDRESS, "--json")
    assert down.returncode == 1
    shown = json.loads(down.stdout)
    assert shown["ok"] is False
    smtp_check, imap_check = shown["checks"]
    assert not smtp_check["ok"] and "connection refused" in smtp_check["words"].lower()
    assert not imap_check["ok"] and "connection refused" in imap_check["words"]


def test_add_list_rotate_remove_and_no_key(tmp_path: Path, certs: CertPair) -> None:
    cli = Cli(tmp_path)
    assert cli.run("init").returncode == 0
    smtp_url = "smtp+starttls://smtp.alpha.test:587"

    refused = _add(cli, smtp_url, "imaps://imap.alpha.test/INBOX", PASSWORD)
    assert refused.returncode == 2
    assert "no secret key is configured" in refused.stderr and "REPLYGUARD_SECRET_KEY" in refused.stderr
    assert json.loads(cli.run("mailbox", "list", "--json").stdout) == []

    old = cli.run("secrets", "new-key").stdout.strip()
    new = cli.run("secrets", "new-key").stdout.strip()
    assert old != new
    cli.key = old
    assert _add(cli, smtp_url, "imaps://imap.alpha.test/INBOX", PASSWORD).returncode == 0
    [listed] = json.loads(cli.run("mailbox", "list", "--json").stdout)
    assert listed["smtp"] == "smtp+starttls://rep%40alpha.test@smtp.alpha.test:587"
    assert listed["password_stored"] is True and listed["folders"] == ["INBOX"]

    rotated = cli.run("secrets", "rotate", key=f"{new},{old}")
    assert rotated.returncode == 0 and rotated.stdout.startswith("1 secret(s) encrypted again")
    # Only the new key now: the account still opens (the test reaches the SMTP step at least).
    opened = cli.run("mailbox", "test", ADDRESS, "--timeout", "5", key=new)
    assert "does not decrypt" not in opened.stdout + opened.stderr
    stale = cli.run("mailbox", "test", ADDRESS, key=old)
    assert stale.returncode == 1 and "does not decrypt with any configured key" in stale.stderr

    # The default transport is a Maildir, but a connected mailbox sends real mail by SMTP:
    # unsubscribe links pointing at localhost are refused as for an SMTP transport.
    worker = cli.run("worker", "--once", key=new)
    assert worker.returncode == 2 and "REPLYGUARD_PUBLIC_URL is not set" in worker.stderr

    removed = cli.run("mailbox", "remove", ADDRESS, "--yes")
    assert removed.returncode == 0 and "removed" in removed.stdout
    assert json.loads(cli.run("mailbox", "list", "--json").stdout) == []
