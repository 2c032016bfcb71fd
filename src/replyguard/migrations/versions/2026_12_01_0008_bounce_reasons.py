"""bounce reasons: each bounce reply keeps its reason (sisimai's taxonomy) for the timeline and
for counting only the soft bounces that may add up to a hard one

Revision ID: 0008_bounce_reasons
Revises: 0005_inbound_identity
Create Date: 2026-12-01 06:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_bounce_reasons"
down_revision = "0005_inbound_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("replies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("bounce_reason", sa.String(length=30), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("replies", schema=None) as batch_op:
        batch_op.drop_column("bounce_reason")
