"""A week of sequences against a flaky SMTP server, on PostgreSQL with several workers, checked
email by email (issue 8). Writes a JSON report; docs/sequence-week.md has the numbers.

    python bench/sequence_week.py --seed 1 --report bench/results/sequence-week.json

What runs, against a fresh scratch PostgreSQL database (dropped afterwards):

* two campaigns on two mailboxes with their own caps and windows (one with approval on its
  second step), leads in five time zones, all through the real services;
* `--workers` `replyguard worker` processes (bench/sim_worker.py) whose clock runs `--speed`
  times faster than the wall clock, so the week takes minutes;
* an aiosmtpd oracle (tests/support/smtp_servers.py) that refuses: unknown users (550 5.1.1)
  and full mailboxes (452 4.2.2) by address; 4xx at RCPT, DATA and after the dot; 5xx at DATA
  and after the dot; answers lost after acceptance; slow answers; a relay down for an hour
  and for five hours (421 to every connection: retries run out); our sender refused for half
  an hour (the mailboxes pause);
* a person: approves steps, resends or skips failed ones, settles unknown outcomes from the
  relay's log, resumes paused mailboxes; and people who reply at random.

The checker reads the oracle's messages and the database. Every email the server accepted
must be the right step (send key, To, Subject, body, threading as stored), in order after
every earlier step, spaced by its wait, inside its window, under its mailbox's cap, never
threaded on an email the server did not accept before, never after its lead's reply, once.
"""

# ruff: noqa: E402 - the repository root goes on sys.path before the project imports

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.sim_worker import ScaledClock
from bench.torture import drop_database, harness_engine, scratch_database
from rich.console import Console
from sqlalchemy import Engine, select, text
from sqlalchemy.exc import DBAPIError
from tests.support.smtp_servers import (
    Behaviour,
    ReceivedMessage,
    RecordingSmtpServer,
    seeded_schedule,
)

from replyguard.adapters.db import models as m
from replyguard.adapters.db.engine import make_engine
from replyguard.adapters.db.migrate import upgrade
from replyguard.bootstrap import App
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.schedule import SendWindow, Wait, load_zone, local_day
from replyguard.domain.states import ReplyKind, ReplyState, StepState
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
from replyguard.service_layer.rescue.actions import approve_steps, resolve_unknown, set_lead_state
from replyguard.service_layer.rescue.step_decisions import DecisionRefused, resend_step, skip_step
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.enrollment import EnrollReport, candidate_lead_ids, enroll_leads
from replyguard.service_layer.workspace.leads import import_leads
from replyguard.service_layer.workspace.mailboxes import resume_mailbox
from replyguard.settings import Settings

DEFAULT_DB = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SIM_WORKER = [sys.executable, str(ROOT / "bench" / "sim_worker.py")]
START = datetime(2026, 12, 7, 0, 0, tzinfo=UTC)  # Monday 00:00 UTC
ZONES = ["America/New_York", "Europe/Berlin", "America/Los_Angeles", "Asia/Tokyo", ""]
SMTP_WEIGHTS = {
    Behaviour.ACCEPT: 0.80,
    Behaviour.SLOW_ACCEPT: 0.06,
    Behaviour.TEMPFAIL_RCPT: 0.03,
    Behaviour.TEMPFAIL_DATA: 0.02,
    Behaviour.REJECT_DATA: 0.01,
    Behaviour.TEMPFAIL_END: 0.03,
    Behaviour.REJECT_END: 0.01,
    Behaviour.DROP_AFTER_ACCEPT: 0.01,
    Behaviour.DROP_MID_DATA: 0.03,
}


@dataclass(frozen=True)
class Plan:
    leads_a: int = 150
    leads_b: int = 90
    workers: int = 4
    speed: float = 1200.0  # simulated seconds per wall second
    days: float = 7.0
    command_delay: float = 0.02  # wall seconds before each MAIL/RCPT/DATA answer
    slow_delay: float = 0.5  # wall seconds a slow answer takes (x speed: ten simulated minutes)
    unknown_users: float = 0.03
    full_mailboxes: float = 0.02
    reply_share: float = 0.05
    #: (simulated hour from the start, hours): a relay that answers 421 to every connection.
    outages: tuple[tuple[float, float], ...] = ((33.0, 1.0), (57.5, 5.0))
    #: (simulated hour from the start, hours): our sender refused (550 5.7.1 to MAIL FROM).
    sender_refused: tuple[tuple[float, float], ...] = ((80.0, 0.5),)


#: A follow-up with a default and a conditional: leads without a name or a title still get it.
FOLLOW_UP = (
    "Hi {{ first_name | default('there') }}, bringing this back up."
    "{% if title %} As {{ title }}, you may know.{% endif %}"
)


def campaign_a(cap: int) -> str:
    return f"""
product = "Reports"
[campaign]
name = "Week A"
mailbox = "dana@seller.test"
from_name = "Dana"
daily_cap = {cap}
owner = "dana@seller.test"
timezone = "America/New_York"
send_window = {{ days = ["mon","tue","wed","thu","fri"], start = "09:00", end = "17:00" }}
[[campaign.steps]]
wait = "0d"
subject = "Reporting at {{{{ company | default('your team') }}}}"
body = "Hi {{{{ first_name | default('there') }}}}, how do you build your reports?"
[[campaign.steps]]
wait = "1d"
body = "{FOLLOW_UP}"
[[campaign.steps]]
wait = "2d"
body = "Last note from me."
"""


def campaign_b(cap: int) -> str:
    return f"""
product = "Forecasting"
[campaign]
name = "Week B"
mailbox = "sam@seller.test"
owner = "sam@seller.test"
timezone = "Europe/Berlin"
send_window = {{ days = ["mon","tue","wed","thu"], start = "08:30", end = "16:30" }}
[mailbox]
from_name = "Sam"
daily_cap = {cap}
timezone = "Europe/Berlin"
[[campaign.steps]]
wait = "0d"
subject = "A forecasting pilot for {{{{ company | default('you') }}}}"
body = "Hello {{{{ first_name | default('there') }}}}, interested in a pilot?"
[[campaign.steps]]
wait = "1d"
approval = true
body = "Hello again {{{{ first_name | default('there') }}}}."
[[campaign.steps]]
wait = "1d"
body = "Closing the loop."
"""


CAPS = {"dana@seller.test": 60, "sam@seller.test": 35}


def address(kind: str, i: int) -> str:
    return f"{kind}{i}@lead{i % 53}.test"


def populate(url: str, plan: Plan, clock: ScaledClock, rng: random.Random) -> App:
    engine = make_engine(url, pool_size=4)
    upgrade(engine)
    app = App(engine=engine, clock=clock, settings=Settings())
    app.init_database()
    header = "email,first_name,last_name,company,title,timezone,alt_emails,owner\n"
    rows: dict[str, list[str]] = {"Reports": [], "Forecasting": []}
    for product, count in (("Reports", plan.leads_a), ("Forecasting", plan.leads_b)):
        for i in range(count):
            first = "" if rng.random() < 0.1 else f"Lead{i}"  # some without a first name
            title = "CFO" if rng.random() < 0.3 else ""
            zone = rng.choice(ZONES)
            rows[product].append(f"{address(product[0].lower(), i)},{first},,Co{i % 17},{title},{zone},,\n")
    with app.uow() as uow:
        create_campaign(uow, campaign_a(CAPS["dana@seller.test"]))
        create_campaign(uow, campaign_b(CAPS["sam@seller.test"]))
        for product, lines in rows.items():
            import_leads(uow, product, list(read_leads((header + "".join(lines)).encode())))
        uow.commit()
    for name in ("Week A", "Week B"):
        with app.uow() as uow:
            enroll_leads(uow, name, candidate_lead_ids(uow, name, None), EnrollReport())
            uow.commit()
    return app


# ---------------------------------------------------------------------------- the server
def by_recipient(plan: Plan, seed: int) -> dict[str, Behaviour]:
    """Unknown users and full mailboxes, by address, the same on every run of a seed."""
    rng = random.Random(f"{seed}:recipients")
    chosen: dict[str, Behaviour] = {}
    for kind, count in (("r", plan.leads_a), ("f", plan.leads_b)):
        for i in range(count):
            roll = rng.random()
            if roll < plan.unknown_users:
                chosen[address(kind, i)] = Behaviour.REJECT_RCPT
            elif roll < plan.unknown_users + plan.full_mailboxes:
                chosen[address(kind, i)] = Behaviour.MAILBOX_FULL_RCPT
    return chosen


class Weather:
    """Turns the relay down and our sender refused at the planned simulated hours."""

    def __init__(self, server: RecordingSmtpServer, plan: Plan, clock: ScaledClock, seed: int) -> None:
        self.server, self.plan, self.clock = server, plan, clock
        self.normal = seeded_schedule(seed, SMTP_WEIGHTS)
        self.sender_refused = False
        server.schedule = lambda n: Behaviour.REJECT_SENDER if self.sender_refused else self.normal(n)

    def tick(self) -> None:
        hours = (self.clock.now() - START).total_seconds() / 3600
        self.server.refusing = any(a <= hours < a + d for a, d in self.plan.outages)
        self.sender_refused = any(a <= hours < a + d for a, d in self.plan.sender_refused)


# ---------------------------------------------------------------------------- a person
class Person:
    """Approves, decides failed and unknown steps, resumes paused mailboxes; people reply."""

    def __init__(self, app: App, server: RecordingSmtpServer, rng: random.Random) -> None:
        self.app, self.server, self.rng = app, server, rng
        self.decisions: Counter[str] = Counter()
        self.replies: list[dict[str, Any]] = []

    def tick(self, plan: Plan) -> None:
        now = self.app.clock.now()
        try:
            if now.hour in (10, 15):
                with self.app.uow() as uow:
                    self.decisions["approved"] += approve_steps(uow, "Week B", approver="bench")
                    uow.commit()
            self._mailboxes(now)
            self._failed(now)
            self._unknown(now)
            if self.rng.random() < plan.reply_share * 0.6:
                self._reply()
        except DBAPIError as exc:
            logging.getLogger("bench").warning("person: %s", exc.__class__.__name__)

    def _mailboxes(self, now: datetime) -> None:
        with self.app.uow() as uow:
            paused = uow.session.execute(
                select(m.Mailbox.address, m.Mailbox.paused_at).where(m.Mailbox.status == "paused")
            ).all()
            for mailbox, since in paused:
                if since is not None and now - since > timedelta(hours=2):
                    resume_mailbox(uow, mailbox)
                    self.decisions["mailbox resumed"] += 1
            uow.commit()

    def _failed(self, now: datetime) -> None:
        with self.app.uow() as uow:
            failed = uow.session.execute(
                select(m.Step.id, m.Step.updated_at, m.Campaign.name, m.ContactAddress.address)
                .join(m.Enrollment, m.Enrollment.id == m.Step.enrollment_id)
                .join(m.Campaign, m.Campaign.id == m.Enrollment.campaign_id)
                .join(m.Lead, m.Lead.id == m.Step.lead_id)
                .join(m.ContactAddress, m.ContactAddress.contact_id == m.Lead.contact_id)
                .where(m.Step.state == StepState.FAILED, m.Lead.reply_state == ReplyState.HELD)
            ).all()
        for _step_id, since, campaign, email in failed:
            if now - since < timedelta(hours=6):
                continue
            resend = self.decisions["resent"] <= self.decisions["skipped"]  # half and half
            try:
                with self.app.uow() as uow:
                    (resend_step if resend else skip_step)(uow, campaign, email)
                    uow.commit()
                self.decisions["resent" if resend else "skipped"] += 1
            except (LookupError, DecisionRefused):
                self.decisions["no decision possible"] += 1

    def _unknown(self, now: datetime) -> None:
        accepted = {msg.send_key for msg in self.server.accepted()}
        with self.app.uow() as uow:
            unknown = uow.session.execute(
                select(m.Step.id, m.Step.send_key, m.Step.updated_at, m.Step.lead_id).where(
                    m.Step.state == StepState.UNKNOWN
                )
            ).all()
        for step_id, key, since, lead_id in unknown:
            if now - since < timedelta(hours=3):
                continue
            went_out = key in accepted  # the person reads the relay's log
            with self.app.uow() as uow:
                resolve_unknown(uow, step_id, went_out=went_out)
                lead = uow.session.get_one(m.Lead, lead_id)
                if lead.reply_state == ReplyState.HELD:
                    email = uow.session.scalars(
                        select(m.ContactAddress.address).where(m.ContactAddress.contact_id == lead.contact_id)
                    ).first()
                    product = uow.session.get_one(m.Product, lead.product_id).name
                    assert email is not None
                    set_lead_state(uow, email, product, ReplyState.ACTIVE, why="checked the relay's log")
                uow.commit()
            self.decisions["unknown: went out" if went_out else "unknown: did not"] += 1

    def _reply(self) -> None:
        with self.app.uow() as uow:
            candidates = uow.session.scalars(
                select(m.Step.lead_id)
                .join(m.Lead, m.Lead.id == m.Step.lead_id)
                .where(m.Step.state == StepState.SENT, m.Lead.reply_state == ReplyState.ACTIVE)
                .distinct()
            ).all()
        if not candidates:
            return
        lead_id = self.rng.choice(sorted(candidates))
        entry: dict[str, Any] = {"lead_id": lead_id}
        with self.app.uow() as uow:
            record_reply(
                uow,
                lead_id,
                IncomingReply(
                    kind=ReplyKind.HUMAN_REPLY, received_at=self.app.clock.now(), text="Interested."
                ),
                self.app.settings,
            )
            entry["before_commit"] = time.time()
            uow.commit()
        self.replies.append(entry)


# ---------------------------------------------------------------------------- the checker
@dataclass
class StepRow:
    send_key: str
    enrollment_id: int
    position: int
    state: str
    to_address: str
    subject: str
    body: str
    in_reply_to: str | None
    references: str | None
    mailbox: str
    mailbox_zone: str
    zone: str
    window: SendWindow
    wait: Wait
    lead_id: int


def load_steps(engine: Engine) -> dict[str, StepRow]:
    query = text(
        "SELECT s.send_key, s.enrollment_id, s.position, s.state, s.to_address, s.subject, s.body,"
        ' s.in_reply_to, s."references", mb.address AS mailbox, mb.timezone AS mailbox_zone,'
        " coalesce(nullif(ct.timezone, ''),"
        " c.timezone) AS zone, c.window_days, c.window_start, c.window_end, cs.wait_days,"
        " cs.wait_seconds, s.lead_id FROM steps s JOIN enrollments e ON e.id = s.enrollment_id"
        " JOIN campaigns c ON c.id = e.campaign_id JOIN mailboxes mb ON mb.id = s.mailbox_id"
        " JOIN campaign_steps cs ON cs.id = s.campaign_step_id JOIN leads l ON l.id = s.lead_id"
        " JOIN contacts ct ON ct.id = l.contact_id"
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return {
        r.send_key: StepRow(
            r.send_key,
            r.enrollment_id,
            r.position,
            r.state,
            r.to_address,
            r.subject,
            r.body,
            r.in_reply_to,
            r.references,
            r.mailbox,
            r.mailbox_zone,
            r.zone,
            SendWindow.parse(r.window_days.split(","), r.window_start, r.window_end),
            Wait.stored(r.wait_days, r.wait_seconds),
            r.lead_id,
        )
        for r in rows
    }


def check(
    engine: Engine, accepted: list[ReceivedMessage], replies: list[dict[str, Any]], clock: ScaledClock
) -> dict[str, Any]:
    return judge(load_steps(engine), accepted, replies, clock)


def judge(
    steps: dict[str, StepRow],
    accepted: list[ReceivedMessage],
    replies: list[dict[str, Any]],
    clock: ScaledClock,
    caps: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Every count must be zero (tests/unit/test_sequence_week_checker.py shows each can fail)."""
    caps = caps or CAPS
    problems: dict[str, list[Any]] = {
        "not the right step (key, To, Subject, body or threading differ)": [],
        "out of order (an earlier step neither accepted before nor skipped)": [],
        "closer than its wait to the email before": [],
        "outside the send window": [],
        "over the mailbox's daily cap": [],
        "threaded on an email the server had not accepted": [],
        "accepted more than once": [],
        "started after the lead's reply committed": [],
        "sent in the database, never accepted by the server": [],
    }
    ordered = sorted(accepted, key=lambda msg: msg.data_at)
    seen_ids: set[str] = set()
    seen_keys: Counter[str] = Counter()
    last_at: dict[int, tuple[int, datetime]] = {}
    accepted_positions: dict[int, set[int]] = {}
    per_day: Counter[tuple[str, date]] = Counter()
    first_reply = {r["lead_id"]: r["before_commit"] for r in replies if "before_commit" in r}
    for msg in ordered:
        seen_keys[msg.send_key or ""] += 1
        step = steps.get(msg.send_key or "")
        at = clock.to_sim(msg.data_at)
        parsed = msg.message()
        differs = "send key" if step is None else _differs(step, parsed, msg)
        if step is None or differs:
            problems["not the right step (key, To, Subject, body or threading differ)"].append(
                (msg.send_key, differs)
            )
            continue
        for ref in (parsed["References"] or "").split():
            if ref not in seen_ids:
                problems["threaded on an email the server had not accepted"].append(msg.send_key)
        done = accepted_positions.setdefault(step.enrollment_id, set())
        skipped = {
            s.position
            for s in steps.values()
            if s.enrollment_id == step.enrollment_id and s.state == "skipped"
        }
        if not set(range(1, step.position)) <= done | skipped:
            problems["out of order (an earlier step neither accepted before nor skipped)"].append(
                msg.send_key
            )
        previous = last_at.get(step.enrollment_id)
        zone = load_zone(step.zone)
        if (
            previous is not None
            and previous[0] == step.position - 1
            and at < step.wait.after(previous[1], zone)
        ):
            problems["closer than its wait to the email before"].append(
                (msg.send_key, str(previous[1]), str(at))
            )
        if not step.window.contains(at, zone):
            problems["outside the send window"].append((msg.send_key, at.astimezone(zone).isoformat()))
        day = local_day(at, load_zone(step.mailbox_zone))
        per_day[(step.mailbox, day)] += 1
        if step.lead_id in first_reply and msg.data_at > first_reply[step.lead_id]:
            problems["started after the lead's reply committed"].append(msg.send_key)
        done.add(step.position)
        last_at[step.enrollment_id] = (step.position, at)
        seen_ids.add(msg.message_id or "")
    for (mailbox, day), n in per_day.items():
        if n > caps[mailbox]:
            problems["over the mailbox's daily cap"].append((mailbox, str(day), n))
    problems["accepted more than once"] = [k for k, n in seen_keys.items() if n > 1]
    problems["sent in the database, never accepted by the server"] = [
        k for k, s in steps.items() if s.state == "sent" and k not in seen_keys
    ]
    return {
        "zero_counts": {k: len(v) for k, v in problems.items()},
        "examples": {k: v[:5] for k, v in problems.items() if v},
        "per_mailbox_day": {f"{mb} {day}": n for (mb, day), n in sorted(per_day.items())},
        "step_states": dict(Counter(s.state for s in steps.values())),
    }


def _differs(step: StepRow, parsed: Any, msg: ReceivedMessage) -> str | None:
    """The first of To, Subject, body and threading headers that differs from the step."""
    checks = {
        "To": (tuple(msg.rcpt_tos), (step.to_address,)),
        "Subject": (str(parsed["Subject"]), step.subject),
        "body": (parsed.get_content().replace("\r\n", "\n").rstrip("\n"), step.body.rstrip("\n")),
        "In-Reply-To": (str(parsed["In-Reply-To"] or "") or None, step.in_reply_to),
        "References": (str(parsed["References"] or "") or None, step.references),
    }
    return next((name for name, (got, want) in checks.items() if got != want), None)


# ---------------------------------------------------------------------------- the run
def run(plan: Plan, seed: int, admin_url: str = DEFAULT_DB, console: Console | None = None) -> dict[str, Any]:
    console = console or Console(stderr=True)
    rng = random.Random(seed)
    dbname = f"rg_week_{seed}_{os.getpid()}"
    url = scratch_database(admin_url, dbname)
    logging.getLogger("mail.log").setLevel(logging.CRITICAL)
    wall_start = time.monotonic()
    try:
        setup_clock = ScaledClock(START, time.time(), 1.0)  # stands nearly still while populating
        app = populate(url, plan, setup_clock, rng)
        engine = harness_engine(url)
        logdir = Path(tempfile.mkdtemp(prefix="rg-week-"))
        with RecordingSmtpServer(
            command_delay=plan.command_delay, by_recipient=by_recipient(plan, seed).get
        ) as server:
            server.slow_delay = plan.slow_delay
            clock = ScaledClock(START, time.time(), plan.speed)
            app.clock = clock
            weather = Weather(server, plan, clock, seed)
            env = {
                **os.environ,
                "REPLYGUARD_TRANSPORT": server.url(timeout=2),
                "REPLYGUARD_PUBLIC_URL": "https://replyguard.week.test",  # SMTP needs a public URL
                "REPLYGUARD_LEASE_SECONDS": str(6 * 3600),
                "REPLYGUARD_RETRY_BASE_SECONDS": "120",
                "REPLYGUARD_SIM_START": START.isoformat(),
                "REPLYGUARD_SIM_T0": str(clock.t0),
                "REPLYGUARD_SIM_SPEED": str(plan.speed),
            }
            procs = [
                subprocess.Popen(
                    [*SIM_WORKER, "--db", url, "worker"],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=(logdir / f"worker{i}.log").open("wb"),
                )
                for i in range(plan.workers)
            ]
            person = Person(app, server, random.Random(f"{seed}:person"))
            end = START + timedelta(days=plan.days)
            console.print(f"[bold]week[/] seed {seed}: db {dbname}, {plan.workers} workers, x{plan.speed:g}")
            while clock.now() < end:
                weather.tick()
                person.tick(plan)
                time.sleep(0.25)
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            behaviours = Counter(str(b) for b in server.transactions)
            report = check(engine, server.accepted(), person.replies, clock)
            refused_connections = server.refused_connections
        with engine.connect() as conn:
            events = dict(conn.execute(text("SELECT kind, count(*) FROM events GROUP BY kind")).all())
            leads = dict(
                conn.execute(text("SELECT reply_state, count(*) FROM leads GROUP BY reply_state")).all()
            )
            enrollments = dict(
                conn.execute(text("SELECT state, count(*) FROM enrollments GROUP BY state")).all()
            )
        engine.dispose()
        app.close()
    finally:
        drop_database(admin_url, dbname)
    report |= {
        "seed": seed,
        "plan": asdict(plan),
        "wall_seconds": round(time.monotonic() - wall_start, 1),
        "accepted_by_server": sum(report["per_mailbox_day"].values()),
        "smtp_transactions": dict(sorted(behaviours.items())),
        "connections_refused_during_outages": refused_connections,
        "person": dict(person.decisions),
        "replies": len(person.replies),
        "lead_states": leads,
        "enrollment_states": enrollments,
        "events": {k: events[k] for k in sorted(events)},
        "ok": all(n == 0 for n in report["zero_counts"].values()),
    }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=Plan.workers)
    parser.add_argument("--speed", type=float, default=Plan.speed)
    parser.add_argument("--days", type=float, default=Plan.days)
    parser.add_argument("--db", default=os.environ.get("REPLYGUARD_TEST_PG_URL", DEFAULT_DB))
    parser.add_argument("--report", type=Path)
    args = parser.parse_args(argv)
    plan = Plan(workers=args.workers, speed=args.speed, days=args.days)
    console = Console()
    report = run(plan, args.seed, args.db, console)
    console.print_json(
        json.dumps({k: report[k] for k in ("zero_counts", "accepted_by_server", "person", "ok")})
    )
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        console.print(f"report written to {args.report}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
