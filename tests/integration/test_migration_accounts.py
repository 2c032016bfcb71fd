"""Migration 0016_accounts on a database with users and tokens already in it, on SQLite and
PostgreSQL: no workspace is locked out, nobody gains a right, tokens keep their lines."""

from __future__ import annotations

from alembic import command
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.pool import NullPool

from replyguard.adapters.db.migrate import alembic_config, upgrade

NOW = "2026-12-01 09:00:00"


def _rows(engine: Engine, sql: str) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def test_existing_users_get_one_owner_per_workspace_and_tokens_their_person_and_parent(db_url: str) -> None:
    engine = create_engine(db_url, poolclass=NullPool)
    config = alembic_config(engine)
    try:
        with engine.begin() as connection:  # on this engine's connection: nothing left open
            config.attributes["connection"] = connection
            command.downgrade(config, "0013_held_queue")
        with engine.begin() as conn:
            for ws, name in ((1, "one"), (2, "two")):
                conn.execute(
                    text("INSERT INTO workspaces (id, name, secret, created_at) VALUES (:i, :n, 's', :t)"),
                    {"i": ws, "n": name, "t": NOW},
                )
            users = [  # id, workspace, email, disabled
                (1, 1, "left@one.test", NOW),  # the first, but disabled: not the owner
                (2, 1, "ann@one.test", None),
                (3, 1, "bob@one.test", None),
                (4, 2, "only@two.test", NOW),  # every user disabled: the earliest is owner
            ]
            for uid, ws, email, disabled in users:
                conn.execute(
                    text(
                        "INSERT INTO users (id, workspace_id, email, name, password_hash, created_at,"
                        " disabled_at) VALUES (:i, :w, :e, '', 'x', :t, :d)"
                    ),
                    {"i": uid, "w": ws, "e": email, "t": NOW, "d": disabled},
                )
            tokens = [  # id, name, created_by
                (1, "web", "bob@one.test"),
                (2, "child", "api token web"),
                (3, "cli", "cli"),
            ]
            for tid, name, by in tokens:
                conn.execute(
                    text(
                        "INSERT INTO api_tokens (id, workspace_id, name, token_hash, prefix, created_by,"
                        " created_at) VALUES (:i, 1, :n, :h, 'rg_', :b, :t)"
                    ),
                    {"i": tid, "n": name, "h": f"{tid:064d}", "b": by, "t": NOW},
                )
        upgrade(engine)
        roles = dict(_rows(engine, "SELECT email, role FROM users"))
        assert roles == {
            "left@one.test": "member",
            "ann@one.test": "owner",
            "bob@one.test": "member",
            "only@two.test": "owner",
        }
        found = _rows(engine, "SELECT name, scope, user_id, parent_id FROM api_tokens ORDER BY id")
        assert found == [("web", "admin", 3, None), ("child", "admin", None, 1), ("cli", "admin", None, None)]
    finally:
        upgrade(engine)
        with engine.begin() as conn:
            for table in ("api_tokens", "users", "workspaces"):
                conn.execute(text(f"DELETE FROM {table}"))
        engine.dispose()
