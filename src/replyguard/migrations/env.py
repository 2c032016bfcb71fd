"""Alembic environment. Run through `replyguard init` / `replyguard.adapters.db.migrate`."""

from __future__ import annotations

from alembic import context

from replyguard.adapters.db.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        from replyguard.adapters.db.engine import make_engine  # noqa: PLC0415 (alembic runs this file as a script)

        engine = make_engine(config.get_main_option("sqlalchemy.url") or "")
        with engine.begin() as conn:
            _run(conn)
        return
    _run(connection)


def _run(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
