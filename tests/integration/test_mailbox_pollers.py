"""One poller for every mailbox (issue 24, item 4): `App.mailbox_pollers` watches each connected
mailbox's folders in its own IMAP account — a private Dovecot with one user per mailbox — and
each reply is read from the account it was written to. On SQLite and PostgreSQL."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.imap_source import ImapPoller, Timing, parse_imap_url
from replyguard.adapters.secret_box import new_key
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import find_lead, import_leads
from replyguard.service_layer.workspace.mailbox_accounts import Account, connect_mailbox
from tests.support.imap_server import DovecotServer, dovecot_or_skip
from tests.support.scenario import campaign_toml, csv_of, enroll_all, lead_state

DANA, SAM = "dana@alpha.test", "sam@beta.test"
ACCOUNTS = {DANA: "dana-imap-pw", SAM: "sam-imap-pw"}
LEADS = {DANA: ("a1@one.test", "a2@two.test"), SAM: ("b1@one.test",)}
PRODUCT = {DANA: "P0", SAM: "P1"}
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
    with DovecotServer(dovecot_or_skip(), users=ACCOUNTS) as server:
        yield server
        print(f"--- dovecot log ---\n{server.log}")  # shown only when the test fails


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting until {what}")


def _workspace(app: App, clock: FixedClock, imap: DovecotServer) -> None:
    """Two mailboxes, each with its campaign and leads, each connected to its own IMAP
    account (no SMTP of their own: the tests' Maildir sends), first emails sent."""
    app.secret_keys = (new_key(),)
    with app.uow() as uow:
        for n, (mailbox, emails) in enumerate(LEADS.items()):
            create_campaign(uow, campaign_toml(f"C{n}", PRODUCT[mailbox], mailbox=mailbox))
            rows = list(read_leads(csv_of([{"email": e, "first_name": "Lee"} for e in emails])))
            import_leads(uow, PRODUCT[mailbox], rows)
        for mailbox, password in ACCOUNTS.items():
            url = f"imap://127.0.0.1:{imap.port}/INBOX?starttls=no"  # the user is the address
            connect_mailbox(uow, app.secret_box(), mailbox, Account(None, url, password))
        uow.commit()
    for n in range(len(LEADS)):
        enroll_all(app, f"C{n}")
    clock.advance(timedelta(hours=4))
    assert Worker(app).run_once().sent == 3


def reply_from(app: App, clock: FixedClock, lead: str, mailbox: str) -> bytes:
    with app.uow() as uow:
        found = find_lead(uow, lead, PRODUCT[mailbox])
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == found.id, m.Step.position == 1)
        ).one()
        message_id, subject = step.message_id, step.subject
    msg = EmailMessage()
    msg["From"] = f"Lee <{lead}>"
    msg["To"] = mailbox
    msg["Subject"] = f"Re: {subject}"
    msg["Date"] = format_datetime(clock.now())
    msg["Message-ID"] = f"<reply-{lead}>"
    msg["In-Reply-To"] = message_id
    msg.set_content("Yes, let's talk on Thursday.\n")
    return msg.as_bytes(policy=policy.SMTP)


def test_each_mailbox_s_replies_are_read_from_its_own_account(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    _workspace(app, clock, imap)
    pollers = app.mailbox_pollers(timing=FAST)
    keys = {
        address: f"imap://{address.replace('@', '%40')}@127.0.0.1:{imap.port}/INBOX" for address in ACCOUNTS
    }
    assert sorted(pollers.sources()) == sorted(keys.values())
    assert pollers.run_once() == {keys[DANA]: 0, keys[SAM]: 0}  # a first start reads from now

    imap.append(reply_from(app, clock, "a1@one.test", DANA), user=DANA)
    imap.append(reply_from(app, clock, "b1@one.test", SAM), user=SAM)
    assert pollers.run_once() == {keys[DANA]: 1, keys[SAM]: 1}
    assert lead_state(app, "a1@one.test", "P0") == "replied"
    assert lead_state(app, "b1@one.test", "P1") == "replied"
    assert lead_state(app, "a2@two.test", "P0") == "active"
    with app.uow() as uow:  # health per mailbox: each account's folder read just now
        polled = dict(
            uow.session.execute(select(m.MailboxCursor.source_key, m.MailboxCursor.last_poll_at)).all()
        )
    assert set(polled) == set(keys.values()) and all(polled.values())


def test_the_running_pollers_watch_every_mailbox_through_idle_and_follow_changes(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    _workspace(app, clock, imap)
    pollers = app.mailbox_pollers(timing=FAST)
    pollers.refresh = 0.2  # the list of mailboxes is read again this often
    stop = threading.Event()
    thread = threading.Thread(target=pollers.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(pollers.watching()) == 2, "both mailboxes are watched")
        wait_for(lambda: _idling(app) == 2, "both folders' pollers started from now")
        imap.append(reply_from(app, clock, "a2@two.test", DANA), user=DANA)
        wait_for(lambda: lead_state(app, "a2@two.test", "P0") == "replied", "a2's reply is read")
        with app.uow() as uow:  # Sam's account is no longer connected: its poller stops
            uow.session.execute(
                m.Mailbox.__table__.update().where(m.Mailbox.address == SAM).values(imap_url=None)
            )
            uow.commit()
        wait_for(lambda: len(pollers.watching()) == 1, "only Dana's mailbox is watched")
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive() and pollers.watching() == []


def _idling(app: App) -> int:
    with app.uow() as uow:
        rows = uow.session.scalars(select(m.MailboxCursor.uidvalidity)).all()
    return sum(value is not None for value in rows)


class _AlwaysOurs:
    def acquire(self) -> bool:
        return True

    def renew(self) -> bool:
        return True

    def release(self) -> None:
        return None


def test_reconnects_back_off_with_jitter_so_many_mailboxes_do_not_return_together() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens there once it is closed
    timing = replace(FAST, backoff_min=0.004, backoff_max=0.016)
    source = parse_imap_url(f"imap://u:p@127.0.0.1:{closed}/INBOX?starttls=no")
    poller = ImapPoller(source, None, _AlwaysOurs(), lambda _m: None, timing=timing)  # type: ignore[arg-type]
    stop = threading.Event()
    thread = threading.Thread(target=poller.run, args=(stop,), daemon=True)
    thread.start()
    wait_for(lambda: len(poller.stats.waits) >= 30, "thirty refused connections")
    stop.set()
    thread.join(60)
    backoffs = [min(0.004 * 2**n, 0.016) for n in range(len(poller.stats.waits))]
    assert all(b / 2 <= w <= b for w, b in zip(poller.stats.waits, backoffs, strict=True))
    assert len({round(w, 9) for w in poller.stats.waits[3:]}) > 1  # not one fixed pause at the cap


def test_two_runners_share_the_mailboxes_without_reading_a_folder_twice_and_take_over(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    """Two `poll` runners over the same mailboxes (here two in one process; on PostgreSQL the
    advisory lock is per database session, on SQLite a row lease): each folder is read by one
    of them, and when that one stops the other takes its folders over."""
    _workspace(app, clock, imap)
    made: dict[str, list[ImapPoller]] = {"a": [], "b": []}
    runners, stops, threads = {}, {}, {}
    for name, kept in made.items():
        runner = app.mailbox_pollers(timing=FAST)
        make = runner.make

        def tracked(
            url: str, kept: list[ImapPoller] = kept, make: Callable[[str], object] = make
        ) -> ImapPoller:
            poller = make(url)
            assert isinstance(poller, ImapPoller)
            kept.append(poller)
            return poller

        runner.make = tracked
        runners[name], stops[name] = runner, threading.Event()
        threads[name] = threading.Thread(target=runner.run, args=(stops[name],), daemon=True)
        threads[name].start()
    try:
        wait_for(lambda: len(made["a"]) == len(made["b"]) == 2, "each runner has a poller per folder")
        both = [*made["a"], *made["b"]]
        wait_for(lambda: sum(p.stats.connections > 0 for p in both) == 2, "each folder is read")
        wait_for(lambda: sum(p.stats.lease_waits > 0 for p in both) == 2, "the other poller waits")
        for a, b in zip(sorted(made["a"], key=_key), sorted(made["b"], key=_key), strict=True):
            assert (a.stats.connections > 0) != (b.stats.connections > 0), "a folder read twice"
        stops["a"].set()
        threads["a"].join(60)
        wait_for(lambda: all(p.stats.connections > 0 for p in made["b"]), "b took every folder over")
        imap.append(reply_from(app, clock, "a2@two.test", DANA), user=DANA)
        wait_for(lambda: lead_state(app, "a2@two.test", "P0") == "replied", "a2's reply is read by b")
    finally:
        for name in made:
            stops[name].set()
            threads[name].join(60)


def _key(poller: ImapPoller) -> str:
    return poller.source.key
