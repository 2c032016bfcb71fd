"""rescue threads, person sends, and the notice outbox (notices + notice_deliveries)

Revision ID: 0007_rescue
Revises: 0003_nonces
Create Date: 2026-12-01 05:50:20.106331
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import replyguard.adapters.db.models

revision = "0007_rescue"
down_revision = "0003_nonces"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("workspace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("lead_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("product_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("contact_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("mailbox_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("subject", sa.Text(), nullable=True),
        sa.Column("reply_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("inbound_message_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("step_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("intent", sa.String(length=30), nullable=True),
        sa.Column("intent_data", sa.JSON(), nullable=False),
        sa.Column("next_step", sa.Text(), nullable=False),
        sa.Column("actions", sa.JSON(), nullable=False),
        sa.Column("crossed", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("candidates", sa.JSON(), nullable=False),
        sa.Column("state_before", sa.String(length=20), nullable=True),
        sa.Column("owner", sa.String(length=320), nullable=False),
        sa.Column("assignee", sa.String(length=320), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("snoozed_until", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("model_state", sa.String(length=20), nullable=True),
        sa.Column("model_intent", sa.String(length=30), nullable=True),
        sa.Column("draft_body", sa.Text(), nullable=True),
        sa.Column("created_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["contact_id"], ["contacts.id"], name=op.f("fk_threads_contact_id_contacts")),
        sa.ForeignKeyConstraint(
            ["inbound_message_id"],
            ["inbound_messages.id"],
            name=op.f("fk_threads_inbound_message_id_inbound_messages"),
        ),
        sa.ForeignKeyConstraint(["lead_id"], ["leads.id"], name=op.f("fk_threads_lead_id_leads")),
        sa.ForeignKeyConstraint(
            ["mailbox_id"], ["mailboxes.id"], name=op.f("fk_threads_mailbox_id_mailboxes")
        ),
        sa.ForeignKeyConstraint(["product_id"], ["products.id"], name=op.f("fk_threads_product_id_products")),
        sa.ForeignKeyConstraint(["reply_id"], ["replies.id"], name=op.f("fk_threads_reply_id_replies")),
        sa.ForeignKeyConstraint(["step_id"], ["steps.id"], name=op.f("fk_threads_step_id_steps")),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_threads_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_threads")),
    )
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_threads_inbound_message_id"), ["inbound_message_id"], unique=False
        )
        batch_op.create_index("ix_threads_lead_state", ["lead_id", "state"], unique=False)
        batch_op.create_index(batch_op.f("ix_threads_product_id"), ["product_id"], unique=False)
        batch_op.create_index("ix_threads_workspace_state", ["workspace_id", "state"], unique=False)

    op.create_table(
        "person_sends",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("workspace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("thread_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("lead_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("mailbox_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("idempotency_key", sa.String(length=64), nullable=False),
        sa.Column("message_id", sa.String(length=300), nullable=False),
        sa.Column("to_address", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("in_reply_to", sa.Text(), nullable=True),
        sa.Column("references", sa.Text(), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("sent_by", sa.String(length=320), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("created_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("sent_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["lead_id"], ["leads.id"], name=op.f("fk_person_sends_lead_id_leads")),
        sa.ForeignKeyConstraint(
            ["mailbox_id"], ["mailboxes.id"], name=op.f("fk_person_sends_mailbox_id_mailboxes")
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.id"], name=op.f("fk_person_sends_thread_id_threads")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_person_sends_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_person_sends")),
        sa.UniqueConstraint("message_id", name=op.f("uq_person_sends_message_id")),
        sa.UniqueConstraint(
            "workspace_id", "idempotency_key", name=op.f("uq_person_sends_workspace_id_idempotency_key")
        ),
    )
    with op.batch_alter_table("person_sends", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_person_sends_thread_id"), ["thread_id"], unique=False)

    op.create_table(
        "notice_deliveries",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("workspace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("notice_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("channel", sa.String(length=20), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column(
            "next_attempt_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("lease_until", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["notice_id"], ["notices.id"], name=op.f("fk_notice_deliveries_notice_id_notices")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_notice_deliveries_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notice_deliveries")),
        sa.UniqueConstraint("notice_id", "channel", name=op.f("uq_notice_deliveries_notice_id_channel")),
    )
    with op.batch_alter_table("notice_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_notice_deliveries_due", ["state", "next_attempt_at"], unique=False)

    with op.batch_alter_table("notices", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("thread_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True)
        )
        batch_op.add_column(
            sa.Column("done_at", replyguard.adapters.db.models.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.create_index(batch_op.f("ix_notices_done_at"), ["done_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_notices_thread_id"), ["thread_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_notices_thread_id_threads"), "threads", ["thread_id"], ["id"]
        )
    # Notices written before the outbox existed were never meant to be delivered: do not mail
    # them all out on the first run of `replyguard notify`.
    op.execute("UPDATE notices SET done_at = created_at")


def downgrade() -> None:
    with op.batch_alter_table("notices", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_notices_thread_id_threads"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_notices_thread_id"))
        batch_op.drop_index(batch_op.f("ix_notices_done_at"))
        batch_op.drop_column("done_at")
        batch_op.drop_column("thread_id")

    with op.batch_alter_table("notice_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_notice_deliveries_due")

    op.drop_table("notice_deliveries")
    with op.batch_alter_table("person_sends", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_person_sends_thread_id"))

    op.drop_table("person_sends")
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.drop_index("ix_threads_workspace_state")
        batch_op.drop_index(batch_op.f("ix_threads_product_id"))
        batch_op.drop_index("ix_threads_lead_state")
        batch_op.drop_index(batch_op.f("ix_threads_inbound_message_id"))

    op.drop_table("threads")
