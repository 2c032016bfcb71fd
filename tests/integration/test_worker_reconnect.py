"""The guarded worker's engine does not ping before each checkout (issue 25: a round trip per
checkout saved). What stands in for the ping: a session found dead fails its first statement,
the pool drops it (and every session as old as it), and `run_forever` starts over at once on a
new one. Proved here by terminating the worker's sessions between two passes."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from replyguard.adapters.db.engine import make_engine
from replyguard.adapters.transports.maildir import MaildirTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.sending.worker import SendLine, Worker, run_forever
from replyguard.settings import Settings
from tests.support.failpoints import Failpoints
from tests.support.scenario import simple_workspace

pytestmark = pytest.mark.postgres_only

MONDAY_10 = timedelta(hours=4)  # START is Monday 06:00 UTC; the test campaign's window is UTC 09-17


class RecordingStop(threading.Event):
    """The worker's stop event, remembering every pause the worker made on it."""

    def __init__(self) -> None:
        super().__init__()
        self.pauses: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.pauses.append(timeout)
        return super().wait(timeout)


@pytest.fixture
def worker_app(pg_only_url: str, clock: FixedClock, tmp_path: Path) -> Iterator[App]:
    """An App wired as `bootstrap(worker=True)` wires the worker's process: no pre-ping."""
    app = App(
        engine=make_engine(pg_only_url, pre_ping=False),
        clock=clock,
        settings=Settings(),
        transport_spec=f"maildir:{tmp_path / 'outbox'}",
        hooks=Failpoints(),
        wall_clock=clock,
    )
    app.init_database()
    app.use_transport(MaildirTransport(tmp_path / "outbox"))
    yield app
    app.close()


def _terminate_sessions(url: str) -> int:
    """pg_terminate_backend on every session of the product in this database (the worker's
    pooled ones; this one has another application name). Returns how many."""
    admin = create_engine(url, connect_args={"application_name": "test-admin"})
    try:
        with admin.connect() as conn:
            killed = conn.execute(
                text(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = 'replyguard' AND datname = current_database() "
                    "AND pid <> pg_backend_pid()"
                )
            ).scalar_one()
    finally:
        admin.dispose()
    return int(killed)


def test_a_worker_whose_sessions_were_terminated_carries_on_at_once(
    worker_app: App, pg_only_url: str, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    simple_workspace(worker_app, 2)
    clock.advance(MONDAY_10)
    assert Worker(worker_app).run_once().sent == 2  # the pool now holds idle sessions
    assert _terminate_sessions(pg_only_url) >= 1

    clock.advance(timedelta(days=2))  # the second emails are due
    stop = RecordingStop()
    lines: list[SendLine] = []

    def heard(line: SendLine) -> None:
        lines.append(line)
        if len(lines) == 2:
            stop.set()

    caplog.set_level(logging.WARNING, logger="replyguard.service_layer.sending.worker")
    total = run_forever(Worker(worker_app, on_result=heard, stop=stop))

    assert [line.result for line in lines] == ["sent", "sent"]
    assert total.sent == 2 and {line.position for line in lines} == {2}
    # The first pass met a dead session (no ping found it first) and the worker started over
    # without pausing: the dead sessions were dropped from the pool.
    retries = [r for r in caplog.records if r.getMessage().startswith("database error, retrying")]
    assert len(retries) == 1
    assert stop.pauses == []
