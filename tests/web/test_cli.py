"""`replyguard users`, `tokens` and `up` through the real command line, on a SQLite file."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.cli import Ran, run_cli

REPLYGUARD = [sys.executable, "-m", "replyguard"]
PASSWORD = "correct horse battery staple"


def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REPLYGUARD_")}
    clean["REPLYGUARD_DATABASE_URL"] = f"sqlite:///{tmp_path / 'rg.db'}"
    clean["REPLYGUARD_TRANSPORT"] = f"maildir:{tmp_path / 'outbox'}"
    clean["COLUMNS"] = "1000"
    return clean


def run(tmp_path: Path, *args: str, stdin: str = "") -> Ran:
    """The real command line, in this process (tests/support/cli.py)."""
    return run_cli(args, env=env(tmp_path), cwd=tmp_path, input=stdin)


def run_process(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command line in a process of its own: for `up`, which owns its process."""
    return subprocess.run(
        [*REPLYGUARD, *args], check=False, capture_output=True, text=True, env=env(tmp_path), timeout=120
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    assert run(tmp_path, "init").returncode == 0
    return tmp_path


def test_users_add_reads_the_password_from_stdin_and_refuses_a_second_time(workspace: Path) -> None:
    added = run(workspace, "users", "add", "Ann@Alpha.test", "--name", "Ann", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    assert "ann@alpha.test" in added.stdout and PASSWORD not in added.stdout + added.stderr
    again = run(workspace, "users", "add", "ann@alpha.test", stdin=PASSWORD + "\n")
    assert again.returncode == 1 and again.stderr.count("\n") == 1 and "already exists" in again.stderr
    short = run(workspace, "users", "add", "bob@alpha.test", stdin="short\n")
    assert short.returncode == 1 and "at least 12" in short.stderr
    listed = run(workspace, "users", "list")
    assert "ann@alpha.test" in listed.stdout and "never signed in" in listed.stdout


def test_tokens_are_printed_once_listed_without_secret_and_revoked(workspace: Path) -> None:
    created = run(workspace, "tokens", "create", "ci")
    assert created.returncode == 0
    secret = created.stdout.strip()
    assert secret.startswith("rg_") and "\n" not in secret and "not shown again" in created.stderr
    (listed,) = json.loads(run(workspace, "tokens", "list", "--json").stdout)
    assert listed["name"] == "ci" and secret not in json.dumps(listed) and secret.startswith(listed["prefix"])
    revoked = run(workspace, "tokens", "revoke", str(listed["id"]))
    assert (
        revoked.returncode == 0
        and json.loads(run(workspace, "tokens", "list", "--json").stdout)[0]["revoked"]
    )
    unknown = run(workspace, "tokens", "revoke", "999")
    assert unknown.returncode == 1 and "no API token 999" in unknown.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def lines_of(stream: object) -> queue.Queue[str]:
    found: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:  # type: ignore[attr-defined]
            found.put(line)
        found.put("")

    threading.Thread(target=pump, daemon=True).start()
    return found


def wait_for(lines: queue.Queue[str], text: str, seen: list[str]) -> None:
    while True:
        line = lines.get(timeout=120)
        seen.append(line)
        assert line, f"the process ended before saying {text!r}:\n{''.join(seen)}"
        if text in line:
            return


def a_reply_waiting_for_its_notice(workspace: Path) -> None:
    """A lead's reply recorded in the workspace's database: a thread, and its notice in the
    outbox for the campaign's owner."""
    from replyguard.bootstrap import bootstrap
    from replyguard.domain.clock import FixedClock, parse_instant
    from tests.support.scenario import load_examples, reply

    app = bootstrap(env(workspace)["REPLYGUARD_DATABASE_URL"], clock=FixedClock(parse_instant(NOW)))
    try:
        load_examples(app, enroll=False)
        assert reply(app, "priya@fernhollow.test", "Northwind Reports").notice_id is not None
    finally:
        app.close()


NOW = "2026-12-07T12:00:00Z"


def test_up_serves_the_web_app_with_the_worker_and_delivers_notices_and_stops_cleanly_on_sigterm(
    workspace: Path,
) -> None:
    a_reply_waiting_for_its_notice(workspace)
    port = free_port()
    process = subprocess.Popen(
        [*REPLYGUARD, "--now", NOW, "up", "--port", str(port), "--log-format", "json"],
        stderr=subprocess.PIPE,
        text=True,
        env=env(workspace),
    )
    seen: list[str] = []
    try:
        lines = lines_of(process.stderr)
        wait_for(lines, "replyguard is up at", seen)
        # No --imap: the connected mailboxes' folders are watched (none yet; connected later).
        assert "(web, worker, the connected mailboxes' pollers, notices by email)" in seen[-1]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            assert client.get("/readyz").json()["status"] == "ready"
            login = client.get("/login")
            assert login.status_code == 200
            login_page = login.text
            # The owner's notice leaves the outbox by email (the Maildir transport), and the
            # backlog that /metrics reports drains to nothing.
            notice = wait_for_file(workspace / "outbox" / "new")
            assert "Subject: [replyguard] Northwind Reports: Priya" in notice.read_text(errors="replace")
            backlog = wait_for_metric(client, "replyguard_notice_backlog", 0.0)
            assert backlog == 0.0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        while line := lines.get(timeout=60):
            seen.append(line)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()  # type: ignore[union-attr]
    logged = [json.loads(line) for line in seen if line.startswith("{")]
    assert all({"ts", "level", "logger", "msg"} <= set(entry) for entry in logged)
    assert {"uvicorn.error", "replyguard.up"} <= {entry["logger"] for entry in logged}
    # On a simulated clock (--now): said at start-up, on every log line and on every page.
    assert any("simulated clock (--now): it is 2026-12-07T12:00" in line for line in seen[:3]), seen[:3]
    assert all(
        entry["simulated"].startswith("simulated clock (--now): it is 2026-12-07T") for entry in logged
    )
    assert "Simulated clock (--now): it is Mon 7 Dec 2026, 12:0" in login_page


def wait_for_file(folder: Path, timeout: float = 120.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(folder.glob("*")) if folder.exists() else []
        if found:
            return found[0]
        time.sleep(0.05)  # polling for an event, with a generous deadline
    raise AssertionError(f"nothing arrived in {folder} within {timeout} s")


def wait_for_metric(client: httpx.Client, name: str, value: float, timeout: float = 120.0) -> float:
    deadline, seen = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        for line in client.get("/metrics").text.splitlines():
            if line.startswith(name + " "):
                seen = float(line.split()[-1])
        if seen == value:
            return seen
        time.sleep(0.05)  # polling for an event, with a generous deadline
    return float("nan") if seen is None else seen


def test_up_runs_without_any_notice_channel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """REPLYGUARD_NOTIFY_EMAIL=0 and no webhook: no notice component, everything else runs."""
    from replyguard.bootstrap import bootstrap
    from replyguard.entrypoints.cli.up_cmd import _components, notice_delivery

    for name, value in env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REPLYGUARD_NOTIFY_EMAIL", "0")
    app = bootstrap()
    try:
        assert notice_delivery(app) is None
        with socket.socket() as sock:
            names = [c.name for c in _components(app, sock, [], worker=True, notices=None)]
        assert names == ["web", "worker", "mailboxes"]
    finally:
        app.close()
    # The environment is read once, when the process starts: a Slack URL set afterwards is
    # not seen by that process, and is by the next one.
    monkeypatch.setenv("REPLYGUARD_NOTIFY_SLACK_URL", "http://127.0.0.1:9/hook")
    assert notice_delivery(app) is None
    later = bootstrap()
    try:
        slack = notice_delivery(later)
        assert slack is not None and list(slack.channels) == ["slack"]
    finally:
        later.close()


def test_up_on_a_busy_port_says_so_in_one_line(workspace: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = run_process(workspace, "up", "--port", str(busy.getsockname()[1]))
    assert result.returncode == 1
    assert "cannot listen on 127.0.0.1:" in result.stderr and "Traceback" not in result.stderr
