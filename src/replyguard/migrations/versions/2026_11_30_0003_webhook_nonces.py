"""webhook nonces: remember accepted webhook tokens so that a replay is refused

Revision ID: 0003_nonces
Revises: 0002_imap
Create Date: 2026-11-30 04:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import replyguard.adapters.db.models

revision = "0003_nonces"
down_revision = "0002_imap"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_nonces",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("workspace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("provider", sa.String(length=20), nullable=False),
        sa.Column("nonce", sa.String(length=200), nullable=False),
        sa.Column("seen_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_webhook_nonces_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_nonces")),
        sa.UniqueConstraint(
            "workspace_id", "provider", "nonce", name=op.f("uq_webhook_nonces_workspace_id_provider_nonce")
        ),
    )
    with op.batch_alter_table("webhook_nonces", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_webhook_nonces_seen_at"), ["seen_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("webhook_nonces", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhook_nonces_seen_at"))
    op.drop_table("webhook_nonces")
