"""The worker's claim is planned through the leads' primary key, whatever the statistics say
(issue 25, the guarded send).

A campaign imported a moment ago has no statistics yet. PostgreSQL then planned the claim's
`leads.audit_run_id IS NULL` through the full index on that column: a bitmap scan of every
lead for every due step (1,124,060 rows filtered for one claim of 20 at 1,500 leads: 308 ms,
quadratic in the campaign). The index now holds only the audit's canary leads (partial), so
no planner can serve `IS NULL` from it. This reads the plan of the real claim statement, as
the worker sends it, on both databases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, text

from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.sending.worker_base import WorkerReport
from tests.support.plans import query_plan
from tests.support.scenario import simple_workspace


def _claim_statement(app: App) -> tuple[str, Any]:
    seen: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    worker = Worker(app)
    event.listen(app.engine, "before_cursor_execute", grab)
    try:
        claims = worker.claim(WorkerReport())
    finally:
        event.remove(app.engine, "before_cursor_execute", grab)
    assert claims, "nothing was due: the scenario did not make a claim"
    worker.guard.give_back(claims, WorkerReport())
    statement, parameters = next((s, p) for s, p in seen if "FROM steps" in s and "JOIN leads" in s)
    return statement, parameters


def test_the_claim_reaches_leads_by_their_key_before_any_statistics(app: App, clock: FixedClock) -> None:
    clock.advance(timedelta(hours=4))  # Monday 10:00 UTC, inside the window
    simple_workspace(app, 300)
    statement, parameters = _claim_statement(app)
    assert "audit_run_id IS NULL" in statement  # the condition this is about is still there
    plan = query_plan(app, statement, parameters)
    assert "ix_leads_audit_run_id" not in plan, plan
    key = "pk_leads" if app.engine.dialect.name == "postgresql" else "leads USING INTEGER PRIMARY KEY"
    assert key in plan, plan


@pytest.mark.postgres_only
def test_the_claim_reads_steps_due_at_one_instant_in_its_order_without_sorting_them(
    app: App, clock: FixedClock
) -> None:
    """A campaign enrolled at once has every first email due at the same instant: the claim's
    `ORDER BY due_at, id LIMIT 20` must come from ix_steps_due, not a sort of every due step
    (2.9 s per claim at 100,000 due when the index lacked `id`). With sorting disabled for the
    plan, PostgreSQL still plans a Sort when no index gives the order."""
    clock.advance(timedelta(hours=4))
    simple_workspace(app, 300)
    with app.engine.connect() as conn:
        assert (
            conn.execute(text("SELECT count(DISTINCT due_at) FROM steps WHERE position = 1")).scalar_one()
            == 1
        )
    statement, parameters = _claim_statement(app)
    plan = query_plan(app, statement, parameters, settings=("enable_sort = off", "enable_seqscan = off"))
    assert "ix_steps_due" in plan, plan
    assert 'Sort"' not in plan, plan  # neither "Sort" nor "Incremental Sort"
