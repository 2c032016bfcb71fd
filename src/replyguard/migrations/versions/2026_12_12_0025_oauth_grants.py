"""oauth grants: mailboxes connected by OAuth2 (Google, Microsoft), their token's expiry and a
revoked grant's pause, and the authorization requests on their way through a browser

Revision ID: 0025_oauth_grants
Revises: 0022_thread_versions
Create Date: 2026-12-12 09:00:00.000000

Existing mailboxes are untouched: no provider, so they log in with their passwords as before.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from replyguard.adapters.db.models import UTCDateTime

revision = "0025_oauth_grants"
down_revision = "0024_audit_runs"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("oauth_provider", sa.String(length=20), nullable=True))
        batch_op.add_column(sa.Column("token_expires_at", UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("grant_revoked_at", UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("connected_by", sa.String(length=320), nullable=True))
    op.create_table(
        "oauth_requests",
        sa.Column("id", _ID, nullable=False),
        sa.Column("workspace_id", _ID, nullable=False),
        sa.Column("session_id", _ID, nullable=False),
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=320), nullable=False),
        sa.Column("provider", sa.String(length=20), nullable=False),
        sa.Column("verifier", sa.Text(), nullable=False),
        sa.Column("by", sa.String(length=320), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"], ["workspaces.id"], name=op.f("fk_oauth_requests_workspace_id_workspaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_requests")),
        sa.UniqueConstraint("state_hash", name=op.f("uq_oauth_requests_state_hash")),
    )
    op.create_index(op.f("ix_oauth_requests_session_id"), "oauth_requests", ["session_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_oauth_requests_session_id"), table_name="oauth_requests")
    op.drop_table("oauth_requests")
    with op.batch_alter_table("mailboxes", schema=None) as batch_op:
        for column in ("connected_by", "grant_revoked_at", "token_expires_at", "oauth_provider"):
            batch_op.drop_column(column)
