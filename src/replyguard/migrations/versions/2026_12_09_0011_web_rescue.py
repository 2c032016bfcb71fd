"""Reply Rescue on the web: the indexes its pages need

Revision ID: 0011_web_rescue
Revises: 0010_audit
Create Date: 2026-12-09 09:00:00.000000

- `ix_events_workspace_kind_at`: a person's actions on threads (`thread_decision`,
  `person_reply_sent`) in a time window, for the reply → first action chart, without reading
  every `step_sent` event (one per email ever sent); and the inbound page's probable holds.
- `ix_replies_inbound_message_id`: the thread a matched inbound message opened.
"""

from __future__ import annotations

from alembic import op

revision = "0011_web_rescue"
down_revision = "0010_audit"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_events_workspace_kind_at", "events", ["workspace_id", "kind", "at"], unique=False)
    op.create_index("ix_replies_inbound_message_id", "replies", ["inbound_message_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_replies_inbound_message_id", table_name="replies")
    op.drop_index("ix_events_workspace_kind_at", table_name="events")
