"""step tallies: a campaign's steps counted by template and state, kept by the database

Revision ID: 0030_step_tallies
Revises: 0029_answered_step_index
Create Date: 2026-12-03 11:00:00.000000

The campaign page and the campaigns list show how many steps of each template are in each
state. Counted from `steps`, that is one pass over a campaign's index entries (a million at a
million steps: ~100 ms, the page's largest read). Now every insert, state move and delete of a
step adds a signed row here — (template, state, +n) and (template, old state, -n) — written by
triggers in the same transaction, so a count can never drift from the steps whatever code (or
person with psql) writes them; a rolled-back transaction rolls its rows back too. Rows are
only ever inserted by the triggers (no row is updated: concurrent senders never wait on one
another for a counter), and `service_layer/step_tallies.py` folds a template's rows into one
per state when there are many (the sum is unchanged).

PostgreSQL: one statement-level trigger per INSERT and DELETE (an enrolment of 10,000 leads
writes one row per template and state, not one per step), and a row-level trigger on UPDATE
that fires only when the state or template changes (a send moves one step at a time; a lease
renewal or a new due time writes nothing). SQLite has row-level triggers only.

The rows are filled from `steps` after the triggers exist, in the migration's transaction:
on PostgreSQL CREATE TRIGGER holds a lock that keeps writers of `steps` out until it
commits; on SQLite the transaction holds the write lock.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030_step_tallies"
down_revision = "0029_answered_step_index"
branch_labels = None
depends_on = None

_POSTGRESQL = [
    """
    CREATE FUNCTION step_tallies_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO step_tallies (workspace_id, campaign_step_id, state, n)
        SELECT workspace_id, campaign_step_id, state, count(*) FROM born
        GROUP BY workspace_id, campaign_step_id, state;
        RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION step_tallies_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO step_tallies (workspace_id, campaign_step_id, state, n)
        SELECT workspace_id, campaign_step_id, state, -count(*) FROM gone
        GROUP BY workspace_id, campaign_step_id, state;
        RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION step_tallies_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO step_tallies (workspace_id, campaign_step_id, state, n) VALUES
            (OLD.workspace_id, OLD.campaign_step_id, OLD.state, -1),
            (NEW.workspace_id, NEW.campaign_step_id, NEW.state, 1);
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER steps_tally_insert AFTER INSERT ON steps REFERENCING NEW TABLE AS born "
    "FOR EACH STATEMENT EXECUTE FUNCTION step_tallies_inserted()",
    "CREATE TRIGGER steps_tally_delete AFTER DELETE ON steps REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION step_tallies_deleted()",
    "CREATE TRIGGER steps_tally_update AFTER UPDATE OF state, campaign_step_id ON steps FOR EACH ROW "
    "WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.campaign_step_id IS DISTINCT FROM NEW.campaign_step_id) "
    "EXECUTE FUNCTION step_tallies_moved()",
]

_SQLITE = [
    """
    CREATE TRIGGER steps_tally_insert AFTER INSERT ON steps BEGIN
        INSERT INTO step_tallies (workspace_id, campaign_step_id, state, n)
        VALUES (NEW.workspace_id, NEW.campaign_step_id, NEW.state, 1);
    END
    """,
    """
    CREATE TRIGGER steps_tally_delete AFTER DELETE ON steps BEGIN
        INSERT INTO step_tallies (workspace_id, campaign_step_id, state, n)
        VALUES (OLD.workspace_id, OLD.campaign_step_id, OLD.state, -1);
    END
    """,
    """
    CREATE TRIGGER steps_tally_update AFTER UPDATE OF state, campaign_step_id ON steps
    WHEN OLD.state IS NOT NEW.state OR OLD.campaign_step_id IS NOT NEW.campaign_step_id BEGIN
        INSERT INTO step_tallies (workspace_id, campaign_step_id, state, n) VALUES
            (OLD.workspace_id, OLD.campaign_step_id, OLD.state, -1),
            (NEW.workspace_id, NEW.campaign_step_id, NEW.state, 1);
    END
    """,
]


def upgrade() -> None:
    op.create_table(
        "step_tallies",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("workspace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("campaign_step_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    # A campaign's counts, and a workspace's rows to fold, from the index alone.
    op.create_index(
        "ix_step_tallies_template",
        "step_tallies",
        ["workspace_id", "campaign_step_id", "state", "n"],
        unique=False,
    )
    for statement in _POSTGRESQL if op.get_bind().dialect.name == "postgresql" else _SQLITE:
        op.execute(statement)
    op.execute(
        "INSERT INTO step_tallies (workspace_id, campaign_step_id, state, n) "
        "SELECT workspace_id, campaign_step_id, state, count(*) FROM steps "
        "GROUP BY workspace_id, campaign_step_id, state"
    )


def downgrade() -> None:
    for name in ("steps_tally_insert", "steps_tally_delete", "steps_tally_update"):
        op.execute(
            f"DROP TRIGGER {name} ON steps"
            if op.get_bind().dialect.name == "postgresql"
            else f"DROP TRIGGER {name}"
        )
    if op.get_bind().dialect.name == "postgresql":
        for function in ("step_tallies_inserted", "step_tallies_deleted", "step_tallies_moved"):
            op.execute(f"DROP FUNCTION {function}()")
    op.drop_index("ix_step_tallies_template", table_name="step_tallies")
    op.drop_table("step_tallies")
