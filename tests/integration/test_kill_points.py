"""Workers killed at every named point of the send path, on PostgreSQL, with real worker
processes and a real SMTP server: nothing is resent blindly (a step whose outcome is unknown
is held for a person), no Message-ID is accepted twice, and nothing is left half-done.

One worker runs at a time (each `replyguard worker --once` process, started with failpoints by
tests/support/fault_worker.py, may be SIGKILLed at one), so nothing here measures concurrency:
it runs beside other tests, unlike the race in test_race_postgres.py. Each point first kills a
worker on its own (the worker names the point it died at), then all of them kill at random.
"""

from __future__ import annotations

import os
import re
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

pytestmark = [pytest.mark.postgres_only, pytest.mark.long]

FAULTS = {
    "before_claim_commit": 0.05,
    "after_claim": 0.05,
    "after_recheck": 0.05,
    "after_marker": 0.05,
    "before_data": 0.04,
    "after_transport": 0.04,
    "before_record_commit": 0.05,
}


def _fault_worker(url: str, now: str, smtp_url: str, spec: str, seed: int) -> subprocess.Popen[str]:
    """`replyguard worker --once` with failpoints armed (tests/support/fault_worker.py)."""
    return subprocess.Popen(
        [
            *COMMAND,
            *("--failpoints", spec, "--seed", str(seed), "--"),
            *("--db", url, "--now", now, "worker", "--once", "--json"),
        ],
        env={
            **os.environ,
            "REPLYGUARD_TRANSPORT": smtp_url,
            "REPLYGUARD_PUBLIC_URL": "https://replyguard.race.test",  # SMTP needs a public URL
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _died_at(err: str) -> str | None:
    """The failpoint a killed worker reported just before its SIGKILL."""
    found = re.findall(r"^failpoint (\w+): kill$", err, flags=re.MULTILINE)
    return found[-1] if found else None


def test_workers_killed_at_every_point_never_duplicate_nor_resend_blindly(
    app: App, clock: FixedClock, tmp_path: Path
) -> None:
    emails = simple_workspace(app, 60)
    start = clock.now() + timedelta(hours=4)
    url = app.engine.url.render_as_string(hide_password=False)
    died: Counter[str] = Counter()
    with RecordingSmtpServer(log_path=tmp_path / "smtp.jsonl") as server:
        runs = 0

        def run(spec: str, seed: int) -> tuple[int, str]:
            nonlocal runs
            # Each run starts a little later on the simulated clock, so claims of killed
            # workers expire (lease: 5 minutes) and recovery runs.
            now = (start + timedelta(minutes=6 * runs)).isoformat()
            runs += 1
            worker = _fault_worker(url, now, server.url(), spec, seed)
            try:
                _, err = worker.communicate(timeout=300)
            finally:
                if worker.poll() is None:  # a run that hung: end it, not the next test
                    worker.kill()
                    worker.communicate()
            if worker.returncode == -9:
                point = _died_at(err)
                assert point is not None, err
                died[point] += 1
            else:
                assert worker.returncode == 0, err
            return worker.returncode, err

        # First each point on its own, armed for certain: the worker must die exactly there.
        for name in FAULTS:
            code, err = run(f"{name}=kill@1", seed=0)
            assert code == -9 and _died_at(err) == name, (name, code, err[-2000:])
        # Then all of them at once, at random, until 4 more workers died and one lived (each
        # point has killed one already; these mix them).
        spec = ",".join(f"{name}=kill@{p}" for name, p in FAULTS.items())
        killed_at_random, lived = 0, False
        for seed in range(200):
            code, _ = run(spec, seed)
            killed_at_random += code == -9
            lived = lived or code == 0
            if killed_at_random >= 4 and lived:  # the rest drains
                break
        final = _fault_worker(
            url, (start + timedelta(hours=1, minutes=6 * runs)).isoformat(), server.url(), "", 0
        )
        _, err = final.communicate(timeout=300)
        assert final.returncode == 0, err
        accepted = server.accepted()
    # Every named point of the send path killed a worker, by the worker's own report.
    assert sorted(died) == sorted(FAULTS), died
    assert killed_at_random >= 4 and lived
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
    print(f"died at {dict(died)}; first steps: {dict(states)}; held {len(held)}")
