"""enrollments by campaign in lead order: the campaign page's lead picker stops after 200

Revision ID: 0032_enrollments_campaign_lead
Revises: 0031_due_index_id
Create Date: 2026-12-03 17:10:00.000000

The campaign page offers the first 200 enrolled leads to preview a step for. With the index
on `campaign_id` alone, `leads.id IN (the campaign's enrollments)` made SQLite list every
enrolled lead before reading the first 200 (100,000 enrolled: 30-38 ms per page). The index
on (campaign_id, lead_id) gives them in lead order. The one on `campaign_id` stays: counting a
campaign's enrolments reads it, and PostgreSQL keeps it deduplicated (84 pages for 100,000
enrolments of one campaign, where the pairs take 300 and the count turned to a sequential
scan of the table).
"""

from __future__ import annotations

from alembic import op

revision = "0032_enrollments_campaign_lead"
down_revision = "0031_due_index_id"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_enrollments_campaign_lead", "enrollments", ["campaign_id", "lead_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_enrollments_campaign_lead", table_name="enrollments")
