"""The worker tells a person watching it about every claimed email, one line each."""

from __future__ import annotations

from datetime import timedelta

from replyguard.adapters.transports.base import Outcome
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.sending.worker import SendLine, Worker
from tests.integration.test_worker_guard import ScriptedTransport
from tests.support.scenario import simple_workspace


def test_every_claimed_email_is_told_with_its_result(app: App, clock: FixedClock) -> None:
    emails = simple_workspace(app, 3)
    clock.advance(timedelta(hours=4))  # Monday 10:00 UTC: inside the window
    lines: list[SendLine] = []
    transport = ScriptedTransport([Outcome.ACCEPTED, Outcome.TRANSIENT, Outcome.PERMANENT])
    report = Worker(app, transport, on_result=lines.append).run_once()
    assert report.claimed == 3 and len(lines) == 3
    assert sorted(line.result for line in lines) == ["failed", "retried", "sent"]
    assert {line.to_address for line in lines} == set(emails)
    assert all(line.position == 1 and line.subject for line in lines)
    quiet = Worker(app, ScriptedTransport()).run_once()  # nobody listening: nothing extra asked
    assert quiet.claimed == 0
