"""The database's plan for a statement the tests caught on its way (EXPLAIN, never run)."""

from __future__ import annotations

import json
from typing import Any

from replyguard.bootstrap import App


def query_plan(app: App, statement: str, parameters: Any, *, settings: tuple[str, ...] = ()) -> str:
    """PostgreSQL's plan as JSON text, SQLite's EXPLAIN QUERY PLAN rows as text. `settings`:
    planner settings for this plan only on PostgreSQL (`SET LOCAL`, e.g. "enable_sort = off",
    so that a plan which needs a sort says so instead of being picked for its cost)."""
    with app.engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        cursor = raw.cursor()
        if app.engine.dialect.name == "postgresql":
            for setting in settings:
                cursor.execute(f"SET LOCAL {setting}")
            cursor.execute("EXPLAIN (FORMAT JSON) " + statement, parameters)
            plan = json.dumps(cursor.fetchone()[0])
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + statement, parameters)
            plan = "\n".join(str(row) for row in cursor.fetchall())
        raw.rollback()
    return plan
