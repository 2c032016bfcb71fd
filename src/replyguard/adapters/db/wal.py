"""SQLite's write-ahead log, checkpointed by a thread of its own instead of by a commit.

SQLite copies the log back into the database file (a checkpoint) when a commit leaves the log
over `wal_autocheckpoint` pages (1,000 by default), and it does that inside that commit: the
copy and the database file's fsync land on whichever transaction crossed the line. A reply
that happened to be the one paid 8-20 ms instead of 3-4 (docs/benchmarks.md, "SQLite's
checkpoints"). Here a commit only wakes the engine's checkpointer, which checkpoints PASSIVE
(it never waits for, nor blocks, a reader or the writer) at most every `every` seconds.
Connections keep an automatic checkpoint at `SAFETY_PAGES`, so a checkpointer that falls
behind or stops leaves the log bounded as before, only larger.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, event

log = logging.getLogger(__name__)

#: The automatic checkpoint each connection keeps, as a safety net (pages of the page size).
SAFETY_PAGES = 10_000
#: The least time between two background checkpoints, in seconds.
EVERY_SECONDS = 0.25


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """`PRAGMA wal_checkpoint(PASSIVE)`'s answer: whether it had to stop short for a lock,
    the frames in the log, and the frames now copied into the database file."""

    busy: bool
    log_frames: int
    checkpointed: int


class WalCheckpointer:
    """One per SQLite engine (`attach`). Its thread starts at the first commit (again after a
    `stop`, or in a forked child) and ends with `stop`, which the engine's `dispose` calls
    (`App.close` disposes it)."""

    def __init__(self, engine: Engine, *, every: float = EVERY_SECONDS) -> None:
        self._engine = engine
        self._every = every
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        #: Set after each background checkpoint (tests wait on it instead of sleeping).
        self.ran = threading.Event()
        self.last: Checkpoint | None = None

    def committed(self) -> None:
        """A transaction committed: the log may have grown, a checkpoint is due."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            with self._lock:
                if self._thread is thread:
                    self._stopping.clear()
                    self._thread = threading.Thread(target=self._run, name="sqlite-checkpoint", daemon=True)
                    self._thread.start()
        self._wake.set()

    def checkpoint(self) -> Checkpoint:
        """Checkpoint now, in the caller's thread, on a connection of its own (not the pool's:
        closed here, it is never the pool's to close later, so after `dispose` the database
        file is whole once the last connection is closed)."""
        args, kwargs = self._engine.dialect.create_connect_args(self._engine.url)
        # (the URL's own arguments, as SQLAlchemy reads them: a file: URI, its mode)
        connection = sqlite3.connect(*args, **{**kwargs, "timeout": 5.0})  # type: ignore[call-overload]
        try:
            busy, frames, copied = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            connection.close()
        self.last = Checkpoint(busy=bool(busy), log_frames=int(frames), checkpointed=int(copied))
        return self.last

    def stop(self) -> None:
        """End the thread (after the checkpoint it may be running); a later commit starts one."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stopping.set()
            self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        stopping, wake = self._stopping, self._wake
        while not stopping.is_set():
            wake.wait()
            if stopping.is_set():
                return
            wake.clear()
            try:
                self.checkpoint()
            except Exception:  # nothing is lost: the next checkpoint (or SQLite's own) copies it
                log.warning("background checkpoint of the SQLite log failed", exc_info=True)
            self.ran.set()
            stopping.wait(self._every)


_CHECKPOINTERS: weakref.WeakKeyDictionary[Engine, WalCheckpointer] = weakref.WeakKeyDictionary()


def checkpointer_of(engine: Engine) -> WalCheckpointer | None:
    return _CHECKPOINTERS.get(engine)


def attach(engine: Engine) -> WalCheckpointer | None:
    """Move the engine's checkpoints off its commits. A database in memory has no log."""
    if engine.url.database in (None, "", ":memory:") or "mode=memory" in str(engine.url):
        return None
    checkpointer = _CHECKPOINTERS[engine] = WalCheckpointer(engine)

    @event.listens_for(engine, "connect")
    def _safety_net(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA wal_autocheckpoint={SAFETY_PAGES}")
        cursor.close()

    @event.listens_for(engine, "commit")
    def _committed(_connection: Any) -> None:
        checkpointer.committed()

    @event.listens_for(engine, "engine_disposed")
    def _disposed(_engine: Any) -> None:
        checkpointer.stop()

    return checkpointer
