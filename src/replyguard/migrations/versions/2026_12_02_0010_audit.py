"""the built-in audit: audit runs, canary leads, a transaction stamp on events, poll health

Revision ID: 0010_audit
Revises: 0009_web
Create Date: 2026-12-02 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import replyguard.adapters.db.models

revision = "0010_audit"
down_revision = "0009_web"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = replyguard.adapters.db.models.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "audit_runs",
        sa.Column("id", _ID, nullable=False),
        sa.Column("workspace_id", _ID, nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("campaign_id", _ID, nullable=True),
        sa.Column("campaign", sa.String(length=200), nullable=True),
        sa.Column("canary", sa.String(length=320), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("results", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", _TIME, nullable=False),
        sa.Column("finished_at", _TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"], ["campaigns.id"], name=op.f("fk_audit_runs_campaign_id_campaigns")
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_audit_runs_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_runs")),
    )
    with op.batch_alter_table("audit_runs", schema=None) as batch_op:
        batch_op.create_index("ix_audit_runs_workspace_started", ["workspace_id", "started_at"], unique=False)
    # Plain ADD COLUMNs (nullable, no constraint): no table copy on SQLite, no rewrite on
    # PostgreSQL, so the upgrade is instant on a database with millions of rows.
    op.add_column("leads", sa.Column("audit_run_id", _ID, nullable=True))
    op.create_index(op.f("ix_leads_audit_run_id"), "leads", ["audit_run_id"], unique=False)
    op.add_column("events", sa.Column("tx", sa.String(length=32), nullable=True))
    op.add_column("mailbox_cursors", sa.Column("checked_at", _TIME, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mailbox_cursors", schema=None) as batch_op:
        batch_op.drop_column("checked_at")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_column("tx")
    op.drop_index(op.f("ix_leads_audit_run_id"), table_name="leads")
    with op.batch_alter_table("leads", schema=None) as batch_op:
        batch_op.drop_column("audit_run_id")
    with op.batch_alter_table("audit_runs", schema=None) as batch_op:
        batch_op.drop_index("ix_audit_runs_workspace_started")
    op.drop_table("audit_runs")
