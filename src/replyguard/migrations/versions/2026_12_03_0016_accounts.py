"""accounts: roles, forced password changes, token scopes and lineage, sign-in throttling per
client, sessions a person can recognise, flash messages

Revision ID: 0016_accounts
Revises: 0013_held_queue
Create Date: 2026-12-03 09:00:00.000000

Existing rows, chosen so that no workspace is locked out and nobody gains a right:
- users: the earliest enabled user of each workspace (the earliest at all, if every one is
  disabled) becomes its **owner**; every other user becomes a **member**. An owner (or
  `replyguard users set-role` at the command line) gives others more.
- API tokens keep the rights they had (scope `admin`), but a token made on the web belongs to
  the person who made it (`created_by` is their address), so it never does more than their
  role, and dies with their account; a token made with another token's credentials
  (`created_by` is "api token NAME") is that token's child, and dies with it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from replyguard.adapters.db.models import UTCDateTime

revision = "0016_accounts"
down_revision = "0013_held_queue"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("role", sa.String(length=20), server_default="member", nullable=False))
        batch_op.add_column(
            sa.Column("must_change_password", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    op.execute(
        "UPDATE users SET role = 'owner' WHERE id IN "
        "(SELECT MIN(id) FROM users WHERE disabled_at IS NULL GROUP BY workspace_id)"
    )
    op.execute(
        "UPDATE users SET role = 'owner' WHERE id IN (SELECT MIN(id) FROM users GROUP BY workspace_id"
        " HAVING SUM(CASE WHEN disabled_at IS NULL THEN 1 ELSE 0 END) = 0)"
    )

    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("user_agent", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("ip", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("flash", sa.JSON(), nullable=True))

    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scope", sa.String(length=10), server_default="read", nullable=False))
        batch_op.add_column(sa.Column("expires_at", UTCDateTime(), nullable=True))
        batch_op.add_column(
            sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True)
        )
        batch_op.add_column(
            sa.Column("parent_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True)
        )
        batch_op.create_index(batch_op.f("ix_api_tokens_user_id"), ["user_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_api_tokens_parent_id"), ["parent_id"], unique=False)
        batch_op.create_foreign_key(batch_op.f("fk_api_tokens_user_id_users"), "users", ["user_id"], ["id"])
        batch_op.create_foreign_key(
            batch_op.f("fk_api_tokens_parent_id_api_tokens"), "api_tokens", ["parent_id"], ["id"]
        )
    op.execute("UPDATE api_tokens SET scope = 'admin'")
    op.execute(
        "UPDATE api_tokens SET user_id = (SELECT u.id FROM users u WHERE u.email = api_tokens.created_by"
        " AND u.workspace_id = api_tokens.workspace_id)"
    )
    op.execute(
        "UPDATE api_tokens SET parent_id = (SELECT p.id FROM api_tokens p"
        " WHERE p.workspace_id = api_tokens.workspace_id AND 'api token ' || p.name = api_tokens.created_by"
        " AND p.id < api_tokens.id)"
    )

    with op.batch_alter_table("login_attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("client", sa.String(length=80), server_default="", nullable=False))
        batch_op.create_index(
            "ix_login_attempts_account_client_at", ["account_key", "client", "at"], unique=False
        )

    op.create_table(
        "login_devices",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("account_key", sa.String(length=64), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_devices")),
        sa.UniqueConstraint(
            "token_hash", "account_key", name=op.f("uq_login_devices_token_hash_account_key")
        ),
    )
    with op.batch_alter_table("login_devices", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_login_devices_account_key"), ["account_key"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("login_devices", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_devices_account_key"))
    op.drop_table("login_devices")
    with op.batch_alter_table("login_attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_login_attempts_account_client_at")
        batch_op.drop_column("client")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_api_tokens_parent_id_api_tokens"), type_="foreignkey")
        batch_op.drop_constraint(batch_op.f("fk_api_tokens_user_id_users"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_api_tokens_parent_id"))
        batch_op.drop_index(batch_op.f("ix_api_tokens_user_id"))
        batch_op.drop_column("parent_id")
        batch_op.drop_column("user_id")
        batch_op.drop_column("expires_at")
        batch_op.drop_column("scope")
    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.drop_column("flash")
        batch_op.drop_column("ip")
        batch_op.drop_column("user_agent")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("must_change_password")
        batch_op.drop_column("role")
