"""Audits started from the browser: recorded first, carried out in the background, followed on
the page.

    run_id = start_web_run(uow, "Q1 reporting outreach", canary=None, by="ann@ours.test")
    uow.commit()
    carry_out(app, run_id, channels=["email"])   # in a thread of the web process

The run is an `audit_runs` row from the first click: a reload, another tab or a colleague finds
it there, with its stage (`stage`, `stage_at`) as it moves. One web run per workspace runs at a
time: a partial unique index (`uq_audit_runs_one_web_run`: started from the web and running)
makes a second start fail in the database itself, whichever process or thread tries, and the
second click is shown the run already going (`AuditBusy`). A web run whose stage has not moved
for `run.STALLED_AFTER` (its web process stopped) is recorded as interrupted by the next start,
and its canaries cleaned up, as the command line does for a run older than an hour.
"""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from replyguard.adapters.db import models as m
from replyguard.service_layer.audit.canary import campaign_canary, check_canary
from replyguard.service_layer.audit.run import _clean_up, _interrupted, run_audit
from replyguard.service_layer.runtime import Runtime
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.campaigns import find_campaign

log = logging.getLogger(__name__)


class AuditBusy(RuntimeError):
    """A run started from the web is already going in this workspace."""

    def __init__(self, run_id: int) -> None:
        super().__init__(f"audit run {run_id} is already running")
        self.run_id = run_id


def running_web_run(uow: UnitOfWork) -> int | None:
    return uow.session.scalar(
        select(m.AuditRun.id).where(
            m.AuditRun.workspace_id == uow.workspace_id,
            m.AuditRun.started_by.is_not(None),
            m.AuditRun.status == "running",
        )
    )


def start_web_run(uow: UnitOfWork, app: Runtime, campaign: str, *, canary: str | None, by: str) -> int:
    """Record a run of `campaign` started by `by`, status running, and return its id; the
    caller commits, then `carry_out` does the work. Before anything is recorded: LookupError
    for an unknown campaign, AuditSetupError for a canary the audit would refuse (one line
    for the page), AuditBusy when a web run is already going."""
    found = find_campaign(uow, campaign)
    address = campaign_canary(uow, found.name, canary)
    check_canary(uow, address)
    for stale in _interrupted(uow):
        _clean_up(uow, app, stale)
    run = m.AuditRun(
        workspace_id=uow.workspace_id,
        kind="campaign",
        campaign_id=found.id,
        campaign=found.name,
        canary=address,
        status="running",
        results={},
        started_at=uow.clock.now(),
        started_by=by,
        stage="starting",
        stage_at=uow.clock.now(),
    )
    try:
        with uow.session.begin_nested():
            uow.session.add(run)
    except IntegrityError:
        running = running_web_run(uow)
        raise AuditBusy(running or 0) from None
    uow.add_event("audit_started", run_id=run.id, campaign=found.name, by=by)
    return run.id


def carry_out(app: Runtime, run_id: int, *, channels: list[str]) -> None:
    """Run the recorded web run `run_id` to its end (passed, failed or error: all recorded on
    the run, with the canary it was started with). Meant for a thread of the web process;
    never raises: what went wrong is on the run, and in the log."""
    with app.uow() as uow:
        run = uow.session.get_one(m.AuditRun, run_id)
        campaign, canary = run.campaign or "", run.canary

    def progress(stage: str) -> None:
        with app.uow() as uow:
            found = uow.session.get_one(m.AuditRun, run_id)
            found.stage, found.stage_at = stage, uow.clock.now()
            uow.commit()

    try:
        run_audit(app, campaign, canary=canary, channels=channels, run_id=run_id, progress=progress)
    except Exception as exc:
        log.exception("audit run %s ended in an error", run_id)
        with app.uow() as uow:  # an error before the run's own recording (the campaign gone)
            found = uow.session.get_one(m.AuditRun, run_id)
            if found.status == "running":
                found.status, found.error = "error", f"{exc.__class__.__name__}: {exc}"
                found.finished_at = uow.clock.now()
                uow.commit()
