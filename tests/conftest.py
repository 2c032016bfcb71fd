"""Shared fixtures: the same tests run on SQLite and PostgreSQL.

PostgreSQL is found at REPLYGUARD_TEST_PG_URL (default: the local server with trust auth).
If it is not reachable, a throwaway cluster is started when PostgreSQL's binaries exist;
otherwise the PostgreSQL cases are skipped and the summary says so. With
REPLYGUARD_REQUIRE_PG=1 (set by .ci/run) a missing PostgreSQL fails the run instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import NullPool

from replyguard.adapters.db.engine import make_engine
from replyguard.adapters.db.migrate import upgrade
from replyguard.adapters.db.models import Base
from replyguard.adapters.transports.maildir import MaildirTransport
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.settings import Settings
from tests.support.failpoints import Failpoints

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis measures time too: its per-example deadline and its "generation is slow" check
# fail a property on a loaded machine that holds on an idle one. The properties here are about
# what the code does, never how fast, so neither applies (benchmarks measure speed).
settings.register_profile("replyguard", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("replyguard")

# pytest-xdist's workers start with COLUMNS=80. A Rich console created while it is set keeps
# that width for good, and the CLI's consoles are created when its module is first imported
# (while tests are collected): every CLI call of a test gives its own COLUMNS instead
# (tests/support/cli.py), which a console created without it reads when it prints.
os.environ.pop("COLUMNS", None)
EXAMPLES = ROOT / "examples"
DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
_PG_STATE: dict[str, str | None] = {}


def _pg_reachable(url: str) -> bool:
    try:
        engine = create_engine(url, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
        return True
    except Exception:
        return False


def _throwaway_cluster() -> str | None:
    """Start a private PostgreSQL when its binaries exist (a developer's machine)."""
    candidates = [
        shutil.which("initdb"),
        *sorted(str(p) for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")),
    ]
    initdb = next((c for c in candidates if c), None)
    if initdb is None or os.geteuid() == 0:
        return None
    bindir = Path(initdb).parent
    data = Path(tempfile.mkdtemp(prefix="rg-pg-"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        subprocess.run(
            [initdb, "-D", str(data), "-A", "trust", "-U", "postgres"], check=True, capture_output=True
        )
        subprocess.run(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-w",
                "-l",
                str(data / "log"),
                "-o",
                f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c max_connections=200",
                "start",
            ],
            check=True,
            capture_output=True,
        )
    except (subprocess.CalledProcessError, OSError):
        return None
    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"


def pg_admin_url() -> str | None:
    if "url" not in _PG_STATE:
        url = os.environ.get("REPLYGUARD_TEST_PG_URL", DEFAULT_PG)
        if not _pg_reachable(url):
            url = _throwaway_cluster()  # type: ignore[assignment]
        _PG_STATE["url"] = url
    return _PG_STATE["url"]


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("REPLYGUARD_REQUIRE_PG") == "1" and pg_admin_url() is None:
        raise pytest.UsageError("REPLYGUARD_REQUIRE_PG=1 but PostgreSQL is not reachable")


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Serial tests measure what concurrency does (races, the fault campaign): sharing the
    # machine's cores with other tests changes what they measure. `make test` runs them in a
    # pytest of their own; inside an xdist worker they refuse instead of quietly sharing.
    if item.get_closest_marker("serial") and os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.fail("a `serial` test ran inside an xdist worker: run it with `pytest -m serial` (no -n)")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _PG_STATE.get("url", "") is None:
        terminalreporter.write_line(
            "PostgreSQL was not reachable: every PostgreSQL case (concurrency, races) was SKIPPED. "
            "Set REPLYGUARD_TEST_PG_URL to run them.",
            yellow=True,
            bold=True,
        )


def _worker_db_name(worker_id: str) -> str:
    # The process id too: two test runs on one server (a developer's and an editor's) must not
    # drop each other's databases.
    return f"rg_test_{worker_id}_{os.getpid()}".replace("-", "_")


@pytest.fixture(scope="session")
def pg_url(worker_id: str) -> Iterator[str]:
    """A migrated database of this xdist worker's own."""
    admin = pg_admin_url()
    if admin is None:
        pytest.skip("PostgreSQL not reachable")
    name = _worker_db_name(worker_id)
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
        # A commit need not wait for its WAL to reach the disk: the tests kill workers and
        # sessions, never the server, so what they prove is the same and each commit is cheaper.
        conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit TO off'))
    url = admin.rsplit("/", 1)[0] + f"/{name}"
    migrated = make_engine(url)
    upgrade(migrated)
    migrated.dispose()
    yield url
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()  # the last connection to close checkpoints the WAL into the file
    return path


_EMPTY: dict[str, str] = {}
_SEQUENCES = """
    SELECT pg_get_serial_sequence(quote_ident(table_name), column_name)
    FROM information_schema.columns
    WHERE table_schema = 'public' AND (column_default LIKE 'nextval%' OR is_identity = 'YES')
"""


def _truncate(url: str) -> None:
    """Empty every table and restart every id sequence: each test starts from ids 1, 2, ...

    DELETEs child tables first, then the sequences, in one round trip: about 10x cheaper than
    TRUNCATE ... CASCADE of 27 tables, which makes new files for each on every test. A row left
    by a test that a DELETE cannot remove (a foreign key cycle) falls back to TRUNCATE."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        if url not in _EMPTY:
            with engine.connect() as conn:
                sequences = [row[0] for row in conn.execute(text(_SEQUENCES)) if row[0]]
            # The step-count ledger last: deleting the steps writes their minus rows into it.
            names = [t.name for t in reversed(Base.metadata.sorted_tables) if t.name != "step_tallies"]
            tables = [f'DELETE FROM "{name}";' for name in [*names, "step_tallies"]]
            _EMPTY[url] = "".join(tables) + "".join(f"ALTER SEQUENCE {s} RESTART;" for s in sequences)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql(_EMPTY[url])
        except IntegrityError:
            tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
            with engine.begin() as conn:
                conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> str:
    """An empty, migrated database: a fresh SQLite file, or the worker's PostgreSQL database truncated."""
    if request.param == "sqlite":
        if request.node.get_closest_marker("postgres_only"):
            pytest.skip("needs PostgreSQL's row locks")
        path = tmp_path / "replyguard.db"
        shutil.copy(sqlite_template, path)
        return f"sqlite:///{path}"
    url = request.getfixturevalue("pg_url")
    _truncate(url)
    return str(url)


@pytest.fixture
def pg_only_url(pg_url: str) -> str:
    _truncate(pg_url)
    return pg_url


START = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)  # Monday 06:00 UTC: before every window opens


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


def build_app(url: str, clock: FixedClock, outbox: Path, **settings: object) -> App:
    app = App(
        engine=make_engine(url),
        clock=clock,
        settings=Settings(**settings),  # type: ignore[arg-type]
        transport_spec=f"maildir:{outbox}",
        # The tests' own wiring: failpoints on the paths' named points, and the fixed clock as
        # the real time too (a test signs a Mailgun webhook with the time it lives in).
        hooks=Failpoints(),
        wall_clock=clock,
    )
    app.init_database()
    app.use_transport(MaildirTransport(outbox))
    return app


@pytest.fixture
def app(db_url: str, clock: FixedClock, tmp_path: Path) -> Iterator[App]:
    instance = build_app(db_url, clock, tmp_path / "outbox")
    yield instance
    instance.close()


@pytest.fixture
def engine(app: App) -> Engine:
    return app.engine
