"""`alembic upgrade head` creates exactly the schema the models describe, on both databases."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from replyguard.adapters.db.models import Base
from replyguard.bootstrap import App


def test_migrated_schema_matches_models(app: App) -> None:
    with app.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, Base.metadata)
    assert diff == []


def test_init_is_idempotent(app: App) -> None:
    first = app.workspace_id
    assert app.init_database() == first
