"""Settings a person changes while the worker is sending, and a worker asked to stop mid-batch.

Issue 20, items 4 and 5, on both databases in one process: the transport itself does what a
person (or another worker) does at that moment — right after its second email — so every case
is exact, with no timing. The same breaks with real worker processes and a slow SMTP server
are in test_worker_midflight_race.py (PostgreSQL).

What holds: the last check before each email reads the mailbox's cap, pause and the
campaign's window as they are now; an email the change no longer allows goes back to the
queue unsent (a lowered cap: counted again by the next claim, which defers it to the next
day); a stop hands nothing more over and gives back at once all the rest, due as before.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Probe, Transport
from replyguard.adapters.transports.maildir import MaildirTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaign_changes import apply_update
from replyguard.service_layer.workspace.mailboxes import MailboxSettings, pause_mailbox, set_mailbox
from tests.conftest import build_app
from tests.support.scenario import campaign_toml, simple_workspace

MONDAY_10 = timedelta(hours=4)  # START is Monday 06:00 UTC; the test campaign's window is UTC 09-17
MAILBOX = "rep@seller.test"
LEADS = 20  # one claim (claim_batch 20): every email below was claimed before the change


class ThenAPerson:
    """The Maildir transport; right after its `after`-th email a person (or another worker)
    does `act`. `before_commit` is passed on, so the worker's last check runs as in production."""

    def __init__(self, inner: Transport, after: int, act: Callable[[], None]) -> None:
        self.inner, self.after, self.act = inner, after, act
        self.can_probe = inner.can_probe
        self.sent: list[str] = []

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        delivery = self.inner.send(email, before_commit)
        self.sent.append(email.send_key)
        if len(self.sent) == self.after:
            self.act()
        return delivery

    def probe(self, email: OutgoingEmail) -> Probe:
        return self.inner.probe(email)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(params=[1, 10], ids=["batch1", "batch10"])
def app(request: pytest.FixtureRequest, db_url: str, clock: FixedClock, tmp_path: Path) -> Any:
    """A send batch of 1 (SMTP's default: each email its own re-check) and of 10 (Maildir's:
    the emails after the first are checked only right before their point of no return)."""
    instance = build_app(db_url, clock, tmp_path / "outbox", send_batch=request.param)
    yield instance
    instance.close()


def first_steps(app: App) -> list[m.Step]:
    with app.uow() as uow:
        steps = uow.session.scalars(select(m.Step).where(m.Step.position == 1).order_by(m.Step.id)).all()
        uow.session.expunge_all()
    return list(steps)


def run(app: App, clock: FixedClock, after: int, act: Callable[[], None]) -> tuple[ThenAPerson, Any]:
    clock.advance(MONDAY_10)
    transport = ThenAPerson(MaildirTransport(app.transport.root), after, act)  # type: ignore[attr-defined]
    report = Worker(app, transport).run_once()
    return transport, report


def mailbox_set(app: App, cap: int) -> Callable[[], None]:
    def act() -> None:
        with app.uow() as uow:
            set_mailbox(uow, MAILBOX, MailboxSettings(daily_cap=cap))
            uow.commit()

    return act


def assert_nothing_held_or_lost(app: App, sent: list[str]) -> list[m.Step]:
    """Every email the transport took is SENT; every other one is back in the queue."""
    steps = first_steps(app)
    assert {s.send_key for s in steps if s.state == "sent"} == set(sent)
    assert len(sent) == len(set(sent))
    rest = [s for s in steps if s.state != "sent"]
    assert {s.state for s in rest} <= {"scheduled"}, [(s.id, s.state) for s in rest]
    assert all(s.claim_token is None and s.attempts == 0 for s in rest)
    return rest


def test_a_cap_lowered_by_mailbox_set_stops_the_claimed_emails_at_the_point_of_send(
    app: App, clock: FixedClock
) -> None:
    simple_workspace(app, LEADS, cap=100)
    transport, report = run(app, clock, 2, mailbox_set(app, 1))
    # Before: the claim had counted all 20 against a cap of 100, and all 20 went out.
    assert len(transport.sent) == 2
    rest = assert_nothing_held_or_lost(app, transport.sent)
    # Counted again by the next claim against the new cap: tomorrow, inside the window.
    tuesday_9 = datetime(2026, 12, 8, 9, 0, tzinfo=clock.now().tzinfo)
    assert all(s.due_at >= tuesday_9 for s in rest)
    assert report.sent == 2


def test_a_cap_raised_meanwhile_changes_nothing(app: App, clock: FixedClock) -> None:
    simple_workspace(app, LEADS, cap=100)
    transport, report = run(app, clock, 2, mailbox_set(app, 500))
    assert len(transport.sent) == LEADS and report.sent == LEADS and report.deferred == 0


def test_a_cap_lowered_to_what_is_left_lets_exactly_that_many_go(app: App, clock: FixedClock) -> None:
    simple_workspace(app, LEADS, cap=100)
    transport, _ = run(app, clock, 2, mailbox_set(app, 7))
    assert len(transport.sent) == 7  # the two before the change, and five more counted again
    assert_nothing_held_or_lost(app, transport.sent)


def test_a_mailbox_paused_meanwhile_sends_nothing_more(app: App, clock: FixedClock) -> None:
    simple_workspace(app, LEADS, cap=100)
    [lead_id] = {s.lead_id for s in first_steps(app)[:1]}

    def another_worker_was_refused() -> None:
        with app.engine.connect() as conn, conn.begin():
            mailbox_id = conn.execute(select(m.Mailbox.id)).scalar_one()
            pause_mailbox(
                conn,
                workspace_id=app.workspace_id,
                mailbox_id=mailbox_id,
                lead_id=lead_id,
                reason="535 5.7.8 authentication failed (another worker)",
                now=clock.now(),
            )

    transport, _ = run(app, clock, 2, another_worker_was_refused)
    assert len(transport.sent) == 2  # before: the rest of the send batch went out (10)
    assert_nothing_held_or_lost(app, transport.sent)


def campaign_update(app: App, **changes: str) -> Callable[[], None]:
    source = campaign_toml("C", "P", cap=100)
    for old, new in changes.items():
        assert old in source
        source = source.replace(old, new)

    def act() -> None:
        with app.uow() as uow:
            apply_update(uow, source)
            uow.commit()

    return act


@pytest.mark.parametrize(
    ("change", "due"),
    [
        ({"daily_cap = 100": "daily_cap = 1"}, datetime(2026, 12, 8, 9, 0)),  # the cap: tomorrow
        ({'start = "09:00"': 'start = "11:00"'}, datetime(2026, 12, 7, 11, 0)),  # the window: 11:00
    ],
    ids=["cap", "window"],
)
def test_campaign_update_meanwhile_applies_to_the_claimed_emails(
    app: App, clock: FixedClock, change: dict[str, str], due: datetime
) -> None:
    if app.postgres:
        pytest.skip(
            "on PostgreSQL `campaign update` waits for the lead lock a worker holds across its "
            "call, which a transport in this process would be waiting for: "
            "test_worker_midflight_race.py runs it from another process"
        )
    simple_workspace(app, LEADS, cap=100)
    transport, _ = run(app, clock, 2, campaign_update(app, **change))
    # Before: the claimed emails went out (the window was even kept per campaign for the
    # worker's whole life, so a changed window never applied until a restart).
    assert len(transport.sent) == 2
    rest = assert_nothing_held_or_lost(app, transport.sent)
    assert all(s.due_at >= due.replace(tzinfo=clock.now().tzinfo) for s in rest)


def test_a_stop_mid_batch_gives_back_the_rest_at_once(app: App, clock: FixedClock) -> None:
    simple_workspace(app, LEADS, cap=100)
    claimed_at: dict[int, datetime] = {s.id: s.due_at for s in first_steps(app)}
    worker: list[Worker] = []

    def asked_to_stop() -> None:
        worker[0].stop.set()

    clock.advance(MONDAY_10)
    transport = ThenAPerson(MaildirTransport(app.transport.root), 2, asked_to_stop)  # type: ignore[attr-defined]
    worker.append(Worker(app, transport))
    report = worker[0].run_once()
    assert len(transport.sent) == 2
    rest = assert_nothing_held_or_lost(app, transport.sent)
    assert report.given_back == LEADS - 2 == len(rest)
    # Due as they were (or now, for those already marked): any worker takes them next.
    assert all(s.due_at <= max(claimed_at[s.id], clock.now()) for s in rest)
    assert worker[0].run_once().claimed == 0  # a stopped worker claims nothing more
