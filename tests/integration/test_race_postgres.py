"""The race at send time, on PostgreSQL, with real worker processes and a real SMTP server.

Several `replyguard worker --once` processes send through an aiosmtpd server on loopback (the
oracle: it logs when each DATA command arrived). Meanwhile this test records replies for leads
whose step is being claimed or sent at that very moment, and notes the time just before each
reply's COMMIT. The claims checked afterwards:

* no message of a replied lead reached the server's DATA phase after its reply committed;
* no Message-ID (send key) was accepted twice.

Workers killed at every named point of the send path: tests/integration/test_kill_points.py.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, text

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
from tests.support.scenario import simple_workspace
from tests.support.smtp_servers import RecordingSmtpServer

pytestmark = [pytest.mark.postgres_only, pytest.mark.serial]

CLI = [sys.executable, "-c", "from replyguard.entrypoints.cli.app import main; main()"]


def _worker(url: str, now: str, smtp_url: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "--db", url, "--now", now, "worker", "--once", "--json"],
        env={
            **os.environ,
            "REPLYGUARD_TRANSPORT": smtp_url,
            "REPLYGUARD_PUBLIC_URL": "https://replyguard.race.test",  # SMTP needs a public URL
            **(env or {}),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _inject_replies(app: App, stop: threading.Event, log: dict[int, float], seed: int) -> None:
    """Reply to leads whose first step is claimed or being sent right now."""
    rng = random.Random(seed)
    while not stop.is_set():
        with app.engine.connect() as conn:
            busy = (
                conn.execute(
                    text("SELECT lead_id FROM steps WHERE state IN ('claimed', 'sending') AND position = 1")
                )
                .scalars()
                .all()
            )
        candidates = [lead for lead in busy if lead not in log]
        if not candidates:
            time.sleep(0.002)
            continue
        lead_id = rng.choice(candidates)
        with app.uow() as uow:
            record_reply(
                uow,
                lead_id,
                IncomingReply(kind=ReplyKind.HUMAN_REPLY, received_at=app.clock.now()),
                app.settings,
            )
            log[lead_id] = time.time()  # just before COMMIT: a lower bound of the commit time
            uow.commit()


def _send_keys_by_lead(app: App) -> dict[str, int]:
    with app.uow() as uow:
        return dict(uow.session.execute(select(m.Step.send_key, m.Step.lead_id)).all())


def test_no_send_starts_after_a_reply_commits(app: App, clock: FixedClock, tmp_path: Path) -> None:
    simple_workspace(app, 400)
    now = (clock.now() + timedelta(hours=4)).isoformat()  # Monday 10:00 UTC, inside the window
    replies: dict[int, float] = {}
    stop = threading.Event()
    url = app.engine.url.render_as_string(hide_password=False)
    # A few milliseconds per SMTP command keep each send in flight long enough for replies
    # to land on claimed and sending steps often (the race is the point of this test).
    with RecordingSmtpServer(log_path=tmp_path / "smtp.jsonl", command_delay=0.004) as server:
        injectors = [threading.Thread(target=_inject_replies, args=(app, stop, replies, s)) for s in (1, 2)]
        for thread in injectors:
            thread.start()
        workers = [_worker(url, now, server.url()) for _ in range(4)]
        outputs = [w.communicate(timeout=240) for w in workers]
        stop.set()
        for thread in injectors:
            thread.join()
        accepted = server.accepted()
    for worker, (_out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
    reports = [json.loads(out) for out, _ in outputs]
    lead_of = _send_keys_by_lead(app)

    late = [
        (msg.send_key, msg.data_at - replies[lead_of[msg.send_key]])
        for msg in accepted
        if lead_of[msg.send_key] in replies and msg.data_at >= replies[lead_of[msg.send_key]]
    ]
    duplicates = [key for key, n in Counter(msg.send_key for msg in accepted).items() if n > 1]
    assert late == []
    assert duplicates == []
    # The race really happened: replies landed on claimed steps (refused or fenced out) and on
    # sends under way (which finished first, holding the lead lock: "crossed").
    # Relative to what this run did (a loaded machine races fewer): it raced at least once.
    assert replies
    assert sum(r["refused"] + r["stale"] for r in reports) >= 1
    with app.uow() as uow:
        replied = set(replies)
        crossed = uow.session.scalars(
            select(m.Step.lead_id).where(m.Step.crossed.is_(True), m.Step.lead_id.in_(replied))
        ).all()
        sent_after = uow.session.execute(
            select(m.Step.lead_id, m.Step.state).where(
                m.Step.lead_id.in_(replied), m.Step.state.in_(["scheduled", "claimed", "sending"])
            )
        ).all()
    assert sent_after == []  # nothing of a replied lead is still queued
    assert len(accepted) == sum(r["sent"] for r in reports)
    print(
        f"replies {len(replies)}, sends {len(accepted)}, crossed {len(crossed)}, "
        f"refused/stale {sum(r['refused'] + r['stale'] for r in reports)}"
    )
