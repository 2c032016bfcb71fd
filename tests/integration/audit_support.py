"""Shared by the audit tests: a live-looking workspace, a picture of everything that belongs to
prospects, and the breakages (each one thing broken, in tests only) the audit must catch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, Table, select, update

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.inbound.classify import Classification
from replyguard.domain.states import ReplyKind, StepState
from replyguard.service_layer.inbound import ingest, replies
from replyguard.service_layer.inbound.ingest import IngestResult
from replyguard.service_layer.inbound.replies import IncomingReply, ReplyEffect, ReplyOutcome
from replyguard.service_layer.rescue import notices
from replyguard.service_layer.sending import send_guard
from replyguard.service_layer.sending.recovery import Recovery
from replyguard.service_layer.sending.worker import Worker
from replyguard.service_layer.sending.worker_base import Fence, S
from replyguard.service_layer.uow import UnitOfWork
from tests.support.scenario import Q1, REPORTS, load_examples, reply

CANARY = "team@ours.test"
PRIYA = "priya@fernhollow.test"
MONDAY_NOON_NY = timedelta(hours=11)  # START is Monday 06:00 UTC: 12:00 UTC is 07:00 in New York


def live_workspace(app: App, clock: FixedClock) -> None:
    """Both example campaigns, their leads enrolled, a day of sending, one person's reply and
    one absence: prospects in every state the audit must not disturb."""
    load_examples(app)
    clock.advance(timedelta(hours=11))
    Worker(app).run_once()
    clock.advance(timedelta(hours=4))
    Worker(app).run_once()
    reply(app, PRIYA, REPORTS)
    reply(app, "claire.dubois@atelier-lumen.test", REPORTS, ReplyKind.OUT_OF_OFFICE, back=date(2026, 12, 14))
    clock.advance(timedelta(minutes=30))


def canary_leads(app: App) -> tuple[set[int], set[int]]:
    with app.uow() as uow:
        rows = uow.session.execute(
            select(m.Lead.id, m.Lead.contact_id).where(m.Lead.audit_run_id.is_not(None))
        ).all()
    return {r.id for r in rows}, {r.contact_id for r in rows}


def prospects(app: App) -> dict[str, list[tuple[Any, ...]]]:
    """Every row that belongs to a prospect (or to no lead at all), column by column: an audit
    must leave all of it exactly as it was — steps, states, counts, slots of the daily cap."""
    leads, contacts = canary_leads(app)
    picture: dict[str, list[tuple[Any, ...]]] = {}
    with app.engine.connect() as conn:
        for table in m.Base.metadata.sorted_tables:
            # step_tallies: the ledger of step counts gains the canary's steps' rows; the
            # prospects' steps themselves are compared row by row.
            if table.name in ("audit_runs", "events", "step_tallies"):
                continue
            picture[table.name] = _rows(conn, table, leads, contacts)
        events = m.Event.__table__
        picture["events"] = [
            tuple(r)
            for r in conn.execute(
                select(events).where(events.c.lead_id.is_not(None), events.c.lead_id.not_in(leads or {0}))
            )
        ]
    return picture


def _rows(conn: Connection, table: Table, leads: set[int], contacts: set[int]) -> list[tuple[Any, ...]]:
    query = select(table).order_by(*table.primary_key.columns)
    if "lead_id" in table.c:
        query = query.where(table.c.lead_id.is_(None) | table.c.lead_id.not_in(leads or {0}))
    if "thread_id" in table.c and "lead_id" not in table.c:  # a thread's version log, presence
        threads = m.RescueThread.__table__
        canary_threads = select(threads.c.id).where(threads.c.lead_id.in_(leads or {0}))
        query = query.where(table.c.thread_id.not_in(canary_threads))
    if "contact_id" in table.c:
        query = query.where(table.c.contact_id.not_in(contacts or {0}))
    if table.name == "contacts":
        query = query.where(table.c.id.not_in(contacts or {0}))
    if table.name == "leads":
        query = query.where(table.c.audit_run_id.is_(None))
    if table.name == "inbound_messages":
        query = query.where(table.c.source != "audit")
    if table.name == "notice_deliveries":
        mine = select(m.Notice.id).where(m.Notice.lead_id.in_(leads or {0}))
        query = query.where(table.c.notice_id.not_in(mine))
    return [tuple(r) for r in conn.execute(query)]


# ---------------------------------------------------------------- breakages (tests only)
def cancel_after_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reply commits first; a "cleanup" cancels the lead's steps in a transaction after."""
    cancel = replies.cancel_queued_steps
    process = ingest.process_stored
    monkeypatch.setattr(replies, "cancel_queued_steps", lambda uow, lead_id, *, reason: (0, 0))

    def process_then_clean_up(app: App, inbound_id: int, **fresh: Any) -> IngestResult:
        result = process(app, inbound_id, **fresh)
        if result.kind == ReplyKind.HUMAN_REPLY:
            with app.uow() as uow:
                uow.lock_leads(result.lead_ids)
                for lead_id in result.lead_ids:
                    cancel(uow, lead_id, reason="reply:human_reply")
                uow.commit()
        return result

    monkeypatch.setattr(ingest, "process_stored", process_then_clean_up)


def recheck_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's re-check at send time lets everything through."""
    monkeypatch.setattr(send_guard, "recheck", lambda check, now: None)


def outbox_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads open, but no notice is written into the outbox."""
    monkeypatch.setattr(notices, "queue_notice", lambda *args, **kwargs: None)


def absence_as_person(monkeypatch: pytest.MonkeyPatch) -> None:
    """An out-of-office is taken for a human reply."""
    classify = ingest.classify_message

    def careless(msg: Any) -> Classification:
        found = classify(msg)
        if found.kind is ReplyKind.OUT_OF_OFFICE:
            return replace(found, kind=ReplyKind.HUMAN_REPLY, return_date=None)
        return found

    monkeypatch.setattr(ingest, "classify_message", careless)


def blind_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recovery resends a step left in `sending` instead of asking what its send key did."""

    def resend(
        self: Recovery,
        conn: Connection,
        step_id: int,
        lead_id: int,
        fence: Fence,
        cancel_requested: bool,
        now: datetime,
    ) -> None:
        self.ctx.transport.send(self.ctx.email(conn, step_id))
        conn.execute(
            update(S).where(fence.to(StepState.SENT)).values(state="sent", sent_at=now, lease_until=None)
        )

    monkeypatch.setattr(Recovery, "_reconcile", resend)


def state_off_the_lead(monkeypatch: pytest.MonkeyPatch) -> None:
    """A person's reply is recorded (and its steps cancelled), but the lead row keeps its old
    state: the state lives somewhere else (the thread), not where the send path reads it."""
    apply = replies._apply

    def elsewhere(
        uow: UnitOfWork,
        lead: m.Lead,
        row: m.Reply,
        effect: ReplyEffect,
        incoming: IncomingReply,
        outcome: ReplyOutcome,
        *rest: object,
    ) -> None:
        before = lead.reply_state
        apply(uow, lead, row, effect, incoming, outcome, *rest)
        if incoming.kind is ReplyKind.HUMAN_REPLY:
            lead.reply_state = before

    monkeypatch.setattr(replies, "_apply", elsewhere)


Breakage = Callable[[pytest.MonkeyPatch], None]

__all__ = ["CANARY", "PRIYA", "Q1", "REPORTS", "live_workspace", "prospects"]
