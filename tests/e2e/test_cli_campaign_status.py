"""`campaign pause|resume|archive` from the real CLI: a paused campaign's worker run sends
nothing, `campaign list` says so, and archiving cancels the queue."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_cli import CAMPAIGN, ENROLLED_AT, EXAMPLES, PRODUCT, Workspace


def _sent(ws: Workspace) -> int:
    return sum(1 for p in ws.outbox.rglob("*") if p.is_file())


def test_pause_resume_and_archive_from_the_command_line(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.ok("init")
    ws.ok("campaign", "create", str(EXAMPLES / "campaign.toml"))
    ws.ok("leads", "import", str(EXAMPLES / "leads.csv"), "--product", PRODUCT)
    ws.ok("enroll", "--campaign", CAMPAIGN, now=ENROLLED_AT)
    assert "paused" in ws.ok("campaign", "pause", CAMPAIGN)
    assert f"{CAMPAIGN} (paused)" in ws.ok("campaign", "list")
    ws.ok("worker", "--once", now="2026-12-09T15:00:00Z")
    assert _sent(ws) == 0
    assert "paused already" in ws.fails("campaign", "pause", CAMPAIGN, code=1)
    ws.ok("campaign", "resume", CAMPAIGN)
    ws.ok("worker", "--once", now="2026-12-09T15:00:00Z")
    assert _sent(ws) > 0
    assert "queued emails cancelled" in ws.ok("campaign", "archive", CAMPAIGN, "--yes")
    assert "archived" in ws.fails("campaign", "resume", CAMPAIGN, code=1)
