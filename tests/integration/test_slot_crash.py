"""A worker with several send slots killed in the middle of its sends (issue 24, item 5), on
PostgreSQL, with a real worker process and a real SMTP server: with the SMTP default batch of
1 the crash holds at most one lead per slot — the emails the slots had marked — and every
email it had only claimed goes back to the queue and is sent once by the next worker."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from tests.support.fault_worker import COMMAND
from tests.support.scenario import simple_workspace
from tests.support.smtp_servers import RecordingSmtpServer

pytestmark = [pytest.mark.postgres_only]

SLOTS = 4


def _worker(url: str, now: str, smtp_url: str, spec: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, "--failpoints", spec, "--", "--db", url, "--now", now, "worker", "--once", "--json"],
        env={
            **os.environ,
            "REPLYGUARD_TRANSPORT": smtp_url,
            "REPLYGUARD_PUBLIC_URL": "https://replyguard.race.test",
            "REPLYGUARD_SEND_SLOTS": str(SLOTS),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_crash_holds_at_most_one_lead_per_slot(app: App, clock: FixedClock, tmp_path: Path) -> None:
    emails = simple_workspace(app, 40)
    start = clock.now() + timedelta(hours=4)
    url = app.engine.url.render_as_string(hide_password=False)
    with RecordingSmtpServer() as server:
        server.end_delay = 0.05  # the slots are mid-send together when the first one dies
        # Armed for certain: the first slot back from the server kills the whole process.
        killed = _worker(url, start.isoformat(), server.url(), "after_transport=kill@1")
        assert killed.returncode == -9, killed.stderr[-2000:]
        with app.uow() as uow:
            in_flight = uow.session.scalar(select(m.Step.id).where(m.Step.state == "claimed").limit(1))
        assert in_flight is not None  # claimed ahead of the slots, never handed to one
        # Past the lease: recovery holds what was marked and gives back what was only claimed.
        later = (start + timedelta(minutes=10)).isoformat()
        final = _worker(url, later, server.url(), "")
        assert final.returncode == 0, final.stderr[-2000:]
        keys = Counter(msg.send_key for msg in server.accepted())
    assert [k for k, n in keys.items() if n > 1] == []
    with app.uow() as uow:
        steps = uow.session.execute(select(m.Step.state, m.Step.lead_id).where(m.Step.position == 1)).all()
        held = set(uow.session.scalars(select(m.Lead.id).where(m.Lead.reply_state == "held")))
    states = Counter(state for state, _ in steps)
    assert 1 <= states["unknown"] <= SLOTS, states
    assert held == {lead for state, lead in steps if state == "unknown"}
    assert states["sent"] + states["unknown"] == len(emails), states
