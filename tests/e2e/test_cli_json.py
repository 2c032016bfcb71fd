"""`--json` on every command that changes something, and the list commands: the command's
result as JSON on stdout (one object for a change, a list for a list) and nothing else there,
so that a script can read it whatever the command also says on stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.test_cli import (  # noqa: F401 - fixtures
    CAMPAIGN,
    ENROLLED_AT,
    EXAMPLES,
    PRODUCT,
    Workspace,
    prepared,
    ws,
)

PRIYA = "priya@fernhollow.test"
MARC = "marc.keller@brightline-logistics.test"
MAILBOX = "dana@northwind-analytics.test"
NOW = "2026-12-08T15:00:00Z"


def one_object(cli: Workspace, *args: str, now: str | None = NOW, input: str = "") -> dict[str, Any]:
    """Run with --json: exit 0, and stdout is exactly one JSON object."""
    result = cli.run(*args, "--json", now=now, input=input)
    assert result.returncode == 0, f"{args}: {result.returncode}\n{result.stderr}"
    value = json.loads(result.stdout)  # the whole of stdout: anything else there fails here
    assert isinstance(value, dict), result.stdout
    return value


def test_setting_up_prints_one_object_per_command(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)  # noqa: F811 - a fresh one, not the prepared fixture
    assert one_object(ws, "init")["workspace"] == "default"
    created = one_object(ws, "campaign", "create", str(EXAMPLES / "campaign.toml"))
    assert (created["name"], created["product"], created["steps"], created["created"]) == (
        CAMPAIGN,
        PRODUCT,
        3,
        True,
    )
    imported = one_object(ws, "leads", "import", str(EXAMPLES / "leads.csv"), "--product", PRODUCT)
    assert (imported["created"], imported["updated"], imported["skipped"]) == (8, 0, 0)
    enrolled = one_object(ws, "enroll", "--campaign", CAMPAIGN, now=ENROLLED_AT)
    assert (enrolled["enrolled"], enrolled["skipped"]) == (8, [])
    approved = one_object(ws, "steps", "approve", "--campaign", CAMPAIGN, "--step", "3")
    assert approved["approved"] == 8


def test_a_product_is_created_only_when_asked(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)  # noqa: F811 - a fresh one, not the prepared fixture
    ws.ok("init")
    stderr = ws.fails("leads", "import", str(EXAMPLES / "leads.csv"), "--product", "Typo", code=1)
    assert "no product named 'Typo' (known: none)" in stderr and "--create-product" in stderr
    assert ws.json("products", "list") == []  # nothing was created
    imported = one_object(
        ws, "leads", "import", str(EXAMPLES / "leads.csv"), "--product", "New one", "--create-product"
    )
    assert imported["created"] == 8
    [product] = ws.json("products", "list")
    assert (product["name"], product["leads"], product["lead_states"]) == ("New one", 8, {"active": 8})


def test_decisions_print_one_object_each(ws: Workspace, tmp_path: Path) -> None:  # noqa: F811
    stopped = one_object(ws, "leads", "stop", MARC, "--product", PRODUCT, "--why", "asked by phone")
    assert (stopped["before"], stopped["after"], stopped["cancelled_steps"]) == ("active", "stopped", 3)
    resumed = one_object(ws, "leads", "resume", MARC, "--product", PRODUCT)
    assert (resumed["after"], len(resumed["planned"])) == ("active", 3)
    skipped = one_object(ws, "steps", "skip", "--campaign", CAMPAIGN, "--lead", MARC, "--step", "2")
    assert (skipped["position"], skipped["state"]) == (2, "skipped")
    changed = one_object(ws, "mailbox", "set", MAILBOX, "--daily-cap", "120")
    assert changed["changes"] == {"daily_cap": {"before": 150, "after": 120}}
    limited = one_object(ws, "mailbox", "set", MAILBOX, "--max-connections", "2", "--per-minute", "30")
    assert limited["changes"] == {
        "max_connections": {"before": None, "after": 2},
        "per_minute": {"before": None, "after": 30},
    }
    unlimited = one_object(ws, "mailbox", "set", MAILBOX, "--per-minute", "0")  # 0: no limit
    assert unlimited["changes"] == {"per_minute": {"before": 30, "after": None}}
    assert one_object(ws, "mailbox", "resume", MAILBOX)["resumed"] is False

    edited = (
        (EXAMPLES / "campaign.toml").read_text(encoding="utf-8").replace('end = "17:00"', 'end = "18:00"')
    )
    (tmp_path / "edited.toml").write_text(
        edited.replace("daily_cap = 150", "daily_cap = 120"), encoding="utf-8"
    )
    # Without --yes the differences and the question go to stderr: stdout is for the JSON.
    declined = ws.run("campaign", "update", str(tmp_path / "edited.toml"), "--json", input="n\n")
    assert (declined.returncode, declined.stdout) == (1, "")
    assert "window: mon,tue,wed,thu,fri 09:00-17:00 -> mon,tue,wed,thu,fri 09:00-18:00" in declined.stderr
    updated = one_object(ws, "campaign", "update", str(tmp_path / "edited.toml"), "--yes")
    assert updated["applied"] is True and updated["changes"][0]["after"].endswith("09:00-18:00")
    unchanged = one_object(ws, "campaign", "update", str(tmp_path / "edited.toml"))
    assert (unchanged["applied"], unchanged["changes"]) == (False, [])

    ws.tick(ENROLLED_AT, "2026-12-08T06:00:00Z")
    one_object(ws, "reply", "record", "--lead", PRIYA, "--product", PRODUCT, "--text", "What does it cost?")
    [thread] = ws.json("threads", "list", now=NOW)
    tid = str(thread["id"])
    added = ws.run("users", "add", "dana@northwind-analytics.test", input="correct horse battery\n")
    assert added.returncode == 0, added.stderr  # a thread is assigned to a user of the workspace only
    assigned = one_object(
        ws, "threads", "assign", tid, "--to", "Dana@northwind-analytics.test", "--by", "dana"
    )
    assert assigned["action"] == "assign"
    assert (
        one_object(ws, "threads", "snooze", tid, "--until", "2026-12-09", "--by", "dana")["action"]
        == "snooze"
    )
    answer = tmp_path / "answer.txt"
    answer.write_text("Hi Priya,\n\n40 EUR a seat.\n\nDana\n", encoding="utf-8")
    seen = str(ws.json("threads", "show", tid, now=NOW)["version"])  # what the person saw
    sent = one_object(ws, "threads", "send", tid, "--body-file", str(answer), "--by", "dana", "--seen", seen)
    assert (sent["thread_id"], sent["state"], sent["to"], sent["duplicate"]) == (
        int(tid),
        "sent",
        PRIYA,
        False,
    )
    assert one_object(ws, "threads", "done", tid, "--by", "dana")["action"] == "done"


def test_senders_decisions_print_one_object(ws: Workspace) -> None:  # noqa: F811
    ws.tick(ENROLLED_AT, "2026-12-07T23:00:00Z")
    first = next(m for m in ws.emails() if m["To"].addresses[0].addr_spec == PRIYA)
    stranger = (
        f"From: helpdesk@elsewhere.test\nTo: {MAILBOX}\nSubject: Re: {first['Subject']}\n"
        f"Message-ID: <h1@elsewhere.test>\nIn-Reply-To: {first['Message-ID']}\n\nPlease unsubscribe me.\n"
    )
    (ws.root / "stranger.eml").write_text(stranger)
    ingested = one_object(ws, "ingest", str(ws.root / "stranger.eml"))
    [message] = ingested["messages"]
    assert message["origin"] == str(ws.root / "stranger.eml")
    [pending] = ws.json("senders", "list")
    confirmed = one_object(ws, "senders", "confirm", str(pending["id"]), "--by", MAILBOX)
    assert (confirmed["confirmation"]["state"], confirmed["lead_state"]) == ("confirmed", "unsubscribed")
    # Deciding again changes nothing, and says what the decision was.
    again = one_object(ws, "senders", "reject", str(pending["id"]), "--by", MAILBOX)
    assert (again["confirmation"]["state"], again["lead_state"]) == ("confirmed", None)
    [kept] = [m for m in ws.json("inbound", "list", "--status", "all") if m["id"] == message["inbound_id"]]
    assert kept["source"].startswith("file:") and kept["source"].endswith("stranger.eml")


def test_accounts_print_one_object(ws: Workspace) -> None:  # noqa: F811
    user = one_object(ws, "users", "add", "Ann@Alpha.test", "--name", "Ann", input="correct horse battery\n")
    assert (user["email"], user["name"], user["workspace"]) == ("ann@alpha.test", "Ann", "default")
    token = one_object(ws, "tokens", "create", "ci")
    assert token["token"].startswith("rg_") and token["token"].startswith(token["prefix"])
    revoked = one_object(ws, "tokens", "revoke", str(token["id"]))
    assert revoked["id"] == token["id"] and revoked["revoked_at"] is not None


def test_leads_and_products_are_listed_as_json(ws: Workspace) -> None:  # noqa: F811
    leads = ws.json("leads", "list")
    assert len(leads) == 8 and {lead["product"] for lead in leads} == {PRODUCT}
    assert [lead["email"] for lead in leads] == sorted(lead["email"] for lead in leads)
    priya = next(lead for lead in leads if lead["email"] == PRIYA)
    assert priya["steps"] == {"awaiting_approval": 1, "scheduled": 2}
    ws.ok("reply", "record", "--lead", PRIYA, "--product", PRODUCT, now=NOW)
    [replied] = ws.json("leads", "list", "--product", PRODUCT, "--state", "replied")
    assert (replied["email"], replied["reply_state"], replied["steps"]) == (
        PRIYA,
        "replied",
        {"cancelled": 3},
    )
    assert ws.json("leads", "list", "--state", "bounced") == []
    products = {p["name"]: p for p in ws.json("products", "list")}
    assert products[PRODUCT]["campaigns"] == [CAMPAIGN]
    assert products[PRODUCT]["lead_states"] == {"active": 7, "replied": 1}
    assert products["Northwind Forecasting"]["leads"] == 0  # created by its campaign, no leads yet
    table = ws.ok("leads", "list", "--state", "replied")
    assert PRIYA in table and "marc.keller" not in table
