"""Issue 20, items 4 and 5, with real processes on PostgreSQL and a slow SMTP server.

A `replyguard worker` (or `up`) process sends through an aiosmtpd server on loopback that
answers each of MAIL, RCPT and DATA slowly, so a claimed batch takes seconds to go out.
Meanwhile this test does what a person does:

* lowers the cap (`mailbox set`, `campaign update`), changes the window (`campaign update`),
  or pauses the mailbox (what another worker does when its server refuses the mailbox):
  after the change has committed, at most the one email already past its last check goes
  out; everything else stays in the queue, none held, none lost, none twice;
* sends SIGTERM or SIGINT: the process exits while the server still has most of the queue to
  take; what was claimed and not sent is back in the queue; the email in flight is either
  sent or, when the server hangs, cut and held as unknown (past the final dot) or given back
  (before it); exit 0 for SIGTERM, 130 for Ctrl-C.

No wall-clock assert: "promptly" is "while the server still had N emails it would have
taken"; the timeouts below only keep a broken run from hanging the suite.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.workspace.mailboxes import pause_mailbox
from tests.support.cli import clean_env, run_cli
from tests.support.scenario import campaign_toml, simple_workspace
from tests.support.smtp_servers import Behaviour, RecordingSmtpServer, SmtpTestServer

pytestmark = [pytest.mark.postgres_only, pytest.mark.serial]

CLI = [sys.executable, "-c", "from replyguard.entrypoints.cli.app import main; main()"]
LEADS = 30  # the first claim takes 20 (claim_batch), the next one the other 10
SLOW = 0.15  # seconds before each answer to MAIL, RCPT and DATA
GUARD = 120  # seconds: only so that a broken run fails instead of hanging the suite


def _env(app: App, smtp_url: str, **extra: str) -> dict[str, str]:
    return {
        **clean_env(),
        "REPLYGUARD_DATABASE_URL": app.engine.url.render_as_string(hide_password=False),
        "REPLYGUARD_TRANSPORT": smtp_url,
        "REPLYGUARD_PUBLIC_URL": "https://replyguard.midflight.test",
        "COLUMNS": "1000",
        **extra,
    }


def start(app: App, clock: FixedClock, smtp_url: str, *args: str, **extra: str) -> subprocess.Popen[str]:
    now = (clock.now() + timedelta(hours=4)).isoformat()  # Monday 10:00 UTC, inside the window
    return subprocess.Popen(
        [*CLI, "--now", now, *args],
        env=_env(app, smtp_url, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)  # polling a condition, with a generous deadline


def first_steps(app: App) -> list[m.Step]:
    with app.uow() as uow:
        steps = uow.session.scalars(select(m.Step).where(m.Step.position == 1).order_by(m.Step.id)).all()
        uow.session.expunge_all()
    return list(steps)


def check_queue(app: App, server: SmtpTestServer) -> tuple[set[str], list[m.Step]]:
    """What the server took is what the database says went out (sent, or unknown and held);
    nothing twice; nothing left claimed or sending; the rest is back in the queue as it was.
    Returns the keys the server took and the steps still queued."""
    keys = Counter(msg.send_key for msg in server.accepted())
    assert [key for key, n in keys.items() if n > 1] == []
    steps = first_steps(app)
    by_state = Counter(s.state for s in steps)
    assert by_state["claimed"] == by_state["sending"] == 0, by_state
    gone = {s.send_key for s in steps if s.state in ("sent", "unknown")}
    assert set(keys) == gone
    assert {s.send_key for s in steps if s.state == "sent"} <= set(keys)
    queued = [s for s in steps if s.state == "scheduled"]
    assert len(queued) + len(gone) == LEADS, by_state
    assert all(s.claim_token is None and s.attempts == 0 for s in queued)
    return set(keys), queued


# -- item 4: settings changed mid-flight apply at the point of send --------------------------


def mailbox_set(app: App, tmp_path: Path) -> None:
    ran = run_cli(
        ["mailbox", "set", "rep@seller.test", "--daily-cap", "1"],
        env=_env(app, "maildir:unused"),
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr


def campaign_update(change: tuple[str, str]) -> Callable[[App, Path], None]:
    def run(app: App, tmp_path: Path) -> None:
        source = campaign_toml("C", "P", cap=100)
        assert change[0] in source
        path = tmp_path / "campaign.toml"
        path.write_text(source.replace(*change), encoding="utf-8")
        ran = run_cli(
            ["campaign", "update", str(path), "--yes"], env=_env(app, "maildir:unused"), cwd=tmp_path
        )
        assert ran.returncode == 0, ran.stderr

    return run


def pause_by_another_worker(app: App, _tmp_path: Path) -> None:
    """What a worker whose server refused the mailbox does (send_record.py → pause_mailbox)."""
    with app.engine.connect() as conn, conn.begin():
        mailbox_id = conn.execute(select(m.Mailbox.id)).scalar_one()
        lead_id = conn.execute(select(m.Lead.id).limit(1)).scalar_one()
        pause_mailbox(
            conn,
            workspace_id=app.workspace_id,
            mailbox_id=mailbox_id,
            lead_id=lead_id,
            reason="535 5.7.8 authentication failed (another worker)",
            now=app.clock.now(),
        )


TUESDAY_9 = datetime.fromisoformat("2026-12-08T09:00:00+00:00")
MONDAY_11 = datetime.fromisoformat("2026-12-07T11:00:00+00:00")


@pytest.mark.parametrize(
    ("change", "batch", "due"),
    [
        (mailbox_set, "1", TUESDAY_9),  # counted again against cap 1: tomorrow
        (campaign_update(("daily_cap = 100", "daily_cap = 1")), "10", TUESDAY_9),
        (campaign_update(('start = "09:00"', 'start = "11:00"')), "1", MONDAY_11),  # when it opens
        (pause_by_another_worker, "10", None),  # until a person resumes the mailbox
    ],
    ids=["cap-by-mailbox-set", "cap-by-campaign-update", "window-by-campaign-update", "mailbox-paused"],
)
def test_a_change_mid_batch_applies_to_every_email_not_yet_past_its_last_check(
    app: App,
    clock: FixedClock,
    tmp_path: Path,
    change: Callable[[App, Path], None],
    batch: str,
    due: datetime | None,
) -> None:
    simple_workspace(app, LEADS, cap=100)
    with RecordingSmtpServer(command_delay=SLOW) as server:
        worker = start(app, clock, server.url(), "worker", "--once", "--json", REPLYGUARD_SEND_BATCH=batch)
        try:
            wait_until(lambda: len(server.accepted()) >= 2, "two emails sent")
            change(app, tmp_path)
            taken_when_committed = len(server.accepted())
            out, err = worker.communicate(timeout=GUARD)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
        assert worker.returncode == 0, err
        taken, queued = check_queue(app, server)
    # The one email whose last check passed before the change committed may still go out;
    # nothing after it. (Before: the rest of the claim went out, 20 emails, or with a changed
    # window the whole queue, since a running worker never read the window again.)
    assert len(taken) <= taken_when_committed + 1, (len(taken), taken_when_committed)
    assert json.loads(out)["sent"] == len(taken)
    assert queued and all(due is None or s.due_at >= due for s in queued)


# -- item 5: stopping is prompt --------------------------------------------------------------


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_a_signal_stops_the_worker_while_the_server_still_has_most_of_the_queue_to_take(
    app: App, clock: FixedClock, sig: signal.Signals, code: int
) -> None:
    simple_workspace(app, LEADS, cap=1000)
    with RecordingSmtpServer(command_delay=SLOW) as server:
        worker = start(app, clock, server.url(), "worker", "--json")
        try:
            wait_until(lambda: len(server.accepted()) >= 2, "two emails sent")
            worker.send_signal(sig)
            out, err = worker.communicate(timeout=GUARD)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
        taken, queued = check_queue(app, server)
    assert worker.returncode == code, err
    # Before: SIGTERM was looked at every 50 batches, and the whole queue went out.
    assert LEADS - len(taken) >= 20, f"the server took {len(taken)} of {LEADS}"
    report = json.loads(out)
    assert report["given_back"] >= 1
    assert report["claimed"] == report["sent"] + report["given_back"] + report["unknown"]
    assert f"stopped on {sig.name}: {report['given_back']} claimed email(s)" in err
    assert "given back to the queue" in err
    assert len(queued) == LEADS - len(taken)


class _HangingMail(SmtpTestServer):
    """Takes MAIL FROM and then never answers (a server that stalls mid-transaction)."""

    def __init__(self) -> None:
        super().__init__(command_delay=3000)


@pytest.mark.parametrize("where", ["after-the-final-dot", "before-data"])
def test_a_send_the_server_never_answers_is_cut_after_the_grace_and_the_worker_exits(
    app: App, clock: FixedClock, where: str
) -> None:
    simple_workspace(app, LEADS, cap=1000)
    server: SmtpTestServer = (
        SmtpTestServer(behaviour=Behaviour.HANG_AFTER_ACCEPT)
        if where == "after-the-final-dot"
        else _HangingMail()
    )
    with server:
        # The transport's own timeout is far beyond the guard: only the cut can end the send.
        worker = start(app, clock, server.url(timeout=3000), "worker", "--json")
        try:
            if where == "after-the-final-dot":
                wait_until(lambda: len(server.accepted()) == 1, "the first email taken, its answer withheld")
            else:
                wait_until(lambda: len(server.transactions) == 1, "MAIL FROM received, never answered")
            worker.send_signal(signal.SIGTERM)
            out, err = worker.communicate(timeout=GUARD)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
        taken, queued = check_queue(app, server)
    assert worker.returncode == 0, err
    steps = first_steps(app)
    unknown = [s for s in steps if s.state == "unknown"]
    if where == "after-the-final-dot":
        # The server may have it: never resent, held for a person.
        assert len(taken) == 1 and [s.send_key for s in unknown] == list(taken)
        with app.uow() as uow:
            assert uow.session.get(m.Lead, unknown[0].lead_id).reply_state == "held"  # type: ignore[union-attr]
        assert len(queued) == LEADS - 1
    else:
        # Cut before the server could take it: back in the queue, no attempt counted.
        assert taken == set() and unknown == [] and len(queued) == LEADS
    assert json.loads(out)["claimed"] >= 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def smtp() -> Iterator[RecordingSmtpServer]:
    with RecordingSmtpServer(command_delay=SLOW) as server:
        yield server


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_up_stops_its_worker_promptly_and_exits_as_the_readme_says(
    app: App, clock: FixedClock, smtp: RecordingSmtpServer, sig: signal.Signals, code: int
) -> None:
    simple_workspace(app, LEADS, cap=1000)
    up = start(
        app,
        clock,
        smtp.url(),
        "up",
        "--port",
        str(_free_port()),
        REPLYGUARD_NOTIFY_EMAIL="0",  # the slow server is the worker's alone
    )
    try:
        wait_until(lambda: len(smtp.accepted()) >= 2, "two emails sent")
        up.send_signal(sig)
        _, err = up.communicate(timeout=GUARD)
    finally:
        if up.poll() is None:
            up.kill()
            up.communicate()
    taken, queued = check_queue(app, smtp)
    # Before: 0 after Ctrl-C too, and the worker drained the queue (or was abandoned mid-send
    # by the 30 s join, its claims left for the lease to end).
    assert up.returncode == code, err
    assert LEADS - len(taken) >= 20, f"the server took {len(taken)} of {LEADS}"
    assert "claimed email(s) not handed over, given back to the queue" in err
    assert len(queued) == LEADS - len(taken)
