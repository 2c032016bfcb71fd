"""How many steps of each template are in each state, read from the ledger the database keeps.

Triggers on `steps` (migration 0030) add a signed row to `step_tallies` for every insert,
state move and delete of a step, in the same transaction as the write: (template, new state,
+1) and (template, old state, -1). The count of a (template, state) is the sum of its rows, so
it is never stale and never drifts, whoever wrote the step. The campaign page reads a few
dozen rows instead of a campaign's million index entries.

Rows are only ever inserted, never updated: two workers sending from the same campaign never
wait on one another for a counter row. The ledger grows with every move, so the worker folds
it (`Worker.fold_tallies`, at the start of each pass): a workspace's rows are replaced by one per
(template, state) holding their sum. The fold never loses or counts twice a row written
beside it: on PostgreSQL the rows it deletes are exactly the rows it sums (one statement,
`DELETE … RETURNING` feeding the `INSERT`), and folds of one workspace take turns (an
advisory lock; a fold that finds it taken is skipped); on SQLite the fold's transaction holds
the database's only write lock. A bulk enrolment folds too, in its own transaction, when it has
made the ledger long (`fold_if_long`): a workspace without a running worker is not left with a
million rows to sum.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from sqlalchemy import Connection, Table, func, select, text

from replyguard.adapters.db import models as m

T = cast(Table, m.StepTally.__table__)

#: Rows a workspace's ledger may gather beyond the folded ones before the worker folds it: a
#: few hundred sends' worth (three moves each, two rows per move on SQLite).
FOLD_AFTER = 2000
#: The advisory lock of a workspace's fold ("rgtally" + the workspace id).
_FOLD_LOCK = 0x7267_7461_6C6C_0000

StepCounts = dict[tuple[int, str], int]


def step_counts(conn: Connection, workspace_id: int, template_ids: Iterable[int]) -> StepCounts:
    """{(template id, state): steps} for these templates of the workspace; states with no
    step are left out. One index range per template."""
    ids = list(template_ids)
    if not ids:
        return {}
    rows = conn.execute(
        select(T.c.campaign_step_id, T.c.state, func.sum(T.c.n))
        .where(T.c.workspace_id == workspace_id, T.c.campaign_step_id.in_(ids))
        .group_by(T.c.campaign_step_id, T.c.state)
    )
    return {(template, state): int(n) for template, state, n in rows if n}


def ledger_rows(conn: Connection, workspace_id: int) -> int:
    """How many rows the workspace's ledger holds (from the index)."""
    return conn.scalar(select(func.count()).select_from(T).where(T.c.workspace_id == workspace_id)) or 0


def fold(conn: Connection, workspace_id: int) -> int | None:
    """Replace the workspace's rows with one per (template, state) holding their sum (zero
    sums dropped), inside the caller's transaction. Returns the rows left, or None when
    another fold of the workspace holds the lock (PostgreSQL): this one is not needed."""
    if conn.dialect.name == "postgresql":
        turn = conn.scalar(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": _FOLD_LOCK + workspace_id})
        if not turn:
            return None
        folded = conn.execute(
            text(
                "WITH gone AS (DELETE FROM step_tallies WHERE workspace_id = :ws "
                "RETURNING campaign_step_id, state, n) "
                "INSERT INTO step_tallies (workspace_id, campaign_step_id, state, n) "
                "SELECT :ws, campaign_step_id, state, sum(n) FROM gone "
                "GROUP BY campaign_step_id, state HAVING sum(n) <> 0"
            ),
            {"ws": workspace_id},
        )
        return folded.rowcount
    # SQLite: the transaction holds the write lock (BEGIN IMMEDIATE), so no row is written
    # beside the fold; the sums get ids above every row they replace.
    top = conn.scalar(select(func.max(T.c.id)).where(T.c.workspace_id == workspace_id))
    if top is None:
        return 0
    folded = conn.execute(
        text(
            "INSERT INTO step_tallies (workspace_id, campaign_step_id, state, n) "
            "SELECT :ws, campaign_step_id, state, sum(n) FROM step_tallies "
            "WHERE workspace_id = :ws AND id <= :top "
            "GROUP BY campaign_step_id, state HAVING sum(n) <> 0"
        ),
        {"ws": workspace_id, "top": top},
    )
    conn.execute(T.delete().where(T.c.workspace_id == workspace_id, T.c.id <= top))
    return folded.rowcount


def fold_if_long(conn: Connection, workspace_id: int) -> int | None:
    """`fold` when the workspace's ledger holds more than FOLD_AFTER rows, in the caller's
    transaction: for a writer that has just added many (a bulk enrolment), so that a workspace
    whose worker does not run yet still reads a short ledger. None when nothing was folded."""
    if ledger_rows(conn, workspace_id) <= FOLD_AFTER:
        return None
    return fold(conn, workspace_id)


class Folder:
    """Folds a workspace's ledger when it has grown by `after` rows since the last fold this
    process saw (a worker keeps one)."""

    def __init__(self, workspace_id: int, *, after: int = FOLD_AFTER) -> None:
        self.workspace_id = workspace_id
        self.after = after
        self.folded_to = 0  # rows left by the last fold (0 until one ran)

    def is_long(self, conn: Connection) -> bool:
        """Has the ledger grown by `after` rows since the last fold? (One index count.)"""
        return ledger_rows(conn, self.workspace_id) > self.folded_to + self.after

    def fold_now(self, conn: Connection) -> bool:
        """`fold` in the caller's transaction; False when another fold had the turn."""
        left = fold(conn, self.workspace_id)
        if left is not None:
            self.folded_to = left
        return left is not None
