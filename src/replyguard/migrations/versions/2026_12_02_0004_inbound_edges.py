"""inbound edges: processing attempts, notices about no lead, IMAP history imports

Revision ID: 0004_inbound_edges
Revises: 0008_bounce_reasons
Create Date: 2026-12-02 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_inbound_edges"
down_revision = "0008_bounce_reasons"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("inbound_messages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("attempts", sa.Integer(), server_default="0", nullable=False))
        batch_op.create_index(
            "ix_inbound_messages_workspace_status", ["workspace_id", "status"], unique=False
        )
    with op.batch_alter_table("notices", schema=None) as batch_op:
        batch_op.alter_column(
            "lead_id",
            existing_type=sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        )
    with op.batch_alter_table("mailbox_cursors", schema=None) as batch_op:
        batch_op.add_column(sa.Column("history_until_uid", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mailbox_cursors", schema=None) as batch_op:
        batch_op.drop_column("history_until_uid")
    with op.batch_alter_table("notices", schema=None) as batch_op:
        batch_op.alter_column(
            "lead_id",
            existing_type=sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        )
    with op.batch_alter_table("inbound_messages", schema=None) as batch_op:
        batch_op.drop_index("ix_inbound_messages_workspace_status")
        batch_op.drop_column("attempts")
