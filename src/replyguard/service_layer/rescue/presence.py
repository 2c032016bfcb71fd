"""Who else is on a thread: a short-lived mark per person ("viewing" when their page loads,
"answering" when they start writing), read only while it is fresh. In the database, so every
web process sees it; no external service. A mark is advice for people, never a lock: the
thread's version decides (`thread_versions.py`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import case, delete, literal, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from replyguard.adapters.db import models as m
from replyguard.service_layer.uow import UnitOfWork

#: A mark older than this is nobody: a page left open overnight is not a person on it.
FRESH = timedelta(minutes=2)
DOING = ("viewing", "answering")


def mark(uow: UnitOfWork, thread_id: int, person: str, doing: str = "viewing") -> None:
    """Refresh `person`'s mark on the thread (the caller commits). An "answering" mark is not
    turned back into "viewing" by a page load while it is fresh."""
    if doing not in DOING:
        raise ValueError(f"doing must be one of {', '.join(DOING)}")
    now = uow.clock.now()
    insert = (pg_insert if uow.postgres else sqlite_insert)(m.ThreadPresence)
    values = {"workspace_id": uow.workspace_id, "thread_id": thread_id, "person": person[:320]}
    statement = insert.values(**values, doing=doing, seen_at=now)
    keep_answering = (m.ThreadPresence.doing == "answering") & (m.ThreadPresence.seen_at >= now - FRESH)
    kept = m.ThreadPresence.doing if doing == "viewing" else doing
    uow.session.execute(
        statement.on_conflict_do_update(
            index_elements=["thread_id", "person"],
            set_={"seen_at": now, "doing": case((keep_answering, kept), else_=literal(doing))},
        )
    )
    # Old marks are dropped as they are passed over: the table stays the size of who is here.
    uow.session.execute(
        delete(m.ThreadPresence).where(
            m.ThreadPresence.workspace_id == uow.workspace_id, m.ThreadPresence.seen_at < now - 10 * FRESH
        )
    )


def leave(uow: UnitOfWork, thread_id: int, person: str) -> None:
    """`person` is done answering (their answer went, or was refused): back to viewing."""
    mark_row = uow.session.scalar(
        select(m.ThreadPresence).where(
            m.ThreadPresence.workspace_id == uow.workspace_id,
            m.ThreadPresence.thread_id == thread_id,
            m.ThreadPresence.person == person,
        )
    )
    if mark_row is not None:
        mark_row.doing = "viewing"


def others(uow: UnitOfWork, thread_id: int, person: str | None) -> list[dict[str, Any]]:
    """Everyone else with a fresh mark on the thread, those answering first."""
    now = uow.clock.now()
    rows = uow.session.scalars(
        select(m.ThreadPresence)
        .where(
            m.ThreadPresence.workspace_id == uow.workspace_id,
            m.ThreadPresence.thread_id == thread_id,
            m.ThreadPresence.seen_at >= now - FRESH,
            m.ThreadPresence.person != (person or ""),
        )
        .order_by(m.ThreadPresence.doing, m.ThreadPresence.person)
    )
    return [{"person": r.person, "doing": r.doing, "seen_at": r.seen_at.isoformat()} for r in rows]
