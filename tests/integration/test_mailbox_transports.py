"""Each connected mailbox sends through its own SMTP server, logged in as itself, with its own
From and Message-ID domain; a mailbox with no account of its own keeps the default transport
(issue 24, item 1). Two real aiosmtpd servers, each requiring its own mailbox's login."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from pathlib import Path

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.secret_box import new_key
from replyguard.bootstrap import App
from replyguard.domain.addresses import base_address
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.rescue.person_send import PersonReply, send_reply
from replyguard.service_layer.rescue.thread_views import list_threads
from replyguard.service_layer.sending.worker import Worker, WorkerReport
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import import_leads
from replyguard.service_layer.workspace.mailbox_accounts import Account, connect_mailbox
from tests.support.scenario import campaign_toml, csv_of, enroll_all
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer
from tests.support.tls import CertPair, TlsUnavailable, self_signed_cert

DANA, SAM, REP = "dana@alpha.test", "sam@beta.test", "rep@seller.test"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertPair:
    try:
        return self_signed_cert(tmp_path_factory.mktemp("tls"))
    except TlsUnavailable as exc:
        pytest.skip(f"no TLS in this environment: {exc}")


@pytest.fixture
def servers(certs: CertPair) -> Iterator[tuple[RecordingSmtpServer, RecordingSmtpServer]]:
    # alpha offers STARTTLS on a submission-like port; beta speaks TLS from the first byte.
    alpha = RecordingSmtpServer(auth=(DANA, "dana-pw"), tls=certs)
    beta = RecordingSmtpServer(auth=(SAM, "sam-pw"), tls=certs, implicit_tls=True)
    with alpha, beta:
        yield alpha, beta


def _campaigns(app: App, leads: dict[str, list[str]]) -> None:
    """One campaign per mailbox, each with its own leads, enrolled."""
    with app.uow() as uow:
        for n, (mailbox, emails) in enumerate(leads.items()):
            create_campaign(uow, campaign_toml(f"C{n}", f"P{n}", mailbox=mailbox))
            rows = list(read_leads(csv_of([{"email": e, "first_name": "Lee"} for e in emails])))
            import_leads(uow, f"P{n}", rows)
        uow.commit()
    for n in range(len(leads)):
        enroll_all(app, f"C{n}")


def _connect(app: App, address: str, url: str, password: str) -> None:
    with app.uow() as uow:
        connect_mailbox(uow, app.secret_box(), address, Account(url, None, password))
        uow.commit()


def _outbox(app: App) -> list[str]:
    return sorted(p.name for p in (Path(app.transport_spec.removeprefix("maildir:")) / "new").iterdir())


def test_each_mailbox_sends_through_its_own_server_as_itself(
    app: App, clock: FixedClock, servers: tuple[RecordingSmtpServer, RecordingSmtpServer], certs: CertPair
) -> None:
    alpha, beta = servers
    app.secret_keys = (new_key(),)
    leads = {
        DANA: ["a1@one.test", "a2@two.test"],
        SAM: ["b1@one.test", "b2@two.test", "b3@three.test"],
        REP: ["c1@one.test"],
    }
    _campaigns(app, leads)
    _connect(app, DANA, f"smtp+starttls://127.0.0.1:{alpha.port}?cafile={certs.cert}", "dana-pw")
    _connect(app, SAM, f"smtps://127.0.0.1:{beta.port}?cafile={certs.cert}", "sam-pw")
    clock.advance(timedelta(hours=4))  # Monday 10:00 UTC: inside the window

    report = Worker(app).run_once()  # no transport given: each mailbox's own

    assert report.sent == 6
    for server, address, domain in ((alpha, DANA, "alpha.test"), (beta, SAM, "beta.test")):
        got = server.wait_for_messages(len(leads[address]))
        assert sorted(r for msg in got for r in msg.rcpt_tos) == sorted(leads[address])
        for msg in got:
            assert msg.authenticated and msg.tls
            # The envelope sender is the mailbox's own signed return path (VERP): its bounces
            # come back bound to the send.
            assert base_address(msg.mail_from) == address and "+bounces-" in msg.mail_from
            assert parseaddr(str(msg.message()["From"]))[1] == address
            assert msg.message_id is not None and msg.message_id.endswith(f"@{domain}>")
        # Logged in as itself: each server knows only its own mailbox's password.
        assert server.auth_attempts and all(ok for _, ok in server.auth_attempts)
    # The mailbox with no account of its own: the default transport (the tests' Maildir).
    assert len(_outbox(app)) == 1


def test_a_wrong_password_pauses_only_that_mailbox(
    app: App, clock: FixedClock, servers: tuple[RecordingSmtpServer, RecordingSmtpServer], certs: CertPair
) -> None:
    alpha, beta = servers
    app.secret_keys = (new_key(),)
    _campaigns(app, {DANA: ["a1@one.test"], SAM: ["b1@one.test"]})
    _connect(app, DANA, f"smtp+starttls://127.0.0.1:{alpha.port}?cafile={certs.cert}", "dana-pw")
    # Sam's account given Dana's password: beta refuses it, and nobody else's login is tried.
    _connect(app, SAM, f"smtps://127.0.0.1:{beta.port}?cafile={certs.cert}", "dana-pw")
    clock.advance(timedelta(hours=4))

    report = Worker(app).run_once()

    assert report.sent == 1 and len(alpha.wait_for_messages(1)) == 1
    assert beta.accepted() == [] and beta.auth_attempts
    assert not any(ok for _, ok in beta.auth_attempts)
    with app.uow() as uow:
        status = dict(uow.session.execute(select(m.Mailbox.address, m.Mailbox.status)).all())
        reason = uow.session.scalar(select(m.Mailbox.paused_reason).where(m.Mailbox.address == SAM))
    assert status == {DANA: "active", SAM: "paused"}
    assert reason is not None and "dana-pw" not in reason


def test_a_password_no_configured_key_opens_pauses_the_mailbox_instead_of_sending_elsewhere(
    app: App, clock: FixedClock, servers: tuple[RecordingSmtpServer, RecordingSmtpServer], certs: CertPair
) -> None:
    alpha, _ = servers
    app.secret_keys = (new_key(),)
    _campaigns(app, {DANA: ["a1@one.test"]})
    _connect(app, DANA, f"smtp+starttls://127.0.0.1:{alpha.port}?cafile={certs.cert}", "dana-pw")
    app.secret_keys = (new_key(),)  # the key was replaced without `secrets rotate`
    clock.advance(timedelta(hours=4))

    report = Worker(app).run_once()

    assert report.sent == 0 and alpha.accepted() == [] and _outbox(app) == []
    with app.uow() as uow:
        status, reason = uow.session.execute(
            select(m.Mailbox.status, m.Mailbox.paused_reason).where(m.Mailbox.address == DANA)
        ).one()
    assert status == "paused" and "does not decrypt" in (reason or "")


def test_a_stopping_worker_cuts_the_send_in_flight_on_the_mailbox_s_own_connection(
    app: App, clock: FixedClock, certs: CertPair
) -> None:
    """`Worker.interrupt` cuts the connection of the transport that is sending now, the
    mailbox's own: its server took the message and never answers, so the send is cut at once
    and held as an unknown outcome, not left to its 10-minute time budget."""
    app.secret_keys = (new_key(),)
    _campaigns(app, {DANA: ["a1@one.test"]})
    with RecordingSmtpServer(
        auth=(DANA, "dana-pw"), tls=certs, behaviour=Behaviour.HANG_AFTER_ACCEPT
    ) as hang:
        _connect(
            app, DANA, f"smtp+starttls://127.0.0.1:{hang.port}?cafile={certs.cert}&timeout=600", "dana-pw"
        )
        clock.advance(timedelta(hours=4))
        worker = Worker(app)
        reports: list[WorkerReport] = []
        thread = threading.Thread(target=lambda: reports.append(worker.run_once()), daemon=True)
        thread.start()
        assert len(hang.wait_for_messages(1)) == 1  # taken by the server, which now says nothing
        worker.stop.set()
        worker.interrupt()
        thread.join(60)
        assert not thread.is_alive(), "the send in flight was not cut"
    assert reports[0].unknown == 1


def test_a_person_s_answer_goes_out_through_the_thread_mailbox_s_own_server(
    app: App, clock: FixedClock, servers: tuple[RecordingSmtpServer, RecordingSmtpServer], certs: CertPair
) -> None:
    alpha, _ = servers
    app.secret_keys = (new_key(),)
    _campaigns(app, {DANA: ["a1@one.test"]})
    _connect(app, DANA, f"smtp+starttls://127.0.0.1:{alpha.port}?cafile={certs.cert}", "dana-pw")
    clock.advance(timedelta(hours=4))
    assert Worker(app).run_once().sent == 1
    [first] = alpha.wait_for_messages(1)
    answer = EmailMessage()
    answer["From"], answer["To"], answer["Subject"] = "a1@one.test", DANA, "Re: Hello"
    answer["Message-ID"], answer["In-Reply-To"] = "<q1@one.test>", first.message_id
    answer["Date"] = format_datetime(clock.now())
    answer.set_content("What does it cost for 12 people?\n")
    ingest_raw(app, answer.as_bytes(), "test")
    with app.uow() as uow:
        [thread] = list_threads(uow, app.settings, state="open")

    sent = send_reply(app, PersonReply(int(thread["id"]), "40 EUR a seat a month.\n", "dana"))  # type: ignore[call-overload]

    assert sent.state == "sent"
    mine = alpha.wait_for_messages(2)[1]
    assert mine.authenticated and mine.rcpt_tos == ("a1@one.test",) and mine.mail_from == DANA
    assert _outbox(app) == []  # nothing through the default transport


def test_an_account_changed_while_the_worker_runs_applies_from_its_next_pass(
    app: App, clock: FixedClock, servers: tuple[RecordingSmtpServer, RecordingSmtpServer], certs: CertPair
) -> None:
    alpha, beta = servers
    app.secret_keys = (new_key(),)
    _campaigns(app, {DANA: ["a1@one.test"]})
    _connect(app, DANA, f"smtp+starttls://127.0.0.1:{alpha.port}?cafile={certs.cert}", "dana-pw")
    clock.advance(timedelta(hours=4))
    worker = Worker(app)  # one worker, as `replyguard worker` keeps it
    assert worker.run_once().sent == 1 and len(alpha.wait_for_messages(1)) == 1

    # The mailbox moves to another server (and login) while the worker runs; a new lead comes.
    _connect(
        app, DANA, f"smtps://{SAM.replace('@', '%40')}@127.0.0.1:{beta.port}?cafile={certs.cert}", "sam-pw"
    )
    with app.uow() as uow:
        import_leads(uow, "P0", list(read_leads(csv_of([{"email": "a2@two.test", "first_name": "Lee"}]))))
        uow.commit()
    enroll_all(app, "C0")

    assert worker.run_once().sent == 1
    assert [m.rcpt_tos for m in beta.wait_for_messages(1)] == [("a2@two.test",)]
    assert len(alpha.accepted()) == 1
