"""The notice outbox, delivered to a real SMTP server and a real HTTP receiver, on both databases.

The receivers are the oracle: a notice counts as delivered when the receiver processed it,
and a receiver processes each id once whatever the sender retried.
"""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.adapters.notices.email import EmailChannel
from replyguard.adapters.notices.http import SlackChannel, WebhookChannel
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.rescue.notice_delivery import NoticeDelivery
from replyguard.settings import NotifySettings
from tests.support.failpoints import InjectedCrash, crash
from tests.support.http_receiver import LoopbackServer, Received, WebhookReceiver
from tests.support.scenario import FORECASTING, REPORTS, load_examples, reply, run_days
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer

SECRET = "whsec_" + base64.b64encode(b"a secret of thirty-two bytes!!!!").decode()
REPLIERS = ("priya@fernhollow.test", "marc.keller@brightline-logistics.test", "aisha@meridian-health.test")
SETTINGS = NotifySettings(retry_base=timedelta(seconds=30), lease=timedelta(minutes=2))


def _three_replies(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    for email in REPLIERS:
        reply(app, email, REPORTS)


def _delivery(app: App, receiver: WebhookReceiver, smtp: RecordingSmtpServer) -> NoticeDelivery:
    """A fresh delivery process: nothing carried over but what is in the database."""
    channels = [
        WebhookChannel(receiver.url + "/hooks/replyguard", SECRET, timeout=5),
        EmailChannel(SmtpTransport(smtp.url(timeout=5))),
    ]
    return NoticeDelivery(app, channels, SETTINGS)


def test_each_notice_reaches_each_receiver_once_through_an_outage_a_crash_and_restarts(
    app: App, clock: FixedClock
) -> None:
    _three_replies(app, clock)
    with WebhookReceiver(SECRET) as receiver, RecordingSmtpServer(behaviour=Behaviour.TEMPFAIL_DATA) as smtp:
        # Both receivers are down: nothing is delivered, every delivery waits for its retry.
        first = _delivery(app, receiver, smtp).run_once()
        assert first.delivered == 0 and first.retried == 6
        assert len(receiver.requests) == 3 and receiver.processed == {}
        assert smtp.accepted() == []
        # Still down a minute later (another process): tried again, still nothing lost.
        clock.advance(timedelta(minutes=1))
        assert _delivery(app, receiver, smtp).run_once().retried == 6
        # Back up. A new process delivers one notice, then dies before recording it.
        receiver.down, smtp.behaviour = False, Behaviour.ACCEPT
        clock.advance(timedelta(minutes=5))
        app.hooks.arm("after_notice_sent", crash)
        with pytest.raises(InjectedCrash):
            _delivery(app, receiver, smtp).run_once()
        assert len(receiver.processed) == 1
        # A second process, once that lease ran out, delivers the webhook again and dies the
        # same way right after its first email went out.
        clock.advance(SETTINGS.lease + timedelta(seconds=1))
        hits = iter(range(100))
        app.hooks.arm("after_notice_sent", lambda name: crash(name) if next(hits) == 1 else None)
        with pytest.raises(InjectedCrash):
            _delivery(app, receiver, smtp).run_once()
        app.hooks.disarm()
        assert len(smtp.accepted()) == 1
        # A restarted process waits out the dead one's lease, then delivers everything.
        clock.advance(SETTINGS.lease + timedelta(seconds=1))
        last = _delivery(app, receiver, smtp).run_once()
        assert last.delivered == 5  # the crashed email again, and the four not yet tried
        assert _delivery(app, receiver, smtp).run_once().delivered == 0  # nothing left

        # The receiver saw the crashed notice twice and processed it once.
        assert receiver.duplicates == 1 and receiver.bad_signatures == 0
        assert len(receiver.processed) == 3
        leads = sorted(p["data"]["lead"]["email"] for p in receiver.processed.values())
        assert leads == sorted(REPLIERS)
        # The SMTP server got the crashed email twice, under one Message-ID (the notice's uid):
        # what a mail client deduplicates by.
        mails = smtp.accepted()
        assert len(mails) == 4 and len({mail.message_id for mail in mails}) == 3
        assert sorted(r for mail in mails for r in mail.rcpt_tos) == ["dana@northwind-analytics.test"] * 4
    with app.uow() as uow:
        assert (
            uow.session.scalar(select(func.count()).select_from(m.Notice).where(m.Notice.done_at.is_(None)))
            == 0
        )
        states = uow.session.scalars(select(m.NoticeDelivery.state)).all()
    assert sorted(states) == ["delivered"] * 6


def test_a_notice_carries_what_a_person_needs_to_act(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    outcome = reply(app, REPLIERS[0], REPORTS)
    with WebhookReceiver(SECRET) as receiver, RecordingSmtpServer() as smtp:
        receiver.down = False
        _delivery(app, receiver, smtp).run_once()
        (payload,) = receiver.processed.values()
        (mail,) = smtp.accepted()
    data = payload["data"]
    assert payload["type"] == "thread.opened"
    assert data["product"] == REPORTS and data["campaign"] == "Q1 reporting outreach"
    assert data["lead"]["email"] == REPLIERS[0]
    assert data["thread"]["id"] == outcome.thread_id and data["thread"]["url"].endswith(
        f"/threads/{outcome.thread_id}"
    )
    assert data["subject"] == "Quick question about Fernhollow's reporting"
    assert data["kind"] == "human_reply" and "recommended_next_step" in data and "intent" in data
    assert data["other_active_products"][0]["product"] == FORECASTING
    text = mail.message().get_content()
    assert REPORTS in text and f"/threads/{outcome.thread_id}" in text and "Next step:" in text


def test_a_slack_compatible_webhook_gets_the_notice_and_a_failing_one_is_retried(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    reply(app, REPLIERS[0], REPORTS)
    answers = iter([(500, b"oops"), (200, b"ok")])

    def respond(_received: Received) -> tuple[int, bytes]:
        return next(answers)

    with LoopbackServer(respond) as slack:
        delivery = NoticeDelivery(app, [SlackChannel(slack.url + "/services/T0/B0/x", timeout=5)], SETTINGS)
        assert delivery.run_once().retried == 1
        clock.advance(timedelta(minutes=1))
        assert delivery.run_once().delivered == 1
        bodies = [r.json() for r in slack.requests]
    assert len(bodies) == 2 and bodies[0] == bodies[1]
    assert REPORTS in bodies[1]["text"] and "ntc_" in bodies[1]["text"]


def test_delivery_never_blocks_ingest_and_a_down_receiver_loses_nothing(app: App, clock: FixedClock) -> None:
    """Replies are recorded whatever the channels do: the outbox only grows."""
    _three_replies(app, clock)
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.Notice)) == 3
        assert uow.session.scalar(select(func.count()).select_from(m.NoticeDelivery)) == 0
