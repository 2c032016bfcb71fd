"""`replyguard audit` end to end: the real command line, a SQLite file and a real SMTP server on
loopback (aiosmtpd) that every email goes through — the prospects' and the canaries'."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import Ran, clean_env, run_cli
from tests.support.smtp_servers import SmtpTestServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BROKEN = Path(__file__).with_name("broken_cli.py")
CAMPAIGN = "Q1 reporting outreach"
PRODUCT = "Northwind Reports"
CANARY = "team@ours.test"
ENROLLED = "2026-12-07T06:00:00Z"
SENDING = "2026-12-07T15:00:00Z"  # 10:00 in New York: the first round goes out
AUDIT = "2026-12-07T15:30:00Z"


class Cli:
    def __init__(self, root: Path, smtp: SmtpTestServer) -> None:
        self.root, self.smtp = root, smtp

    def run(self, *args: str, now: str | None = None, broken: str | None = None) -> Ran:
        """The real command line: in this process (tests/support/cli.py), or with one guarantee
        broken in a process of its own (broken_cli.py), so the breakage cannot outlive it."""
        env = clean_env(REPLYGUARD_TRANSPORT=self.smtp.url(timeout=5), COLUMNS="200")
        prefix = ["--db", f"sqlite:///{self.root / 'rg.db'}"] + (["--now", now] if now else [])
        if not broken:
            return run_cli([*prefix, *args], env=env, cwd=self.root)
        done = subprocess.run(
            [sys.executable, str(BROKEN), *prefix, *args],
            cwd=self.root,
            env=env | {"RG_BREAK": broken},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return Ran(list(args), done.returncode, done.stdout, done.stderr)

    def ok(self, *args: str, now: str | None = None) -> str:
        result = self.run(*args, now=now)
        assert result.returncode == 0, f"{args}: {result.returncode}\n{result.stdout}\n{result.stderr}"
        assert "Traceback" not in result.stderr
        return result.stdout

    def json(self, *args: str, now: str | None = None) -> Any:
        return json.loads(self.ok(*args, "--json", now=now))


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """One workspace, built once: the example campaign and leads, the first round sent."""
    with SmtpTestServer() as smtp:
        cli = Cli(tmp_path_factory.mktemp("prepared"), smtp)
        cli.ok("init")
        cli.ok("campaign", "create", str(EXAMPLES / "campaign.toml"))
        cli.ok("leads", "import", str(EXAMPLES / "leads.csv"), "--product", PRODUCT)
        cli.ok("enroll", "--campaign", CAMPAIGN, now=ENROLLED)
        # REPLYGUARD_PUBLIC_URL stays unset: `audit --config` must find it (below).
        cli.ok("worker", "--once", "--allow-localhost-unsubscribe", now=SENDING)
        yield cli


@pytest.fixture
def cli(prepared: Cli, tmp_path: Path) -> Cli:
    """A copy of the prepared workspace, on the same SMTP server."""
    shutil.copy(prepared.root / "rg.db", tmp_path / "rg.db")
    return Cli(tmp_path, prepared.smtp)


def test_the_audit_passes_through_a_real_smtp_server_and_writes_only_to_the_canary(cli: Cli) -> None:
    prospects = cli.smtp.accepted()
    assert len(prospects) >= 6  # the first round went through this server too
    # (Every prospect row is compared in tests/integration/test_audit.py; two suffice here.)
    before = {e: cli.json("leads", "show", e, now=AUDIT) for e in sorted(_emails(prospects))[:2]}
    result = cli.run("audit", "--campaign", CAMPAIGN, "--canary", CANARY, now=AUDIT)
    assert result.returncode == 0, result.stdout + result.stderr
    for title in ("Reply state", "Queued steps", "Send check", "Retry", "Notice", "OOO"):
        assert title in result.stdout
    assert result.stdout.count("PASS") == 6 and "FAIL" not in result.stdout
    assert "audit run 1: passed" in result.stdout
    # Three canary emails went through the SMTP server, and nothing else.
    new = cli.smtp.accepted()[len(prospects) :]
    assert sorted(r for msg in new for r in msg.rcpt_tos) == [
        "team+rg-audit-1-away@ours.test",
        "team+rg-audit-1-flight@ours.test",
        "team+rg-audit-1-reply@ours.test",
    ]
    assert {e: cli.json("leads", "show", e, now=AUDIT) for e in before} == before
    # Audit threads are listed only on request; the run is in the history.
    assert cli.json("threads", "list", "--state", "all", now=AUDIT) == []
    canary_threads = cli.json("threads", "list", "--state", "all", "--audit", now=AUDIT)
    assert {t["lead"] for t in canary_threads} == {
        "team+rg-audit-1-reply@ours.test",
        "team+rg-audit-1-flight@ours.test",
    }
    [run] = cli.json("audit", "history", now=AUDIT)
    assert run["status"] == "passed" and run["canary"] == CANARY and run["campaign"] == CAMPAIGN
    shown = cli.json("audit", "show", "1", now=AUDIT)
    assert [c["check"] for c in shown["checks"]] == [
        "reply_state", "queued_steps", "send_check", "retry", "notice", "out_of_office",
    ]  # fmt: skip
    assert "audit history" in cli.ok("audit", "history", now=AUDIT)


def test_json_output_and_a_broken_recheck_exit_non_zero(cli: Cli) -> None:
    report = cli.json("audit", "--campaign", CAMPAIGN, "--canary", CANARY, now=AUDIT)
    assert report["status"] == "passed" and len(report["checks"]) == 6
    assert all(c["passed"] and c["evidence"] for c in report["checks"])
    broken = cli.run("audit", "--campaign", CAMPAIGN, "--canary", CANARY, now=AUDIT, broken="recheck-off")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "FAIL" in broken.stdout and "past the re-check" in broken.stdout
    assert "audit run 2: FAILED" in broken.stdout
    [latest, _first] = cli.json("audit", "history", now=AUDIT)
    assert latest["status"] == "failed" and latest["failed"] == ["send_check"]


def test_user_errors_are_one_line(cli: Cli) -> None:
    for args, code, text in [
        (("audit",), 2, "give --campaign NAME"),
        (("audit", "--campaign", "Nope", "--canary", CANARY), 1, "no campaign named 'Nope'"),
        (("audit", "show", "99"), 1, "no audit run 99"),
    ]:
        result = cli.run(*args, now=AUDIT)
        assert result.returncode == code, result.stderr
        assert text in result.stderr and "Traceback" not in result.stderr
    no_canary = cli.run("audit", "--campaign", CAMPAIGN, now=AUDIT)
    assert no_canary.returncode == 1 and "has no canary" in no_canary.stdout


def test_config_names_what_would_fail_in_production(cli: Cli) -> None:
    result = cli.run("audit", "--config", now=AUDIT)
    assert result.returncode == 1, result.stdout
    for text in ("Inbound source", "no IMAP poller reads it", "Unsubscribe URL", "REPLYGUARD_PUBLIC_URL"):
        assert text in result.stdout
    checked = cli.run("audit", "--config", "--campaign", CAMPAIGN, "--json", now=AUDIT)
    assert checked.returncode == 1
    report = json.loads(checked.stdout)
    statuses = {c["check"]: c["status"] for c in report["checks"]}
    assert statuses["inbound_source"] == "fail" and statuses["public_url"] == "fail"
    assert statuses["notice_channel"] == "pass"  # email to the owner through a real SMTP server
    assert statuses["canary"] == "warn"


def _emails(messages: list[Any]) -> set[str]:
    return {r for msg in messages for r in msg.rcpt_tos}
