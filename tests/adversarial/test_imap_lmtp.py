"""Items 2 and 6 of issue 7 at the IMAP and LMTP doors, against a real Dovecot and real
LMTP sockets, on SQLite and PostgreSQL.

Each failed before: an EXISTS that arrived during our own FETCH left the next IDLE deaf (a
60 s stall); a message expunged by another client mid-fetch crashed `poll --once`; a first
start replayed the mailbox's whole history as fresh replies; the poller never moved past a
message the database refused; LMTP answered a bare-LF message with a long line 500 (a
permanent failure: the reply bounced) and a stored message it could not process 451.
"""

from __future__ import annotations

import dataclasses
import smtplib
from collections.abc import Iterator

import pytest
from imapclient import IMAPClient
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.imap_source import Fetched
from replyguard.bootstrap import App
from replyguard.service_layer.inbound.pollers import ingest_fetched, read_cursor
from tests.adversarial import hostile
from tests.integration.test_http_inbound import PRIYA
from tests.integration.test_imap_poller import FAST, Running, note, wait_for
from tests.integration.test_lmtp_listener import TO, counts, listening
from tests.support.imap_server import DovecotServer, dovecot_or_skip
from tests.support.scenario import REPORTS, lead_state

MARC = "marc.keller@brightline-logistics.test"


@pytest.fixture
def imap() -> Iterator[DovecotServer]:
    with DovecotServer(dovecot_or_skip()) as server:
        yield server


def sources(app: App) -> list[tuple[str, str]]:
    with app.uow() as uow:
        rows = uow.session.execute(
            select(m.InboundMessage.source, m.InboundMessage.status).order_by(m.InboundMessage.id)
        )
        return [(r.source, r.status) for r in rows]


def test_a_first_start_leaves_the_history_alone_and_reads_what_comes(sent: App, imap: DovecotServer) -> None:
    old_reply = hostile.good_reply(sent, PRIYA, REPORTS, "<old-reply@fernhollow.test>")
    imap.append(old_reply, note(1), note(2))
    poller = sent.imap_poller(imap.url, timing=FAST)
    assert poller.run_once() == 0
    assert lead_state(sent, PRIYA, REPORTS) == "active"  # the history stopped nobody
    assert read_cursor(sent, poller.source.key).last_uid == 3
    imap.append(hostile.good_reply(sent, MARC, REPORTS, "<new@brightline.test>"))
    assert sent.imap_poller(imap.url, timing=FAST).run_once() == 1
    assert lead_state(sent, MARC, REPORTS) == "replied"
    assert sources(sent) == [("imap", "matched")]


def test_a_history_import_marks_the_old_mail_as_history(sent: App, imap: DovecotServer) -> None:
    imap.append(note(1), note(2))
    assert sent.imap_poller(imap.url, timing=FAST, history=True).run_once() == 2
    imap.append(note(3))
    # A restart during or after the import: the boundary is in the database.
    assert sent.imap_poller(imap.url, timing=FAST, history=True).run_once() == 1
    assert sources(sent) == [("imap-history", "unmatched")] * 2 + [("imap", "unmatched")]


def test_a_message_expunged_by_another_client_mid_fetch_is_skipped(sent: App, imap: DovecotServer) -> None:
    imap.append(*[note(n) for n in range(30)])  # two FETCH batches
    read: list[bytes] = []

    def handle(message: Fetched) -> None:
        read.append(message.raw)
        if len(read) == 1:  # another client deletes two messages of the second batch
            with imap.client() as other:
                other.select_folder("INBOX")
                other.delete_messages([28, 29])
                other.expunge()

    poller = sent.imap_poller(imap.url, handle, timing=FAST, history=True)
    poller.run_once()  # before: TypeError on the NIL body Dovecot answers for them
    assert read == [note(n) for n in range(30) if n not in (27, 28)]
    assert poller.stats.vanished == 2
    assert read_cursor(sent, poller.source.key).last_uid == 30


def test_an_exists_that_arrives_during_our_fetch_does_not_stall_idle(sent: App, imap: DovecotServer) -> None:
    read: list[bytes] = []

    def handle(message: Fetched) -> None:
        read.append(message.raw)
        if len(read) == 1:  # lands while we read: the server reports it inside our next FETCH
            imap.append(note(99))

    poller = sent.imap_poller(imap.url, handle, timing=FAST)  # IDLE refresh: one hour
    running = Running(poller)
    try:
        wait_for(lambda: poller.stats.idle_commands == 1, "the poller waits in IDLE")
        imap.append(*[note(n) for n in range(30)])
        wait_for(lambda: len(read) == 31, "the burst and the message that landed during it read")
    finally:
        running.stop()
    assert sorted(read) == sorted([note(n) for n in range(30)] + [note(99)])


def test_a_message_landing_during_our_search_does_not_stall_idle(
    sent: App, imap: DovecotServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server tells of a message that lands while a SEARCH runs beside that SEARCH's answer;
    IDLE never repeats it. A poller that idles on the empty answer sleeps for its whole refresh
    (an hour here) with the message unread."""
    read: list[bytes] = []
    searches = 0
    real_search = IMAPClient.search

    def search(client: IMAPClient, *args: object, **kwargs: object) -> object:
        nonlocal searches
        searches += 1
        if searches == 1:  # the poller's first look at the folder, just after its SELECT
            imap.append(note(7))
        return real_search(client, *args, **kwargs)

    monkeypatch.setattr(IMAPClient, "search", search)
    poller = sent.imap_poller(imap.url, lambda message: read.append(message.raw), timing=FAST)
    running = Running(poller)
    try:
        wait_for(lambda: poller.stats.idle_commands >= 1, "the poller waits in IDLE")
        wait_for(lambda: read == [note(7)], "the message that landed during the search read")
    finally:
        running.stop()


def test_the_poller_moves_past_a_message_the_database_refused_before(sent: App, imap: DovecotServer) -> None:
    poller = sent.imap_poller(imap.url, timing=FAST)
    assert poller.run_once() == 0
    imap.append(hostile.escape_charset(sent), hostile.good_reply(sent, MARC, REPORTS, "<m@b.test>"))
    assert poller.run_once() == 2
    assert read_cursor(sent, poller.source.key).last_uid == 2
    assert lead_state(sent, PRIYA, REPORTS) == "replied" and lead_state(sent, MARC, REPORTS) == "replied"


def test_a_message_over_the_limit_is_kept_as_refused_and_stays_in_the_mailbox(
    sent: App, imap: DovecotServer
) -> None:
    sent.settings = dataclasses.replace(sent.settings, message_max_bytes=4000)
    poller = sent.imap_poller(imap.url, timing=FAST)
    assert poller.run_once() == 0
    big = note(1).replace(b"Issue 1 of our digest.", b"x" * 10_000)
    imap.append(big, note(2))
    results = []
    handle = ingest_fetched(sent, results.append)
    assert sent.imap_poller(imap.url, handle, timing=FAST).run_once() == 2
    assert [r.status for r in results] == ["refused", "unmatched"]
    with sent.uow() as uow:
        kept = uow.session.get_one(m.InboundMessage, results[0].inbound_id)
        assert kept.raw.endswith(b"\r\n\r\n") and b"xxxx" not in kept.raw  # the header only
        assert "stays in INBOX, UID 1" in (kept.error or "")


# --- LMTP ---------------------------------------------------------------------------------


def test_lmtp_takes_bare_lf_lines_over_1000_bytes(sent: App) -> None:
    reply = hostile.good_reply(sent, PRIYA, REPORTS, "<bare-lf@fernhollow.test>").replace(b"\r\n", b"\n")
    reply = reply.replace(b"Happy to talk next week.", b"Happy to talk next week. " + b"long line " * 300)
    with listening(sent) as port, smtplib.LMTP("127.0.0.1", port) as client:
        client.ehlo_or_helo_if_needed()
        client.mail(PRIYA)
        client.rcpt(TO)
        # smtplib would rewrite bare LFs: send the data as an MTA that keeps them would.
        client.putcmd("data")
        assert client.getreply()[0] == 354
        client.send(reply + b"\r\n.\r\n")
        assert client.getreply()[0] == 250  # before: 500 Line too long, a permanent failure
    assert lead_state(sent, PRIYA, REPORTS) == "replied"


def test_lmtp_acknowledges_a_stored_message_it_cannot_process(sent: App) -> None:
    sent.hooks.arm("inside_reply_tx", lambda _name: (_ for _ in ()).throw(RuntimeError("bug")))
    with listening(sent) as port, smtplib.LMTP("127.0.0.1", port) as client:
        # Before: 451 on every delivery attempt although the message was stored.
        assert client.sendmail(PRIYA, [TO], hostile.good_reply(sent, PRIYA, REPORTS, "<q@f.test>")) == {}
    assert counts(sent) == (1, 0)
    sent.hooks.disarm()
    with listening(sent) as port, smtplib.LMTP("127.0.0.1", port) as client:
        assert client.sendmail(MARC, [TO], hostile.good_reply(sent, MARC, REPORTS, "<g@b.test>")) == {}
    assert lead_state(sent, MARC, REPORTS) == "replied"


def test_lmtp_refuses_a_message_over_the_limit_with_552(sent: App) -> None:
    from replyguard.entrypoints.lmtp import Listener
    from tests.integration.test_lmtp_listener import free_port

    listener = Listener(sent, host="127.0.0.1", port=free_port(), data_size_limit=4000)
    listener.start()
    too_big = b"From: a@b.test\r\n\r\n" + (b"x" * 70 + b"\r\n") * 150
    try:
        with smtplib.LMTP("127.0.0.1", listener.port) as client:
            # Announced with SIZE (as smtplib and MTAs do): refused at MAIL FROM.
            with pytest.raises(smtplib.SMTPSenderRefused) as refused:
                client.sendmail(PRIYA, [TO], too_big)
            assert refused.value.smtp_code == 552  # the MTA bounces it to its sender, who is told
            client.rset()
            client.mail(PRIYA)  # not announced: refused after DATA, also permanently
            client.rcpt(TO)
            assert client.data(too_big)[0] == 552
    finally:
        listener.stop()
    assert counts(sent) == (0, 0)
