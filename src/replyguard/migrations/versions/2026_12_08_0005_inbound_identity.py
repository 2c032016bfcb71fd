"""inbound identity: who is speaking, history imports, one effect per reply, confirmations

Revision ID: 0005_inbound_identity
Revises: 0007_rescue
Create Date: 2026-12-08 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import replyguard.adapters.db.models

revision = "0005_inbound_identity"
down_revision = "0007_rescue"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Plain ADD COLUMN and CREATE INDEX: no table copy on SQLite, whatever the raw mail stored.
    op.add_column(
        "inbound_messages", sa.Column("history", sa.Boolean(), server_default=sa.false(), nullable=False)
    )
    op.add_column("inbound_messages", sa.Column("sender", sa.String(length=320), nullable=True))
    op.add_column("inbound_messages", sa.Column("auth", sa.JSON(), nullable=True))
    op.add_column("inbound_messages", sa.Column("effect_key", sa.String(length=64), nullable=True))
    op.add_column("inbound_messages", sa.Column("duplicate_of", _ID, nullable=True))
    op.create_index(
        "ux_inbound_messages_effect_key", "inbound_messages", ["workspace_id", "effect_key"], unique=True
    )
    op.create_table(
        "sender_confirmations",
        sa.Column("id", _ID, nullable=False),
        sa.Column("workspace_id", _ID, nullable=False),
        sa.Column("lead_id", _ID, nullable=False),
        sa.Column("inbound_message_id", _ID, nullable=False),
        sa.Column("reply_id", _ID, nullable=True),
        sa.Column("sender", sa.String(length=320), nullable=False),
        sa.Column("learn_address", sa.Boolean(), nullable=False),
        sa.Column("unsubscribe", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("created_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("decided_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(length=320), nullable=True),
        sa.ForeignKeyConstraint(
            ["inbound_message_id"],
            ["inbound_messages.id"],
            name=op.f("fk_sender_confirmations_inbound_message_id_inbound_messages"),
        ),
        sa.ForeignKeyConstraint(
            ["lead_id"], ["leads.id"], name=op.f("fk_sender_confirmations_lead_id_leads")
        ),
        sa.ForeignKeyConstraint(
            ["reply_id"], ["replies.id"], name=op.f("fk_sender_confirmations_reply_id_replies")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_sender_confirmations_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sender_confirmations")),
    )
    op.create_index(
        "ix_sender_confirmations_state", "sender_confirmations", ["workspace_id", "state"], unique=False
    )
    op.create_index(
        op.f("ix_sender_confirmations_lead_id"), "sender_confirmations", ["lead_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_sender_confirmations_lead_id"), table_name="sender_confirmations")
    op.drop_index("ix_sender_confirmations_state", table_name="sender_confirmations")
    op.drop_table("sender_confirmations")
    op.drop_index("ux_inbound_messages_effect_key", table_name="inbound_messages")
    with op.batch_alter_table("inbound_messages", schema=None) as batch_op:
        for column in ("duplicate_of", "effect_key", "auth", "sender", "history"):
            batch_op.drop_column(column)
