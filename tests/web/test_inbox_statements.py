"""A page of the inbox costs the same number of statements whatever its length (issue 25):
each row's "waiting on them" and unknown-outcome count are read for the whole page at once
(they were two round trips per row: a hundred for a page of fifty)."""

from __future__ import annotations

from sqlalchemy import event

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
