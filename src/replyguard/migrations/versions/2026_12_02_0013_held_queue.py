"""held queue: the leads of a product in one reply state, for the campaign page's "held" tab

Revision ID: 0013_held_queue
Revises: 0012_bounce_counts
Create Date: 2026-12-02 07:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0013_held_queue"
down_revision = "0012_bounce_counts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_leads_product_state", "leads", ["product_id", "reply_state"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_leads_product_state", table_name="leads")
