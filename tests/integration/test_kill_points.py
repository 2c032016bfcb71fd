"""Workers killed at every named point of the send path, on PostgreSQL, with real worker
processes and a real SMTP server: nothing is resent blindly (a step whose outcome is unknown
is held for a person), no Message-ID is accepted twice, and nothing is left half-done.

One worker runs at a time (each `replyguard worker --once` process may be SIGKILLed at a
failpoint), so nothing here measures concurrency: it runs beside other tests, unlike the race
in test_race_postgres.py.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from tests.integration.test_race_postgres import _worker
from tests.support.scenario import simple_workspace
from tests.support.smtp_servers import RecordingSmtpServer

pytestmark = [pytest.mark.postgres_only]

FAULTS = {
    "before_claim_commit": 0.05,
    "after_claim": 0.05,
    "after_recheck": 0.05,
    "after_marker": 0.05,
    "before_data": 0.04,
    "after_transport": 0.04,
    "before_record_commit": 0.05,
}


def test_workers_killed_at_every_point_never_duplicate_nor_resend_blindly(
    app: App, clock: FixedClock, tmp_path: Path
) -> None:
    emails = simple_workspace(app, 60)
    start = clock.now() + timedelta(hours=4)
    url = app.engine.url.render_as_string(hide_password=False)
    spec = ",".join(f"{name}=kill@{p}" for name, p in FAULTS.items())
    killed = 0
    with RecordingSmtpServer(log_path=tmp_path / "smtp.jsonl") as server:
        for seed in range(200):
            # Each run starts a little later on the simulated clock, so claims of killed
            # workers expire (lease: 5 minutes) and recovery runs.
            now = (start + timedelta(minutes=6 * seed)).isoformat()
            worker = _worker(
                url,
                now,
                server.url(),
                {"REPLYGUARD_FAILPOINTS": spec, "REPLYGUARD_FAILPOINT_SEED": str(seed)},
            )
            _, err = worker.communicate(timeout=120)
            if worker.returncode == -9:
                killed += 1
                continue
            assert worker.returncode == 0, err
            if killed >= 8:  # enough deaths at the points, then a run that lived: the rest drains
                break
        final = _worker(url, (start + timedelta(hours=1, minutes=6 * seed)).isoformat(), server.url())
        _, err = final.communicate(timeout=120)
        assert final.returncode == 0, err
        accepted = server.accepted()
    assert killed >= 8
    keys = Counter(msg.send_key for msg in accepted)
    assert [k for k, n in keys.items() if n > 1] == []
    with app.uow() as uow:
        steps = uow.session.execute(
            select(m.Step.send_key, m.Step.state, m.Step.lead_id).where(m.Step.position == 1)
        ).all()
        held = set(uow.session.scalars(select(m.Lead.id).where(m.Lead.reply_state == "held")))
    states = Counter(state for _, state, _ in steps)
    assert states["claimed"] == 0 and states["sending"] == 0 and states["scheduled"] == 0
    for key, state, lead_id in steps:
        if key in keys:
            assert state in ("sent", "unknown"), (key, state)
        if state == "unknown":
            assert lead_id in held
        if state == "sent":
            assert keys[key] == 1
    assert states["sent"] + states["unknown"] == len(emails)
    print(f"killed {killed} workers; first steps: {dict(states)}; held {len(held)}")
