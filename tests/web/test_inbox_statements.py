"""A page of the inbox costs the same number of statements whatever its length (issue 25):
each row's "waiting on them" and unknown-outcome count are read for the whole page at once
(they were two round trips per row: a hundred for a page of fifty)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import event, update

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.entrypoints.web.pages.threads import inbox_filter
from replyguard.service_layer.queries import threads as tq
from tests.web.rescue import ADA, ALAN, GRACE, live_workspace


def _statements(app: App) -> tuple[int, int]:
    counted = [0]

    def count(*_args: object) -> None:
        counted[0] += 1

    f = inbox_filter("open", "", "", "", "", "", False, "")
    event.listen(app.engine, "before_cursor_execute", count)
    try:
        with app.scoped.read(app.workspace_id) as uow:
            page = tq.inbox(uow, app.settings, f)
    finally:
        event.remove(app.engine, "before_cursor_execute", count)
    return len(page.items), counted[0]


def test_the_inbox_reads_a_page_in_the_same_statements_for_one_row_or_three(app: App) -> None:
    live = live_workspace(app)
    live.reply(ADA, "Yes, tell me more.")
    one = _statements(app)
    live.reply(GRACE, "Interesting, call me.")
    live.reply(ALAN, "Send me the pricing.")
    three = _statements(app)
    assert (one[0], three[0]) == (1, 3)
    assert three[1] == one[1] > 0, (one, three)


def test_every_state_lists_open_then_snoozed_then_done_each_latest_first(app: App) -> None:
    """The page is chosen by ids (a narrow sort) and read after: the rows come back in the
    order chosen. A snooze whose time has come is open again."""
    live = live_workspace(app)
    for email in (ADA, GRACE, ALAN):
        live.reply(email, "Tell me more.")
    ada, grace, alan = (live.thread_of(e) for e in (ADA, GRACE, ALAN))
    now = app.clock.now()
    rows = {
        # thread: (state, snoozed until, updated minutes ago)
        ada: ("done", None, 1),
        grace: ("snoozed", now + timedelta(days=1), 2),
        alan: ("snoozed", now - timedelta(hours=1), 3),  # woken: open
    }
    with app.engine.begin() as conn:
        for thread, (state, until, ago) in rows.items():
            conn.execute(
                update(m.RescueThread)
                .where(m.RescueThread.id == thread)
                .values(state=state, snoozed_until=until, updated_at=now - timedelta(minutes=ago))
            )
    f = inbox_filter("all", "", "", "", "", "", False, "")
    with app.scoped.read(app.workspace_id) as uow:
        page = tq.inbox(uow, app.settings, f)
        second = tq.inbox(uow, app.settings, f, page=2, per_page=1)
    assert [(r.id, r.state) for r in page.items] == [(alan, "open"), (grace, "snoozed"), (ada, "done")]
    assert [r.id for r in second.items] == [grace]
