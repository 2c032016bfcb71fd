"""canary index: the index on leads.audit_run_id holds the audit's canary leads only

Revision ID: 0028_canary_index
Revises: 0027_mailbox_limits
Create Date: 2026-12-03 07:10:00.000000

The worker's claim reads `leads.audit_run_id IS NULL` for every due step. Before a table has
statistics (a campaign imported a moment ago), PostgreSQL planned that through the full index
on the column: a bitmap scan of every lead per due step (308 ms per claim of 20 at 1,500
leads, quadratic in the campaign). A partial index (`WHERE audit_run_id IS NOT NULL`) cannot
serve `IS NULL`, so the leads are reached by their primary key whatever the statistics say;
the audit's own lookups (`audit_run_id = :run`) still use it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028_canary_index"
down_revision = "0027_mailbox_limits"
branch_labels = None
depends_on = None

_CANARIES = sa.text("audit_run_id IS NOT NULL")


def upgrade() -> None:
    op.drop_index("ix_leads_audit_run_id", table_name="leads")
    op.create_index(
        "ix_leads_audit_run_id",
        "leads",
        ["audit_run_id"],
        unique=False,
        postgresql_where=_CANARIES,
        sqlite_where=_CANARIES,
    )


def downgrade() -> None:
    op.drop_index("ix_leads_audit_run_id", table_name="leads")
    op.create_index("ix_leads_audit_run_id", "leads", ["audit_run_id"], unique=False)
