"""Schema migrations: the only way the production schema is created (`alembic upgrade head`).

Several processes may run `replyguard init` at once (a deploy that starts four workers). On
PostgreSQL they take one transaction-scoped advisory lock first, so the migrations run once
and the others then find the schema at head; DDL is transactional there, so a failed
migration leaves nothing half-done. On SQLite the migration transaction begins with the
write lock (BEGIN IMMEDIATE), which serializes them the same way.
"""

from __future__ import annotations

from functools import cache

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

#: The advisory lock key of migrations ("rgmigrat" as a number): any constant shared by all.
MIGRATION_LOCK = 0x72676D6967726174


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", "replyguard:migrations")
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return config


def lock_for_migrations(connection: Connection) -> None:
    """Serialize schema changes across processes until this transaction ends (PostgreSQL)."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})


@cache
def code_heads() -> frozenset[str]:
    """The newest revision(s) of this code's migrations (read once per process)."""
    config = Config()
    config.set_main_option("script_location", "replyguard:migrations")
    return frozenset(ScriptDirectory.from_config(config).get_heads())


def at_head(engine: Engine) -> bool:
    """Is the database already at this code's newest schema? (One SELECT, no lock.)"""
    with engine.connect() as connection:
        return frozenset(MigrationContext.configure(connection).get_current_heads()) == code_heads()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate to `revision`. A database already at head is left alone without taking the
    migration lock: `init` on a migrated database (every start of a deploy) costs one read."""
    if revision == "head" and at_head(engine):
        return
    config = alembic_config(engine)
    with engine.begin() as connection:
        lock_for_migrations(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
