"""Audits started from the browser, on SQLite and PostgreSQL: recorded before they run, one at
a time per workspace (two starts at once make one run), followed stage by stage, and a run
whose web process died is recorded as interrupted by the next start."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.audit.canary import AuditSetupError
from replyguard.service_layer.audit.run import STALLED_AFTER, audit_run, run_audit
from replyguard.service_layer.audit.web_runs import AuditBusy, carry_out, start_web_run
from tests.integration.audit_support import CANARY, PRIYA, Q1, live_workspace

ANN = "ann@ours.test"


def start(app: App, *, canary: str | None = CANARY) -> int:
    with app.uow() as uow:
        run_id = start_web_run(uow, app, Q1, canary=canary, by=ANN)
        uow.commit()
    return run_id


def test_a_web_run_is_recorded_first_then_carried_out_to_its_six_rows(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    run_id = start(app)
    with app.uow() as uow:
        report = audit_run(uow, run_id)
    assert (report.status, report.started_by, report.canary, report.rows) == ("running", ANN, CANARY, [])
    with pytest.raises(AuditBusy) as busy:  # the second click: the same run, not a new one
        start(app)
    assert busy.value.run_id == run_id
    carry_out(app, run_id, channels=["email"])
    with app.uow() as uow:
        report = audit_run(uow, run_id)
        runs = uow.session.scalar(select(func.count()).select_from(m.AuditRun))
    assert report.status == "passed", [(r.name, r.summary) for r in report.rows]
    assert len(report.rows) == 6 and runs == 1
    assert report.stage == "cleaning up the canaries"
    assert start(app) != run_id  # once it is over, another may start


def test_two_starts_at_once_make_one_run(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    gate = threading.Barrier(2)
    outcomes: list[object] = []

    def click() -> None:
        gate.wait()
        try:
            outcomes.append(start(app))
        except AuditBusy as exc:
            outcomes.append(exc)

    clicks = [threading.Thread(target=click) for _ in range(2)]
    for t in clicks:
        t.start()
    for t in clicks:
        t.join()
    started = [o for o in outcomes if isinstance(o, int)]
    busy = [o for o in outcomes if isinstance(o, AuditBusy)]
    assert len(started) == 1 and len(busy) == 1 and busy[0].run_id == started[0]
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.AuditRun)) == 1


def test_each_stage_is_announced_in_order(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    stages: list[str] = []
    report = run_audit(app, Q1, canary=CANARY, channels=["email"], progress=stages.append)
    assert report.passed
    assert stages == [
        "enrolling three canaries",
        "sending each canary its first email",
        "the worker claims the next step before the reply",
        "the test reply and the out-of-office arrive",
        "the worker tries to send what it claimed",
        "retries and recovery",
        "a worker pass for the absent canary",
        "judging the six checks",
        "cleaning up the canaries",
    ]


def test_a_stalled_web_run_is_interrupted_by_the_next_start(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    dead = start(app)  # its web process died before carrying it out
    clock.advance(STALLED_AFTER - timedelta(minutes=1))
    with pytest.raises(AuditBusy):
        start(app)
    clock.advance(timedelta(minutes=2))
    fresh = start(app)
    with app.uow() as uow:
        old = audit_run(uow, dead)
    assert fresh != dead and old.status == "error" and "interrupted" in (old.error or "")


def test_a_canary_the_audit_refuses_records_nothing(app: App, clock: FixedClock) -> None:
    live_workspace(app, clock)
    with pytest.raises(AuditSetupError, match="address of a lead"):
        start(app, canary=PRIYA)
    with pytest.raises(LookupError), app.uow() as uow:
        start_web_run(uow, app, "No such campaign", canary=CANARY, by=ANN)
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.AuditRun)) == 0
