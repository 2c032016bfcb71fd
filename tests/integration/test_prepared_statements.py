"""psycopg drops every prepared statement of a PostgreSQL session whose transaction ends in
ROLLBACK (it cannot know what the transaction dropped or altered). The send path's statements
were planned anew after every claim: the worker read each claim's mailbox in a transaction it
then rolled back (its acceptance's planning alone was 1.5 ms of server time per email). A read
that cannot have written ends by COMMIT now."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from psycopg import pq
from sqlalchemy import event, select

from replyguard.adapters.db import models as m
from replyguard.adapters.db.engine import make_engine, read_only_engine
from replyguard.adapters.transports.maildir import MaildirTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.uow import UnitOfWork
from replyguard.settings import Settings
from tests.support.scenario import simple_workspace

pytestmark = pytest.mark.postgres_only

MONDAY_10 = timedelta(hours=4)  # START is Monday 06:00 UTC; the test campaign's window is UTC 09-17


@contextmanager
def rolled_back(app: App) -> Iterator[list[str]]:
    """Transactions ended by ROLLBACK: by the code, or by the pool (a session returned to it
    with a transaction open)."""
    seen: list[str] = []

    def returned(dbapi_connection: Any, *_rest: Any) -> None:
        if dbapi_connection.info.transaction_status != pq.TransactionStatus.IDLE:
            seen.append(str(dbapi_connection.info.transaction_status))

    def rolling_back(conn: Any) -> None:
        # (Fired before the driver's rollback, which sends nothing outside a transaction.)
        if conn.connection.dbapi_connection.info.transaction_status != pq.TransactionStatus.IDLE:
            seen.append("rollback")

    event.listen(app.engine.pool, "checkin", returned)
    event.listen(app.engine, "rollback", rolling_back)
    try:
        yield seen
    finally:
        event.remove(app.engine.pool, "checkin", returned)
        event.remove(app.engine, "rollback", rolling_back)


@pytest.fixture
def pg_app(pg_only_url: str, clock: FixedClock, tmp_path: Path) -> Iterator[App]:
    app = App(
        engine=make_engine(pg_only_url, pre_ping=False),
        clock=clock,
        settings=Settings(send_batch=1),
        transport_spec=f"maildir:{tmp_path / 'outbox'}",
        wall_clock=clock,
    )
    app.init_database()
    app.use_transport(MaildirTransport(tmp_path / "outbox"))
    yield app
    app.close()


def test_a_worker_pass_ends_no_transaction_by_rollback(pg_app: App, clock: FixedClock) -> None:
    simple_workspace(pg_app, 45)  # three claims of 20 at batch 1
    clock.advance(MONDAY_10)
    with rolled_back(pg_app) as seen:
        assert Worker(pg_app).run_once().sent == 45
    # Before: one per claim at least (the mailbox's transport and Sent folder read), and two
    # per pass (recovery's and the ended pauses' reads).
    assert seen == []


def test_a_read_unit_of_work_ends_by_commit_and_a_changed_object_is_still_not_written(
    pg_app: App,
) -> None:
    simple_workspace(pg_app, 1)
    reader = read_only_engine(pg_app.engine)
    with rolled_back(pg_app) as seen:
        with UnitOfWork(reader, pg_app.clock, pg_app.workspace_id, pg_app.settings) as uow:
            assert uow.session.scalar(select(m.Lead.id)) is not None
        assert seen == []
        # A read that changed an object leaves it unwritten, as before: rolled back.
        with UnitOfWork(reader, pg_app.clock, pg_app.workspace_id, pg_app.settings) as uow:
            lead = uow.session.scalars(select(m.Lead)).one()
            lead.hold_reason = "never written"
        assert seen == ["rollback"]
    with pg_app.uow() as uow:
        assert uow.session.scalars(select(m.Lead.hold_reason)).one() is None
