"""Unit of work: one use case, one transaction. Repositories and adapters never commit.

Every transaction of a unit of work has an id (`tx`, a fresh uuid after each commit), stamped
on every event it writes — through `add_event` or added to its session by any code it calls
(threads, notices). Events with the same `tx` were committed together, or not at all: what
`replyguard audit` reads to prove that a reply and the cancellation of its steps were one
transaction.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, cast

from sqlalchemy import Engine, Table, event, insert, select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, UOWTransaction

from replyguard.adapters.db import models as m
from replyguard.adapters.db.engine import READ_ONLY
from replyguard.domain.clock import Clock
from replyguard.settings import Settings

log = logging.getLogger(__name__)

#: The events of a batch, written in one statement (a multi-row INSERT; no ids read back).
_INSERT_EVENTS = insert(cast(Table, m.Event.__table__))


class Memo:
    """Results of expensive reads, each under the question it answers (`key`) and a `proof` read
    in the same unit of work that changes whenever the result would. One entry per question:
    a result under a newer proof replaces the one before, which could never be asked for again
    (a page read after every new reply would otherwise leave one stale result per reply, each
    as large as the campaign's replies, until `size` of them). Bounded: past `size` questions
    it starts over. Safe across threads: a lost entry is only a read done again."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._found: dict[Hashable, tuple[Hashable, Any]] = {}

    def get(self, key: Hashable, proof: Hashable = None) -> Any | None:
        found = self._found.get(key)
        if found is None or found[0] != proof:
            return None
        return found[1]

    def put(self, key: Hashable, value: Any, proof: Hashable = None) -> None:
        if key not in self._found and len(self._found) >= self.size:
            self._found = {}
        self._found[key] = (proof, value)

    def __len__(self) -> int:
        return len(self._found)


#: The key of a unit of work's session `info` that holds the unit of work.
UOW = "replyguard_uow"


class UnitOfWorkSession(Session):
    """A unit of work's session. Its one `before_flush` listener is the class's, not one added
    to each session: `event.listen` on an instance cost about a tenth of a short unit of work's
    CPU, and gave that session a dispatch of its own, slower at every event after."""


@event.listens_for(UnitOfWorkSession, "before_flush")
def _stamp_events(session: Session, _flush: UOWTransaction, _instances: object) -> None:
    """Stamp the unit of work's transaction id on every event its session is about to write."""
    uow = session.info.get(UOW)
    if uow is None:
        return
    for obj in session.new:
        if isinstance(obj, m.Event) and obj.tx is None:
            obj.tx = uow.tx


class UnitOfWork:
    """`with app.uow() as uow: ...; uow.commit()` — leaving the block without commit rolls back."""

    def __init__(
        self, engine: Engine, clock: Clock, workspace_id: int, settings: Settings, *, memo: Memo | None = None
    ) -> None:
        self.engine = engine
        #: Shared by the process's read units of work (`Scoped.read`); any other gets its own,
        #: which remembers nothing beyond itself.
        self.memo = memo if memo is not None else Memo()
        self.clock = clock
        self.workspace_id = workspace_id
        #: What a use case deep in the service layer may need to know (pause limits, the public
        #: URL for links in notices) without the composition root being passed down. Always
        #: the process's own: a unit of work is built only by the composition root's wiring
        #: (`App.uow`, `App.scoped`), never with defaults of its own.
        self.settings = settings
        self.postgres = engine.dialect.name == "postgresql"
        #: A unit of work on the read-only engine (`read_only_engine`): it cannot write.
        self.read_only = bool(engine.get_execution_options().get(READ_ONLY))
        self.session: Session
        self.tx = uuid.uuid4().hex
        self._analyze: set[str] = set()
        #: Inside `batched_events`: the events added so far, not yet written.
        self._batch: list[dict[str, Any]] | None = None

    def __enter__(self) -> UnitOfWork:
        self.session = UnitOfWorkSession(bind=self.engine, expire_on_commit=False, info={UOW: self})
        self.session.begin()
        return self

    def _pending(self) -> bool:
        """Objects changed in the session (a flush would write them: leave them unwritten)."""
        return bool(self.session.new or self.session.dirty or self.session.deleted)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self.session.in_transaction():
                if exc_type is None and self.read_only and self.postgres and not self._pending():
                    # A read ends by COMMIT: a READ ONLY transaction has nothing to undo, and
                    # psycopg drops every prepared statement of a session on ROLLBACK.
                    self.session.commit()
                else:
                    self.session.rollback()
        finally:
            self.session.close()

    def commit(self) -> None:
        self.session.commit()
        self.tx = uuid.uuid4().hex  # whatever this unit of work writes next is another transaction
        if self._analyze:
            tables, self._analyze = sorted(self._analyze), set()
            try:
                with self.engine.connect() as conn, conn.begin():
                    conn.execute(text(f"ANALYZE {', '.join(tables)}"))
            except SQLAlchemyError as exc:
                # What was committed stands: fresh statistics are an optimisation, and
                # autovacuum gathers them later anyway.
                log.warning("could not refresh the planner's statistics: %s", str(exc).splitlines()[0])

    def analyze_after_commit(self, *tables: str) -> None:
        """PostgreSQL: refresh the planner's statistics of these tables once this unit of work
        commits (bulk writes: an enrolment of many leads). Autovacuum would, a minute or more
        later; until then the planner costs a table of thousands of rows as empty and may plan
        the worker's claim as a scan of every lead per due step. What PostgreSQL's manual
        advises after a bulk load ("Populating a Database": run ANALYZE afterwards)."""
        if self.postgres:
            self._analyze.update(tables)

    def lock_leads(self, lead_ids: Iterable[int]) -> None:
        """Take the row locks that serialize every change of a lead's sendability.

        The reply transaction, the guarded worker and recovery all lock the lead row first
        (ids in ascending order, so two transactions never wait on each other in a cycle).
        On SQLite the transaction already holds the database write lock (BEGIN IMMEDIATE).
        """
        ids = sorted(set(lead_ids))
        if self.postgres and ids:
            self.session.execute(
                select(m.Lead.id).where(m.Lead.id.in_(ids)).order_by(m.Lead.id).with_for_update()
            ).all()

    def add_event(
        self,
        kind: str,
        /,
        *,
        lead_id: int | None = None,
        step_id: int | None = None,
        **data: Any,
    ) -> None:
        """Record an event of this transaction: written with the session's next flush, or, inside
        `batched_events`, with the batch."""
        row = {
            "workspace_id": self.workspace_id,
            "lead_id": lead_id,
            "step_id": step_id,
            "kind": kind,
            "at": self.clock.now(),
            "data": data,
            "tx": self.tx,
        }
        if self._batch is not None:
            self._batch.append(row)
        else:
            self.session.add(m.Event(**row))

    @contextmanager
    def batched_events(self) -> Iterator[None]:
        """Inside, `add_event` collects the events; leaving the block writes them, in the order
        they were added, in one INSERT (the reply transaction, where each statement is a round
        trip and each ORM flush of an event costs more CPU than the statement). Nothing inside
        may read events back before the block ends; an exception leaves them unwritten, as
        the rollback that follows would."""
        if self._batch is not None:  # already batching: the outer block writes them
            yield
            return
        self._batch = []
        try:
            yield
            rows = self._batch
        finally:
            self._batch = None
        if rows:
            self.session.execute(_INSERT_EVENTS, rows)
