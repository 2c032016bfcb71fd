"""answered step index: ix_steps_lead_state gains sent_at

Revision ID: 0029_answered_step_index
Revises: 0028_canary_index
Create Date: 2026-12-03 07:40:00.000000

The campaign page counts each reply for the email it answers: the lead's last step of the
campaign sent before the reply arrived. With `sent_at` after `(lead_id, state)` that is one
backward step in the index per reply instead of reading and sorting the lead's sent steps
(20,000 replies at a million steps: the page's slowest read). The reply transaction's cancel
still reads the first two columns. No extra write: `sent_at` changes only together with the
state, which rewrites the entry anyway.
"""

from __future__ import annotations

from alembic import op

revision = "0029_answered_step_index"
down_revision = "0028_canary_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_steps_lead_state", table_name="steps")
    op.create_index("ix_steps_lead_state", "steps", ["lead_id", "state", "sent_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_steps_lead_state", table_name="steps")
    op.create_index("ix_steps_lead_state", "steps", ["lead_id", "state"], unique=False)
