"""inbound history: a folder read again under a new UIDVALIDITY keeps what it had read

Revision ID: 0019_inbound_history
Revises: 0016_accounts
Create Date: 2026-12-04 09:00:00.000000

`mailbox_cursors.replay_before`: set when a folder's UIDVALIDITY changes (the server rebuilt
its index, the mailbox migrated, the folder was re-created) to the moment the cursor last
advanced. Messages up to `history_until_uid` dated before it are old mail read again: they
only inform. Existing rows: NULL, nothing to replay.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from replyguard.adapters.db.models import UTCDateTime

revision = "0019_inbound_history"
down_revision = "0016_accounts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("mailbox_cursors", schema=None) as batch_op:
        batch_op.add_column(sa.Column("replay_before", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mailbox_cursors", schema=None) as batch_op:
        batch_op.drop_column("replay_before")
