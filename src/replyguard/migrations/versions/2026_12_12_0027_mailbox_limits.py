"""mailbox limits: how many SMTP connections a mailbox may have open at once, and how many
emails it may send a minute (the daily cap was already there)

Revision ID: 0027_mailbox_limits
Revises: 0022_thread_versions
Create Date: 2026-12-03 03:00:00.000000

Both are empty (no limit) for every existing mailbox.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027_mailbox_limits"
down_revision = "0025_oauth_grants"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_connections", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("per_minute", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        batch_op.drop_column("per_minute")
        batch_op.drop_column("max_connections")
