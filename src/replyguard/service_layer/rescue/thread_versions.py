"""A thread's version: the one number a person's decision or answer names as "what I saw".

It moves (`bump`) with every inbound message on the lead, every decision, every answer sent and
every change of the lead's state, each time with a line in `thread_changes` that says what moved
it and who. `check_seen` runs under the lead lock, in the decision's (or the answer's)
transaction: a version that is not the current one refuses the action with the changes since.

Works on an ORM `Session` and on the worker's Core `Connection` alike (plain Core statements).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, insert, select, update
from sqlalchemy.orm import Session

from replyguard.adapters.db import models as m

_T = cast(Table, m.RescueThread.__table__)
_C = cast(Table, m.ThreadChange.__table__)
_SUMMARY = 300


@dataclass(frozen=True, slots=True)
class Change:
    version: int
    kind: str
    by: str | None
    summary: str
    at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "kind": self.kind,
            "by": self.by,
            "summary": self.summary,
            "at": self.at.isoformat(),
        }

    def line(self) -> str:
        who = f"{self.by}: " if self.by else ""
        return f"{self.at:%Y-%m-%d %H:%M} {who}{self.summary}"


class VersionChanged(ValueError):
    """The thread moved since the version the person saw: nothing was done."""

    def __init__(self, thread_id: int, seen: int, current: int, changes: list[Change]) -> None:
        self.thread_id, self.seen, self.current, self.changes = thread_id, seen, current, changes
        listed = "; ".join(c.line() for c in changes[-5:]) or "the lead changed"
        super().__init__(
            f"thread {thread_id} changed since you saw it (you saw version {seen}, it is now "
            f"{current}): {listed}. Look again (threads show {thread_id}) and decide on what is there now"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "error": "version_changed",
            "thread_id": self.thread_id,
            "seen": self.seen,
            "version": self.current,
            "changes": [c.to_json() for c in self.changes],
            "message": str(self),
        }


def bump(
    db: Session | Connection,
    *,
    workspace_id: int,
    now: datetime,
    kind: str,
    summary: str,
    by: str | None = None,
    lead_id: int | None = None,
    thread_id: int | None = None,
) -> None:
    """Move the version of the lead's threads (and of `thread_id`), logging why. The caller
    holds the lead lock and owns the transaction."""
    if isinstance(db, Session):
        db.flush()
    where = []
    if lead_id is not None:
        where.append(_T.c.lead_id == lead_id)
    if thread_id is not None:
        where.append(_T.c.id == thread_id)
    if not where:
        return
    cond = where[0] if len(where) == 1 else where[0] | where[1]
    scope = (_T.c.workspace_id == workspace_id) & cond
    # One statement moves and reads the versions (UPDATE ... RETURNING: PostgreSQL, SQLite 3.35+):
    # this runs in the reply transaction, where each round trip is latency.
    rows = db.execute(
        update(_T).where(scope).values(version=_T.c.version + 1).returning(_T.c.id, _T.c.version)
    ).all()
    if not rows:
        return
    db.execute(
        insert(_C),
        [
            {
                "workspace_id": workspace_id,
                "thread_id": row.id,
                "version": row.version,
                "kind": kind,
                "by": (by or None) and by[:320],
                "summary": summary[:_SUMMARY],
                "at": now,
            }
            for row in rows
        ],
    )
    if isinstance(db, Session):
        ids = {row.id for row in rows}
        for obj in list(db.identity_map.values()):
            if isinstance(obj, m.RescueThread) and obj.id in ids:
                db.expire(obj, ["version"])


#: A new thread's version after its first move (the row starts at 1, as `bump` would leave it).
FIRST_MOVE = 2
_INSERT_CHANGE = insert(_C)


def log_first_move(
    session: Session, thread: m.RescueThread, *, now: datetime, kind: str, summary: str
) -> None:
    """`bump` for a thread created in this transaction with `version = FIRST_MOVE`: its change
    line only (no UPDATE of a row just inserted), one prebuilt INSERT."""
    session.execute(
        _INSERT_CHANGE,
        {
            "workspace_id": thread.workspace_id,
            "thread_id": thread.id,
            "version": FIRST_MOVE,
            "kind": kind,
            "by": None,
            "summary": summary[:_SUMMARY],
            "at": now,
        },
    )


def current(db: Session | Connection, workspace_id: int, thread_id: int) -> int:
    found = db.execute(
        select(_T.c.version).where(_T.c.id == thread_id, _T.c.workspace_id == workspace_id)
    ).scalar()
    return int(found or 0)


def changes_since(db: Session | Connection, workspace_id: int, thread_id: int, seen: int) -> list[Change]:
    rows = db.execute(
        select(_C.c.version, _C.c.kind, _C.c.by, _C.c.summary, _C.c.at)
        .where(_C.c.workspace_id == workspace_id, _C.c.thread_id == thread_id, _C.c.version > seen)
        .order_by(_C.c.version, _C.c.id)
    ).all()
    return [Change(r.version, r.kind, r.by, r.summary, r.at) for r in rows]


def check_seen(db: Session | Connection, workspace_id: int, thread_id: int, seen: int | None) -> int:
    """The current version; VersionChanged when `seen` is given and is not it. Call it under the
    lead lock, in the transaction that acts."""
    now_version = current(db, workspace_id, thread_id)
    if seen is not None and seen != now_version:
        raise VersionChanged(
            thread_id, seen, now_version, changes_since(db, workspace_id, thread_id, min(seen, now_version))
        )
    return now_version


def message_summary(sender: str | None, kind: str, text: str | None) -> str:
    first = next((line.strip() for line in (text or "").splitlines() if line.strip()), "")
    what = "message" if kind == "human_reply" else f"{kind.replace('_', ' ')} message"
    who = f" from {sender}" if sender else ""
    return f"{what}{who}: {first[:160]}" if first else f"{what}{who}"
