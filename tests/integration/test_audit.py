"""`replyguard audit` on a live campaign, on SQLite and PostgreSQL: it passes when the machine
stops, each of its six rows fails alone when one thing is broken, and no prospect is touched."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.notices.base import ChannelResult, NoticeMessage
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.service_layer.audit import run as audit_module
from replyguard.service_layer.audit.drive import Driver
from replyguard.service_layer.audit.run import AuditReport, audit_history, audit_run, run_audit
from replyguard.service_layer.inbound import ingest
from replyguard.service_layer.rescue.notice_delivery import NoticeDelivery
from replyguard.service_layer.rescue.thread_views import list_threads
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import import_leads
from replyguard.settings import NotifySettings
from tests.integration import audit_support as breaks
from tests.integration.audit_support import CANARY, PRIYA, Q1, live_workspace, prospects
from tests.support.scenario import campaign_toml, csv_of, enroll_all
from tests.support.smtp_servers import SmtpTestServer

CHECKS = ["reply_state", "queued_steps", "send_check", "retry", "notice", "out_of_office"]


def audit(app: App) -> AuditReport:
    return run_audit(app, Q1, canary=CANARY, channels=["email"])


def failed(report: AuditReport) -> list[str]:
    return [r.name for r in report.rows if not r.passed]


def row(report: AuditReport, name: str) -> Any:
    [found] = [r for r in report.rows if r.name == name]
    return found


def test_a_healthy_campaign_passes_and_no_prospect_is_touched(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    before = prospects(app)
    report = audit(app)
    assert report.status == "passed", [(r.name, r.summary, r.details) for r in report.rows]
    assert [r.name for r in report.rows] == CHECKS
    assert prospects(app) == before  # steps, states, counts, slots, threads, notices, events
    # Only the canaries got email: three first steps, nothing after the replies.
    assert sorted(e["to"] for e in report.emails) == sorted(c["address"] for c in report.canaries)
    assert all(e["to"].startswith("team+rg-audit-") and e["outcome"] == "accepted" for e in report.emails)
    # The evidence is the real thing: ids, transactions, states.
    queued = row(report, "queued_steps").evidence["reply"]
    assert queued["reply_tx"] and {e["tx"] for e in queued["cancel_events"]} == {queued["reply_tx"]}
    send = row(report, "send_check").evidence
    assert send["result"] == ["stale"] and send["phases_reached"] == [] and send["step_state"] == "cancelled"
    assert row(report, "retry").evidence["in_flight_step"]["state"] == "sent"  # Maildir proves it
    notice = row(report, "notice").evidence
    assert notice["payload"]["lead"]["email"] == "team+rg-audit-1-reply@ours.test" and notice["queued"]
    assert row(report, "out_of_office").evidence["reply_state"] == "out_of_office"


def test_audit_data_stays_out_of_peoples_work(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    report = audit(app)
    assert report.passed
    with app.uow() as uow:
        people = list_threads(uow, app.settings, state="all")
        canaries = list_threads(uow, app.settings, state="all", audit=True)
        states = uow.session.scalars(
            select(m.Lead.reply_state).where(m.Lead.audit_run_id == report.run_id)
        ).all()
    assert [t["lead"] for t in people] == [PRIYA]
    assert {t["lead"] for t in canaries} == {
        "team+rg-audit-1-reply@ours.test",
        "team+rg-audit-1-flight@ours.test",
    }
    assert all(t["state"] == "done" for t in canaries)  # closed by the audit
    assert list(states) == ["stopped"] * 3  # nothing of the run can ever send again
    # The notifier delivers the prospect's notice and never the canaries'.
    delivered: list[NoticeMessage] = []

    class Recorder:
        name = "webhook"

        def deliver(self, notice: NoticeMessage, now: object) -> ChannelResult:
            delivered.append(notice)
            return ChannelResult(True, "ok")

    NoticeDelivery(app, [Recorder()], NotifySettings()).run_once()
    assert [n.payload["lead"]["email"] for n in delivered] == [PRIYA]
    # A later worker pass, days later, sends nothing to a canary.
    clock.advance(timedelta(days=20))
    Worker(app).run_once()
    with app.uow() as uow:
        sent = uow.session.scalars(
            select(m.Step.to_address).where(m.Step.state == "sent", m.Step.to_address.like("team+%"))
        ).all()
    assert len(sent) == 3


@pytest.mark.parametrize(
    ("breakage", "check", "evidence"),
    [
        (
            breaks.cancel_after_commit,
            "queued_steps",
            lambda e: (
                e["reply"]["cancel_events"] and e["reply"]["cancel_events"][0]["tx"] != e["reply"]["reply_tx"]
            ),
        ),
        (breaks.recheck_off, "send_check", lambda e: "after_recheck" in e["phases_reached"]),
        (breaks.outbox_off, "notice", lambda e: e["notice_id"] is None),
        (
            breaks.absence_as_person,
            "out_of_office",
            lambda e: e["kind"] == "human_reply" and e["reply_state"] == "replied" and e["threads"],
        ),
        (breaks.blind_retry, "retry", lambda e: len(e["copies"]) == 1 and e["recovered"] == 1),
        (breaks.state_off_the_lead, "reply_state", lambda e: e["reply"]["reply_state"] == "active"),
    ],
    ids=[
        "cancel-after-commit",
        "recheck-off",
        "outbox-off",
        "ooo-as-person",
        "blind-retry",
        "state-elsewhere",
    ],
)
def test_each_check_fails_alone_when_its_guarantee_is_broken(
    app: App,
    clock: FixedClock,
    monkeypatch: pytest.MonkeyPatch,
    breakage: breaks.Breakage,
    check: str,
    evidence: Any,
) -> None:
    live_workspace(app, clock)
    before = prospects(app)
    breakage(monkeypatch)
    report = audit(app)
    assert report.status == "failed"
    assert failed(report) == [check], [(r.name, r.details) for r in report.rows if not r.passed]
    broken = row(report, check)
    assert evidence(broken.evidence), broken.evidence
    assert broken.summary and broken.details  # a person can read what went wrong
    assert prospects(app) == before  # even a failing audit touches no prospect


def test_the_copy_a_blind_retry_makes_is_named(
    app: App, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    live_workspace(app, clock)
    breaks.blind_retry(monkeypatch)
    report = audit(app)
    retry = row(report, "retry")
    assert retry.summary == "a retry handed 1 email(s) to the transport after the reply"
    flight = next(c for c in report.canaries if c["role"] == "flight")
    assert retry.evidence["copies"] == [retry.evidence["in_flight_step"]["message_id"]]
    assert [e["to"] for e in report.emails].count(flight["address"]) == 2


def test_a_worker_running_alongside_never_races_the_audit(
    app: App, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `replyguard worker` that runs a full pass before each test message (as a live one
    would) claims nothing of the audit's: the canaries are the audit's alone."""
    live_workspace(app, clock)
    ingest_raw = ingest.ingest_raw
    passes: list[int] = []

    def busy_then_ingest(app_: App, raw: bytes, source: str) -> ingest.IngestResult:
        passes.append(Worker(app).run_once().claimed)
        return ingest_raw(app_, raw, source)

    monkeypatch.setattr("replyguard.service_layer.audit.drive.ingest_raw", busy_then_ingest)
    report = audit(app)
    assert report.passed and len(passes) == 3
    assert passes == [0, 0, 0]  # the live worker found nothing of the canaries to claim


def test_runs_never_collide_and_their_history_reads_back(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    first = audit(app)
    clock.advance(timedelta(days=1))
    second = audit(app)
    assert first.passed and second.passed
    assert {c["address"] for c in first.canaries}.isdisjoint({c["address"] for c in second.canaries})
    assert "team+rg-audit-2-reply@ours.test" in {c["address"] for c in second.canaries}
    with app.uow() as uow:
        history = audit_history(uow)
        stored = audit_run(uow, first.run_id)
    assert [h["run_id"] for h in history] == [second.run_id, first.run_id]
    assert history[0]["status"] == "passed" and history[0]["failed"] == []
    assert stored.to_json()["checks"] == first.to_json()["checks"]
    assert stored.canary == CANARY and stored.finished_at is not None


def test_an_smtp_transport_that_cannot_prove_a_crash_still_passes(app: App, clock: FixedClock) -> None:
    """With SMTP the step left in `sending` cannot be probed: recovery makes it an unknown
    outcome (never resent), and the audit says so in its evidence."""
    live_workspace(app, clock)
    with SmtpTestServer() as server:
        app.use_transport(SmtpTransport(server.url(timeout=5)))
        report = audit(app)
        received = server.accepted()
    assert report.passed, [(r.name, r.details) for r in report.rows if not r.passed]
    assert row(report, "retry").evidence["in_flight_step"]["state"] == "unknown"
    assert sorted(r for msg in received for r in msg.rcpt_tos) == sorted(
        c["address"] for c in report.canaries
    )


@pytest.mark.parametrize(
    ("canary", "message"),
    [
        (PRIYA, "is the address of a lead"),
        ("dana+canary@northwind-analytics.test", "is a sending mailbox"),
        ("not an address", "--canary: not a valid email address"),
    ],
)
def test_a_canary_that_is_not_the_teams_own_is_refused_and_recorded(
    app: App, clock: FixedClock, canary: str, message: str
) -> None:
    live_workspace(app, clock)
    before = prospects(app)
    report = run_audit(app, Q1, canary=canary)
    assert report.status == "error" and message in (report.error or "")
    assert prospects(app) == before
    with app.uow() as uow:
        assert audit_history(uow)[0]["error"] == report.error


def test_a_campaign_without_canary_or_second_step_cannot_be_audited(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    report = run_audit(app, Q1)
    assert report.status == "error" and "has no canary" in (report.error or "")
    with pytest.raises(LookupError, match="no campaign named"):
        run_audit(app, "Nope", canary=CANARY)
    with app.uow() as uow:
        create_campaign(
            uow,
            """product = "P1"
[campaign]
name = "One shot"
mailbox = "rep@seller.test"
from_name = "Rep"
owner = "rep@seller.test"
timezone = "UTC"
canary = "team@ours.test"
send_window = { days = ["mon"], start = "09:00", end = "17:00" }
daily_cap = 10
[[campaign.steps]]
wait = "0d"
subject = "Hi"
body = "Hello."
""",
        )
        uow.commit()
    one = run_audit(app, "One shot")  # the canary comes from the campaign file
    assert one.canary == CANARY and "has one step" in (one.error or "")


def test_outside_the_window_at_the_cap_with_approvals_the_audit_runs_and_takes_no_slot(
    app: App, clock: FixedClock
) -> None:
    """Sunday 03:00, the mailbox's cap already reached, step 2 waiting for approval: the canary
    is the team's own address, so its emails go now and leave the prospects' slots alone."""
    toml = campaign_toml("Capped", "P", cap=2).replace(
        'wait = "2d"\nbody = "Second."', 'wait = "2d"\napproval = true\nbody = "Second."'
    )
    with app.uow() as uow:
        create_campaign(uow, toml)
        emails = [f"p{i}@prospects.test" for i in range(3)]
        import_leads(uow, "P", list(read_leads(csv_of([{"email": e, "first_name": "P"} for e in emails]))))
        uow.commit()
    enroll_all(app, "Capped")
    clock.advance(timedelta(hours=4))  # Monday 10:00 UTC: two go out, the third waits for Tuesday
    assert Worker(app).run_once().sent == 2
    clock.advance(timedelta(days=5, hours=17))  # Sunday 03:00 UTC: outside the window
    before = prospects(app)
    report = run_audit(app, "Capped", canary=CANARY)
    assert report.passed, [(r.name, r.details) for r in report.rows if not r.passed]
    assert len(report.emails) == 3
    assert prospects(app) == before
    with app.uow() as uow:
        days = uow.session.scalars(
            select(m.Step.send_day)
            .join(m.Lead)
            .where(m.Lead.audit_run_id == report.run_id, m.Step.state == "sent")
        ).all()
        approved = uow.session.scalars(
            select(m.Event.data)
            .join(m.Lead)
            .where(m.Lead.audit_run_id == report.run_id, m.Event.kind == "step_approved")
        ).all()
    assert days and set(days) == {None}  # no slot of the daily cap
    assert [a["by"] for a in approved] == ["replyguard audit"]


def test_an_interrupted_run_is_recorded_and_cleaned_up_by_the_next(
    app: App, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    live_workspace(app, clock)

    def killed(self: Driver) -> None:
        raise RuntimeError("the machine went away")

    with monkeypatch.context() as patch:
        patch.setattr(Driver, "test_messages", killed)
        patch.setattr(audit_module, "_finish", lambda *args: None)  # nothing ran after the kill
        with pytest.raises(RuntimeError):
            audit(app)
    with app.uow() as uow:
        assert audit_history(uow)[0]["status"] == "running"
    clock.advance(timedelta(hours=2))
    assert audit(app).passed
    with app.uow() as uow:
        [_latest, first] = audit_history(uow)
        states = uow.session.scalars(
            select(m.Lead.reply_state).where(m.Lead.audit_run_id == first["run_id"])
        ).all()
    assert first["status"] == "error" and "interrupted" in first["error"]
    assert list(states) == ["stopped"] * 3
