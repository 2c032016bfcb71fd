"""Issue 20, items 1-3, with real processes on PostgreSQL: people deciding and answering on
what they saw, while mail arrives and other people act.

Each race is made to happen, not hoped for: the test holds the leads' row locks, starts the
processes, waits until PostgreSQL says each of them waits on a lock (in the order started),
and lets go — so they run "at the same instant", in a known order. Then:

* a second reply ingested with a resume on the version before it: the resume is refused with
  what changed, the lead stays replied, nothing is planned;
* two people stop and resume at once: the second is refused, told what the first did;
* two answers to the same version: one email, the other person told who answered;
* an answer against an unsubscribe during a slow SMTP transaction: no email is accepted after
  the unsubscribe committed.

No wall-clock assert; the timeouts only keep a broken run from hanging the suite.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Connection, select, text

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.cli import clean_env
from tests.support.scenario import reply, simple_workspace
from tests.support.smtp_servers import RecordingSmtpServer

pytestmark = [pytest.mark.postgres_only, pytest.mark.serial]

CLI = [sys.executable, "-c", "from replyguard.entrypoints.cli.app import main; main()"]
GUARD = 120  # seconds: only so that a broken run fails instead of hanging the suite
CHANGED = "changed since you saw it"


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)  # polling a condition, with a generous deadline


class Runner:
    def __init__(self, app: App, clock: FixedClock, tmp_path: Path, transport: str) -> None:
        self.env = {
            **clean_env(),
            "REPLYGUARD_DATABASE_URL": app.engine.url.render_as_string(hide_password=False),
            "REPLYGUARD_TRANSPORT": transport,
            "REPLYGUARD_PUBLIC_URL": "https://replyguard.team.test",
            "COLUMNS": "1000",
        }
        self.now = clock.now().isoformat()
        self.cwd = tmp_path

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*CLI, "--now", self.now, *args],
            env=self.env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,  # no terminal: a send without --seen is refused
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = proc.communicate(timeout=GUARD)
    return proc.returncode, out + err


def lock_waiters(app: App) -> int:
    with app.engine.connect() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                )
            ).scalar_one()
        )


@contextmanager
def leads_locked(app: App, lead_ids: list[int]) -> Iterator[Connection]:
    """Hold the leads' row locks (as a reply or a decision holds them) until the block ends."""
    with app.engine.connect() as conn:
        tx = conn.begin()
        conn.execute(select(m.Lead.id).where(m.Lead.id.in_(lead_ids)).with_for_update()).all()
        try:
            yield conn
        finally:
            tx.rollback()


def queue(app: App, start: Callable[[], subprocess.Popen[str]], waiting: int) -> subprocess.Popen[str]:
    """Start a process and wait until it waits on a lock (the `waiting`-th to do so)."""
    proc = start()
    wait_until(lambda: lock_waiters(app) >= waiting or proc.poll() is not None, f"waiter {waiting}")
    assert proc.poll() is None, finish(proc)
    return proc


def thread_of(app: App, email: str) -> tuple[int, int, int]:
    """(thread id, its version, the lead id)."""
    with app.uow() as uow:
        lead = find_lead(uow, email, "P")
        thread = uow.session.scalars(
            select(m.RescueThread).where(m.RescueThread.lead_id == lead.id, m.RescueThread.state == "open")
        ).one()
        return thread.id, thread.version, lead.id


def lead_state(app: App, lead_id: int) -> str:
    with app.uow() as uow:
        return str(uow.session.get_one(m.Lead, lead_id, populate_existing=True).reply_state)


def queued_steps(app: App, lead_id: int) -> int:
    with app.uow() as uow:
        return len(
            uow.session.scalars(
                select(m.Step.id).where(
                    m.Step.lead_id == lead_id, m.Step.state.in_(["scheduled", "awaiting_approval"])
                )
            ).all()
        )


@pytest.fixture
def opened(app: App) -> list[str]:
    """Six leads, each with a reply that opened its thread ("send me pricing next week")."""
    emails = simple_workspace(app, 6)
    for email in emails:
        reply(app, email, "P")
    return emails


def test_a_resume_on_the_version_before_a_second_reply_is_refused(
    app: App, clock: FixedClock, tmp_path: Path, opened: list[str]
) -> None:
    runner = Runner(app, clock, tmp_path, f"maildir:{tmp_path / 'out'}")
    seen = {email: thread_of(app, email) for email in opened}
    lead_ids = [lead for _, _, lead in seen.values()]
    stop_text = "We signed with a competitor: please do not follow up."

    def second_reply(email: str) -> Callable[[], subprocess.Popen[str]]:
        return lambda: runner.start("reply", "record", "--lead", email, "--product", "P", "--text", stop_text)

    def resume(thread: int, version: int) -> Callable[[], subprocess.Popen[str]]:
        return lambda: runner.start(
            "threads", "resolve", str(thread), "--action", "resume", "--seen", str(version), "--by", "rep"
        )

    with leads_locked(app, lead_ids):
        replies = [queue(app, second_reply(email), n + 1) for n, email in enumerate(opened)]
        resumes = [
            queue(app, resume(thread, version), len(opened) + n + 1)
            for n, (thread, version, _) in enumerate(seen.values())
        ]
    for proc in replies:
        code, output = finish(proc)
        assert code == 0, output
    for proc, email in zip(resumes, opened, strict=True):
        code, output = finish(proc)
        assert code == 1, output  # a refused decision exits 1
        assert CHANGED in output and "do not follow up" in output, output
        _, version, lead = thread_of(app, email)
        assert lead_state(app, lead) == "replied" and queued_steps(app, lead) == 0
        assert version > seen[email][1]


@pytest.mark.parametrize("first", ["stop", "resume"])
def test_two_people_decide_at_once_and_the_second_is_told_what_the_first_did(
    app: App, clock: FixedClock, tmp_path: Path, opened: list[str], first: str
) -> None:
    runner = Runner(app, clock, tmp_path, f"maildir:{tmp_path / 'out'}")
    thread, version, lead = thread_of(app, opened[0])
    second = "resume" if first == "stop" else "stop"
    by = {first: "alice", second: "bob"}

    def decide(action: str) -> Callable[[], subprocess.Popen[str]]:
        return lambda: runner.start(
            "threads", "resolve", str(thread), "--action", action, "--seen", str(version), "--by", by[action]
        )

    with leads_locked(app, [lead]):
        earlier = queue(app, decide(first), 1)
        later = queue(app, decide(second), 2)
    code, output = finish(earlier)
    assert code == 0, output
    code, output = finish(later)
    assert code == 1, output
    assert CHANGED in output and "alice" in output and first in output, output
    assert lead_state(app, lead) == ("stopped" if first == "stop" else "active")
    if first == "stop":
        assert queued_steps(app, lead) == 0  # "stopped; N queued steps cancelled" stays true


def test_two_answers_to_the_same_version_send_one_email(
    app: App, clock: FixedClock, tmp_path: Path, opened: list[str]
) -> None:
    outbox = tmp_path / "out"
    runner = Runner(app, clock, tmp_path, f"maildir:{outbox}")
    thread, version, lead = thread_of(app, opened[0])
    for name in ("ana", "ben"):
        (tmp_path / f"{name}.txt").write_text(
            f"Hi,\n\nthe price is on its way.\n\n{name}\n", encoding="utf-8"
        )

    def answer(name: str) -> Callable[[], subprocess.Popen[str]]:
        return lambda: runner.start(
            "threads", "send", str(thread), "--body-file", str(tmp_path / f"{name}.txt"),
            "--seen", str(version), "--by", name,
        )  # fmt: skip

    with leads_locked(app, [lead]):
        ana = queue(app, answer("ana"), 1)
        ben = queue(app, answer("ben"), 2)
    results = [finish(ana), finish(ben)]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], results
    refused = next(output for code, output in results if code == 1)
    assert re.search(r"\b(ana|ben) (answered|is answering) at \d\d:\d\d", refused), refused
    sent = [p for p in outbox.rglob("*") if p.is_file() and p.parent.name in ("new", "cur")]
    assert len(sent) == 1, sent
    with app.uow() as uow:
        rows = uow.session.scalars(select(m.PersonSend).where(m.PersonSend.thread_id == thread)).all()
        assert [r.state for r in rows] == ["sent"]
    assert lead_state(app, lead) == "replied"


def test_an_answer_is_not_accepted_after_an_unsubscribe_committed_during_its_smtp_transaction(
    app: App, clock: FixedClock, tmp_path: Path, opened: list[str]
) -> None:
    email = opened[0]
    thread, version, lead = thread_of(app, email)
    (tmp_path / "answer.txt").write_text("Hi,\n\n40 EUR a seat.\n\nAna\n", encoding="utf-8")
    with RecordingSmtpServer() as server:
        server.gate = threading.Event()
        runner = Runner(app, clock, tmp_path, server.url(timeout=GUARD))
        answer = runner.start(
            "threads", "send", str(thread), "--body-file", str(tmp_path / "answer.txt"),
            "--seen", str(version), "--by", "ana",
        )  # fmt: skip
        wait_until(lambda: server.at_gate.is_set() or answer.poll() is not None, "the answer at RCPT")
        assert answer.poll() is None, finish(answer)
        unsubscribe = runner.start(
            "reply", "record", "--lead", email, "--product", "P", "--kind", "unsubscribe"
        )
        # Either the unsubscribe commits now (nothing holds the lead), or it waits for the lock
        # the answer holds across its SMTP transaction.
        wait_until(lambda: unsubscribe.poll() is not None or lock_waiters(app) >= 1, "the unsubscribe")
        committed_first = unsubscribe.poll() is not None
        server.gate.set()
        answered = finish(answer)
        unsubscribed = finish(unsubscribe)
        accepted = [msg for msg in server.accepted() if email in msg.rcpt_tos]
    assert unsubscribed[0] == 0, unsubscribed
    assert lead_state(app, lead) == "unsubscribed"
    if committed_first:
        assert accepted == [], "an answer was accepted after the unsubscribe committed"
        assert answered[0] == 1 and "unsubscribed" in answered[1], answered
    else:
        # The answer held the lead: it went out before the unsubscribe could commit.
        assert len(accepted) == 1 and answered[0] == 0, answered
    with app.uow() as uow:
        [row] = uow.session.scalars(select(m.PersonSend).where(m.PersonSend.thread_id == thread)).all()
        assert row.state == ("refused" if committed_first else "sent")
