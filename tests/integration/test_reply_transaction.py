"""The reply transaction (invariant 2): one transaction, everything or nothing."""

from __future__ import annotations

import threading
from datetime import date, timedelta

import pytest
from sqlalchemy import func, select, text

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.failpoints import InjectedCrash, crash
from tests.support.scenario import (
    FORECASTING,
    REPORTS,
    lead_state,
    load_examples,
    reply,
    run_days,
    step_counts,
)

PRIYA = "priya@fernhollow.test"
PRIYA_ALT = "priya.raman.home@gmail-like.test"


def test_reply_cancels_every_queued_step_of_that_lead_only(app: App, clock: FixedClock) -> None:
    load_examples(app)
    run_days(app, clock, 1)  # the first emails go out on Monday
    assert step_counts(app, PRIYA, REPORTS) == {"sent": 1, "scheduled": 1, "awaiting_approval": 1}

    outcome = reply(app, PRIYA, REPORTS)

    assert outcome.lead_state == "replied"
    assert outcome.cancelled == 2
    assert step_counts(app, PRIYA, REPORTS) == {"sent": 1, "cancelled": 2}
    # The same person's lead in another product is not touched, and is shown to the human.
    assert lead_state(app, PRIYA, FORECASTING) == "active"
    assert outcome.other_products == [{"product": FORECASTING, "reply_state": "active"}]
    with app.uow() as uow:
        notice = uow.session.scalars(select(m.Notice)).one()
        payload, recipient = notice.payload, notice.recipient
    assert payload["product"] == REPORTS
    assert payload["campaigns"] == ["Q1 reporting outreach"]
    assert payload["lead"]["email"] == PRIYA
    assert payload["thread"]["id"] == outcome.thread_id
    # A reply without a subject of its own is shown under the subject of our last email.
    assert payload["subject"] == "Quick question about Fernhollow's reporting"
    assert payload["kind"] == "human_reply"
    assert payload["other_active_products"][0]["product"] == FORECASTING
    assert recipient == "dana@northwind-analytics.test"

    run_days(app, clock, 9)
    assert step_counts(app, PRIYA, REPORTS) == {"sent": 1, "cancelled": 2}
    # Everyone else went on: the Forecasting lead got its two emails, other leads their follow-up.
    assert step_counts(app, PRIYA, FORECASTING) == {"sent": 2}
    assert step_counts(app, "marc.keller@brightline-logistics.test", REPORTS)["sent"] == 2


def test_reply_from_an_alternate_address_finds_the_lead(app: App) -> None:
    load_examples(app)
    with app.uow() as uow:
        assert find_lead(uow, PRIYA_ALT.upper(), REPORTS).id == find_lead(uow, PRIYA, REPORTS).id
        assert find_lead(uow, "priya+news@fernhollow.test", REPORTS).id == find_lead(uow, PRIYA, REPORTS).id
    outcome = reply(app, PRIYA_ALT, REPORTS)
    assert outcome.cancelled == 3
    assert lead_state(app, PRIYA, REPORTS) == "replied"


def test_a_crash_inside_the_reply_transaction_leaves_neither(app: App) -> None:
    load_examples(app)
    before = step_counts(app, PRIYA, REPORTS)
    app.hooks.arm("inside_reply_tx", crash)
    with pytest.raises(InjectedCrash):
        reply(app, PRIYA, REPORTS)
    app.hooks.disarm()
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.Reply)) == 0
        assert uow.session.scalar(select(func.count()).select_from(m.Notice)) == 0
        assert uow.session.scalar(select(func.count()).select_from(m.RescueThread)) == 0
    assert lead_state(app, PRIYA, REPORTS) == "active"
    assert step_counts(app, PRIYA, REPORTS) == before


@pytest.mark.postgres_only
def test_cancellation_is_never_visible_without_its_reply(app: App) -> None:
    """A concurrent reader never sees cancelled steps without the reply row (or the reverse)."""
    load_examples(app)
    seen: list[tuple[int, int, str]] = []
    stop = threading.Event()

    def observe() -> None:
        with app.engine.connect() as conn:
            while not stop.is_set():
                with conn.begin():
                    conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
                    replies = conn.execute(text("SELECT count(*) FROM replies")).scalar_one()
                    cancelled = conn.execute(
                        text("SELECT count(*) FROM steps WHERE state = 'cancelled'")
                    ).scalar_one()
                    state = conn.execute(
                        text(
                            "SELECT reply_state FROM leads l JOIN contact_addresses a ON "
                            "a.contact_id = l.contact_id JOIN products p ON p.id = l.product_id "
                            "WHERE a.address = :a AND p.name = :p"
                        ),
                        {"a": PRIYA, "p": REPORTS},
                    ).scalar_one()
                seen.append((replies, cancelled, state))

    paused = threading.Event()

    def hold_open(_name: str) -> None:
        # Inside the transaction, after the reply row was written: a reader must see nothing yet.
        paused.set()
        threading.Event().wait(0.3)

    app.hooks.arm("inside_reply_tx", hold_open)
    reader = threading.Thread(target=observe)
    reader.start()
    reply(app, PRIYA, REPORTS)
    threading.Event().wait(0.2)
    stop.set()
    reader.join()
    assert paused.is_set()
    assert (0, 0, "active") in seen
    assert (1, 3, "replied") in seen
    assert set(seen) <= {(0, 0, "active"), (1, 3, "replied")}


def test_out_of_office_pauses_and_the_sequence_resumes_after_the_return_date(
    app: App, clock: FixedClock
) -> None:
    load_examples(app)
    run_days(app, clock, 1)
    marc = "marc.keller@brightline-logistics.test"
    outcome = reply(app, marc, REPORTS, ReplyKind.OUT_OF_OFFICE, back=date(2026, 12, 16))
    assert outcome.lead_state == "out_of_office"
    # An absence is the person's: the Forecasting sequence waits too (2 + 1 steps moved).
    assert outcome.cancelled == 0 and outcome.rescheduled == 3
    assert lead_state(app, marc, FORECASTING) == "out_of_office"
    with app.uow() as uow:
        lead = find_lead(uow, marc, REPORTS)
        dues = uow.session.scalars(
            select(m.Step.due_at).where(m.Step.lead_id == lead.id, m.Step.state != "sent")
        ).all()
    assert all(d >= clock.now().replace(day=15, hour=23) for d in dues)  # 16 Dec, Zurich time
    run_days(app, clock, 7)  # to Tue 15 Dec: still away
    assert step_counts(app, marc, REPORTS).get("sent") == 1
    assert lead_state(app, marc, REPORTS) == "out_of_office"
    run_days(app, clock, 2)
    assert lead_state(app, marc, REPORTS) == "active"
    assert step_counts(app, marc, REPORTS)["sent"] == 2


def test_an_out_of_office_too_far_away_holds_the_lead_for_a_person(app: App) -> None:
    load_examples(app)
    outcome = reply(app, PRIYA, REPORTS, ReplyKind.OUT_OF_OFFICE, back=date(2027, 6, 1))
    assert outcome.lead_state == "held"
    assert outcome.notice_id is not None


def test_human_reply_after_out_of_office_wins(app: App, clock: FixedClock) -> None:
    load_examples(app)
    reply(app, PRIYA, REPORTS, ReplyKind.OUT_OF_OFFICE, back=date(2026, 12, 10))
    outcome = reply(app, PRIYA, REPORTS)
    assert outcome.lead_state == "replied"
    clock.advance(timedelta(days=5))
    run_days(app, clock, 1)
    assert lead_state(app, PRIYA, REPORTS) == "replied"  # a pause ending never resumes a reply


def test_unsubscribe_stops_every_product_and_suppresses(app: App) -> None:
    load_examples(app)
    outcome = reply(app, PRIYA_ALT, REPORTS, ReplyKind.UNSUBSCRIBE)
    assert outcome.lead_state == "unsubscribed"
    assert lead_state(app, PRIYA, FORECASTING) == "unsubscribed"
    assert step_counts(app, PRIYA, FORECASTING) == {"cancelled": 2}
    with app.uow() as uow:
        suppressed = set(uow.session.scalars(select(m.Suppression.address)))
    assert suppressed == {PRIYA, PRIYA_ALT}


def test_hard_bounce_suppresses_and_bounces_a_single_address_lead(app: App) -> None:
    load_examples(app)
    marc = "marc.keller@brightline-logistics.test"
    outcome = reply(app, marc, REPORTS, ReplyKind.BOUNCE_HARD)
    assert outcome.lead_state == "bounced"
    assert step_counts(app, marc, REPORTS) == {"cancelled": 3}
    # Priya has another address: a person decides instead.
    assert reply(app, PRIYA, REPORTS, ReplyKind.BOUNCE_HARD).lead_state == "held"


def test_auto_reply_is_logged_and_the_sequence_goes_on(app: App) -> None:
    load_examples(app)
    outcome = reply(app, PRIYA, REPORTS, ReplyKind.AUTO_REPLY)
    assert outcome.lead_state == "active" and outcome.cancelled == 0
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        assert lead.last_reply_id is not None
        kinds = uow.session.scalars(select(m.Event.kind).where(m.Event.lead_id == lead.id)).all()
    assert "reply_recorded" in kinds


def test_record_reply_refuses_a_lead_of_another_workspace(app: App) -> None:
    load_examples(app)
    with app.uow() as uow:
        lead_id = find_lead(uow, PRIYA, REPORTS).id
    other = App(engine=app.engine, clock=app.clock, settings=app.settings, workspace="other")
    other.init_database()
    with other.uow() as uow, pytest.raises(LookupError):
        record_reply(
            uow, lead_id, IncomingReply(kind=ReplyKind.HUMAN_REPLY, received_at=app.clock.now()), app.settings
        )


def test_the_reply_written_by_core_statements_reads_back_in_its_own_unit_of_work(
    app: App, clock: FixedClock
) -> None:
    # The lead's move is one prebuilt UPDATE and the events one INSERT at the end (issue 25):
    # the session must still see the lead as moved, and the events keep their order and tx.
    load_examples(app)
    run_days(app, clock, 1)
    with app.uow() as uow:
        lead = find_lead(uow, PRIYA, REPORTS)
        incoming = IncomingReply(kind=ReplyKind.HUMAN_REPLY, received_at=clock.now(), text="Sure, call me.")
        outcome = record_reply(uow, lead.id, incoming, app.settings)
        assert lead not in uow.session.dirty  # nothing left for a flush to write again
        again = uow.session.execute(
            select(m.Lead).where(m.Lead.id == lead.id).execution_options(populate_existing=True)
        ).scalar_one()
        assert (again.reply_state, again.last_reply_id) == ("replied", outcome.reply_id)
        tx = uow.tx
        uow.commit()
    with app.uow() as uow:
        rows = uow.session.execute(
            select(m.Event.kind, m.Event.data).where(m.Event.tx == tx).order_by(m.Event.id)
        ).all()
    assert [kind for kind, _ in rows] == [
        "reply_recorded",
        "steps_cancelled",
        "thread_opened",
        "notice_created",
    ]
    assert rows[2].data["thread_id"] == outcome.thread_id and rows[2].data["kind"] == "human_reply"
    assert rows[3].data["notice_id"] == outcome.notice_id


def test_batched_events_are_not_written_when_the_block_fails(app: App) -> None:
    load_examples(app)
    with app.uow() as uow:
        before = uow.session.scalar(select(func.count()).select_from(m.Event))
        with pytest.raises(RuntimeError), uow.batched_events():
            uow.add_event("probe")
            raise RuntimeError("stop")
        assert uow.session.scalar(select(func.count()).select_from(m.Event)) == before
        with uow.batched_events():
            uow.add_event("first")
            uow.add_event("second", lead_id=None, n=2)
        kinds = uow.session.scalars(select(m.Event.kind).order_by(m.Event.id.desc()).limit(2)).all()
    assert kinds == ["second", "first"]
