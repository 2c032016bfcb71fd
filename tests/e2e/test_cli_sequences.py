"""The sequence commands through the real CLI (issue 8): campaign update/list, mailbox
list/set/resume, steps failed/resend/skip, and the errors a person sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_cli import CAMPAIGN, ENROLLED_AT, EXAMPLES, PRODUCT, Workspace
from tests.support.cli import Ran


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.ok("init")
    workspace.ok("campaign", "create", str(EXAMPLES / "campaign.toml"))
    workspace.ok("leads", "import", str(EXAMPLES / "leads.csv"), "--product", PRODUCT)
    workspace.ok("enroll", "--campaign", CAMPAIGN, now=ENROLLED_AT)
    return workspace


def _answer(ws: Workspace, answer: str, *args: str) -> Ran:
    return ws.run(*args, input=answer)


def test_campaign_create_says_which_mailbox_settings_apply(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    ws.ok("init")
    out = ws.ok("campaign", "create", str(EXAMPLES / "campaign.toml"))
    assert "sends as Dana Whitfield <dana@northwind-analytics.test>, at most 150 a day" in out
    # The same mailbox with another cap: refused, with the way to change the mailbox.
    other = (EXAMPLES / "campaign.toml").read_text(encoding="utf-8")
    other = other.replace("Q1 reporting outreach", "Second", 1).replace("daily_cap = 150", "daily_cap = 300")
    (ws.root / "second.toml").write_text(other, encoding="utf-8")
    stderr = ws.fails("campaign", "create", "second.toml", code=2)
    assert "the mailbox dana@northwind-analytics.test has 150" in stderr
    assert "replyguard mailbox set dana@northwind-analytics.test --daily-cap 300" in stderr
    ws.ok("mailbox", "set", "dana@northwind-analytics.test", "--daily-cap", "300")
    ws.ok("campaign", "create", "second.toml")
    [mailbox] = ws.json("mailbox", "list")
    assert (mailbox["daily_cap"], mailbox["campaigns"]) == (300, [CAMPAIGN, "Second"])


def test_campaign_update_shows_the_differences_and_asks(ws: Workspace) -> None:
    edited = (
        (EXAMPLES / "campaign.toml").read_text(encoding="utf-8").replace('end = "17:00"', 'end = "18:00"')
    )
    edited = edited.replace("last note from me", "one last note from me")
    (ws.root / "edited.toml").write_text(edited, encoding="utf-8")
    declined = _answer(ws, "n\n", "campaign", "update", "edited.toml")
    assert declined.returncode == 1 and "nothing changed" in declined.stderr
    assert "window: mon,tue,wed,thu,fri 09:00-17:00 -> mon,tue,wed,thu,fri 09:00-18:00" in declined.stdout
    assert "step 3 body" in declined.stdout
    [campaign] = ws.json("campaign", "list")
    assert campaign["window"]["end"] == "17:00"  # declined: nothing written
    out = ws.ok("campaign", "update", "edited.toml", "--yes")
    assert "8 queued emails rendered again" in out
    [campaign] = ws.json("campaign", "list")
    assert campaign["window"]["end"] == "18:00"
    assert campaign["enrollments"] == {"active": 8} and campaign["step_states"]["awaiting_approval"] == 8
    assert "nothing to change" in ws.ok("campaign", "update", "edited.toml")


def test_failed_steps_are_listed_and_decided_by_a_person(ws: Workspace) -> None:
    # An SMTP relay that is not there: every attempt fails until the retries run out.
    priya = "priya@fernhollow.test"
    ws.tick("2026-12-07T06:00:00Z", "2026-12-09T06:00:00Z", 0.5, transport="smtp://127.0.0.1:9?timeout=1")
    failed = ws.json("steps", "failed")
    assert priya in {row["lead"] for row in failed}
    assert all(row["state"] == "failed" and row["position"] == 1 for row in failed)
    assert ws.lead(priya)["lead"]["reply_state"] == "held"
    out = ws.ok("steps", "skip", "--campaign", CAMPAIGN, "--lead", priya)
    assert "step 1 skipped; the lead is active again" in out
    other = failed[-1]["lead"] if failed[-1]["lead"] != priya else failed[0]["lead"]
    assert "step 1 scheduled" in ws.ok("steps", "resend", "--campaign", CAMPAIGN, "--lead", other)
    stderr = ws.fails("steps", "resend", "--campaign", CAMPAIGN, "--lead", priya, code=1)
    assert "has no step that is failed" in stderr
