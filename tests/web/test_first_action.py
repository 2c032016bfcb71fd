"""The reports' time from a reply to a person's first action (`queries.charts.first_action`), on
SQLite and PostgreSQL: which action counts for which reply. The database pairs them in one
statement (issue 25); these are the rules it must keep: a thread's first action at or after the
reply it is open for (not one taken before a later reply), once however many follow, canary
threads left out, each campaign on its own."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select, update

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.service_layer.queries.charts import FirstAction, first_action
from replyguard.service_layer.rescue.decisions import Request, decide
from replyguard.service_layer.workspace.leads import find_lead
from tests.web.rescue import ADA, ALAN, ATLAS, ATLAS_CAMPAIGN, BEACON_CAMPAIGN, GRACE, Live, live_workspace


def act(live: Live, thread_id: int, action: str, until_at: datetime | None = None) -> None:
    with live.app.uow() as uow:
        decide(uow, thread_id, Request(action, by="sam@atlas.test", until_at=until_at), live.app.settings)
        uow.commit()


def by_campaign(app: App) -> dict[str, FirstAction]:
    with app.scoped.read(app.workspace_id) as uow:
        return {f.campaign: f for f in first_action(uow, days=7)}


def test_a_thread_counts_its_first_action_after_the_reply_it_is_open_for(app: App) -> None:
    live = live_workspace(app)
    clock = live.clock
    for email in (ADA, GRACE, ALAN):
        live.reply(email, "Tell me more.")
    ada, grace, alan = (live.thread_of(email) for email in (ADA, GRACE, ALAN))
    clock.advance(timedelta(minutes=30))
    act(live, ada, "done")  # Ada's first action: 30 min after her reply
    act(live, grace, "snooze", until_at=clock.now() + timedelta(days=1))
    clock.advance(timedelta(hours=1))
    act(live, ada, "reopen")  # a second action on Ada's thread: not her first
    live.reply(GRACE, "And for twelve people?")  # the same thread, open again for this reply
    assert live.thread_of(GRACE) == grace
    clock.advance(timedelta(hours=2))
    act(live, grace, "done")  # 2 h after her latest reply; the snooze came before it
    clock.advance(timedelta(hours=1))

    stats = by_campaign(app)
    atlas = stats[ATLAS_CAMPAIGN]
    assert (atlas.acted, atlas.waiting) == (2, 1)
    assert (atlas.median_seconds, atlas.p90_seconds) == (30 * 60, 2 * 3600)
    assert atlas.oldest_waiting_seconds == 4.5 * 3600  # Alan, waiting since his reply
    assert [n for _, n in atlas.buckets] == [1, 1, 0, 0, 0]
    beacon = stats[BEACON_CAMPAIGN]  # Ada's Beacon lead did not reply
    assert (beacon.acted, beacon.waiting, beacon.median_seconds, beacon.oldest_waiting_seconds) == (
        0,
        0,
        None,
        None,
    )
    assert [n for _, n in beacon.buckets] == [0] * 5

    with app.uow() as uow:  # Alan turns out to be an audit's canary: his thread is not counted
        run = m.AuditRun(
            workspace_id=uow.workspace_id, kind="campaign", status="running", started_at=clock.now()
        )
        uow.session.add(run)
        uow.session.flush()
        lead = find_lead(uow, ALAN, ATLAS)
        uow.session.execute(update(m.Lead).where(m.Lead.id == lead.id).values(audit_run_id=run.id))
        uow.commit()
    atlas = by_campaign(app)[ATLAS_CAMPAIGN]
    assert (atlas.acted, atlas.waiting, atlas.oldest_waiting_seconds) == (2, 0, None)
    with app.uow() as uow:
        assert uow.session.scalar(select(m.RescueThread.state).where(m.RescueThread.id == alan)) == "open"
