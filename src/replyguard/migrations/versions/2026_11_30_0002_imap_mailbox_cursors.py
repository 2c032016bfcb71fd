"""mailbox cursors: where each IMAP source has read up to, and who polls it

Revision ID: 0002_imap
Revises: 0001
Create Date: 2026-11-30 03:49:19.524904
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import replyguard.adapters.db.models

revision = "0002_imap"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mailbox_cursors",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("workspace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("source_key", sa.String(length=500), nullable=False),
        sa.Column("uidvalidity", sa.BigInteger(), nullable=True),
        sa.Column("last_uid", sa.BigInteger(), nullable=False),
        sa.Column("lease_owner", sa.String(length=100), nullable=True),
        sa.Column("lease_until", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("updated_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_mailbox_cursors_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mailbox_cursors")),
        sa.UniqueConstraint(
            "workspace_id", "source_key", name=op.f("uq_mailbox_cursors_workspace_id_source_key")
        ),
    )
    with op.batch_alter_table("mailbox_cursors", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mailbox_cursors_workspace_id"), ["workspace_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("mailbox_cursors", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mailbox_cursors_workspace_id"))
    op.drop_table("mailbox_cursors")
