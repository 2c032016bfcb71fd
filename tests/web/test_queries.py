"""The read models behind the pages and the API, and the numbers behind /metrics, on SQLite
and PostgreSQL, built through the real services and the real worker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import DBAPIError

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.pollers import SourceLease
from replyguard.service_layer.inbound.source_health import RecordedHealth
from replyguard.service_layer.queries import campaigns as cq
from replyguard.service_layer.queries import inbound as iq
from replyguard.service_layer.queries.charts import reply_activity
from replyguard.service_layer.queries.ops import ops_snapshot
from replyguard.service_layer.sending.worker import Worker, WorkerReport
from replyguard.service_layer.uow import Memo, UnitOfWork
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import import_leads
from tests.support.scenario import campaign_toml, csv_of, enroll_all, reply, run_days


def two_campaigns_one_mailbox(app: App, leads_each: int = 6, cap: int = 4) -> tuple[int, int]:
    ids = []
    for name in ("North", "South"):
        rows = [{"email": f"{name.lower()}{i}@lead.test", "first_name": f"L{i}"} for i in range(leads_each)]
        with app.uow() as uow:
            ids.append(create_campaign(uow, campaign_toml(name, name, cap=cap)).campaign_id)
            import_leads(uow, name, list(read_leads(csv_of(rows))))
            uow.commit()
        enroll_all(app, name)
    return ids[0], ids[1]


def test_sends_per_day_counts_the_campaign_and_its_mailbox_against_the_cap(
    app: App, clock: FixedClock
) -> None:
    north, _south = two_campaigns_one_mailbox(app, cap=4)
    clock.advance(timedelta(hours=4))  # Monday 10:00 UTC: the window is open
    run_days(app, clock, 0.5)
    with app.uow() as uow:
        sends = cq.sends_per_day(uow, north, days=7)
        detail = cq.campaign_detail(uow, north)
    today = sends.days[-1]
    assert len(sends.days) == 7 and today.day == clock.now().date()
    assert sends.mailbox_cap == 4 and today.mailbox == 4  # the cap holds across both campaigns
    assert 0 < today.campaign <= 4
    assert today.campaign == detail.queue["sent"]
    assert all(d.mailbox == 0 for d in sends.days[:-1])


def test_the_queue_lists_each_state_soonest_first_and_pages(app: App) -> None:
    north, _ = two_campaigns_one_mailbox(app, leads_each=7)
    with app.uow() as uow:
        detail = cq.campaign_detail(uow, north)
        pages = [cq.campaign_queue(uow, north, "scheduled", page=n, per_page=10) for n in (1, 2, 3)]
    assert detail.queue["scheduled"] == 7 * 3 and detail.queue["awaiting_approval"] == 0
    assert detail.enrolled == 7 and [s.position for s in detail.steps] == [1, 2, 3]
    assert [(len(p.items), p.has_next) for p in pages] == [(10, True), (10, True), (1, False)]
    rows = [r for p in pages for r in p.items]
    assert [r.due_at for r in rows] == sorted(r.due_at for r in rows)
    assert len({r.step_id for r in rows}) == 21


def test_every_tab_pages_through_its_steps_in_order_across_templates(app: App, clock: FixedClock) -> None:
    """The page is merged and cut by the database from one ordered range per (template,
    state): every tab, read page by page, is exactly its steps in due order (soonest first
    for upcoming ones, latest first for finished ones; ids break ties)."""
    north, _ = two_campaigns_one_mailbox(app, leads_each=9, cap=10)
    run_days(app, clock, 3)
    reply(app, "north0@lead.test", "North")
    with app.uow() as uow:
        templates = list(
            uow.session.scalars(select(m.CampaignStep.id).where(m.CampaignStep.campaign_id == north))
        )
        steps = uow.session.execute(
            select(m.Step.id, m.Step.state, m.Step.due_at).where(m.Step.campaign_step_id.in_(templates))
        ).all()
        for tab in ("scheduled", "sending", "sent", "cancelled"):
            states = {"sending": {"claimed", "sending"}}.get(tab, {tab})
            mine = [(due, i) for i, state, due in steps if state in states]
            expected = [i for _, i in sorted(mine, reverse=tab in ("sent", "cancelled"))]
            listed: list[int] = []
            for n in range(1, 20):
                page = cq.campaign_queue(uow, north, tab, page=n, per_page=4)
                listed += [row.step_id for row in page.items]
                if not page.has_next:
                    break
            assert listed == expected, tab
    assert len([i for i, state, _ in steps if state == "sent"]) > 4  # more than one page


def test_the_held_queue_shows_the_steps_of_leads_that_wait(app: App, clock: FixedClock) -> None:
    north, _ = two_campaigns_one_mailbox(app, leads_each=4)
    reply(
        app,
        "north0@lead.test",
        "North",
        ReplyKind.OUT_OF_OFFICE,
        back=(clock.now() + timedelta(days=9)).date(),
    )
    with app.uow() as uow:
        uow.session.execute(
            update(m.Lead)
            .where(
                m.Lead.id
                == uow.session.scalar(select(m.Step.lead_id).where(m.Step.to_address == "north1@lead.test"))
            )
            .values(reply_state="held", hold_reason="a test")
        )
        uow.commit()
    reply(app, "north2@lead.test", "North")  # replied: its steps are cancelled, not held
    with app.uow() as uow:
        detail = cq.campaign_detail(uow, north)
        held = cq.campaign_queue(uow, north, "held")
    assert detail.queue["held"] == 6 and list(detail.queue) == list(cq.QUEUE)
    assert {(r.to_address, r.lead_state) for r in held.items} == {
        ("north0@lead.test", "out_of_office"),
        ("north1@lead.test", "held"),
    }
    assert [r.due_at for r in held.items] == sorted(r.due_at for r in held.items)


def test_the_reply_figures_keep_one_remembered_result_per_campaign_as_replies_arrive(
    app: App, clock: FixedClock
) -> None:
    """The campaign page remembers its per-step reply figures until a reply arrives. A result
    under an older reply count can never be asked for again: it is replaced, not kept beside
    the new one until the memo's 512 entries (each as large as the campaign's replies: a
    process serving the page between replies held hundreds of them)."""
    north, _ = two_campaigns_one_mailbox(app, leads_each=6, cap=20)
    clock.advance(timedelta(hours=4))
    run_days(app, clock, 0.5)
    memo = Memo()
    for i in range(6):
        reply(app, f"north{i}@lead.test", "North", ReplyKind.HUMAN_REPLY)
        with UnitOfWork(app.engine, app.clock, app.workspace_id, app.settings, memo=memo) as uow:
            remembered = cq.step_stats(uow, north)
            again = cq.step_stats(uow, north)  # from the memo
        with app.uow() as uow:  # a memo of its own: read afresh
            fresh = cq.step_stats(uow, north)
        assert remembered == again == fresh
        assert sum(s.replied for s in fresh) == i + 1
        assert len(memo) == 1


def test_reply_activity_counts_each_kind_per_day(app: App, clock: FixedClock) -> None:
    north, south = two_campaigns_one_mailbox(app, leads_each=4)
    reply(app, "north0@lead.test", "North", ReplyKind.HUMAN_REPLY)
    reply(
        app, "north1@lead.test", "North", ReplyKind.OUT_OF_OFFICE, back=clock.now().date() + timedelta(days=3)
    )
    reply(app, "north2@lead.test", "North", ReplyKind.BOUNCE_HARD)
    clock.advance(timedelta(days=1))
    reply(app, "north3@lead.test", "North", ReplyKind.HUMAN_REPLY)
    with app.uow() as uow:
        activity = {a.campaign_id: a for a in reply_activity(uow, days=7)}
    assert activity[north].totals == {"replies": 2, "out_of_office": 1, "bounces": 1, "other": 0}
    assert activity[south].totals == {"replies": 0, "out_of_office": 0, "bounces": 0, "other": 0}
    yesterday, today = activity[north].days[-2:]
    assert (yesterday.replies, yesterday.out_of_office, yesterday.bounces) == (1, 1, 1)
    assert (today.replies, today.out_of_office, today.bounces) == (1, 0, 0)


def test_source_health_goes_from_waiting_to_ok_to_stale_to_failing(app: App, clock: FixedClock) -> None:
    key = "imaps://ann@mail.test:993/INBOX"
    lease = SourceLease(app, key, owner="poller-1")
    assert lease.acquire()
    try:
        check_health_states(app, clock, key)
    finally:
        lease.release()


def check_health_states(app: App, clock: FixedClock, key: str) -> None:
    health = RecordedHealth(app, key, secret="hunter2-password")

    def status() -> iq.SourceHealth:
        with app.uow() as uow:
            (found,) = iq.source_health(uow)
        return found

    assert status().status == "waiting"
    health.polled()
    assert status().status == "ok" and status().lag == timedelta(0) and status().polled_by == "poller-1"
    clock.advance(timedelta(minutes=6))
    assert status().status == "stale" and status().lag == timedelta(minutes=6)
    health.failed("LoginError: b'[AUTHENTICATIONFAILED] for ann:hunter2-password'")
    failing = status()
    assert failing.status == "failing" and failing.error_count == 1
    assert failing.last_error is not None and "hunter2" not in failing.last_error
    clock.advance(timedelta(seconds=30))
    health.polled()
    assert status().status == "ok" and status().error_count == 1


def test_ops_numbers_read_every_send_refusal_reply_and_the_oldest_due_step(
    app: App, clock: FixedClock
) -> None:
    north, _ = two_campaigns_one_mailbox(app, leads_each=3, cap=100)
    clock.advance(timedelta(hours=4))
    worker = Worker(app)
    report = WorkerReport()
    claims = worker.claim(report, limit=2)
    # A person pauses the campaign between the claim and the send: the re-check refuses.
    with app.uow() as uow:
        uow.session.execute(update(m.Campaign).where(m.Campaign.id == north).values(status="paused"))
        uow.commit()
    worker.send_batch(claims, report)
    assert report.refused == 2
    with app.uow() as uow:
        uow.session.execute(update(m.Campaign).where(m.Campaign.id == north).values(status="active"))
        uow.commit()
    worker.run_once()
    reply(app, "south0@lead.test", "South", ReplyKind.HUMAN_REPLY)
    clock.advance(timedelta(minutes=5))
    with app.scoped.installation() as uow:
        snap = ops_snapshot(uow)
    assert snap.refusals_by_reason == {"the campaign is paused": 2}
    assert snap.steps_by_state["sent"] == 6  # every first step, once the campaign ran again
    assert snap.replies_by_kind == {"human_reply": 1}
    assert snap.latency_count == 0  # a reply typed in by hand has no inbound message to time
    assert snap.notice_backlog == 1
    assert snap.worker_lag_seconds == 0.0  # nothing due is waiting: the follow-ups are days away


@pytest.mark.postgres_only
def test_page_reads_run_in_read_only_transactions(app: App) -> None:
    with (
        app.scoped.read(app.workspace_id) as uow,
        pytest.raises(DBAPIError, match="read-only"),
    ):
        uow.session.execute(update(m.Lead).values(hold_reason="written by a page"))


def test_a_page_read_does_not_wait_for_the_write_lock(app: App) -> None:
    """On SQLite a writer holds the database's one write lock (BEGIN IMMEDIATE); a page read
    must still answer at once, from its snapshot, instead of waiting behind it."""
    two_campaigns_one_mailbox(app, leads_each=2)
    scoped = app.scoped
    with app.uow() as writer:
        writer.session.execute(update(m.Lead).values(hold_reason="a long write"))
        with scoped.read(app.workspace_id) as reader:
            rows = cq.list_campaigns(reader)
        writer.commit()
    assert [r.name for r in rows] == ["South", "North"]


def test_the_inbox_reads_each_threads_context_as_load_context_does(app: App) -> None:
    """The inbox reads a page of contexts at once (`contexts_for`); each must equal what
    `load_context` reads for one thread: the next step shown in the list is the thread's."""
    from sqlalchemy import select

    from replyguard.service_layer.queries.thread_contexts import contexts_for
    from replyguard.service_layer.rescue.thread_context import load_context
    from tests.web.rescue import ADA, ALAN, GRACE, live_workspace

    live = live_workspace(app)
    live.reply(ADA, "Yes, interested.")  # Ada is also a live lead of Beacon
    live.reply(GRACE, "What does it cost?")
    with app.uow() as uow:
        lead_ids = list(uow.session.scalars(select(m.Lead.id)))
        one_by_one = {lead_id: load_context(uow.session, uow.workspace_id, lead_id) for lead_id in lead_ids}
        together = contexts_for(uow, lead_ids)
    assert together == one_by_one
    assert any(c.other_products for c in together.values())  # the comparison covered them
    assert {c.email for c in together.values()} >= {ADA, GRACE, ALAN}
    with app.scoped.read(app.workspace_id + 1000) as other:
        assert contexts_for(other, lead_ids) == {}  # another workspace's leads are not read
