"""`replyguard threads ...` and `notify` through the real command line (SQLite, Maildir)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
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
    # Recorded by hand, without a subject: the thread carries the conversation's subject (it
    # said None, and the answer went out as "Re: your message").
    [first] = [m for m in ws.emails() if PRIYA in m["To"]]
    assert thread["subject"] == f"Re: {first['Subject']}"
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
    assert len(answers) == 1 and answers[0]["Subject"] == f"Re: {first['Subject']}"
    assert answers[0]["In-Reply-To"] == first["Message-ID"]
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


def test_decisions_and_answers_name_the_version_seen(ws: Workspace, tmp_path: Path) -> None:  # noqa: F811
    """Issue 20: `threads show` prints the version; a decision or an answer that lets email go
    out needs it (no terminal: refused); a stale one is refused with what changed, exit 1."""
    ws.tick("2026-12-07T06:00:00Z", "2026-12-08T06:00:00Z")
    now = "2026-12-08T15:00:00Z"
    record = ("reply", "record", "--lead", PRIYA, "--product", PRODUCT, "--text")
    ws.ok(*record, "Send me pricing next week, please.", now=now)
    [thread] = ws.json("threads", "list", now=now)
    tid = str(thread["id"])
    seen = ws.json("threads", "show", tid, now=now)
    assert f"Version: {seen['version']}" in ws.ok("threads", "show", tid, now=now)
    assert "--seen" in ws.fails("threads", "resolve", tid, "--action", "resume", code=1, now=now)
    assert "--seen" in ws.fails("threads", "send", tid, code=1, now=now)
    assert "probable" in ws.fails("threads", "resolve", tid, "--action", "confirm", code=1, now=now)

    # A second reply the person never saw: the resume and the answer on the version before it
    # are refused with what it said; nothing goes out, the lead stays replied.
    ws.ok(*record, "We signed with a competitor; do not follow up.", now=now)
    stale = ("--seen", str(seen["version"]))
    refused = ws.fails("threads", "resolve", tid, "--action", "resume", *stale, code=1, now=now)
    assert "changed since you saw it" in refused and "do not follow up" in refused
    refused = ws.fails("threads", "send", tid, *stale, code=1, now=now)
    assert "changed since you saw it" in refused
    assert ws.lead(PRIYA)["lead"]["reply_state"] == "replied"
    assert not [m for m in ws.emails() if m["Subject"].startswith("Re: ") and "Priya" in m.get_content()]

    # On the version they see now: the draft of that version goes out, once; the thread then
    # waits on them, and a second answer to the same version is refused with who answered.
    now_seen = ws.json("threads", "show", tid, now=now)
    current = ("--seen", str(now_seen["version"]))
    ws.ok("threads", "send", tid, *current, "--by", "ana", now=now)
    [answer] = [m for m in ws.emails() if m["Subject"].startswith("Re: ")]
    assert answer.get_content().replace("\r\n", "\n").strip() == now_seen["draft"]["body"].strip()
    after = ws.json("threads", "show", tid, now=now)
    assert after["waiting_on_them"] and "send_reply" not in after["actions"]
    body = tmp_path / "second.txt"
    body.write_text("Also: the invoice.\n", encoding="utf-8")
    second = ws.fails("threads", "send", tid, *current, "--body-file", str(body), code=1, now=now)
    assert "ana answered at 15:00" in second
    ws.ok(
        "threads",
        "send",
        tid,
        "--seen",
        str(after["version"]),
        "--body-file",
        str(body),
        "--another",
        now=now,
    )
    assert len([m for m in ws.emails() if m["Subject"].startswith("Re: ")]) == 2

    # A stop, then a resume: refused, it is a restart, confirmed with --yes.
    latest = ("--seen", str(ws.json("threads", "show", tid, now=now)["version"]))
    ws.ok("threads", "resolve", tid, "--action", "stop", *latest, now=now)
    latest = ("--seen", str(ws.json("threads", "show", tid, now=now)["version"]))
    assert "restart" in ws.fails("threads", "resolve", tid, "--action", "resume", *latest, code=1, now=now)
    assert "--yes" in ws.fails("threads", "resolve", tid, "--action", "restart", *latest, code=1, now=now)
    restarted = ws.ok("threads", "resolve", tid, "--action", "restart", "--yes", *latest, now=now)
    assert "restarted" in restarted and ws.lead(PRIYA)["lead"]["reply_state"] == "active"


def on_a_terminal(ws: Workspace, answer: str, *args: str, now: str) -> tuple[int, str]:  # noqa: F811
    """Run the command with a real terminal as its stdin (a pty), answering `answer`."""
    leader, follower = pty.openpty()
    command = [sys.executable, "-c", "from replyguard.entrypoints.cli.app import main; main()"]
    proc = subprocess.Popen(
        [*command, "--db", ws.db, "--now", now, *args],
        env=ws.env(),
        cwd=ws.root,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    os.close(follower)
    os.write(leader, f"{answer}\n".encode())
    out, _ = proc.communicate(timeout=120)
    os.close(leader)
    return proc.returncode, out


def test_on_a_terminal_the_newest_message_is_shown_and_asked(ws: Workspace) -> None:  # noqa: F811
    ws.tick("2026-12-07T06:00:00Z", "2026-12-08T06:00:00Z")
    now = "2026-12-08T15:00:00Z"
    record = ("reply", "record", "--lead", PRIYA, "--product", PRODUCT, "--text")
    ws.ok(*record, "Send me pricing next week, please.", now=now)
    ws.ok(*record, "Actually, we chose another vendor.", now=now)
    [thread] = ws.json("threads", "list", now=now)
    resume = ("threads", "resolve", str(thread["id"]), "--action", "resume", "--by", "dana")
    code, out = on_a_terminal(ws, "n", *resume, now=now)
    assert code == 1 and "we chose another vendor" in out and "nothing was done" in out, out
    assert ws.lead(PRIYA)["lead"]["reply_state"] == "replied"
    code, out = on_a_terminal(ws, "y", *resume, now=now)
    assert code == 0 and "we chose another vendor" in out and "resumed" in out, out
    assert ws.lead(PRIYA)["lead"]["reply_state"] == "active"
