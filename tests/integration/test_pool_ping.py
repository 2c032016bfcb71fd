"""A pooled PostgreSQL session is pinged before it is handed out only when it has been idle
(`engine.ping_when_idle`, issue 25): SQLAlchemy's `pool_pre_ping` pinged on every checkout, a
round trip on every reply, ingested message and page. What the ping is for still holds: a
session the server cut while it sat idle is replaced before anyone uses it; one cut moments
after it was used fails its first statement once, and the pool then drops every older session.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError

from replyguard.adapters.db.engine import make_engine

pytestmark = pytest.mark.postgres_only


class Pings:
    """Counts the pings the dialect is asked for (the real ping runs)."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = engine.dialect.do_ping

        def counted(dbapi_connection: Any) -> bool:
            self.count += 1
            return real(dbapi_connection)

        monkeypatch.setattr(engine.dialect, "do_ping", counted)


def _backend(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


def _terminate(url: str, pid: int) -> None:
    admin = create_engine(url)
    try:
        with admin.connect() as conn:
            assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar_one()
    finally:
        admin.dispose()


def _gone(url: str, pid: int) -> bool:
    admin = create_engine(url)
    try:
        with admin.connect() as conn:
            return not conn.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
            ).scalar_one()
    finally:
        admin.dispose()


@pytest.fixture
def engines(pg_only_url: str) -> Iterator[list[Engine]]:
    made: list[Engine] = []
    yield made
    for engine in made:
        engine.dispose()


def test_a_session_in_use_is_not_pinged_at_each_checkout(
    pg_only_url: str, engines: list[Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(pg_only_url, ping_idle_after=3600)
    engines.append(engine)
    pings = Pings(engine, monkeypatch)
    for _ in range(20):
        with engine.begin() as conn:
            conn.execute(text("SELECT 1"))
    assert pings.count == 0  # pool_pre_ping: 20


def test_an_idle_session_the_server_cut_is_replaced_before_use(
    pg_only_url: str, engines: list[Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(pg_only_url, pool_size=1, ping_idle_after=0.0)  # every reuse counts as idle
    engines.append(engine)
    pings = Pings(engine, monkeypatch)
    first = _backend(engine)
    _terminate(pg_only_url, first)
    wait_until_gone(pg_only_url, first)
    # The unit of work that follows succeeds, on a new session: the ping found the old one dead.
    second = _backend(engine)
    assert second != first
    assert pings.count >= 1


def test_a_session_cut_moments_after_use_fails_once_then_the_pool_renews(
    pg_only_url: str, engines: list[Engine]
) -> None:
    engine = make_engine(pg_only_url, pool_size=2, ping_idle_after=3600)
    engines.append(engine)
    with engine.connect() as a, engine.connect() as b:  # two pooled sessions
        pids = [
            int(a.execute(text("SELECT pg_backend_pid()")).scalar_one()),
            int(b.execute(text("SELECT pg_backend_pid()")).scalar_one()),
        ]
    for pid in pids:
        _terminate(pg_only_url, pid)
        wait_until_gone(pg_only_url, pid)
    with pytest.raises(OperationalError), engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    # One failure invalidates every session as old as the dead one: the next two work.
    assert _backend(engine) not in pids
    assert _backend(engine) not in pids


def wait_until_gone(url: str, pid: int) -> None:
    """pg_terminate_backend only signals; poll (no sleep) until the session is gone."""
    for _ in range(10_000):
        if _gone(url, pid):
            return
    raise AssertionError(f"session {pid} still there")
