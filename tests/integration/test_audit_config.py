"""`replyguard audit --config`: each setup that passes the six checks but fails in production is
named, and passes once it is fixed — on SQLite and PostgreSQL, with a real Dovecot poller."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.notices.base import ChannelResult, NoticeMessage
from replyguard.adapters.transports.base import Outcome
from replyguard.bootstrap import App
from replyguard.domain.audit import CheckResult, Original, Status, canary_reply
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.audit.config import Setup, config_checks, public_url
from replyguard.service_layer.audit.run import audit_history, config_audit, run_audit
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.inbound.pollers import SourceLease
from replyguard.service_layer.rescue.notice_delivery import NoticeDelivery
from replyguard.service_layer.sending.worker import Worker
from replyguard.settings import NotifySettings, Settings
from tests.integration.audit_support import CANARY, PRIYA, live_workspace
from tests.integration.test_worker_guard import ScriptedTransport
from tests.support.imap_server import DovecotServer, dovecot_or_skip
from tests.support.scenario import PILOT, Q1, load_examples, run_days, simple_workspace

SMTP_SETUP = Setup(
    Settings(public_url="https://rg.ours.test"), NotifySettings(), None, "smtp://relay.ours.test:587"
)


def checks(app: App, setup: Setup = SMTP_SETUP, campaign: str | None = None) -> dict[str, CheckResult]:
    with app.uow() as uow:
        return {r.name: r for r in config_checks(uow, setup, campaign)}


def test_a_mailbox_without_inbound_source_fails_until_replies_are_seen(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    row = checks(app)["inbound_source"]
    assert row.status is Status.FAIL
    assert any("dana@northwind-analytics.test: no IMAP poller" in d for d in row.details)
    # A person's reply through ingest (a webhook, LMTP, a file: any source) proves Dana's inbox.
    with app.uow() as uow:
        step = uow.session.scalars(
            select(m.Step)
            .join(m.Mailbox, m.Mailbox.id == m.Step.mailbox_id)
            .where(m.Step.to_address == PRIYA, m.Step.state == "sent", m.Mailbox.address.like("dana@%"))
        ).one()
        original = Original(
            step.message_id, step.subject, step.body, "dana@northwind-analytics.test", clock.now()
        )
    raw = canary_reply(
        sender=PRIYA, original=original, when=clock.now(), message_id="<p.1@fernhollow.test>", run_id=0
    )
    assert ingest_raw(app, raw, source="webhook").status == "matched"
    row = checks(app, campaign=Q1)["inbound_source"]
    assert row.status is Status.PASS and "1 replies in 30 days" in row.details[0]
    # Sam's mailbox (the other campaign) still has nothing.
    assert checks(app, campaign=PILOT)["inbound_source"].status is Status.FAIL


def test_the_audits_own_messages_prove_no_inbound_source(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    assert run_audit(app, Q1, canary=CANARY).passed  # its test messages are ingested as "audit"
    assert checks(app, campaign=Q1)["inbound_source"].status is Status.FAIL


@pytest.fixture
def imap() -> Iterator[DovecotServer]:
    with DovecotServer(dovecot_or_skip()) as server:
        yield server


def test_a_poller_that_stops_reaching_its_folder_fails(
    app: App, clock: FixedClock, imap: DovecotServer
) -> None:
    simple_workspace(app, 2)  # mailbox rep@seller.test, read by the IMAP user "rep"
    poller = app.imap_poller(imap.url, lambda raw: None)
    poller.run_once()
    found = checks(app)
    assert found["inbound_source"].status is Status.PASS
    assert found["source_polling"].status is Status.PASS
    # The password changes: the poller runs (and holds its lease) but never reaches the folder.
    clock.advance(timedelta(minutes=20))
    broken = app.imap_poller(imap.url.replace("loopback-only", "wrong"), lambda raw: None)
    with pytest.raises(Exception, match=r"(?i)auth"):
        broken.run_once()
    lease = SourceLease(app, broken.source.key)
    assert lease.acquire()  # the poller is alive and holds the source, retrying its login
    row = checks(app)["source_polling"]
    assert row.status is Status.FAIL and "has not reached the folder since" in row.details[0]
    lease.release()
    row = checks(app)["source_polling"]
    assert row.status is Status.FAIL and "not polled since" in row.details[0]
    poller.run_once()  # fixed: it reaches the folder again
    assert checks(app)["source_polling"].status is Status.PASS


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("http://localhost:8000", Status.FAIL),
        ("http://127.0.0.1:8000", Status.FAIL),
        ("https://rg", Status.FAIL),
        ("http://rg.ours.test", Status.WARN),
        ("https://rg.ours.test", Status.PASS),
    ],
)
def test_one_click_unsubscribe_needs_a_public_https_url(url: str, status: Status) -> None:
    assert public_url(Settings(public_url=url)).status is status


@pytest.mark.parametrize(
    ("notify", "problem", "transport", "status"),
    [
        (NotifySettings(), None, "smtp://relay.ours.test:587", Status.PASS),
        (NotifySettings(), None, "maildir:outbox", Status.FAIL),  # the owner never sees a file
        (NotifySettings(email=False), None, "smtp://relay.ours.test:587", Status.FAIL),
        (NotifySettings(email=False, slack_url="https://hooks.ours.test/x"), None, "maildir:o", Status.PASS),
        (
            None,
            "REPLYGUARD_NOTIFY_WEBHOOK_URL needs REPLYGUARD_NOTIFY_WEBHOOK_SECRET",
            "smtp://r:587",
            Status.FAIL,
        ),
    ],
)
def test_an_owner_without_a_notice_channel_fails(
    app: App, notify: NotifySettings | None, problem: str | None, transport: str, status: Status
) -> None:
    load_examples(app, enroll=False)
    row = checks(app, Setup(Settings(), notify, problem, transport))["notice_channel"]
    assert row.status is status, row.details
    assert row.evidence["owners"] == ["dana@northwind-analytics.test", "sam@northwind-analytics.test"]


class Channel:
    name = "webhook"

    def __init__(self, ok: bool) -> None:
        self.ok = ok

    def deliver(self, notice: NoticeMessage, now: object) -> ChannelResult:
        return ChannelResult(self.ok, "ok" if self.ok else "503 from the receiver")


def test_a_stuck_notice_outbox_fails_and_audit_notices_never_count(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)  # Priya replied 30 minutes ago; nobody runs `notify`
    assert run_audit(app, Q1, canary=CANARY).passed
    clock.advance(timedelta(minutes=20))
    row = checks(app)["notice_outbox"]
    assert row.status is Status.FAIL and row.evidence["stuck"] == 1  # Priya's; not the canaries'
    NoticeDelivery(app, [Channel(ok=False)], NotifySettings()).run_once()
    row = checks(app)["notice_outbox"]
    assert row.status is Status.FAIL and any("503 from the receiver" in d for d in row.details)
    NoticeDelivery(app, [Channel(ok=False)], replace(NotifySettings(), max_attempts=1)).run_once()
    clock.advance(timedelta(hours=2))
    NoticeDelivery(app, [Channel(ok=False)], replace(NotifySettings(), max_attempts=1)).run_once()
    assert checks(app)["notice_outbox"].evidence["given_up"] >= 1


def test_a_delivered_outbox_passes(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    clock.advance(timedelta(minutes=20))
    NoticeDelivery(app, [Channel(ok=True)], NotifySettings()).run_once()
    assert checks(app)["notice_outbox"].status is Status.PASS


def test_decisions_waiting_more_than_a_day_fail(app: App, clock: FixedClock) -> None:
    simple_workspace(app, 2)
    clock.advance(timedelta(hours=10))  # Monday 16:00 UTC, inside the window
    Worker(app, ScriptedTransport([Outcome.UNKNOWN, Outcome.ACCEPTED])).run_once()
    assert checks(app)["waiting_decisions"].status is Status.PASS
    clock.advance(timedelta(hours=25))
    row = checks(app)["waiting_decisions"]
    assert row.status is Status.FAIL and row.evidence["unknown_outcomes"] == 1


def test_probable_replies_waiting_more_than_a_day_fail(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    with app.uow() as uow:
        subject = uow.session.scalars(select(m.Step.subject).where(m.Step.state == "sent")).first()
    colleague = (
        "From: Sam Ruiz <sam.ruiz@fernhollow.test>\r\nTo: dana@northwind-analytics.test\r\n"
        f"Subject: Re: {subject}\r\nMessage-ID: <colleague-1@fernhollow.test>\r\n\r\n"
        "Priya forwarded this to me. Tell me more about the pricing.\r\n"
    ).encode()
    assert ingest_raw(app, colleague, "test").status == "probable"
    assert checks(app)["waiting_decisions"].status is Status.PASS
    clock.advance(timedelta(hours=25))
    row = checks(app)["waiting_decisions"]
    assert row.status is Status.FAIL and row.evidence["probable_replies"] == 1
    assert any("probable replies unconfirmed" in d for d in row.details)


def test_overdue_steps_and_missing_canaries_are_warnings(app: App, clock: FixedClock) -> None:
    load_examples(app)
    clock.advance(timedelta(days=2))  # nobody ran a worker
    found = checks(app)
    assert found["worker"].status is Status.WARN and found["worker"].evidence["overdue"] > 0
    assert found["canary"].status is Status.WARN and found["canary"].evidence["missing"] == [PILOT, Q1]


def test_config_runs_are_recorded(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    report = config_audit(app, SMTP_SETUP, campaign=Q1)
    assert report.status == "failed" and report.kind == "config"
    with app.uow() as uow:
        [run] = audit_history(uow)
    assert run["kind"] == "config" and "inbound_source" in run["failed"]
