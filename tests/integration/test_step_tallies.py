"""The step-count ledger (migration 0030, service_layer/step_tallies.py) always says what the
steps say: after enrolment, sends, replies, a rolled-back transaction, deletes and folds, on
both databases; a write committed while a fold runs is neither lost nor counted twice; the
migration counts the steps that were already there (issue 25, the campaign page)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from alembic import command
from sqlalchemy import Connection, event, func, select, text, update

from replyguard.adapters.db import models as m
from replyguard.adapters.db.migrate import alembic_config, upgrade
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer import step_tallies as tallies
from replyguard.service_layer.queries import campaigns as q
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.step_tallies import Folder
from replyguard.service_layer.workspace.enrollment import BULK_ENROLMENT
from tests.support.scenario import reply, run_days, simple_workspace

S = m.Step.__table__
T = m.StepTally.__table__


def truth(conn: Connection) -> dict[tuple[int, str], int]:
    rows = conn.execute(
        select(S.c.campaign_step_id, S.c.state, func.count()).group_by(S.c.campaign_step_id, S.c.state)
    )
    return {(template, state): n for template, state, n in rows}


def ledger(conn: Connection, app: App) -> dict[tuple[int, str], int]:
    templates = conn.scalars(select(m.CampaignStep.id)).all()
    return tallies.step_counts(conn, app.workspace_id, templates)


def agree(app: App) -> dict[tuple[int, str], int]:
    with app.engine.connect() as conn:
        expected, found = truth(conn), ledger(conn, app)
    assert found == expected
    return found


def test_the_counts_follow_every_write_of_a_step(app: App, clock: FixedClock) -> None:
    clock.advance(timedelta(hours=4))  # Monday 10:00 UTC, inside the window
    emails = simple_workspace(app, 12)
    counts = agree(app)
    assert sum(counts.values()) == 36 and {state for _, state in counts} == {"scheduled"}
    run_days(app, clock, 1)  # sends: scheduled -> claimed -> sending -> sent
    reply(app, emails[0], "P")  # the reply transaction cancels the lead's queued steps
    counts = agree(app)
    assert counts[(min(t for t, _ in counts), "sent")] == 12
    assert any(state == "cancelled" for _, state in counts)

    with app.engine.connect() as conn:  # a transaction rolled back leaves no count behind
        conn.execute(update(m.Step).values(state="failed"))
        conn.rollback()
    assert agree(app) == counts

    with app.engine.begin() as conn:  # a step moved to another template, steps deleted
        first = conn.scalars(select(m.CampaignStep.id).order_by(m.CampaignStep.id)).first()
        conn.execute(update(m.Step).where(m.Step.id == 36).values(campaign_step_id=first))
        conn.execute(S.delete().where(S.c.lead_id == 2, S.c.state == "scheduled"))
    counts = agree(app)
    assert sum(counts.values()) == 34


def test_a_fold_keeps_every_sum_and_drops_the_zeros(app: App, clock: FixedClock) -> None:
    clock.advance(timedelta(hours=4))
    simple_workspace(app, 10)
    run_days(app, clock, 1)
    with app.engine.begin() as conn:
        # A template's steps all gone (none has gone out: nothing refers to them).
        conn.execute(S.delete().where(S.c.position == 3, S.c.state == "scheduled"))
    before = agree(app)
    with app.engine.begin() as conn:
        rows = conn.scalar(select(func.count()).select_from(T))
        left = tallies.fold(conn, app.workspace_id)
    assert left == len(before) < rows
    assert agree(app) == before
    with app.engine.begin() as conn:
        assert tallies.fold(conn, app.workspace_id) == len(before)  # folding again changes nothing
        assert conn.scalar(select(func.count()).select_from(T).where(T.c.n == 0)) == 0
    assert agree(app) == before


def test_the_worker_folds_a_long_ledger(app: App, clock: FixedClock) -> None:
    clock.advance(timedelta(hours=4))
    simple_workspace(app, 20)
    worker = Worker(app)
    worker.tallies = Folder(app.workspace_id, after=10)
    with app.engine.connect() as conn:
        rows = tallies.ledger_rows(conn, app.workspace_id)
    assert rows > 10  # PostgreSQL: one row per statement and state; SQLite: one per step
    assert worker.fold_tallies() is True
    with app.engine.connect() as conn:
        assert tallies.ledger_rows(conn, app.workspace_id) == len(ledger(conn, app)) == 3
    assert worker.fold_tallies() is False  # nothing gathered since
    for _ in range(24):
        worker.run_once()
        clock.advance(timedelta(hours=1))
    agree(app)
    with app.engine.connect() as conn:
        assert tallies.ledger_rows(conn, app.workspace_id) <= worker.tallies.folded_to + 10 + 6 * 20


def test_a_bulk_enrolment_folds_the_ledger_it_made_long(
    app: App, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace whose worker does not run (yet) still reads a short ledger after a large
    enrolment: the enrolment folds it in its own transaction when it has grown long."""
    monkeypatch.setattr(tallies, "FOLD_AFTER", 50)
    simple_workspace(app, BULK_ENROLMENT)  # 3 templates: 300 steps, at least one row each move
    counts = agree(app)
    assert sum(counts.values()) == 3 * BULK_ENROLMENT
    with app.engine.connect() as conn:
        assert tallies.ledger_rows(conn, app.workspace_id) == len(counts) == 3


@pytest.mark.postgres_only
def test_a_move_committed_while_a_fold_runs_is_kept(app: App, clock: FixedClock) -> None:
    clock.advance(timedelta(hours=4))
    simple_workspace(app, 5)
    with app.engine.connect() as writer, app.engine.connect() as folder:
        writer.begin()
        writer.execute(update(m.Step).where(m.Step.id == 1).values(state="cancelled"))  # not committed yet
        with folder.begin():
            tallies.fold(folder, app.workspace_id)  # cannot see the writer's rows: leaves them
        writer.commit()
    counts = agree(app)
    assert counts[(1, "cancelled")] == 1


@pytest.mark.postgres_only
def test_two_folds_take_turns(app: App, clock: FixedClock) -> None:
    clock.advance(timedelta(hours=4))
    simple_workspace(app, 5)
    with app.engine.connect() as one, app.engine.connect() as two:
        one.begin()
        assert tallies.fold(one, app.workspace_id) == 3  # 15 scheduled steps of 3 templates: a row each
        with two.begin():
            assert tallies.fold(two, app.workspace_id) is None  # the first holds the lock
        one.commit()
    agree(app)


def test_the_migration_counts_the_steps_already_there(app: App, clock: FixedClock) -> None:
    clock.advance(timedelta(hours=4))
    simple_workspace(app, 6)
    run_days(app, clock, 1)
    config = alembic_config(app.engine)
    try:
        with app.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0029_answered_step_index")
        with app.engine.begin() as conn:  # written while no trigger counted
            conn.execute(update(m.Step).where(m.Step.state == "scheduled").values(state="cancelled"))
            assert conn.scalar(text("SELECT count(*) FROM steps")) == 18
    finally:
        upgrade(app.engine)
    agree(app)


def test_the_campaign_page_counts_without_reading_the_steps(app: App) -> None:
    simple_workspace(app, 5)
    seen: list[str] = []

    def grab(conn: object, cursor: object, statement: str, *rest: object) -> None:
        seen.append(statement)

    with app.uow() as uow:
        campaign = uow.session.scalar(select(m.Campaign.id))
        assert campaign is not None
        event.listen(app.engine, "before_cursor_execute", grab)
        try:
            counts = q.step_counts(uow, campaign)
            rows = q.list_campaigns(uow)
        finally:
            event.remove(app.engine, "before_cursor_execute", grab)
    assert sum(counts.values()) == 15 and rows[0].enrolled == 5
    assert any("step_tallies" in s for s in seen)
    assert not [s for s in seen if "FROM steps" in s], seen
