"""The IMAP poller against a real Dovecot on loopback, on SQLite and PostgreSQL.

What must hold: a reply appended to the mailbox stops its lead within seconds (woken by
IDLE, not by a timer); a first start reads from now on; a restarted poller neither re-reads
nor skips; a recreated folder
(new UIDVALIDITY) is read again without a second effect; a server restart is survived; on
either database only one poller reads a mailbox at a time (PostgreSQL: an advisory lock;
SQLite: the row lease), and another takes over when it stops or, on PostgreSQL, when its
database session dies.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime

import pytest
from sqlalchemy import func, select, text
from typer.testing import CliRunner

from replyguard.adapters.db import models as m
from replyguard.adapters.imap_source import Fetched, ImapPoller, ImapUrlError, Timing, parse_imap_url
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.cli.app import app as cli
from replyguard.service_layer.inbound.ingest import IngestResult, ingest_raw
from replyguard.service_layer.inbound.pollers import advisory_key, read_cursor
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.imap_server import PASSWORD, DovecotServer, dovecot_or_skip
from tests.support.scenario import REPORTS, lead_state, load_examples, run_days, step_counts

PRIYA = "priya@fernhollow.test"
# Timers far beyond the test's deadlines: whatever wakes the poller in time is IDLE.
FAST = Timing(
    poll_interval=3600,
    idle_refresh=3600,
    lease_renew=0.5,
    lease_retry=0.1,
    tick=0.1,
    backoff_min=0.1,
    backoff_max=0.5,
    socket_timeout=5,
)


@pytest.fixture
def imap() -> Iterator[DovecotServer]:
    with DovecotServer(dovecot_or_skip()) as server:
        yield server
        print(f"--- dovecot log ---\n{server.log}")  # shown only when the test fails


class Recorder:
    """The poller's handler: ingest, and remember what was read in which order."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.raws: list[bytes] = []
        self.results: list[IngestResult] = []

    def __call__(self, message: Fetched) -> None:
        self.results.append(ingest_raw(self.app, message.raw, source="imap"))
        self.raws.append(message.raw)


class Running:
    """A poller on a thread of its own, stopped (and checked to have stopped) by `stop`."""

    def __init__(self, poller: ImapPoller) -> None:
        self.poller, self.event = poller, threading.Event()
        self.thread = threading.Thread(target=poller.run, args=(self.event,), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.event.set()
        self.thread.join(120)
        assert not self.thread.is_alive(), "the poller did not stop"


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.05)


def note(n: int) -> bytes:
    """A message that matches no lead: read and kept, with no effect."""
    msg = EmailMessage()
    msg["From"] = f"Newsletter <news{n}@elsewhere.test>"
    msg["To"] = "dana@northwind-analytics.test"
    msg["Subject"] = f"Weekly digest #{n}"
    msg["Message-ID"] = f"<digest-{n}@elsewhere.test>"
    msg.set_content(f"Issue {n} of our digest.\n")
    return msg.as_bytes(policy=policy.SMTP)  # CRLF, as IMAP returns it


def priya_reply(app: App, clock: FixedClock) -> bytes:
    """Priya answers our first email, in its thread, quoting it the way mail clients do."""
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == lead.id, m.Step.position == 1)
        ).one()
        assert step.state == "sent"
        message_id, subject = step.message_id, step.subject
    msg = EmailMessage()
    msg["From"] = f"Priya Raman <{PRIYA}>"
    msg["To"] = "Dana <dana@northwind-analytics.test>"
    msg["Subject"] = f"Re: {subject}"
    msg["Date"] = format_datetime(clock.now())
    msg["Message-ID"] = "<CAF4k9Qx2@mail.fernhollow.test>"
    msg["In-Reply-To"] = message_id
    msg["References"] = message_id
    msg.set_content(
        "Hi Dana,\n\nThanks for reaching out. Thursday at 10 works for a quick call.\n\n"
        "Priya\n\nOn Mon, Dec 7, 2026 at 9:00 AM Dana wrote:\n> Hi Priya,\n> how does your team...\n"
    )
    return msg.as_bytes(policy=policy.SMTP)  # CRLF, as IMAP returns it


def inbound_count(app: App) -> int:
    with app.uow() as uow:
        return uow.session.scalar(select(func.count()).select_from(m.InboundMessage)) or 0


def test_imap_urls_keep_the_password_out_of_keys_and_reprs() -> None:
    source = parse_imap_url("imaps://rep%40seller.test:p%40ss@mail.seller.test/Replies")
    assert (source.host, source.port, source.user, source.password, source.folder, source.tls) == (
        "mail.seller.test",
        993,
        "rep@seller.test",
        "p@ss",
        "Replies",
        "ssl",
    )
    assert "p@ss" not in source.key and "p@ss" not in repr(source)
    assert parse_imap_url("imap://u:p@mail.test/INBOX").tls == "starttls"
    assert parse_imap_url("imap://u:p@127.0.0.1:1143?starttls=no", "Other").folder == "Other"
    with pytest.raises(ImapUrlError, match="loopback"):
        parse_imap_url("imap://u:p@mail.test/INBOX?starttls=no")
    with pytest.raises(ImapUrlError):
        parse_imap_url("https://u:p@mail.test/INBOX")


def test_a_reply_appended_to_the_mailbox_stops_the_lead_through_idle(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    recorder = Recorder(app)
    poller = app.imap_poller(imap.url, recorder, timing=FAST)
    running = Running(poller)
    try:
        wait_for(lambda: poller.stats.idle_commands == 1, "the poller waits in IDLE")
        imap.append(priya_reply(app, clock))
        wait_for(lambda: lead_state(app, PRIYA, REPORTS) == "replied", "Priya's lead is stopped")
    finally:
        running.stop()
    assert [(r.status, r.kind) for r in recorder.results] == [("matched", "human_reply")]
    assert step_counts(app, PRIYA, REPORTS) == {"sent": 1, "cancelled": 2}
    # Woken by the server's EXISTS: with hour-long timers, nothing else could have fetched.
    assert poller.stats.idle_commands >= 2 and poller.stats.errors == 0


def test_a_restarted_poller_neither_reads_again_nor_skips(app: App, imap: DovecotServer) -> None:
    messages = [note(n) for n in range(6)]
    first = Recorder(app)
    poller = app.imap_poller(imap.url, first, timing=FAST)
    running = Running(poller)
    wait_for(lambda: poller.stats.idle_commands == 1, "the poller waits in IDLE")
    imap.append(*messages[:3])
    wait_for(lambda: len(first.raws) == 3, "three messages read")
    running.stop()

    imap.append(*messages[3:5])
    second = Recorder(app)
    # Without IDLE this time, so the polling fallback is exercised too.
    poller = app.imap_poller(imap.url, second, timing=replace(FAST, poll_interval=0.2), use_idle=False)
    running = Running(poller)
    try:
        wait_for(lambda: len(second.raws) == 2, "the two new messages read")
        imap.append(messages[5])
        wait_for(lambda: len(second.raws) == 3, "a message appended while polling")
    finally:
        running.stop()
    assert first.raws == messages[:3] and second.raws == messages[3:]
    assert not any(r.duplicate for r in first.results + second.results)
    assert poller.stats.idle_commands == 0
    assert inbound_count(app) == 6
    with app.uow() as uow:
        assert set(uow.session.scalars(select(m.InboundMessage.status))) == {"unmatched"}
    assert read_cursor(app, poller.source.key).last_uid == 6


def test_a_recreated_folder_is_read_again_without_a_second_effect(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    reply = priya_reply(app, clock)
    with imap.client() as client:
        client.create_folder("Replies")
    first = Recorder(app)
    assert app.imap_poller(imap.url, first, folder="Replies", timing=FAST).run_once() == 0  # first start
    imap.append(reply, note(1), note(2), folder="Replies")
    assert app.imap_poller(imap.url, first, folder="Replies", timing=FAST).run_once() == 3
    key = parse_imap_url(imap.url, "Replies").key
    before = read_cursor(app, key)

    with imap.client() as client:
        client.delete_folder("Replies")
        client.create_folder("Replies")
    # The new message gets UID 2, below the old cursor (3): only a re-scan can find it.
    imap.append(reply, note(3), folder="Replies")
    second = Recorder(app)
    poller = app.imap_poller(imap.url, second, folder="Replies", timing=FAST)
    assert poller.run_once() == 2
    after = read_cursor(app, key)

    assert second.raws == [reply, note(3)]
    assert [r.duplicate for r in second.results] == [True, False]
    assert poller.stats.rescans == 1
    assert after.uidvalidity != before.uidvalidity and after.last_uid == 2
    assert inbound_count(app) == 4
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.Reply)) == 1
    assert lead_state(app, PRIYA, REPORTS) == "replied"


def test_the_poller_survives_a_server_restart(app: App, imap: DovecotServer) -> None:
    recorder = Recorder(app)
    poller = app.imap_poller(imap.url, recorder, timing=FAST)
    running = Running(poller)
    try:
        wait_for(lambda: poller.stats.idle_commands == 1, "the poller waits in IDLE")
        imap.append(note(1))
        wait_for(lambda: len(recorder.raws) == 1, "the first message read")
        wait_for(lambda: poller.stats.idle_commands == 2, "back in IDLE")
        imap.restart()
        # Appended once the poller is back in IDLE: a message that lands while it reconnects
        # is the race the next test covers.
        wait_for(lambda: poller.stats.idle_commands == 3, "back in IDLE on the new server")
        imap.append(note(2))
        wait_for(lambda: len(recorder.raws) == 2, "the message appended after the restart read")
    finally:
        running.stop()
    assert recorder.raws == [note(1), note(2)]
    assert poller.stats.connections >= 2 and poller.stats.errors >= 1
    assert inbound_count(app) == 2


def test_a_message_landing_while_we_read_is_read_before_idle(app: App, imap: DovecotServer) -> None:
    # Dovecot does not report a message appended after our SEARCH until our next command, and
    # an IDLE started after it hears nothing until Dovecot's own periodic check (30 s).
    # Appending from inside the handler lands it exactly there; the search before IDLE finds
    # it, with an hour-long refresh that could not.
    recorder = Recorder(app)

    def handle(message: Fetched) -> None:
        recorder(message)
        if len(recorder.raws) == 1:
            imap.append(note(2))

    poller = app.imap_poller(imap.url, handle, timing=FAST)
    running = Running(poller)
    try:
        wait_for(lambda: poller.stats.idle_commands == 1, "the poller waits in IDLE")
        imap.append(note(1))
        wait_for(lambda: len(recorder.raws) == 2, "the message that raced IDLE read")
    finally:
        running.stop()
    assert recorder.raws == [note(1), note(2)]


def test_one_poller_per_mailbox_and_a_takeover_when_it_stops(app: App, imap: DovecotServer) -> None:
    one, two = Recorder(app), Recorder(app)
    first = app.imap_poller(imap.url, one, timing=FAST, owner="one")
    second = app.imap_poller(imap.url, two, timing=FAST, owner="two")
    running_first = Running(first)
    wait_for(lambda: first.stats.idle_commands == 1, "the first poller reads the mailbox")
    running_second = Running(second)
    try:
        wait_for(lambda: second.stats.lease_waits >= 5, "the second poller waits for the lease")
        imap.append(note(1))
        wait_for(lambda: len(one.raws) == 1, "the holder reads the message")
        assert second.stats.connections == 0 and two.raws == []

        running_first.stop()
        wait_for(lambda: second.stats.idle_commands == 1, "the second poller takes over")
        imap.append(note(2))
        wait_for(lambda: len(two.raws) == 1, "the new holder reads the next message")
    finally:
        running_first.stop()
        running_second.stop()
    assert one.raws == [note(1)] and two.raws == [note(2)]


@pytest.mark.postgres_only
def test_a_poller_whose_database_session_dies_loses_the_mailbox(app: App, imap: DovecotServer) -> None:
    one, two = Recorder(app), Recorder(app)
    first = app.imap_poller(imap.url, one, timing=FAST, owner="one")
    second = app.imap_poller(imap.url, two, timing=FAST, owner="two")
    running_first = Running(first)
    wait_for(lambda: first.stats.idle_commands == 1, "the first poller reads the mailbox")
    running_second = Running(second)
    try:
        wait_for(lambda: second.stats.lease_waits >= 3, "the second poller waits for the lease")
        # What a crashed machine looks like to PostgreSQL: the session holding the lock ends.
        number = advisory_key(app.workspace_id, first.source.key) & (2**64 - 1)
        with app.engine.begin() as conn:
            killed = conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                    "AND granted AND classid::bigint = :high AND objid::bigint = :low "
                    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                ),
                {"high": number >> 32, "low": number & (2**32 - 1)},
            ).all()
        assert len(killed) == 1
        wait_for(lambda: first.stats.lease_waits >= 1, "the first poller notices it lost the lock")
        wait_for(lambda: second.stats.connections + first.stats.connections == 2, "a poller took over")
        imap.append(note(1))
        wait_for(lambda: len(one.raws) + len(two.raws) == 1, "the message read once")
        # The other poller is still refused the mailbox, twice more after the read: it did
        # not read the message, and it cannot read it now.
        holder, other = (first, second) if one.raws else (second, first)
        connections, waits = other.stats.connections, other.stats.lease_waits
        wait_for(lambda: other.stats.lease_waits >= waits + 2, "the other poller is refused again")
        assert other.stats.connections == connections
        imap.append(note(2))
        wait_for(lambda: len((one if holder is first else two).raws) == 2, "the holder reads on")
    finally:
        running_first.stop()
        running_second.stop()
    assert len(one.raws) + len(two.raws) == 2 and sorted(one.raws + two.raws) == sorted([note(1), note(2)])


def test_the_poll_command_reads_once_and_reports(app: App, clock: FixedClock, imap: DovecotServer) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    imap.append(note(0))  # history: a first start leaves it alone
    url = app.engine.url.render_as_string(hide_password=False)
    runner = CliRunner()
    first = runner.invoke(cli, ["--db", url, "poll", "--imap", imap.url, "--once"])
    assert first.exit_code == 0 and "0 new messages" in first.output, first.output
    imap.append(priya_reply(app, clock), note(1))
    result = runner.invoke(cli, ["--db", url, "poll", "--imap", imap.url, "--once"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "matched human_reply" in result.output and "unmatched" in result.output
    assert "2 new messages" in result.output and PASSWORD not in result.output
    assert lead_state(app, PRIYA, REPORTS) == "replied"
    again = runner.invoke(cli, ["--db", url, "poll", "--imap", imap.url, "--once"])
    assert again.exit_code == 0 and "0 new messages" in again.output


def test_the_poll_command_stops_cleanly_on_sigterm(app: App, imap: DovecotServer) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLYGUARD_")}
    env |= {
        "REPLYGUARD_DATABASE_URL": app.engine.url.render_as_string(hide_password=False),
        "REPLYGUARD_IMAP_URL": imap.url,
        "COLUMNS": "200",
    }
    # The folder's first start, so that the message below is new mail whenever it lands.
    assert app.imap_poller(imap.url, Recorder(app), timing=FAST).run_once() == 0
    process = subprocess.Popen(
        [sys.executable, "-m", "replyguard", "poll"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        imap.append(note(1))
        wait_for(lambda: inbound_count(app) == 1 or process.poll() is not None, "the command ingests")
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err.decode()
    assert b"unmatched" in out and PASSWORD.encode() not in out + err
    with app.uow() as uow:
        lease = uow.session.scalars(select(m.MailboxCursor.lease_owner)).one()
    assert lease is None  # released on the way out: the next poller need not wait


def test_a_stop_while_a_busy_folder_is_read_ends_after_the_message_in_hand(
    app: App, imap: DovecotServer
) -> None:
    """Replies arriving faster than they are read must not hold a stop up (`up` once logged
    "did not stop in time" under load): the stop is checked between messages, the cursor
    stands after the last one handled, and the next poller reads on from there."""
    first = Recorder(app)
    poller = app.imap_poller(imap.url, first, timing=FAST)
    running = Running(poller)
    wait_for(lambda: poller.stats.idle_commands == 1, "the poller waits in IDLE")
    running.stop()  # the cursor now stands at the folder's newest message
    messages = [note(n) for n in range(60)]
    imap.append(*messages)  # more than two fetch batches wait

    stop = threading.Event()
    stopping = Recorder(app)

    def handle(message: Fetched) -> None:
        stopping(message)
        stop.set()  # a SIGTERM while the first message is in hand

    poller = app.imap_poller(imap.url, handle, timing=FAST)
    poller.run(stop)  # returns: the stop was seen (before, it read all 60 first)
    assert stopping.raws == messages[:1]

    rest = Recorder(app)
    poller = app.imap_poller(imap.url, rest, timing=replace(FAST, poll_interval=0.2), use_idle=False)
    running = Running(poller)
    try:
        wait_for(lambda: len(rest.raws) == 59, "the rest read by the next poller")
    finally:
        running.stop()
    assert rest.raws == messages[1:]
    assert inbound_count(app) == 60
