"""The ingest path's statements outside the reply transaction, counted (issue 25): every
statement `ingest_raw` sends to the database for one message, but those of `record_reply`
(pinned by test_reply_statements.py), by an engine listener. The lists are exact on purpose:
a change that adds a statement to the store, the matching, the effect-key claim or the row's
write-back fails here until the expected list below is changed on purpose (and
docs/benchmarks.md says why). COMMIT is not a cursor statement: the two commits are not in it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from typing import Any

import pytest
from sqlalchemy import event, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound import apply, ingest
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.workspace.leads import find_lead
from tests.adversarial.test_one_effect import _wait_for_a_lock_wait
from tests.integration.test_ingest import _dsn
from tests.support.identity import effects
from tests.support.scenario import REPORTS, load_examples, run_days

PRIYA = "priya@fernhollow.test"

#: The store: the row inserted unless its dedupe key is there (SQLite: in BEGIN IMMEDIATE).
STORE = ["INSERT INTO inbound_messages"]
#: A reply from the lead in our thread, processed: on PostgreSQL the row locked and the wait
#: for a copy with the same effect key, one statement; then the thread's lead with the
#: speaker's contact, whether the sender is one of our mailboxes, her addresses (for
#: alignment) and the copy that took the effect key, one statement; [record_reply]; the row's
#: outcome, one UPDATE (only if still `stored`). The row just stored is not read back: the
#: store knows what it wrote (stored.py).
PROCESS_BEFORE_REPLY = [
    "SELECT pg_advisory_xact_lock(%(lock)s::BIGINT) AS pg_advisory_xact_lock_1 "
    "FROM (SELECT inbound_messages.id",
    "SELECT leads.id, leads.contact_id, leads.product_id",
]
PROCESS_AFTER_REPLY = ["UPDATE inbound_messages"]


def _expected(postgres: bool) -> list[str]:
    begin = [] if postgres else ["BEGIN IMMEDIATE"]
    process = [s for s in PROCESS_BEFORE_REPLY if postgres or "pg_advisory" not in s]
    return [*begin, *STORE, *begin, *process, "[record_reply]", *PROCESS_AFTER_REPLY]


@contextmanager
def outside_the_reply(app: App, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The statements sent, `[record_reply]` standing for the reply transaction's own (its
    pending rows flushed before it returns, so that none of them is counted as ours)."""
    seen: list[str] = []
    inside = False
    record_reply = apply.record_reply

    def count(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if not inside:
            seen.append(" ".join(statement.split()))

    def recorded(uow: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal inside
        inside = True
        try:
            outcome = record_reply(uow, *args, **kwargs)
            uow.session.flush()
            return outcome
        finally:
            inside = False
            seen.append("[record_reply]")

    monkeypatch.setattr(apply, "record_reply", recorded)
    event.listen(app.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(app.engine, "before_cursor_execute", count)


def _reply_in_thread(app: App) -> bytes:
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        sent = select(m.Step.message_id).where(m.Step.lead_id == lead.id, m.Step.position == 1)
        message_id = uow.session.scalars(sent).one()
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = f"Priya <{PRIYA}>", "dana@northwind-analytics.test", "Re: hi"
    msg["Message-ID"], msg["In-Reply-To"] = "<stmts@client.test>", message_id
    msg.set_content("Yes, let's talk on Thursday.\n")
    return msg.as_bytes()


def _assert_sent(statements: list[str], expected: list[str]) -> None:
    """The statements sent, in order, each starting as expected."""
    assert len(statements) == len(expected), statements
    for sent, start in zip(statements, expected, strict=True):
        assert sent.startswith(start), (sent, start)


def test_a_reply_in_the_thread_sends_the_expected_statements_outside_the_reply_transaction(
    app: App, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    raw = _reply_in_thread(app)
    with outside_the_reply(app, monkeypatch) as statements:
        result = ingest_raw(app, raw, "test")
    assert (result.status, result.kind) == ("matched", "human_reply")  # it did the whole job
    _assert_sent(statements, _expected(app.engine.dialect.name == "postgresql"))


def test_a_bounce_of_our_email_reads_its_lead_and_her_addresses_in_one_statement(
    app: App, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bounce quoting our Message-ID: the lead of that send with her addresses (for
    alignment) in one read, like a thread's; no check of the From against our mailboxes (a
    bounce's From is the provider's)."""
    load_examples(app)
    run_days(app, clock, 1)
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        sent = select(m.Step.message_id).where(m.Step.lead_id == lead.id, m.Step.position == 1)
        message_id = uow.session.scalars(sent).one()
    raw = _dsn(PRIYA, message_id, "5.1.1", "550 5.1.1 <priya> User unknown")
    with outside_the_reply(app, monkeypatch) as statements:
        result = ingest_raw(app, raw, "test")
    assert (result.status, result.kind) == ("matched", "bounce_hard")
    assert "match:bounce-original" in result.evidence
    # The same statements as a reply in the thread.
    _assert_sent(statements, _expected(app.engine.dialect.name == "postgresql"))


def test_a_redelivery_is_stored_once_and_read_once(
    app: App, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    raw = _reply_in_thread(app)
    first = ingest_raw(app, raw, "test")
    with outside_the_reply(app, monkeypatch) as statements:
        again = ingest_raw(app, raw, "test")
    assert again.duplicate and again.inbound_id == first.inbound_id and again.status == "matched"
    begin = [] if app.engine.dialect.name == "postgresql" else ["BEGIN IMMEDIATE"]
    # The insert that finds the key taken, the winner's id, then its row: processed already.
    expected = [*begin, "INSERT INTO inbound_messages", "SELECT inbound_messages.id", *begin]
    expected.append("SELECT inbound_messages.id")
    _assert_sent(statements, expected)


def test_a_row_processed_meanwhile_by_another_process_has_one_effect(
    app: App, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row just stored is processed without its read (and its lock): another process that
    took it between the store and the processing (a redelivery of the same bytes, a retry)
    wins, and this one's whole transaction, reply included, is rolled back at the UPDATE that
    finds the row no longer `stored`. It returns the winner's outcome."""
    load_examples(app)
    run_days(app, clock, 1)
    raw = _reply_in_thread(app)
    process_stored = ingest.process_stored
    winners: list[ingest.IngestResult] = []

    def another_process_first(app_: App, inbound_id: int, **kwargs: Any) -> ingest.IngestResult:
        assert kwargs["fresh"] is not None  # this call does not read the row
        winners.append(process_stored(app_, inbound_id))  # reads it, processes it, commits
        return process_stored(app_, inbound_id, **kwargs)

    monkeypatch.setattr(ingest, "process_stored", another_process_first)
    result = ingest_raw(app, raw, "test")
    assert [w.status for w in winners] == ["matched"] and not winners[0].duplicate
    assert result.duplicate and (result.inbound_id, result.status) == (winners[0].inbound_id, "matched")
    with app.uow() as uow:
        replies = uow.session.scalars(select(m.Reply).where(m.Reply.inbound_message_id == result.inbound_id))
        assert len(list(replies)) == 1


@pytest.mark.postgres_only
def test_a_redelivery_while_the_fresh_row_is_processed_waits_for_it(app: App, clock: FixedClock) -> None:
    """The same bytes delivered again while the first delivery is inside its reply transaction
    (a webhook retried because the first request is slow): the redelivery reads the row under
    its lock, which the fresh row's processing took first, so it waits, then finds the row
    done — one effect, no deadlock between the two (each takes the row before the leads)."""
    load_examples(app)
    run_days(app, clock, 1)
    raw = _reply_in_thread(app)
    inside, release = threading.Event(), threading.Event()

    def hold_first(_name: str) -> None:
        if not inside.is_set():
            inside.set()
            assert release.wait(60), "the test never released the first delivery"

    app.hooks.arm("inside_reply_tx", hold_first)
    results: dict[int, ingest.IngestResult] = {}
    deliveries = [
        threading.Thread(target=lambda i=i: results.__setitem__(i, ingest_raw(app, raw, "test")))
        for i in (0, 1)
    ]
    deliveries[0].start()
    assert inside.wait(60)
    deliveries[1].start()
    _wait_for_a_lock_wait(app, deliveries[1])
    assert deliveries[1].is_alive()  # waiting on the row, not done on its own
    release.set()
    for delivery in deliveries:
        delivery.join(60)
    app.hooks.disarm()
    first, again = results[0], results[1]
    assert (first.status, first.duplicate) == ("matched", False)
    assert again.duplicate and (again.inbound_id, again.status) == (first.inbound_id, "matched")
    assert effects(app).replies == 1
