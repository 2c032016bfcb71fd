"""An inbound message's thread read finds the speaker's address through its key right after a
bulk enrolment (issue 25, ingest).

The thread read (`matching._THREAD_READ`) asks which contact owns the From address with
`workspace_id = ? AND address IN (?, ?)`. The addresses are written by the lead import, and a
campaign's replies start arriving before autovacuum has analyzed them: PostgreSQL then read
the table through its `workspace_id` index and filtered every address of the workspace (569
rows for one message in a workspace of 600 leads; every lead's at 100,000). A bulk enrolment
now refreshes that table's statistics too (`enrollment.BULK_ENROLMENT`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, text

from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.sending.worker import Worker
from tests.support.identity import raw_mail, reply_headers
from tests.support.plans import query_plan
from tests.support.scenario import simple_workspace


def test_the_speaker_s_address_is_found_by_its_key_before_autovacuum(app: App, clock: FixedClock) -> None:
    if app.engine.dialect.name != "postgresql":
        pytest.skip("about PostgreSQL's statistics (SQLite has none unless asked)")
    clock.advance(timedelta(hours=4))  # Monday 10:00 UTC, inside the window
    simple_workspace(app, 600, cap=1)  # enrolled at once: a bulk enrolment
    Worker(app).run_once()  # one email goes out (the cap), the one she answers
    with app.engine.connect() as conn:
        to, subject, message_id = conn.execute(
            text("SELECT to_address, subject, message_id FROM steps WHERE state = 'sent'")
        ).one()
    seen: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    event.listen(app.engine, "before_cursor_execute", grab)
    try:
        raw = raw_mail(reply_headers(to, f"Re: {subject}", in_reply_to=message_id, date=clock))
        assert ingest_raw(app, raw, source="test").status == "matched"
    finally:
        event.remove(app.engine, "before_cursor_execute", grab)
    statement, parameters = next((s, p) for s, p in seen if "AS her_address" in s)
    plan = query_plan(app, statement, parameters)
    [lookup] = [node for node in _nodes(json.loads(plan)) if node.get("Alias") == "contact_addresses"]
    # The address is a condition of the index scan, not a filter over the workspace's rows.
    assert "address" in lookup.get("Index Cond", ""), lookup
    assert "address" not in lookup.get("Filter", ""), lookup


def _nodes(plan: Any) -> Iterator[dict[str, Any]]:
    """Every node of a JSON plan (`EXPLAIN (FORMAT JSON)`), subplans included."""
    if isinstance(plan, list):
        for item in plan:
            yield from _nodes(item)
    elif isinstance(plan, dict):
        if "Node Type" in plan:
            yield plan
        for value in plan.values():
            yield from _nodes(value)
