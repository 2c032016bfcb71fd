"""Several send slots per worker over reused SMTP connections (issue 24, item 5), on
PostgreSQL, against a real aiosmtpd server: every email still under its own lead lock,
re-check and liveness check; a connection cut mid-DATA on a reused connection holds exactly
that one lead; a mailbox's connection limit and its emails per minute hold across the slots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from replyguard.adapters.db import models as m
from replyguard.adapters.db.engine import make_engine
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.sending.worker import Worker
from replyguard.settings import Settings
from tests.support.failpoints import Failpoints
from tests.support.scenario import simple_workspace
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer, Schedule

MONDAY_10 = timedelta(hours=4)  # START is Monday 06:00 UTC; the test campaign's window is UTC 09-17


@pytest.fixture
def make_app(pg_only_url: str, clock: FixedClock, tmp_path: Path) -> Iterator[Callable[..., App]]:
    apps: list[App] = []

    def build(server: RecordingSmtpServer, slots: int) -> App:
        app = App(
            engine=make_engine(pg_only_url, pool_size=2 * slots + 1, pre_ping=False),
            clock=clock,
            settings=Settings(send_slots=slots),
            transport_spec=f"maildir:{tmp_path / 'unused'}",
            hooks=Failpoints(),
            wall_clock=clock,
        )
        app.init_database()
        app.use_transport(SmtpTransport(server.url(timeout=5)))
        apps.append(app)
        return app

    clock.advance(MONDAY_10)
    yield build
    for app in apps:
        app.close()


def _held_and_unknown(app: App) -> tuple[list[int], list[int]]:
    with app.engine.connect() as conn:
        held = conn.execute(select(m.Lead.id).where(m.Lead.reply_state == "held").order_by(m.Lead.id))
        unknown = conn.execute(
            select(m.Step.lead_id).where(m.Step.state == "unknown").order_by(m.Step.lead_id)
        )
        return list(held.scalars()), list(unknown.scalars())


def _schedule(*picks: Behaviour) -> Schedule:
    return lambda n: picks[n] if n < len(picks) else Behaviour.ACCEPT


def test_slots_send_every_email_over_reused_connections(make_app: Callable[..., App]) -> None:
    with RecordingSmtpServer() as server:
        server.end_delay = 0.02
        app = make_app(server, 4)
        simple_workspace(app, 24)
        report = Worker(app).run_once()
        assert report.sent == 24 and report.claimed == 24, report
        assert len(server.accepted()) == 24
        # Each slot keeps its connection for the pass: never more open than slots.
        assert server.connections <= 4 and server.peak_connections <= 4
        assert server.rsets == 24 - server.connections
        with app.engine.connect() as conn:
            sent = conn.execute(select(func.count()).where(m.Step.state == "sent")).scalar_one()
        assert sent == 24


def test_a_cut_mid_data_on_a_reused_connection_holds_exactly_that_lead(make_app: Callable[..., App]) -> None:
    # The second message goes over the connection the first one used; the server reads one
    # line of its content and resets the connection: nobody can tell whether it arrived.
    with RecordingSmtpServer(schedule=_schedule(Behaviour.ACCEPT, Behaviour.DROP_MID_DATA)) as server:
        app = make_app(server, 1)
        simple_workspace(app, 5)
        report = Worker(app).run_once()
        assert (report.sent, report.unknown) == (4, 1), report
        assert server.rsets >= 1  # the cut message was on a reused connection
        assert server.connections == 2  # a fresh one after the cut
        held, unknown = _held_and_unknown(app)
        assert held == unknown == [2]  # the second lead, and only it


def test_with_several_slots_a_cut_still_holds_only_its_own_lead(make_app: Callable[..., App]) -> None:
    picks = [Behaviour.ACCEPT] * 6 + [Behaviour.DROP_MID_DATA]
    with RecordingSmtpServer(schedule=_schedule(*picks)) as server:
        app = make_app(server, 3)
        simple_workspace(app, 12)
        report = Worker(app).run_once()
        assert (report.sent, report.unknown) == (11, 1), report
        held, unknown = _held_and_unknown(app)
        assert len(held) == 1 and held == unknown
        assert len(server.accepted()) == 11


def test_a_mailbox_never_has_more_connections_than_its_limit(make_app: Callable[..., App]) -> None:
    with RecordingSmtpServer() as server:
        server.end_delay = 0.05
        app = make_app(server, 6)
        simple_workspace(app, 18)
        with app.engine.begin() as conn:
            conn.execute(update(m.Mailbox).values(max_connections=2))
        report = Worker(app).run_once()
        assert report.sent == 18, report
        assert server.peak_connections <= 2
        assert server.connections <= 2


def test_a_mailbox_sends_no_more_than_its_emails_per_minute(
    make_app: Callable[..., App], clock: FixedClock
) -> None:
    with RecordingSmtpServer() as server:
        app = make_app(server, 3)
        simple_workspace(app, 12)
        with app.engine.begin() as conn:
            conn.execute(update(m.Mailbox).values(per_minute=5))
        worker = Worker(app)
        sent = [worker.run_once().sent]
        clock.advance(timedelta(seconds=30))
        sent.append(worker.run_once().sent)  # the minute is still full
        clock.advance(timedelta(seconds=31))
        sent.append(worker.run_once().sent)
        clock.advance(timedelta(seconds=61))
        sent.append(worker.run_once().sent)
        assert sent == [5, 0, 5, 2]
        assert len(server.accepted()) == 12
