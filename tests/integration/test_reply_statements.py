"""The reply transaction's round trips, counted (issue 25): every statement it sends to the
database, by an engine listener. The counts are exact on purpose: a change that adds a statement
to the reply transaction fails here until the expected count below is raised on purpose (and
docs/benchmarks.md says why). Fewer statements fail too: lower the count to lock the gain in."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.orm import Session

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.scenario import FORECASTING, REPORTS, load_examples, run_days

PRIYA = "priya@fernhollow.test"

#: Statements of one reply transaction, COMMIT not included (SQLite's BEGIN IMMEDIATE is).
EXPECTED = {
    # A person answers. On PostgreSQL: the lead locked, then read (with its contact, the
    # contact's addresses and other products, whether it has a thread, whether a step crossed
    # the reply, the thread's context) in a statement that starts after the lock was granted,
    # so it sees a send committed while it waited; INSERT reply; UPDATE lead; one UPDATE
    # cancels the steps; INSERT thread, thread change, notice; the transaction's events in one
    # INSERT at the end (9). SQLite: BEGIN IMMEDIATE instead of the lock.
    ("human_reply", "sqlite"): 9,
    ("human_reply", "postgresql"): 9,
    # An unsubscribe: every lead of the contact locked and stopped (an UPDATE of each lead and
    # of its steps), the addresses suppressed (SQLite: one INSERT per address), the other
    # products read again after they moved.
    ("unsubscribe", "sqlite"): 15,
    ("unsubscribe", "postgresql"): 14,
    # A short absence: the steps of both products move after the return date (each lead's
    # steps read with their campaigns in one query); nobody is told.
    ("out_of_office", "sqlite"): 11,
    ("out_of_office", "postgresql"): 11,
}


@contextmanager
def counted(app: App) -> Iterator[list[str]]:
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen.append(" ".join(statement.split())[:120])

    event.listen(app.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(app.engine, "before_cursor_execute", count)


@pytest.mark.parametrize("kind", ["human_reply", "unsubscribe", "out_of_office"])
def test_the_reply_transaction_sends_the_expected_statements(app: App, clock: FixedClock, kind: str) -> None:
    load_examples(app)
    run_days(app, clock, 1)  # the first emails went out: there is something to cancel or move
    with app.uow() as uow:
        lead_id = find_lead(uow, PRIYA, REPORTS).id
    back = clock.now().date() + timedelta(days=3) if kind == "out_of_office" else None
    incoming = IncomingReply(
        kind=ReplyKind(kind), received_at=clock.now(), return_date=back, from_address=PRIYA
    )
    with app.uow() as uow, counted(app) as statements:
        outcome = record_reply(uow, lead_id, incoming, app.settings)
        uow.commit()
    # It did the whole job (the counts are of a transaction that did its work).
    with app.uow() as uow:
        lead = uow.session.get_one(m.Lead, lead_id)
        other = find_lead(uow, PRIYA, FORECASTING)
        assert lead.last_reply_id == outcome.reply_id
        if kind == "human_reply":
            assert outcome.cancelled == 2 and outcome.notice_id is not None
            assert uow.session.get_one(m.Notice, outcome.notice_id).thread_id == outcome.thread_id
        elif kind == "unsubscribe":
            assert (lead.reply_state, other.reply_state) == ("unsubscribed", "unsubscribed")
            assert PRIYA in set(uow.session.scalars(select(m.Suppression.address)))
        else:
            assert outcome.rescheduled >= 2 and isinstance(back, date)
    dialect = app.engine.dialect.name
    assert len(statements) == EXPECTED[(kind, dialect)], "\n".join(statements)


def test_a_person_s_reply_leaves_the_orm_nothing_to_flush(app: App, clock: FixedClock) -> None:
    """Its rows are written by Core statements; an object the ORM thinks changed makes the
    next statement run a flush first, and one that finds nothing to write costs about what a
    statement does (6% of a reply on SQLite when the lead's move was set on the object). (An
    unsubscribe's suppressions are ORM objects: its flush writes them.)"""
    load_examples(app)
    run_days(app, clock, 1)
    with app.uow() as uow:
        lead_id = find_lead(uow, PRIYA, REPORTS).id
    flushes: list[str] = []

    def flushing(session: Session, *_rest: Any) -> None:
        flushes.append(", ".join(sorted(type(o).__name__ for o in [*session.new, *session.dirty])))

    incoming = IncomingReply(kind=ReplyKind.HUMAN_REPLY, received_at=clock.now(), from_address=PRIYA)
    with app.uow() as uow:
        event.listen(uow.session, "before_flush", flushing)
        record_reply(uow, lead_id, incoming, app.settings)
        uow.commit()
    assert flushes == []


@pytest.mark.parametrize("minutes_after", [31, 29])
def test_a_threaded_reply_looks_for_a_crossing_only_after_a_recent_send(
    app: App, clock: FixedClock, minutes_after: int
) -> None:
    """A reply that quotes our email is crossed when another of ours went out shortly before
    it (CROSSED_WINDOW) and it does not reference that one. The locking read returns the lead's
    latest send in that window, so a reply with no send in it costs no statement more than one
    without references; one with a send in it reads those sends (one statement)."""
    load_examples(app)
    run_days(app, clock, 1)
    with app.uow() as uow:
        lead_id = find_lead(uow, PRIYA, REPORTS).id
        sent_at, message_id = uow.session.execute(
            select(m.Step.sent_at, m.Step.message_id).where(m.Step.lead_id == lead_id, m.Step.state == "sent")
        ).one()
    assert sent_at is not None and message_id
    clock.set(sent_at + timedelta(minutes=minutes_after))
    incoming = IncomingReply(
        kind=ReplyKind.HUMAN_REPLY,
        received_at=clock.now(),
        from_address=PRIYA,
        references=("<someone-else@elsewhere.test>",),  # not ours: within the window, crossed
    )
    with app.uow() as uow, counted(app) as statements:
        outcome = record_reply(uow, lead_id, incoming, app.settings)
        uow.commit()
    with app.uow() as uow:
        crossed = uow.session.get_one(m.RescueThread, outcome.thread_id).crossed
    recent = minutes_after <= 30
    assert crossed is recent
    expected = EXPECTED[("human_reply", app.engine.dialect.name)] + (1 if recent else 0)
    assert len(statements) == expected, "\n".join(statements)
