"""End to end through the real `replyguard` command line, on a SQLite file and a Maildir outbox.

One prepared workspace (init, both example campaigns, the example leads imported twice,
enrolled on Monday 2026-12-07 06:00 UTC) is built once per module; each test works on a copy.
Simulated time comes from `--now`; the worker runs at many instants (`Workspace.tick`). Each
call is the real entry point run in this process (tests/support/cli.py): the interpreter's
start-up is not what these tests are about.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.support.cli import Ran, run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CAMPAIGN = "Q1 reporting outreach"
PRODUCT = "Northwind Reports"
FIRST_SUBJECT = "Quick question about {company}'s reporting"
ENROLLED_AT = "2026-12-07T06:00:00Z"  # a Monday, before any window opens
NEW_YORK = ZoneInfo("America/New_York")


@dataclass
class Workspace:
    root: Path

    @property
    def db(self) -> str:
        return f"sqlite:///{self.root / 'replyguard.db'}"

    @property
    def outbox(self) -> Path:
        return self.root / "outbox"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REPLYGUARD_")}
        env["REPLYGUARD_TRANSPORT"] = f"maildir:{self.outbox}"
        env["COLUMNS"] = "1000"  # rich wraps at 80 columns when not on a terminal
        env["PYTHONWARNINGS"] = "error::DeprecationWarning:replyguard"
        return env

    def run(self, *args: str, now: str | None = None, db: str | None = None, input: str | bytes = "") -> Ran:
        """The real command line, in this process (tests/support/cli.py)."""
        prefix = ["--db", db or self.db] + (["--now", now] if now else [])
        return run_cli([*prefix, *args], env=self.env(), cwd=self.root, input=input)

    def ok(self, *args: str, now: str | None = None) -> str:
        result = self.run(*args, now=now)
        assert result.returncode == 0, f"{args} exited {result.returncode}: {result.stderr}"
        assert "Traceback" not in result.stderr
        return result.stdout

    def fails(self, *args: str, code: int, now: str | None = None, db: str | None = None) -> str:
        result = self.run(*args, now=now, db=db)
        assert result.returncode == code, (
            f"{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
        )
        assert "Traceback" not in result.stderr, result.stderr
        assert "error" in result.stderr.lower() or result.stderr.strip(), result.stderr
        return result.stderr

    def json(self, *args: str, now: str | None = None) -> Any:
        return json.loads(self.ok(*args, "--json", now=now))

    def lead(self, email: str) -> dict[str, Any]:
        summary = self.json("leads", "show", email)
        (product,) = [p for p in summary["products"] if p["product"] == PRODUCT]
        return {**summary, "lead": product}

    def tick(self, start: str, end: str, hours: float = 2, *, transport: str | None = None) -> None:
        """`replyguard worker --once` every `hours` from `start` to `end` (simulated time)."""
        now, last = instant(start), instant(end)
        while now <= last:
            # A transport given here is a relay that is not there: where the unsubscribe links
            # point does not matter, so the refusal of localhost links over SMTP is waived.
            args = ["--transport", transport] if transport else []
            args += ["worker", "--once"] + ["--allow-localhost-unsubscribe"] * bool(transport)
            result = self.run(*args, now=now.isoformat())
            assert result.returncode == 0, f"worker tick at {now.isoformat()}: {result.stderr}"
            assert "Traceback" not in result.stderr
            now += timedelta(hours=hours)

    def emails(self, sender: str | None = None) -> list[EmailMessage]:
        found = []
        for path in sorted((self.outbox / "new").glob("*.eml")):
            msg = message_from_bytes(path.read_bytes(), policy=policy.default)
            assert isinstance(msg, EmailMessage)
            if sender is None or msg["From"].addresses[0].addr_spec == sender:
                found.append(msg)
        return sorted(found, key=sent_at)


def sent_at(msg: EmailMessage) -> datetime:
    return parsedate_to_datetime(msg["Date"])


def recipient(msg: EmailMessage) -> str:
    return str(msg["To"].addresses[0].addr_spec)


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def example_leads() -> dict[str, dict[str, str]]:
    with (EXAMPLES / "leads.csv").open(encoding="utf-8", newline="") as handle:
        return {row["email"]: row for row in csv.DictReader(handle)}


def zone_of(email: str) -> ZoneInfo:
    return ZoneInfo(example_leads()[email]["timezone"] or "America/New_York")


def assert_inside_weekday_window(msg: EmailMessage, zone: ZoneInfo) -> None:
    local = sent_at(msg).astimezone(zone)
    assert local.weekday() < 5, f"{recipient(msg)} got an email on {local:%A %Y-%m-%d %H:%M}"
    assert time(9) <= local.time() < time(17), f"{recipient(msg)} got an email at {local:%H:%M} local"


# ---------------------------------------------------------------- the prepared workspace
@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ws = Workspace(tmp_path_factory.mktemp("prepared"))
    outputs = {
        "init": ws.ok("init"),
        "create": ws.ok("campaign", "create", str(EXAMPLES / "campaign.toml")),
        "create2": ws.ok("campaign", "create", str(EXAMPLES / "campaign-forecasting.toml")),
        "import": ws.ok("leads", "import", str(EXAMPLES / "leads.csv"), "--product", PRODUCT),
        "reimport": ws.ok("leads", "import", str(EXAMPLES / "leads.csv"), "--product", PRODUCT),
        "enroll": ws.ok("enroll", "--campaign", CAMPAIGN, now=ENROLLED_AT),
    }
    return {"root": ws.root, "outputs": outputs}


@pytest.fixture
def ws(prepared: dict[str, Any], tmp_path: Path) -> Iterator[Workspace]:
    root = tmp_path / "ws"
    shutil.copytree(prepared["root"], root)
    yield Workspace(root)


def test_setup_and_reimport_without_duplicates(prepared: dict[str, Any], ws: Workspace) -> None:
    out = prepared["outputs"]
    assert "Q1 reporting outreach for Northwind Reports: 3 steps, created" in out["create"]
    assert "Forecasting pilot for Northwind Forecasting: 2 steps, created" in out["create2"]
    assert "8 created, 0 updated, 0 rows skipped" in out["import"]
    assert "0 created, 8 updated, 0 rows skipped" in out["reimport"]
    assert "8 enrolled, 0 already enrolled, 0 skipped" in out["enroll"]
    # The alternate address finds the same contact, with one lead and one set of steps.
    priya = ws.lead("priya.raman.home@gmail-like.test")
    assert priya["email"] == "priya@fernhollow.test"
    assert priya["alternates"] == ["priya.raman.home@gmail-like.test"]
    assert [p["product"] for p in priya["products"]] == [PRODUCT]
    assert priya["lead"]["reply_state"] == "active"
    assert priya["lead"]["steps"]["queued"] == 3
    assert priya["lead"]["steps"]["awaiting_approval"] == 1
    # Monday 09:00 in Los Angeles.
    assert priya["lead"]["next_due_at"] == "2026-12-07T17:00:00+00:00"


# ---------------------------------------------------------------- two simulated weeks
def test_two_weeks_windows_threads_approval_reply_and_pause(ws: Workspace) -> None:
    leads = example_leads()
    reply_at = "2026-12-08T20:00:00Z"
    ws.tick(ENROLLED_AT, "2026-12-08T18:00:00Z")
    first_round = ws.emails()
    assert sorted(recipient(m) for m in first_round) == sorted(leads)  # everyone got step 1

    replied = ws.json(
        "reply", "record", "--lead", "priya@fernhollow.test", "--product", PRODUCT, now=reply_at
    )
    assert replied["lead_state"] == "replied"
    assert replied["cancelled_steps"] == 2  # step 2 (scheduled) and step 3 (awaiting approval)
    assert replied["in_flight"] == 0
    away = ws.json(
        "reply",
        "record",
        "--lead",
        "marc.keller@brightline-logistics.test",
        "--product",
        PRODUCT,
        "--kind",
        "out_of_office",
        "--until",
        "2026-12-16",
        now=reply_at,
    )
    assert away["lead_state"] == "out_of_office"
    assert away["cancelled_steps"] == 0
    assert away["rescheduled_steps"] == 2
    priya = ws.lead("priya@fernhollow.test")["lead"]
    assert priya["reply_state"] == "replied"
    assert priya["steps"]["queued"] == 0
    assert priya["steps"]["sent"] == 1
    assert priya["last_reply_id"] == replied["reply_id"]

    ws.tick("2026-12-08T20:00:00Z", "2026-12-16T22:00:00Z")
    before_approval = ws.emails()
    per_lead = Counter(recipient(m) for m in before_approval)
    assert per_lead["priya@fernhollow.test"] == 1
    assert max(per_lead.values()) == 2, "step 3 went out before anyone approved it"
    assert all(m["References"] is None or len(m["References"].split()) == 1 for m in before_approval)

    approved_at = "2026-12-16T22:00:00Z"
    assert "7 steps approved" in ws.ok("steps", "approve", "--campaign", CAMPAIGN, now=approved_at)
    ws.tick("2026-12-17T00:00:00Z", "2026-12-22T22:00:00Z")

    emails = ws.emails()
    assert all(m["From"].addresses[0].addr_spec == "dana@northwind-analytics.test" for m in emails)
    ids = [m["Message-ID"] for m in emails]
    assert len(ids) == len(set(ids)), "a Message-ID was sent twice"
    by_lead: dict[str, list[EmailMessage]] = defaultdict(list)
    for msg in emails:
        assert_inside_weekday_window(msg, zone_of(recipient(msg)))
        by_lead[recipient(msg)].append(msg)

    assert len(by_lead["priya@fernhollow.test"]) == 1
    assert all(sent_at(m) < instant(reply_at) for m in by_lead["priya@fernhollow.test"])
    for email, row in leads.items():
        thread = by_lead[email]
        if email != "priya@fernhollow.test":
            assert len(thread) == 3, (email, [m["Subject"] for m in thread])
        first = thread[0]
        subject = FIRST_SUBJECT.format(company=row["company"])
        assert first["Subject"] == subject
        assert first["In-Reply-To"] is None
        for previous, msg in itertools.pairwise(thread):
            assert msg["Subject"] == f"Re: {subject}"
            assert msg["In-Reply-To"] == previous["Message-ID"]
            assert msg["References"].split()[0] == first["Message-ID"]
            assert msg["References"].split()[-1] == previous["Message-ID"]
        if len(thread) == 3:
            assert sent_at(thread[2]) > instant(approved_at)  # only after the approval
            assert "last note from me" in thread[2].get_content()

    # The out-of-office lead got nothing between the reply and the local morning of its return.
    marc = by_lead["marc.keller@brightline-logistics.test"]
    back = datetime(2026, 12, 16, tzinfo=ZoneInfo("Europe/Zurich"))
    assert sent_at(marc[0]) < instant(reply_at)
    assert all(sent_at(m) >= back for m in marc[1:])
    # Others kept receiving follow-ups while Priya's queue stayed empty.
    assert sum(1 for m in emails if sent_at(m) > instant(reply_at)) >= 6 * 2


def test_reply_from_the_alternate_address_finds_the_lead(ws: Workspace) -> None:
    outcome = ws.json(
        "reply",
        "record",
        "--lead",
        "priya.raman.home@gmail-like.test",
        "--product",
        PRODUCT,
        now="2026-12-07T12:00:00Z",
    )
    assert outcome["lead_state"] == "replied"
    assert outcome["cancelled_steps"] == 3
    priya = ws.lead("priya@fernhollow.test")["lead"]
    assert (priya["reply_state"], priya["steps"]["queued"], priya["steps"]["cancelled"]) == ("replied", 0, 3)
    assert priya["last_reply_id"] == outcome["reply_id"]


# ---------------------------------------------------------------- daily cap
CAP_CAMPAIGN = """
product = "Cap Product"

[campaign]
name = "Cap test"
mailbox = "capper@cap.test"
from_name = "Cap Per"
owner = "capper@cap.test"
timezone = "America/New_York"
send_window = { days = ["mon", "tue", "wed", "thu", "fri"], start = "09:00", end = "17:00" }
daily_cap = 3

[[campaign.steps]]
wait = "0d"
subject = "Hello {{ first_name }}"
body = "Hi {{ first_name }}, one email only."
"""


def test_daily_cap_defers_and_never_drops(ws: Workspace) -> None:
    (ws.root / "cap.toml").write_text(CAP_CAMPAIGN, encoding="utf-8")
    rows = ["email,first_name,timezone"] + [
        f"lead{i}@cap-customer.test,Lead{i},{'Europe/London' if i % 4 == 0 else ''}" for i in range(10)
    ]
    (ws.root / "cap.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    ws.ok("campaign", "create", "cap.toml")
    assert "10 created" in ws.ok("leads", "import", "cap.csv", "--product", "Cap Product")
    assert "10 enrolled" in ws.ok("enroll", "--campaign", "Cap test", now=ENROLLED_AT)
    ws.tick(ENROLLED_AT, "2026-12-14T23:00:00Z")

    emails = ws.emails(sender="capper@cap.test")
    per_day = Counter(sent_at(m).astimezone(NEW_YORK).date() for m in emails)
    assert max(per_day.values()) <= 3, per_day
    assert sorted(recipient(m) for m in emails) == sorted(f"lead{i}@cap-customer.test" for i in range(10))
    assert len(per_day) >= 4  # 10 emails at 3 a day need four weekdays
    assert min(per_day) == date(2026, 12, 7)
    for msg in emails:
        index = int(recipient(msg).split("@")[0].removeprefix("lead"))
        zone = ZoneInfo("Europe/London") if index % 4 == 0 else NEW_YORK
        assert_inside_weekday_window(msg, zone)
    # The other campaign's mailbox is not limited by this one's cap.
    assert len({recipient(m) for m in ws.emails(sender="dana@northwind-analytics.test")}) == 8


# ---------------------------------------------------------------- bad input
def test_bad_campaign_files_are_refused_and_nothing_is_written(ws: Workspace) -> None:
    source = (EXAMPLES / "campaign.toml").read_text(encoding="utf-8")
    (ws.root / "broken.toml").write_text(source.replace("[campaign]", "[campaign", 1), encoding="utf-8")
    unknown = source.replace("Q1 reporting outreach", "Unknown var", 1).replace(
        "Hi {{ first_name }}, just", "Hi {{ favourite_colour }}, just", 1
    )
    (ws.root / "unknown-var.toml").write_text(unknown, encoding="utf-8")
    syntax = source.replace("Q1 reporting outreach", "Bad syntax", 1).replace(
        "Hi {{ first_name }},\n\nhow", "Hi {{ first_name },\n\nhow", 1
    )
    assert "favourite_colour" in unknown
    assert "{{ first_name }," in syntax
    (ws.root / "syntax.toml").write_text(syntax, encoding="utf-8")

    stderr = ws.fails("campaign", "create", "broken.toml", code=2)
    assert "broken.toml" in stderr
    assert "not valid TOML" in stderr
    stderr = ws.fails("campaign", "create", "unknown-var.toml", code=2)
    assert "campaign.steps[2].body" in stderr
    assert "favourite_colour" in stderr
    stderr = ws.fails("campaign", "create", "syntax.toml", code=2)
    assert "campaign.steps[1].body: template syntax error" in stderr

    stderr = ws.fails("enroll", "--campaign", "Unknown var", code=1)
    assert "no campaign named 'Unknown var'" in stderr
    known = stderr.split("(known: ", 1)[1].split(")", 1)[0]
    assert set(known.split(", ")) == {CAMPAIGN, "Forecasting pilot"}  # nothing half-written


def test_sandboxed_template_trick_is_refused_when_the_campaign_is_created(ws: Workspace) -> None:
    source = (EXAMPLES / "campaign.toml").read_text(encoding="utf-8")
    sneaky = source.replace("Q1 reporting outreach", "Sneaky", 1).replace(
        "Hi {{ first_name }},\n\nhow", "Hi {{ first_name.__class__.__mro__ }},\n\nhow", 1
    )
    assert "__mro__" in sneaky
    (ws.root / "sneaky.toml").write_text(sneaky, encoding="utf-8")
    # Every template is tried on a sample lead first: the trick is caught before any enrollment.
    stderr = ws.fails("campaign", "create", "sneaky.toml", code=2)
    assert "campaign.steps[1].body: not allowed in a template" in stderr
    assert "sample lead" in stderr
    assert ws.run("enroll", "--campaign", "Sneaky").returncode == 1  # never created


def test_a_template_failing_for_some_leads_skips_them_with_the_reason(ws: Workspace) -> None:
    source = (EXAMPLES / "campaign.toml").read_text(encoding="utf-8")
    # Fine on the sample lead; a division by zero for a company name of exactly 10 letters.
    fragile = source.replace("Q1 reporting outreach", "Fragile", 1).replace(
        "Hi {{ first_name }},\n\nhow", "Hi {{ first_name }} {{ 100 // (company | length - 10) }},\n\nhow", 1
    )
    (ws.root / "fragile.toml").write_text(fragile, encoding="utf-8")
    ws.ok("campaign", "create", "fragile.toml")
    # Same mailbox as the running example campaign: its leads are mid-sequence there.
    result = ws.run("enroll", "--campaign", "Fragile", now=ENROLLED_AT)
    assert result.returncode == 1, result.stderr  # skipped leads: not done, like skipped rows
    assert "0 enrolled, 0 already enrolled, 8 skipped" in result.stdout
    assert "still mid-sequence in campaign 'Q1 reporting outreach' from the same mailbox" in result.stderr
    result = ws.run("enroll", "--campaign", "Fragile", "--allow-parallel", now=ENROLLED_AT)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert (
        "skipped priya@fernhollow.test: step 1 body: cannot be rendered: ZeroDivisionError" in result.stderr
    )
    assert "7 enrolled, 0 already enrolled, 1 skipped" in result.stdout


def test_bad_csv_rows_are_reported_and_good_rows_imported(ws: Workspace) -> None:
    data = (
        b"email,first_name,last_name,company,title,timezone,alt_emails,owner\r\n"
        b"ok.one@good.test,Olga,One,Good,CEO,Europe/Berlin,,\r\n"  # 2
        b"not-an-email,Bad,Address,Good,CTO,,,\r\n"  # 3
        b"latin@good.test,J\xe9r\xf4me,Latin,Good,CFO,,,\r\n"  # 4: not UTF-8
        b"OK.ONE@good.test,Olga,Again,Good,CEO,,,\r\n"  # 5: duplicate of line 2
        b'crlf@good.test,"Eve\r\nBcc: everyone@good.test",Inject,Good,COO,,,\r\n'  # 6-7
        b"ok.two@good.test,Otto,Two,Good,CIO,Mars/Olympus,,\r\n"  # 8: bad zone
        b"ok.three@good.test,Otto,Three,Good,CIO,,,\r\n"  # 9
    )
    (ws.root / "bad.csv").write_bytes(data)
    result = ws.run("leads", "import", "bad.csv", "--product", PRODUCT)
    assert result.returncode == 1, result.stderr
    assert "2 created, 0 updated, 5 rows skipped" in result.stdout
    errors = {line.split(":")[1]: line for line in result.stderr.splitlines() if line.startswith("bad.csv:")}
    assert sorted(errors, key=int) == ["3", "4", "5", "6", "8"]
    assert "not a valid email address" in errors["3"]
    assert "not valid UTF-8" in errors["4"]
    assert "first on line 2" in errors["5"]
    assert "line break" in errors["6"]
    assert "Mars/Olympus" in errors["8"]

    assert ws.lead("ok.three@good.test")["lead"]["reply_state"] == "active"
    stderr = ws.fails("leads", "show", "crlf@good.test", code=1)
    assert "no contact with address crlf@good.test" in stderr


def test_bad_reply_options_change_nothing(ws: Workspace) -> None:
    base = ("reply", "record", "--lead", "priya@fernhollow.test", "--product", PRODUCT)
    stderr = ws.fails(*base, "--kind", "angry", code=2)
    assert "--kind must be one of human_reply, out_of_office" in stderr
    stderr = ws.fails(*base, "--kind", "out_of_office", "--until", "next tuesday", code=2)
    assert "--until must be a date like" in stderr
    assert "'next tuesday'" in stderr
    priya = ws.lead("priya@fernhollow.test")["lead"]
    assert (priya["reply_state"], priya["steps"]["queued"], priya["last_reply_id"]) == ("active", 3, None)


def test_reply_options_that_cannot_apply_are_refused(ws: Workspace) -> None:
    base = ("reply", "record", "--lead", "priya@fernhollow.test", "--product", PRODUCT)
    now = "2026-12-08T12:00:00Z"
    away = (*base, "--kind", "out_of_office")
    stderr = ws.fails(*away, "--until", "2026-12-07", code=2, now=now)
    assert "--until 2026-12-07 is in the past (today is 2026-12-08)" in stderr
    stderr = ws.fails(*base, "--until", "2026-12-21", code=2, now=now)  # a human reply has no return
    assert "--until applies to --kind out_of_office only" in stderr
    priya = ws.lead("priya@fernhollow.test")["lead"]
    assert (priya["reply_state"], priya["steps"]["queued"], priya["last_reply_id"]) == ("active", 3, None)
    assert ws.json(*away, "--until", "2026-12-09", now=now)["lead_state"] == "out_of_office"
    ws.ok(*away, "--until", "2026-12-08", now=now)  # back today: not in the past


def test_approving_a_step_the_campaign_does_not_have_is_an_error(ws: Workspace) -> None:
    stderr = ws.fails("steps", "approve", "--campaign", CAMPAIGN, "--step", "0", code=1)
    assert f"campaign {CAMPAIGN!r} has no step 0 (its steps: 1, 2, 3)" in stderr
    assert ws.lead("priya@fernhollow.test")["lead"]["steps"]["awaiting_approval"] == 1
    assert "8 steps approved" in ws.ok("steps", "approve", "--campaign", CAMPAIGN, "--step", "3")


def test_names_print_as_they_are(ws: Workspace) -> None:
    odd = "Reports [beta]"
    ws.ok("leads", "import", str(EXAMPLES / "leads.csv"), "--product", odd, "--create-product")
    stopped = ws.ok("leads", "stop", "priya@fernhollow.test", "--product", odd)
    assert "priya@fernhollow.test in Reports [beta]: active -> stopped" in stopped
    shown = ws.ok("leads", "show", "priya@fernhollow.test")
    assert odd in shown and "\\[" not in shown + stopped


def test_bad_global_options(ws: Workspace) -> None:
    stderr = ws.fails("leads", "show", "priya@fernhollow.test", now="garbage", code=2)
    assert "garbage" in stderr
    stderr = ws.fails("leads", "show", "priya@fernhollow.test", db="mysql://root@db/replyguard", code=2)
    assert "unsupported database URL" in stderr
    missing = f"sqlite:///{ws.root / 'no-such-dir' / 'x.db'}"
    stderr = ws.fails("leads", "show", "priya@fernhollow.test", db=missing, code=1)
    assert "no database at" in stderr and "no-such-dir" in stderr


def test_demo_runs_and_shows_a_reply(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    result = ws.run(
        "demo",
        "--examples",
        str(EXAMPLES),
        "--outbox",
        str(tmp_path / "demo-outbox"),
        db=f"sqlite:///{tmp_path / 'demo.db'}",
    )
    assert result.returncode == 0, result.stderr
    assert "replied" in result.stdout
    assert list((tmp_path / "demo-outbox" / "new").glob("*.eml"))
    # It ends with the open Reply Rescue threads: the reply, with its intent and next step.
    rescue = result.stdout[result.stdout.index("Reply Rescue: open threads") :]
    assert "priya@fernhollow.test" in rescue and "interested" in rescue
    assert "Propose two times this week." in rescue and "open" in rescue
    # The owner hears of the reply when it lands, and a person decides Priya's other product:
    # nothing more reaches her after her reply, in either sequence.
    import email
    from email.utils import parsedate_to_datetime

    replied_at = datetime(2026, 12, 8, 16, 0, tzinfo=UTC)
    mails = [
        email.message_from_bytes(p.read_bytes()) for p in (tmp_path / "demo-outbox" / "new").glob("*.eml")
    ]
    notices = [m for m in mails if m["To"] and "dana@northwind-analytics.test" in m["To"]]
    assert [parsedate_to_datetime(m["Date"]) for m in notices] == [replied_at], result.stdout
    assert "the campaign owner is told: 1 notice(s) delivered" in result.stdout
    assert "paused until 2027-01-04: Northwind Forecasting" in result.stdout
    to_priya = [parsedate_to_datetime(m["Date"]) for m in mails if "priya@fernhollow.test" in (m["To"] or "")]
    assert to_priya and max(to_priya) < replied_at, sorted(to_priya)
    # She asked for Thursday: the draft follows her, instead of offering Tuesday.
    shown = ws.run("threads", "show", "1", "--json", db=f"sqlite:///{tmp_path / 'demo.db'}")
    assert shown.returncode == 0, shown.stderr
    body = json.loads(shown.stdout)["draft"]["body"]
    assert "Thursday works for me" in body and "Tuesday" not in body, body


def test_ingest_mbox_maildir_and_stdin_through_the_cli(ws: Workspace) -> None:
    ws.tick(ENROLLED_AT, "2026-12-07T23:00:00Z")
    first = next(m for m in ws.emails() if recipient(m) == "priya@fernhollow.test")
    reply = (
        f"From: Priya Raman <priya@fernhollow.test>\nTo: dana@northwind-analytics.test\n"
        f"Subject: Re: {first['Subject']}\nMessage-ID: <r1@fernhollow.test>\n"
        f"In-Reply-To: {first['Message-ID']}\n\nLet's talk Thursday.\n"
    )
    stranger = "From: who@nowhere.test\nSubject: hello\nMessage-ID: <s1@nowhere.test>\n\nHi\n"
    mbox = ws.root / "in.mbox"
    mbox.write_text(f"From x Mon Dec  7 10:00:00 2026\n{reply}\nFrom y Mon Dec  7 10:00:00 2026\n{stranger}")
    maildir = ws.root / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True)
    (maildir / "new" / "1.eml").write_text(reply)  # the same reply again: one effect
    result = ws.json("ingest", str(mbox), str(maildir), now="2026-12-08T12:00:00Z")
    assert result["counts"] == {"matched": 1, "unmatched": 1, "duplicate": 1}
    assert ws.lead("priya@fernhollow.test")["lead"]["reply_state"] == "replied"
    piped = ws.run("ingest", "-", "--json", input=b"\x00\xff garbage")
    assert piped.returncode == 0, piped.stderr
    unmatched = ws.json("inbound", "list", "--status", "unmatched")
    assert [item["message_id"] for item in unmatched] == ["<s1@nowhere.test>"]
    missing = ws.fails("ingest", str(ws.root / "nope.eml"), code=2)
    assert "no such file" in missing


def test_a_file_that_is_not_an_email_is_refused_and_nothing_is_stored(ws: Workspace) -> None:
    reply = "From: who@nowhere.test\nSubject: hello\nMessage-ID: <s2@nowhere.test>\n\nHi\n"
    (ws.root / "reply.eml").write_text(reply)
    (ws.root / "notes.md").write_text("# My notes\n\nFrom: this is not a header line\n")
    (ws.root / "empty.eml").write_bytes(b"")
    result = ws.run("ingest", "notes.md", "reply.eml", "empty.eml", "--json")
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "error: notes.md: not an email: no header section (an email begins with lines like "
        "'From: ...'); not stored",
        "error: empty.eml: not an email: it is empty; not stored",
    ]
    report = json.loads(result.stdout)
    assert report["counts"] == {"not_mail": 2, "unmatched": 1}  # the email between them is stored
    [stored] = ws.json("inbound", "list", "--status", "all")
    assert (stored["message_id"], stored["source"]) == ("<s2@nowhere.test>", "file:reply.eml")
    # A long path keeps its end, within the column's 40 characters.
    deep = ws.root / ("a-folder-with-a-rather-long-name-" * 2) / "unmatched-reply.eml"
    deep.parent.mkdir()
    deep.write_text(reply.replace("s2@", "s3@"))
    ws.ok("ingest", str(deep))
    source = ws.json("inbound", "list", "--status", "all")[-1]["source"]
    assert len(source) == 40 and source.startswith("file:…") and source.endswith("/unmatched-reply.eml")
    # What an MTA pipes in exists nowhere else: stored whatever it is.
    piped = ws.run("ingest", "-", input=b"# not mail either\n")
    assert piped.returncode == 0, piped.stderr
    kept = ws.json("inbound", "list", "--status", "unparsable")
    assert [item["source"] for item in kept] == ["stdin"]


def test_unsubscribe_links_to_localhost_are_said_and_refused_over_smtp(ws: Workspace) -> None:
    result = ws.run("worker", "--once", now=ENROLLED_AT)  # the Maildir of a trial: a warning
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        "warning: REPLYGUARD_PUBLIC_URL is not set: List-Unsubscribe links point at "
        "http://localhost:8000 (fine on this machine, unreachable for recipients)"
    ]
    smtp = ("--transport", "smtp://127.0.0.1:9?timeout=1")
    stderr = ws.fails(*smtp, "worker", "--once", code=2, now=ENROLLED_AT)
    assert "set REPLYGUARD_PUBLIC_URL" in stderr and "--allow-localhost-unsubscribe" in stderr
    allowed = ws.run(*smtp, "worker", "--once", "--allow-localhost-unsubscribe", now=ENROLLED_AT)
    assert allowed.returncode == 0 and len(allowed.stderr.splitlines()) == 1
    public = run_cli(
        ["--db", ws.db, *smtp, "worker", "--once"],
        env={**ws.env(), "REPLYGUARD_PUBLIC_URL": "https://rg.northwind.test"},
        cwd=ws.root,
    )
    assert (public.returncode, public.stderr) == (0, "")


def test_a_stranger_waits_for_a_person_through_the_cli(ws: Workspace) -> None:
    ws.tick(ENROLLED_AT, "2026-12-07T23:00:00Z")
    first = next(m for m in ws.emails() if recipient(m) == "priya@fernhollow.test")
    stranger = (
        f"From: helpdesk@elsewhere.test\nTo: dana@northwind-analytics.test\n"
        f"Subject: Re: {first['Subject']}\nMessage-ID: <h1@elsewhere.test>\n"
        f"In-Reply-To: {first['Message-ID']}\n\nPlease unsubscribe me.\n"
    )
    (ws.root / "stranger.eml").write_text(stranger)
    ws.ok("ingest", str(ws.root / "stranger.eml"), now="2026-12-08T12:00:00Z")
    assert ws.lead("priya@fernhollow.test")["lead"]["reply_state"] == "replied"  # stopped at once
    [pending] = ws.json("senders", "list")
    assert (pending["sender"], pending["learn_address"], pending["unsubscribe"]) == (
        "helpdesk@elsewhere.test",
        True,
        True,
    )
    missing = ws.fails("senders", "confirm", "999", "--by", "dana@northwind-analytics.test", code=1)
    assert "no sender confirmation 999" in missing
    ws.ok("senders", "confirm", str(pending["id"]), "--by", "dana@northwind-analytics.test")
    assert ws.lead("priya@fernhollow.test")["lead"]["reply_state"] == "unsubscribed"
    assert "helpdesk@elsewhere.test" in ws.lead("priya@fernhollow.test")["alternates"]
    assert ws.json("senders", "list") == []


def test_the_worker_tells_each_email_as_it_goes_and_quiet_silences_it(ws: Workspace) -> None:
    told = ws.run("worker", "--once", now="2026-12-07T15:00:00Z")  # 10:00 in New York
    assert told.returncode == 0, told.stderr
    lines = [line for line in told.stderr.splitlines() if " sent " in line]
    summary = dict(item.rsplit(" ", 1) for item in told.stdout.strip().split(", "))
    assert lines and len(lines) == int(summary["sent"])
    assert all("step 1 to " in line and "@" in line for line in lines)
    quiet = ws.run("worker", "--once", "--quiet", now="2026-12-10T15:00:00Z")
    assert quiet.returncode == 0 and " sent " not in quiet.stderr and "sent" in quiet.stdout
