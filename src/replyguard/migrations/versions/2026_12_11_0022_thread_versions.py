"""thread versions: a version per thread that moves with every message, decision, answer and
change of its lead's state; the log of what moved it; the version an answer was sent at; and
the short-lived presence marks of the people on a thread

Revision ID: 0022_thread_versions
Revises: 0021_connected_mailboxes
Create Date: 2026-12-04 09:00:00.000000

Existing threads start at version 1 with an empty log: a person who has a page open from before
the upgrade submits without a version and is asked to look again (web) or refused (CLI).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from replyguard.adapters.db.models import UTCDateTime

revision = "0022_thread_versions"
down_revision = "0021_connected_mailboxes"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.add_column(sa.Column("version", sa.Integer(), server_default="1", nullable=False))
    with op.batch_alter_table("person_sends", schema=None) as batch_op:
        batch_op.add_column(sa.Column("thread_version", sa.Integer(), nullable=True))
    op.create_table(
        "thread_changes",
        sa.Column("id", _ID, nullable=False),
        sa.Column("workspace_id", _ID, nullable=False),
        sa.Column("thread_id", _ID, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("by", sa.String(length=320), nullable=True),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.id"], name=op.f("fk_thread_changes_thread_id_threads")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_thread_changes_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_thread_changes")),
    )
    op.create_index(
        "ix_thread_changes_thread_version", "thread_changes", ["thread_id", "version"], unique=False
    )
    op.create_table(
        "thread_presence",
        sa.Column("id", _ID, nullable=False),
        sa.Column("workspace_id", _ID, nullable=False),
        sa.Column("thread_id", _ID, nullable=False),
        sa.Column("person", sa.String(length=320), nullable=False),
        sa.Column("doing", sa.String(length=20), nullable=False),
        sa.Column("seen_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.id"], name=op.f("fk_thread_presence_thread_id_threads")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_thread_presence_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_thread_presence")),
        sa.UniqueConstraint("thread_id", "person", name=op.f("uq_thread_presence_thread_id_person")),
    )


def downgrade() -> None:
    op.drop_table("thread_presence")
    op.drop_index("ix_thread_changes_thread_version", table_name="thread_changes")
    op.drop_table("thread_changes")
    with op.batch_alter_table("person_sends", schema=None) as batch_op:
        batch_op.drop_column("thread_version")
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.drop_column("version")
