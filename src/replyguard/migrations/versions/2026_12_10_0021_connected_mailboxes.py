"""connected mailboxes: each mailbox's own SMTP and IMAP account, its passwords encrypted

Revision ID: 0021_connected_mailboxes
Revises: 0019_inbound_history
Create Date: 2026-12-10 09:00:00.000000

Existing mailboxes stay as they were: no URLs, so the process's default transport
(REPLYGUARD_TRANSPORT) keeps sending for them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from replyguard.adapters.db.models import UTCDateTime

revision = "0021_connected_mailboxes"
down_revision = "0019_inbound_history"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("smtp_url", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("imap_url", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("imap_folders", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("sent_folder", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("secret", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("connected_at", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        for column in ("connected_at", "secret", "sent_folder", "imap_folders", "imap_url", "smtp_url"):
            batch_op.drop_column(column)
