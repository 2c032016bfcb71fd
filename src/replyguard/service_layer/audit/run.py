"""`replyguard audit`: the article's six checks, run on a live campaign with a canary lead.

    run_audit(app, "Q1 reporting outreach", canary="team@ours.test")

1. A run is recorded (`audit_runs`, status `running`) before anything else.
2. Setup (audit_drive.setup): three fresh plus-addresses of the canary are imported and
   enrolled like any lead, marked as the run's canaries (`leads.audit_run_id`).
3. Drive (audit_drive.Driver): their first emails really go out; one step is claimed by the
   worker before its reply; one is left `sending` by a crash after the transport took it;
   then a person's reply to two canaries and an out-of-office from the third go through
   `ingest_raw`; then the worker's send path, re-driven claims, a worker pass and recovery.
4. Judge (audit_checks.judge): the six rows, with their evidence.
5. Clean up: the run's notices are closed (never delivered), its threads done, its canaries
   stopped — so nothing of the run lingers or ever sends again.
6. The run is recorded with every row; `audit_history` and `audit_run` read it back (the CLI,
   and the web page once it exists).

`config_audit` records the `--config` checks (audit_config.py) the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update

from replyguard.adapters.db import models as m
from replyguard.domain.audit import CheckResult
from replyguard.domain.states import IllegalTransition, ReplyState, ThreadState
from replyguard.service_layer.audit.canary import AuditSetupError, campaign_canary
from replyguard.service_layer.audit.checks import judge
from replyguard.service_layer.audit.config import Setup, config_checks
from replyguard.service_layer.audit.drive import AUDITOR, Drive, Driver, setup
from replyguard.service_layer.inbound.replies import cancel_queued_steps
from replyguard.service_layer.rescue.decision_base import move_lead
from replyguard.service_layer.rescue.decisions import Request, decide
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaigns import find_campaign
from replyguard.settings import NotifySettings

__all__ = [
    "AuditReport",
    "AuditSetupError",
    "audit_history",
    "audit_run",
    "channel_names",
    "config_audit",
    "run_audit",
]


@dataclass
class AuditReport:
    run_id: int
    kind: str
    campaign: str | None
    canary: str | None
    status: str  # passed | failed | error (running: a run that never finished)
    started_at: datetime
    finished_at: datetime | None
    rows: list[CheckResult] = field(default_factory=list)
    error: str | None = None
    canaries: list[dict[str, Any]] = field(default_factory=list)
    emails: list[dict[str, Any]] = field(default_factory=list)
    started_by: str | None = None  # a person, from the web page; None: the command line
    stage: str | None = None  # what a running audit is doing now

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "campaign": self.campaign,
            "canary": self.canary,
            "status": self.status,
            "passed": self.passed,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "error": self.error,
            "checks": [r.to_json() for r in self.rows],
            "canaries": self.canaries,
            "emails": self.emails,
            "started_by": self.started_by,
            "stage": self.stage,
        }


def run_audit(
    app: Runtime,
    campaign: str,
    *,
    canary: str | None = None,
    channels: list[str] | None = None,
    run_id: int | None = None,
    progress: Callable[[str], None] = lambda _stage: None,
) -> AuditReport:
    """Run the six checks on `campaign` with fresh canaries of `canary` (else the campaign's
    own). Raises LookupError for an unknown campaign; every other problem is a recorded run.
    `channels` names the notice channels configured (evidence for the notice row). `run_id`:
    a run already recorded as running (`web_runs.start_web_run`), carried out here; `progress`
    hears each phase's name, between transactions."""
    with app.uow() as uow:
        found = find_campaign(uow, campaign)
        stale = _interrupted(uow)
        if run_id is None:
            run_id = _start(uow, "campaign", found.id, found.name, None)
        uow.commit()
    for old in stale:
        with app.uow() as uow:
            _clean_up(uow, app, old)
            uow.commit()
    report = AuditReport(run_id, "campaign", found.name, None, "running", app.clock.now(), None)
    drive: Drive | None = None
    try:
        with app.uow() as uow:
            report.canary = campaign_canary(uow, found.name, canary)
        progress("enrolling three canaries")
        drive = setup(app, run_id, found.name, report.canary)
        report.canaries = [
            {"role": c.role.value, "address": c.address, "lead_id": c.lead_id}
            for c in drive.canaries.values()
        ]
        Driver(app, drive, progress).run()
        progress("judging the six checks")
        with app.uow() as uow:
            report.rows = judge(uow, drive, list(channels or []))
        report.status = "passed" if all(r.passed for r in report.rows) else "failed"
    except AuditSetupError as exc:
        report.status, report.error = "error", str(exc)
    except BaseException as exc:  # a bug, a lost database, Ctrl-C: recorded, cleaned up, raised
        report.status, report.error = "error", f"{exc.__class__.__name__}: {exc}"
        _finish(app, report, drive)
        raise
    progress("cleaning up the canaries")
    _finish(app, report, drive)
    return report


def config_audit(app: Runtime, setup_: Setup, *, campaign: str | None = None) -> AuditReport:
    """The `--config` checks, recorded as a run of kind `config`."""
    with app.uow() as uow:
        found = find_campaign(uow, campaign) if campaign else None
        run_id = _start(uow, "config", found.id if found else None, campaign, None)
        rows = config_checks(uow, setup_, campaign)
        uow.commit()
    status = "passed" if all(r.passed for r in rows) else "failed"
    report = AuditReport(run_id, "config", campaign, None, status, app.clock.now(), None, rows)
    _finish(app, report, None)
    return report


def channel_names(notify: NotifySettings) -> list[str]:
    """The notice channels configured (the Notice row's evidence), for the CLI and the web page."""
    found = ["email"] if notify.email else []
    return found + ["webhook"] * bool(notify.webhook_url) + ["slack"] * bool(notify.slack_url)


#: A run still `running` after this long was interrupted (killed, a lost machine).
INTERRUPTED_AFTER = timedelta(hours=1)
#: A run started from the web whose stage has not moved for this long was interrupted (the web
#: process that carried it out stopped): every phase takes seconds, a slow SMTP server minutes.
STALLED_AFTER = timedelta(minutes=15)


def _interrupted(uow: UnitOfWork) -> list[int]:
    """Runs that never finished: recorded as interrupted; their canaries are cleaned up."""
    runs = list(
        uow.session.scalars(
            select(m.AuditRun).where(
                m.AuditRun.workspace_id == uow.workspace_id,
                m.AuditRun.status == "running",
                m.AuditRun.started_at < uow.clock.now() - INTERRUPTED_AFTER,
            )
        )
    )
    for run in runs:
        run.status, run.error = "error", "interrupted: the run never finished"
        run.finished_at = uow.clock.now()
    stalled = list(
        uow.session.scalars(
            select(m.AuditRun).where(
                m.AuditRun.workspace_id == uow.workspace_id,
                m.AuditRun.status == "running",
                m.AuditRun.started_by.is_not(None),
                func.coalesce(m.AuditRun.stage_at, m.AuditRun.started_at) < uow.clock.now() - STALLED_AFTER,
            )
        )
    )
    for run in stalled:
        run.status, run.error = "error", f"interrupted: no progress since {run.stage or 'it started'}"
        run.finished_at = uow.clock.now()
    return [run.id for run in runs + stalled]


def _start(
    uow: UnitOfWork, kind: str, campaign_id: int | None, campaign: str | None, canary: str | None
) -> int:
    run = m.AuditRun(
        workspace_id=uow.workspace_id,
        kind=kind,
        campaign_id=campaign_id,
        campaign=campaign,
        canary=canary,
        status="running",
        results={},
        started_at=uow.clock.now(),
    )
    uow.session.add(run)
    uow.session.flush()
    return run.id


def _finish(app: Runtime, report: AuditReport, drive: Drive | None) -> None:
    if drive is not None:
        report.emails = [{"to": c.to, "message_id": c.message_id, "outcome": c.outcome} for c in drive.calls]
    with app.uow() as uow:
        _clean_up(uow, app, report.run_id)
        run = uow.session.get_one(m.AuditRun, report.run_id)
        report.finished_at = uow.clock.now()
        run.status, run.error, run.canary, run.finished_at = (
            report.status,
            report.error,
            report.canary,
            report.finished_at,
        )
        run.results = {
            "rows": [r.to_json() for r in report.rows],
            "canaries": report.canaries,
            "emails": report.emails,
        }
        uow.commit()


def _clean_up(uow: UnitOfWork, app: Runtime, run_id: int) -> None:
    """Leave nothing of the run that could act: its notices are closed undelivered (nobody but
    the canary hears of an audit), its threads done, its canaries stopped by the auditor."""
    leads = list(uow.session.scalars(select(m.Lead).where(m.Lead.audit_run_id == run_id)))
    if not leads:
        return
    ids = [lead.id for lead in leads]
    uow.lock_leads(ids)
    uow.session.execute(
        update(m.Notice)
        .where(m.Notice.lead_id.in_(ids), m.Notice.done_at.is_(None))
        .values(done_at=uow.clock.now())
        .execution_options(synchronize_session=False)
    )
    threads = uow.session.scalars(
        select(m.RescueThread.id).where(
            m.RescueThread.lead_id.in_(ids), m.RescueThread.state != ThreadState.DONE
        )
    ).all()
    for thread_id in threads:
        decide(uow, thread_id, Request("done", by=AUDITOR), app.settings)
    for lead in leads:
        uow.session.refresh(lead)
        try:
            move_lead(uow, lead, ReplyState.STOPPED, AUDITOR, f"audit run {run_id} finished")
        except IllegalTransition:
            continue  # unsubscribed: already as still as a lead gets
        cancel_queued_steps(uow, lead.id, reason="stopped by a person")


def audit_history(uow: UnitOfWork, *, campaign: str | None = None, limit: int = 30) -> list[dict[str, Any]]:
    """The latest runs, newest first: one line each (what the CLI and the web page list)."""
    query = select(m.AuditRun).where(m.AuditRun.workspace_id == uow.workspace_id)
    if campaign is not None:
        query = query.where(m.AuditRun.campaign == campaign)
    runs = uow.session.scalars(
        query.order_by(m.AuditRun.started_at.desc(), m.AuditRun.id.desc()).limit(limit)
    )
    return [
        {
            "run_id": run.id,
            "kind": run.kind,
            "campaign": run.campaign,
            "canary": run.canary,
            "status": run.status,
            "started_at": run.started_at.isoformat(),
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            "failed": [r["check"] for r in (run.results or {}).get("rows", []) if not r.get("passed")],
            "error": run.error,
            "started_by": run.started_by,
        }
        for run in runs
    ]


def audit_run(uow: UnitOfWork, run_id: int) -> AuditReport:
    """One run with all its rows and evidence."""
    run = uow.session.scalar(
        select(m.AuditRun).where(m.AuditRun.id == run_id, m.AuditRun.workspace_id == uow.workspace_id)
    )
    if run is None:
        raise LookupError(f"no audit run {run_id} in this workspace")
    results = run.results or {}
    return AuditReport(
        run.id,
        run.kind,
        run.campaign,
        run.canary,
        run.status,
        run.started_at,
        run.finished_at,
        [CheckResult.from_json(r) for r in results.get("rows", [])],
        run.error,
        list(results.get("canaries", [])),
        list(results.get("emails", [])),
        started_by=run.started_by,
        stage=run.stage,
    )
