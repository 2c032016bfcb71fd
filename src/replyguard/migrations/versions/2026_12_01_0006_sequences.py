"""sequences: mailbox pause, calendar-day waits, retired steps, the To name rendered with the body

Revision ID: 0006_sequences
Revises: 0004_inbound_edges
Create Date: 2026-12-01 09:00:00.000000

* mailboxes.status / paused_reason / paused_at: a mailbox the server refused is paused.
* campaign_steps.wait_days: how many days of the wait are calendar days (kept local time).
  Existing waits that are whole days ("3d") become calendar days, the best reading of the
  files they came from.
* campaign_steps.retired_at: a step removed by `campaign update`.
* steps.to_name: the To name, rendered with the subject and body (filled from the contact).
* campaigns.daily_cap is dropped: the cap belongs to the mailbox (mailboxes.daily_cap).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import replyguard.adapters.db.models

revision = "0006_sequences"
down_revision = "0004_inbound_edges"
branch_labels = None
depends_on = None

UTC_DATETIME = replyguard.adapters.db.models.UTCDateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("status", sa.String(length=20), nullable=False, server_default="active")
        )
        batch_op.add_column(sa.Column("paused_reason", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("paused_at", UTC_DATETIME, nullable=True))
    with op.batch_alter_table("campaign_steps", schema=None) as batch_op:
        batch_op.add_column(sa.Column("wait_days", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("retired_at", UTC_DATETIME, nullable=True))
    op.execute("UPDATE campaign_steps SET wait_days = wait_seconds / 86400 WHERE wait_seconds % 86400 = 0")
    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.add_column(sa.Column("to_name", sa.String(length=420), nullable=False, server_default=""))
    op.execute(
        "UPDATE steps SET to_name = (SELECT trim(c.first_name || ' ' || c.last_name) FROM leads l"
        " JOIN contacts c ON c.id = l.contact_id WHERE l.id = steps.lead_id)"
    )
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.drop_column("daily_cap")


def downgrade() -> None:
    with op.batch_alter_table("campaigns", schema=None) as batch_op:
        batch_op.add_column(sa.Column("daily_cap", sa.Integer(), nullable=False, server_default="100"))
    op.execute(
        "UPDATE campaigns SET daily_cap = (SELECT daily_cap FROM mailboxes WHERE mailboxes.id = campaigns.mailbox_id)"
    )
    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.drop_column("to_name")
    with op.batch_alter_table("campaign_steps", schema=None) as batch_op:
        batch_op.drop_column("retired_at")
        batch_op.drop_column("wait_days")
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        batch_op.drop_column("paused_at")
        batch_op.drop_column("paused_reason")
        batch_op.drop_column("status")
