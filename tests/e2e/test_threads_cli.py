"""`replyguard threads ...` and `notify` through the real command line (SQLite, Maildir)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_cli import CAMPAIGN, PRODUCT, Workspace, prepared, ws  # noqa: F401 - fixtures

PRIYA = "priya@fernhollow.test"
FIELDS = {
    "id", "product", "campaign", "lead", "subject", "kind", "intent",
    "recommended_next_step", "other_active_products", "crossed", "state",
}  # fmt: skip


def test_threads_list_show_send_resolve_and_notify(ws: Workspace, tmp_path: Path) -> None:  # noqa: F811
    ws.tick("2026-12-07T06:00:00Z", "2026-12-08T06:00:00Z")
    now = "2026-12-08T15:00:00Z"
    ws.ok(
        "reply", "record", "--lead", PRIYA, "--product", PRODUCT, "--text", "How much does it cost?", now=now
    )
    [thread] = ws.json("threads", "list", now=now)
    assert set(thread) >= FIELDS
    assert thread["product"] == PRODUCT and thread["campaign"] == CAMPAIGN and thread["lead"] == PRIYA
    assert thread["intent"] == "question" and thread["recommended_next_step"].startswith("Answer the pricing")
    shown = ws.ok("threads", "show", str(thread["id"]), now=now)
    assert "Draft" in shown and "threads send" in shown
    detail = ws.json("threads", "show", str(thread["id"]), now=now)
    assert detail["id"] == thread["id"] and detail["draft"]["body"] and detail["conversation"]
    assert ws.json("threads", "list", "--product", PRODUCT, now=now) == [thread]
    assert ws.json("threads", "list", "--product", "Northwind Forecasting", now=now) == []
    body = tmp_path / "answer.txt"
    body.write_text("Hi Priya,\n\n40 EUR a seat.\n\nDana\n", encoding="utf-8")
    seen = str(detail["version"])
    answer = ("threads", "send", str(thread["id"]), "--body-file", str(body), "--seen", seen, "--by", "dana")
    sent = ws.ok(*answer, now=now)
    again = ws.ok(*answer, now=now)
    assert "sent to priya@fernhollow.test" in sent and "nothing sent again" in again
    answers = [m for m in ws.emails() if "40 EUR" in m.get_content()]
    assert len(answers) == 1 and answers[0]["Subject"].startswith("Re: ")
    assert ws.lead(PRIYA)["lead"]["reply_state"] == "replied"  # sending never resumes
    notified = ws.json("notify", "--once", now=now)
    assert notified["delivered"] == 1
    owner_mail = [m for m in ws.emails() if m["Subject"].startswith("[replyguard]")]
    assert len(owner_mail) == 1 and f"/threads/{thread['id']}" in owner_mail[0].get_content()
    seen = str(ws.json("threads", "show", str(thread["id"]), now=now)["version"])
    resumed = ws.ok(
        "threads", "resolve", str(thread["id"]), "--action", "resume", "--seen", seen, "--by", "dana", now=now
    )
    assert "resumed; next: step 2" in resumed
    ws.ok("threads", "done", str(thread["id"]), now=now)
    assert ws.json("threads", "list", now=now) == []
    assert "unknown action" in ws.fails(
        "threads", "resolve", str(thread["id"]), "--action", "fly", code=2, now=now
    )
