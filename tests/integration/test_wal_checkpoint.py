"""SQLite's log is checkpointed by the engine's own thread, not inside whichever commit crossed
SQLite's automatic limit (adapters/db/wal.py): that commit paid for copying the log into the
database and its fsync (a reply's p99 on SQLite was 2-4x its p50 because of it)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from replyguard.adapters.db import wal
from replyguard.adapters.db.engine import make_engine
from replyguard.adapters.db.wal import SAFETY_PAGES, WalCheckpointer, checkpointer_of

#: Rows of about one page each: this many grow the log well past SQLite's default automatic
#: checkpoint (1,000 pages), which is what a commit used to run.
ROWS = 1_500


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'wal.db'}")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE pages (id INTEGER PRIMARY KEY, body TEXT)"))
    yield engine
    engine.dispose()


def _checkpointer(engine: Engine) -> WalCheckpointer:
    checkpointer = checkpointer_of(engine)
    assert checkpointer is not None
    return checkpointer


def _write(engine: Engine, rows: int) -> None:
    for start in range(0, rows, 100):
        with engine.begin() as conn:
            conn.execute(
                text("INSERT INTO pages (body) VALUES (:body)"),
                [{"body": f"{i:06d}" + "x" * 4000} for i in range(start, start + 100)],
            )


def _rows_in_the_file_alone(tmp_path: Path) -> int:
    """The rows a copy of the database file holds without its -wal file."""
    copy = tmp_path / "copy.db"
    copy.write_bytes((tmp_path / "wal.db").read_bytes())
    with sqlite3.connect(copy) as plain:
        return int(plain.execute("SELECT count(*) FROM pages").fetchone()[0])


def test_a_commit_never_checkpoints_the_log_itself(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    checkpointer = _checkpointer(engine)
    checkpointer.stop()  # and no commit starts it again: only a commit could checkpoint now
    monkeypatch.setattr(checkpointer, "committed", lambda: None)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == SAFETY_PAGES
    _write(engine, ROWS)
    # Every page written is still in the log: no commit copied it back (SQLite's default
    # would have checkpointed at 1,000 pages, and the log would have started over).
    done = checkpointer.checkpoint()
    assert done.log_frames >= ROWS
    assert done.checkpointed == done.log_frames and not done.busy


def test_the_engine_s_thread_checkpoints_after_commits(engine: Engine, tmp_path: Path) -> None:
    checkpointer = _checkpointer(engine)
    checkpointer.ran.clear()
    _write(engine, 200)
    assert checkpointer.ran.wait(timeout=60), "the checkpoint thread never ran"
    assert checkpointer.last is not None and not checkpointer.last.busy
    # What it copied is in the database file: a reader without the log sees the rows.
    checkpointer.stop()
    checkpointer.checkpoint()
    assert _rows_in_the_file_alone(tmp_path) == 200


def test_dispose_stops_the_thread_and_a_later_commit_starts_another(engine: Engine) -> None:
    checkpointer = _checkpointer(engine)
    _write(engine, 100)
    first = checkpointer._thread
    assert first is not None and first.is_alive()
    engine.dispose()
    assert not first.is_alive() and checkpointer._thread is None
    checkpointer.ran.clear()
    _write(engine, 100)  # the engine is usable after dispose, and so is its checkpointer
    assert checkpointer.ran.wait(timeout=60)


def test_after_dispose_the_database_file_alone_holds_every_commit(engine: Engine, tmp_path: Path) -> None:
    """What a copy of the file takes (the tests' template database, a backup of a stopped
    install): the checkpoint thread's own connection closes before `dispose` returns, so the
    last connection to close copies the log into the file."""
    _write(engine, 300)
    engine.dispose()
    assert _rows_in_the_file_alone(tmp_path) == 300


def test_a_database_in_memory_has_no_checkpointer() -> None:
    in_memory = make_engine("sqlite://")
    try:
        assert checkpointer_of(in_memory) is None
        assert wal.attach(in_memory) is None
    finally:
        in_memory.dispose()


def test_a_thread_that_is_gone_is_replaced_at_the_next_commit(engine: Engine) -> None:
    """As in a forked child: its copy of the checkpointer names a thread that does not run
    there. The next commit starts one."""
    checkpointer = _checkpointer(engine)
    gone = threading.Thread(target=lambda: None)
    gone.start()
    gone.join()
    checkpointer._thread = gone
    checkpointer.ran.clear()
    _write(engine, 100)
    assert checkpointer._thread is not gone and checkpointer._thread is not None
    assert checkpointer.ran.wait(timeout=60)


def test_a_database_under_an_odd_path_is_checkpointed(tmp_path: Path) -> None:
    """Non-ASCII, spaces and a URL-looking character in the folder's name: the checkpoint's
    own connection opens the same file the engine does (SQLAlchemy reads the URL for both)."""
    folder = tmp_path / "Zürich données #1 ✉"
    folder.mkdir()
    odd = make_engine(f"sqlite:///{folder / 'réplies.db'}")
    try:
        with odd.begin() as conn:
            conn.execute(text("CREATE TABLE pages (id INTEGER PRIMARY KEY, body TEXT)"))
        _write(odd, 100)
        done = _checkpointer(odd).checkpoint()
        assert not done.busy and done.checkpointed == done.log_frames > 0
        assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]  # no stray file elsewhere
    finally:
        odd.dispose()
