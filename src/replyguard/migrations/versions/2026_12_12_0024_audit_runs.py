"""audit runs from the browser: who started a run on the web page, what it is doing now and
since when, and one running web run per workspace at a time

Revision ID: 0024_audit_runs
Revises: 0022_thread_versions
Create Date: 2026-12-03 03:00:00.000000

Runs recorded before the upgrade were all started from the command line: `started_by` NULL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from replyguard.adapters.db.models import UTCDateTime

revision = "0024_audit_runs"
down_revision = "0022_thread_versions"
branch_labels = None
depends_on = None

_ONE_WEB_RUN = "started_by IS NOT NULL AND status = 'running'"


def upgrade() -> None:
    with op.batch_alter_table("audit_runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("started_by", sa.String(length=320), nullable=True))
        batch_op.add_column(sa.Column("stage", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("stage_at", UTCDateTime(), nullable=True))
    op.create_index(
        "uq_audit_runs_one_web_run",
        "audit_runs",
        ["workspace_id"],
        unique=True,
        sqlite_where=sa.text(_ONE_WEB_RUN),
        postgresql_where=sa.text(_ONE_WEB_RUN),
    )


def downgrade() -> None:
    op.drop_index("uq_audit_runs_one_web_run", table_name="audit_runs")
    with op.batch_alter_table("audit_runs", schema=None) as batch_op:
        batch_op.drop_column("stage_at")
        batch_op.drop_column("stage")
        batch_op.drop_column("started_by")
