"""The campaign page's reads stop after what they show, whatever the campaign's size (issue 25,
web pages at 100k leads and 1M steps).

Their statements are the same in number before and after, so the pin is the plan the
database makes of each, as the page sends it: SQLite keeps no statistics, so its plan is the
one it makes at any size; PostgreSQL's is read with sorting disabled (it still plans a Sort
when no index gives the order).

- A queue tab's page is merged from the ordered (template, state) ranges of
  ix_steps_campaign_queue, not sorted: page 200 of the sent tab sorted 30,000 keys on SQLite.
- The lead picker walks the campaign's enrolments in lead order (ix_enrollments_campaign_lead)
  and stops after 200: `leads.id IN (the enrolments)` listed all 100,000 first.
- Sends per day are grouped in ix_steps_mailbox_day's order, as the index is read: grouped
  without the state, every send of the 14 days went through a sort.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import event, text

from replyguard.bootstrap import App
from replyguard.service_layer.queries import campaigns as q
from replyguard.service_layer.uow import UnitOfWork
from tests.support.plans import query_plan
from tests.support.scenario import simple_workspace


def _statements(app: App, read: Callable[[UnitOfWork], object]) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    event.listen(app.engine, "before_cursor_execute", grab)
    try:
        with app.scoped.read(app.workspace_id) as uow:
            read(uow)
    finally:
        event.remove(app.engine, "before_cursor_execute", grab)
    return seen


def _sorts(app: App, plan: str) -> bool:
    if app.engine.dialect.name == "postgresql":
        return '"Node Type": "Sort"' in plan or '"Node Type": "Incremental Sort"' in plan
    return "USE TEMP B-TREE" in plan


def _campaign(app: App) -> int:
    simple_workspace(app, 12)
    with app.engine.begin() as conn:
        # Half the steps sent, on days spread over the last week: the sent tab has pages and
        # the sends-per-day chart has days.
        conn.execute(
            text("UPDATE steps SET state = 'sent', sent_at = due_at, send_day = :day WHERE id % 2 = 0"),
            {"day": app.clock.now().date()},
        )
        return int(conn.execute(text("SELECT id FROM campaigns")).scalar_one())


def test_a_queue_page_is_merged_from_the_ordered_ranges_not_sorted(app: App) -> None:
    campaign = _campaign(app)
    seen = _statements(app, lambda uow: q.campaign_queue(uow, campaign, "sent", page=2, per_page=3))
    statement, parameters = next((s, p) for s, p in seen if "UNION ALL" in s)
    plan = query_plan(app, statement, parameters, settings=("enable_sort = off",))
    assert not _sorts(app, plan), plan
    if app.engine.dialect.name == "postgresql":
        assert "Merge Append" in plan, plan
    else:
        assert "MERGE (UNION ALL)" in plan, plan


def test_the_queue_page_is_the_merged_order(app: App) -> None:
    """The merge gives the tab's order: finished steps latest first, upcoming soonest first,
    across the campaign's templates, page after page."""
    campaign = _campaign(app)
    with app.engine.connect() as conn:
        sent = [
            i
            for (i,) in conn.execute(
                text("SELECT id FROM steps WHERE state = 'sent' ORDER BY due_at DESC, id DESC")
            )
        ]
        upcoming = "SELECT id FROM steps WHERE state = 'scheduled' ORDER BY due_at, id"
        queued = [i for (i,) in conn.execute(text(upcoming))]
    assert len(sent) > 9 and len(queued) > 9
    with app.scoped.read(app.workspace_id) as uow:
        for state, expected in (("sent", sent), ("scheduled", queued)):
            pages = [q.campaign_queue(uow, campaign, state, page=n, per_page=4) for n in (1, 2, 3)]
            assert [r.step_id for p in pages for r in p.items] == expected[:12], state


def test_the_lead_picker_walks_the_enrolments_in_lead_order(app: App) -> None:
    campaign = _campaign(app)
    seen = _statements(app, lambda uow: q.lead_choices(uow, campaign, limit=5))
    statement, parameters = next((s, p) for s, p in seen if "contact_addresses" in s)
    plan = query_plan(app, statement, parameters, settings=("enable_sort = off",))
    assert not _sorts(app, plan), plan
    if app.engine.dialect.name == "sqlite":
        assert "ix_enrollments_campaign_lead" in plan, plan
        assert "LIST SUBQUERY" not in plan, plan
    with app.scoped.read(app.workspace_id) as uow:
        choices = q.lead_choices(uow, campaign, limit=5)
    with app.engine.connect() as conn:
        first = [i for (i,) in conn.execute(text("SELECT lead_id FROM enrollments ORDER BY lead_id LIMIT 5"))]
    assert [c.lead_id for c in choices] == first


def test_sends_per_day_are_counted_as_the_mailbox_index_is_read(app: App) -> None:
    campaign = _campaign(app)
    seen = _statements(app, lambda uow: q.sends_per_day(uow, campaign))
    statement, parameters = next((s, p) for s, p in seen if "send_day" in s and "GROUP BY" in s)
    if app.engine.dialect.name == "sqlite":  # PostgreSQL hashes the groups: no sort either way
        plan = query_plan(app, statement, parameters, settings=("enable_sort = off",))
        assert "ix_steps_mailbox_day" in plan and not _sorts(app, plan), plan
    with app.scoped.read(app.workspace_id) as uow:
        sends = q.sends_per_day(uow, campaign)
    assert sends.days[-1].campaign == sends.days[-1].mailbox == 18  # half of 12 leads' 3 steps
