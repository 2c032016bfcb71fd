"""A folder under a new UIDVALIDITY is a new mailbox (issue 22, item 3), against a real Dovecot
on loopback, on SQLite and PostgreSQL: what we stored is a duplicate, what is dated before the
moment our cursor last advanced is old mail that only informs — history the first start left
alone included — and the rest is live."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.imap_source import Timing
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.ingest import IngestResult
from replyguard.service_layer.inbound.pollers import ingest_fetched
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.imap_server import DovecotServer, dovecot_or_skip
from tests.support.scenario import REPORTS, lead_state, load_examples, run_days

PRIYA = "priya@fernhollow.test"
MARC = "marc.keller@brightline-logistics.test"
FAST = Timing(lease_renew=0.5, lease_retry=0.1, tick=0.1, backoff_min=0.1, backoff_max=0.5, socket_timeout=5)


@pytest.fixture
def imap() -> Iterator[DovecotServer]:
    with DovecotServer(dovecot_or_skip()) as server:
        yield server
        print(f"--- dovecot log ---\n{server.log}")  # shown only when the test fails


def reply(app: App, clock: FixedClock, email: str, msgid: str) -> bytes:
    """The lead answers our first email, in its thread, dated now."""
    with app.uow() as uow:
        lead = find_lead(uow, email, REPORTS)
        step = uow.session.scalars(
            select(m.Step).where(m.Step.lead_id == lead.id, m.Step.position == 1)
        ).one()
        message_id, subject = step.message_id, step.subject
    msg = EmailMessage()
    msg["From"] = email
    msg["To"] = "Dana <dana@northwind-analytics.test>"
    msg["Subject"] = f"Re: {subject}"
    msg["Date"] = format_datetime(clock.now())
    msg["Message-ID"] = msgid
    msg["In-Reply-To"] = message_id
    msg["References"] = message_id
    msg.set_content("Thanks Dana, Thursday at 10 works for a quick call.\n")
    return msg.as_bytes(policy=policy.SMTP)


def digest(clock: FixedClock) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Newsletter <news@elsewhere.test>"
    msg["To"] = "dana@northwind-analytics.test"
    msg["Subject"] = "Weekly digest"
    msg["Date"] = format_datetime(clock.now())
    msg["Message-ID"] = "<digest-1@elsewhere.test>"
    msg.set_content("This week's digest.\n")
    return msg.as_bytes(policy=policy.SMTP)


def test_a_new_uidvalidity_replays_nothing_old_as_news(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    # An old reply sits in the folder before the poller's first start, which leaves it alone.
    old_reply = reply(app, clock, PRIYA, "<old-reply@fernhollow.test>")
    with imap.client() as client:
        client.create_folder("Replies")
    imap.append(old_reply, folder="Replies")
    clock.advance(timedelta(hours=1))
    results: list[IngestResult] = []
    handler = ingest_fetched(app, results.append)

    def poll() -> int:
        return app.imap_poller(imap.url, handler, folder="Replies", timing=FAST, use_idle=False).run_once()

    assert poll() == 0  # first start: from now on
    clock.advance(timedelta(hours=1))
    seen = digest(clock)
    imap.append(seen, folder="Replies")
    assert poll() == 1
    clock.advance(timedelta(hours=1))

    # The server's index is rebuilt (here: the folder re-created, with what it held), and a
    # new reply lands meanwhile.
    with imap.client() as client:
        client.delete_folder("Replies")
        client.create_folder("Replies")
    live = reply(app, clock, MARC, "<new-reply@brightline-logistics.test>")
    imap.append(old_reply, seen, live, folder="Replies")
    results.clear()
    assert poll() == 3

    # Before: the whole folder was read as fresh mail, and Priya's old reply stopped her lead.
    assert [(r.status, r.duplicate) for r in results] == [
        ("history", False),
        ("unmatched", True),  # the digest we stored: the same row
        ("matched", False),
    ]
    assert lead_state(app, PRIYA, REPORTS) == "active"
    assert lead_state(app, MARC, REPORTS) == "replied"
    with app.uow() as uow:
        events = uow.session.scalars(
            select(m.Event.kind).where(m.Event.kind == "inbound_predates_first_send")
        ).all()
    assert len(events) == 1  # it is on Priya's timeline, for a person to read


def test_a_renamed_folder_reads_on_from_where_its_old_name_stopped(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    old_reply = reply(app, clock, PRIYA, "<old-reply@fernhollow.test>")
    with imap.client() as client:
        client.create_folder("Replies")
    imap.append(old_reply, folder="Replies")
    clock.advance(timedelta(hours=1))
    results: list[IngestResult] = []
    handler = ingest_fetched(app, results.append)

    def poll(folder: str) -> int:
        return app.imap_poller(imap.url, handler, folder=folder, timing=FAST, use_idle=False).run_once()

    assert poll("Replies") == 0  # first start: Priya's old reply is left alone
    clock.advance(timedelta(hours=1))
    imap.append(digest(clock), folder="Replies")
    assert poll("Replies") == 1
    clock.advance(timedelta(hours=1))
    # Marc answers while nobody polls; then the folder is renamed and the source follows it.
    imap.append(reply(app, clock, MARC, "<new-reply@brightline-logistics.test>"), folder="Replies")
    with imap.client() as client:
        client.rename_folder("Replies", "Answers")
    results.clear()
    # Before: a first start under the new name, from its newest UID: Marc's reply was skipped.
    assert poll("Answers") == 1
    assert [(r.status, r.kind) for r in results] == [("matched", "human_reply")]
    assert lead_state(app, MARC, REPORTS) == "replied"
    assert lead_state(app, PRIYA, REPORTS) == "active"
