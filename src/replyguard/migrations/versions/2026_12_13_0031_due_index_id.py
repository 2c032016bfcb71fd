"""due index with id: the claim's order (due_at, id) read from ix_steps_due

Revision ID: 0031_due_index_id
Revises: 0030_step_tallies
Create Date: 2026-12-03 12:15:00.000000

The worker claims the due steps `ORDER BY due_at, id LIMIT 20`. With `ix_steps_due` on
(state, due_at) only, steps due at the same instant (a campaign enrolled at once: 100,000
first emails due together) are in no id order in the index, so every claim read and sorted
every due step: 2.9 s per claim of 20 on PostgreSQL at 100,000 (bench/memory.py --long worker,
all due at one instant). With `id` as the last column the index gives the claim's order and
the claim stops after its 20 rows.
"""

from __future__ import annotations

from alembic import op

revision = "0031_due_index_id"
down_revision = "0030_step_tallies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_steps_due", table_name="steps")
    op.create_index("ix_steps_due", "steps", ["state", "due_at", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_steps_due", table_name="steps")
    op.create_index("ix_steps_due", "steps", ["state", "due_at"], unique=False)
