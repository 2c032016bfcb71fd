"""Units of work for any workspace of one database.

The CLI works in one workspace (`App.uow()`); the web serves every workspace that has users,
so it opens each unit of work for the workspace of the person or token asking. Reads go
through a read-only engine: on SQLite they take no write lock (a page never makes the worker
or the reply transaction wait), on PostgreSQL a write in one is an error.
"""

from __future__ import annotations

from sqlalchemy import Engine

from replyguard.adapters.db.engine import read_only_engine
from replyguard.domain.clock import Clock
from replyguard.service_layer.uow import Memo, UnitOfWork
from replyguard.settings import Settings

#: The workspace id of installation-level work (users by email, login attempts, metrics).
#: Workspace ids start at 1, so a scoped query run there by mistake finds nothing.
INSTALLATION = 0


class Scoped:
    """Built by the composition root (`App.scoped`) with the process's own settings: a web
    write and a command line write see the same public URL, pause limits and the rest."""

    def __init__(self, engine: Engine, clock: Clock, settings: Settings) -> None:
        self.engine = engine
        self.clock = clock
        self.settings = settings
        self.read_engine = read_only_engine(engine)
        #: Results of expensive reads that a key proves still true (`UnitOfWork.memo`), shared
        #: by this process's read units of work (the web's pages).
        self.memo = Memo()

    def write(self, workspace_id: int) -> UnitOfWork:
        """A unit of work that may write; leaving it without `commit()` rolls back."""
        return UnitOfWork(self.engine, self.clock, workspace_id, self.settings)

    def read(self, workspace_id: int) -> UnitOfWork:
        """A unit of work that only reads, in one consistent snapshot."""
        return UnitOfWork(self.read_engine, self.clock, workspace_id, self.settings, memo=self.memo)

    def installation(self, *, write: bool = False) -> UnitOfWork:
        """For the few tables that are not workspace-scoped (see INSTALLATION)."""
        return self.write(INSTALLATION) if write else self.read(INSTALLATION)
