"""Engines for SQLite (embedded default) and PostgreSQL (psycopg 3)."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.pool import QueuePool

from replyguard.adapters.db import wal

DEFAULT_URL = "sqlite:///replyguard.db"
SQLITE_BUSY_MS = 30_000
#: Execution option of a read-only engine (`read_only_engine`): no write lock on SQLite, a
#: READ ONLY transaction on PostgreSQL.
READ_ONLY = "replyguard_read_only"


#: A pooled PostgreSQL session unused for at least this long is pinged before it is handed out
#: (`ping_when_idle`): a server restarted, or a session cut by a firewall, shows up on an idle
#: session. A session used less than this ago is handed out as it is.
IDLE_PING_SECONDS = 1.0


class DatabaseUrlError(ValueError):
    pass


class DriverMissing(DatabaseUrlError):
    """A postgresql:// URL on an install without the `postgres` extra."""


def normalize_url(url: str) -> str:
    """Accept the URLs people type (`postgres://`, `postgresql://`) and pick psycopg 3."""
    url = url.strip()
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    if url.startswith(("sqlite:", "postgresql+psycopg:")):
        return url
    raise DatabaseUrlError(
        f"unsupported database URL {url.split('@')[-1]!r}: use sqlite:///PATH or postgresql://..."
    )


def make_engine(
    url: str,
    *,
    pool_size: int = 5,
    echo: bool = False,
    pre_ping: bool = True,
    ping_idle_after: float = IDLE_PING_SECONDS,
) -> Engine:
    """An engine for `url`. On PostgreSQL, `pre_ping` pings a pooled session that has been idle
    for `ping_idle_after` seconds before handing it out (`ping_when_idle`), not every session
    on every checkout: a reply, an ingested message, a page each paid a round trip for it.
    `pre_ping=False` (the guarded worker) never pings: a dead session then fails its first
    statement, which the worker already handles (claims and markers are durable; it waits and
    starts over)."""
    url = normalize_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        return _sqlite_engine(url, echo=echo)
    try:
        # psycopg is the `postgres` extra: SQLAlchemy imports it here, and only here.
        engine = create_engine(
            url,
            echo=echo,
            pool_size=pool_size,
            max_overflow=pool_size,
            connect_args={"connect_timeout": 10, "application_name": "replyguard"},
        )
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "psycopg":
            raise
        raise DriverMissing(
            "PostgreSQL needs the psycopg driver: pip install 'replyguard[postgres]'"
        ) from None
    if pre_ping:
        ping_when_idle(engine, ping_idle_after)
    return engine


def ping_when_idle(engine: Engine, idle_after: float) -> None:
    """Ping a pooled session before handing it out when it has not been used for `idle_after`
    seconds; a session that does not answer is thrown away and the pool opens another
    (SQLAlchemy retries a checkout that raises DisconnectionError). A session in use moments
    ago is handed out unpinged: if the server went away in between, its first statement
    fails, and SQLAlchemy then invalidates every session the pool held (so one unit of work
    fails, not one per pooled session) — the price of not paying a round trip per checkout.

    SQLAlchemy's own `pool_pre_ping` pings on every checkout (about a tenth of a reply's time
    on PostgreSQL)."""

    @event.listens_for(engine, "checkin")
    def _idle_from(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("idle_since")
        if since is None or time.monotonic() - since < idle_after:
            return  # just opened, or used moments ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:
            raise DisconnectionError("a pooled session did not answer its ping") from exc


def _sqlite_engine(url: str, *, echo: bool) -> Engine:
    # A small pool per process. Opening a SQLite connection is cheap, but closing the last
    # one checkpoints the WAL: with a connection per checkout every send paid for a
    # checkpoint. A pooled connection is used by one thread at a time; check_same_thread is
    # only pysqlite's own guard for that.
    engine = create_engine(
        url,
        echo=echo,
        poolclass=QueuePool,
        pool_size=5,
        max_overflow=10,
        connect_args={"timeout": SQLITE_BUSY_MS / 1000, "check_same_thread": False},
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not pysqlite, decide when transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Take the write lock up front: SQLite is single-writer, and a transaction that reads
        # then upgrades to a write can fail with SQLITE_BUSY instead of waiting. A read-only
        # unit of work (web pages, see service_layer/scoped.py) takes no lock: WAL gives it
        # a consistent snapshot while the worker and the reply transaction go on writing.
        if connection.get_execution_options().get(READ_ONLY):
            connection.exec_driver_sql("BEGIN DEFERRED")
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    wal.attach(engine)  # checkpoints in a thread of their own, not inside a commit
    return engine


def read_only_engine(engine: Engine) -> Engine:
    """The same pool, for transactions that only read: a write in one is an error on
    PostgreSQL, and on SQLite it does not wait for (or block) the single writer."""
    options: dict[str, Any] = {READ_ONLY: True}
    if engine.dialect.name == "postgresql":
        options["postgresql_readonly"] = True
    return engine.execution_options(**options)


def end_read(conn: Any) -> None:
    """End a transaction that only read (a `Connection` or `Session`) by COMMIT rather than
    ROLLBACK: it has nothing to undo, and on PostgreSQL psycopg drops every prepared statement
    of a session whose transaction ends in ROLLBACK. The worker's reads at each claim and pass
    ended that way, and the send path's statements were parsed and planned anew after every
    claim (1.5 ms of server time per email for the acceptance alone)."""
    conn.commit()


def is_postgres(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"
