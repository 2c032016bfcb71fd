"""A copy of each sent email in the mailbox's Sent folder where the provider keeps none
itself (issue 24, item 5): a mailbox connected to its own SMTP server and to a private
Dovecot with a Sent folder gets each email the server accepted appended there, once, marked
read; a refused email gets no copy; a mailbox without a Sent folder gets none."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from email import message_from_bytes, policy

import pytest

from replyguard.adapters.secret_box import new_key
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.sent_copies import provider_saves_sent
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import import_leads
from replyguard.service_layer.workspace.mailbox_accounts import Account, connect_mailbox
from tests.support.imap_server import DovecotServer, dovecot_or_skip
from tests.support.scenario import campaign_toml, csv_of, enroll_all
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer

REP, PASSWORD = "rep@seller.test", "rep-pw"


@pytest.fixture
def imap() -> Iterator[DovecotServer]:
    with DovecotServer(dovecot_or_skip(), users={REP: PASSWORD}) as server:
        with server.client(REP) as client:
            client.create_folder("Sent")
        yield server
        print(f"--- dovecot log ---\n{server.log}")  # shown only when the test fails


def _workspace(app: App, smtp: RecordingSmtpServer, imap: DovecotServer, sent_folder: str | None) -> None:
    app.secret_keys = (new_key(),)
    leads = ["a1@one.test", "a2@two.test", "a3@three.test"]
    with app.uow() as uow:
        create_campaign(uow, campaign_toml("C", "P", mailbox=REP))
        import_leads(uow, "P", list(read_leads(csv_of([{"email": e, "first_name": "Lee"} for e in leads]))))
        account = Account(
            f"smtp://127.0.0.1:{smtp.port}?starttls=off",
            f"imap://127.0.0.1:{imap.port}/INBOX?starttls=no",
            PASSWORD,
            sent_folder=sent_folder,
        )
        connect_mailbox(uow, app.secret_box(), REP, account)
        uow.commit()
    enroll_all(app, "C")


def _sent(imap: DovecotServer) -> list[tuple[str, tuple[bytes, ...]]]:
    with imap.client(REP) as client:
        client.select_folder("Sent", readonly=True)
        found = client.fetch(client.search(["ALL"]), ["RFC822", "FLAGS"])
    return [
        (str(message_from_bytes(data[b"RFC822"], policy=policy.default)["To"]), tuple(data[b"FLAGS"]))
        for data in found.values()
    ]


def test_each_accepted_email_is_copied_to_the_sent_folder_once(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    picks = iter([Behaviour.ACCEPT, Behaviour.REJECT_END, Behaviour.ACCEPT])
    with RecordingSmtpServer(auth=(REP, PASSWORD), schedule=lambda _n: next(picks)) as smtp:
        _workspace(app, smtp, imap, "Sent")
        clock.advance(timedelta(hours=4))  # Monday 10:00 UTC: inside the window
        report = Worker(app).run_once()
        assert (report.sent, report.failed) == (2, 1), report
        accepted = sorted(to for msg in smtp.accepted() for to in msg.rcpt_tos)
    copies = _sent(imap)
    assert sorted(to.split("<")[-1].rstrip(">") for to, _ in copies) == accepted
    assert all(b"\\Seen" in flags for _, flags in copies)


def test_a_mailbox_without_a_sent_folder_gets_no_copy(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    with RecordingSmtpServer(auth=(REP, PASSWORD)) as smtp:
        _workspace(app, smtp, imap, None)
        clock.advance(timedelta(hours=4))
        assert Worker(app).run_once().sent == 3
    assert _sent(imap) == []


@pytest.mark.parametrize(
    ("host", "saves"),
    [
        ("smtp.gmail.com", True),
        ("smtp.office365.com", True),
        ("smtp-mail.outlook.com", True),
        ("SMTP.GMAIL.COM.", True),
        ("mail.example.com", False),
        ("outlook.com.evil.test", False),
    ],
)
def test_google_and_microsoft_keep_their_own_copy(host: str, saves: bool) -> None:
    assert provider_saves_sent(host) is saves
