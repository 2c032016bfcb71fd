"""bounce counts: whether a soft bounce adds up toward a hard one, decided when it arrived

Revision ID: 0012_bounce_counts
Revises: 0011_web_rescue
Create Date: 2026-12-02 06:00:00.000000

A soft bounce's reason alone cannot say whether it counts: a temporary failure (a 4.x.x
status, a delay) with the reason `mailboxfull` must never add up to a hard bounce, a 5.2.2
with the same reason does. `replies.bounce_counts` keeps the verdict of the moment; NULL
(soft bounces at send time, and rows written before this revision) counts as before.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_bounce_counts"
down_revision = "0011_web_rescue"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("replies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("bounce_counts", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("replies", schema=None) as batch_op:
        batch_op.drop_column("bounce_counts")
