"""Issue 8, item 11: an over-long CSV field, concurrent `init`s, and Maildir sends killed
mid-way (leftovers in tmp/, the directory fsync after the link)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text

from replyguard.adapters.db import models as m
from replyguard.adapters.db.engine import normalize_url
from replyguard.adapters.transports import maildir as maildir_module
from replyguard.adapters.transports.base import Outcome, Probe
from replyguard.adapters.transports.maildir import MaildirTransport
from replyguard.bootstrap import App, bootstrap
from replyguard.domain.leads_csv import read_leads
from replyguard.service_layer.workspace.leads import import_leads
from tests.conftest import pg_admin_url
from tests.support.scenario import csv_of
from tests.unit.test_outgoing import EMAIL


# ---------------------------------------------------------------- CSV lengths
def test_an_over_long_field_fails_only_its_row_on_every_database(app: App) -> None:
    rows = [
        {"email": "one@corp.test", "first_name": "One"},
        {"email": "long@corp.test", "first_name": "x" * 201},  # line 3; the column holds 200
        {"email": "three@corp.test", "first_name": "Three", "company": "y" * 300},
        {"email": "four@corp.test", "first_name": "Four", "company": "z" * 301},  # line 5
    ]
    with app.uow() as uow:
        report = import_leads(uow, "P", list(read_leads(csv_of(rows))))
        uow.commit()
    assert report.created == 2
    assert [(e.line, e.message) for e in report.errors] == [
        (3, "column 'first_name' is 201 characters long; at most 200 fit; row skipped"),
        (5, "column 'company' is 301 characters long; at most 300 fit; row skipped"),
    ]
    with app.uow() as uow:
        assert uow.session.scalar(select(func.count()).select_from(m.Contact)) == 2


def test_a_custom_column_has_a_size_limit_too(app: App) -> None:
    data = b"email,first_name,notes\nok@corp.test,Ok,short\nbig@corp.test,Big," + b"n" * 2001 + b"\n"
    with app.uow() as uow:
        report = import_leads(uow, "P", list(read_leads(data)))
        uow.commit()
    assert report.created == 1
    assert [e.line for e in report.errors] == [3] and "'notes'" in report.errors[0].message


# ---------------------------------------------------------------- concurrent init
@pytest.mark.postgres_only
def test_four_concurrent_inits_on_postgresql_all_succeed(db_url: str) -> None:
    admin = pg_admin_url()
    assert admin is not None
    name = f"rg_init_race_{os.getpid()}"
    engine = create_engine(normalize_url(admin), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin.rsplit("/", 1)[0] + f"/{name}"
    start = threading.Barrier(4)
    results: list[object] = []

    def init() -> None:
        instance = bootstrap(url)
        start.wait(timeout=30)
        try:
            results.append(instance.init_database())
        except Exception as exc:
            results.append(exc)
        finally:
            instance.close()

    try:
        threads = [threading.Thread(target=init) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(results) == 4 and len(set(results)) == 1, results  # one workspace id, no error
        check = create_engine(normalize_url(url))
        with check.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM workspaces")).scalar() == 1
            assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
        check.dispose()
    finally:
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        engine.dispose()


# ---------------------------------------------------------------- Maildir leftovers
_KILLED_SENDER = """
import os, signal, sys
from pathlib import Path
from replyguard.adapters.transports.maildir import MaildirTransport
from tests.unit.test_outgoing import EMAIL
transport = MaildirTransport(Path(sys.argv[1]))
transport.send(EMAIL, before_commit=lambda: os.kill(os.getpid(), signal.SIGKILL))
"""


def _tmp(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "tmp").iterdir())


def test_a_sender_killed_before_the_link_leaves_nothing_after_recovery(tmp_path: Path) -> None:
    root = tmp_path / "outbox"
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_SENDER, str(root)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert len(_tmp(root)) == 1  # the killed send's file, fsynced but never linked
    transport = MaildirTransport(root)  # a worker starting up: its recovery pass
    assert _tmp(root) == []
    assert list((root / "new").iterdir()) == []
    assert transport.probe(EMAIL) is Probe.NOT_SENT


def test_a_live_senders_file_and_a_recent_foreign_one_are_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "outbox"
    transport = MaildirTransport(root)
    host = transport._host
    live = root / "tmp" / f"rg.aaa.eml.{host}.{os.getpid()}"
    foreign = root / "tmp" / "rg.bbb.eml.otherhost.12345"
    old_foreign = root / "tmp" / "rg.ccc.eml.otherhost.12346"
    unrelated = root / "tmp" / "notes.txt"
    for path in (live, foreign, old_foreign, unrelated):
        path.write_bytes(b"x")
    two_days_ago = time.time() - 2 * 86400
    os.utime(old_foreign, (two_days_ago, two_days_ago))
    assert transport.clean_tmp() == 1
    assert _tmp(root) == sorted([live.name, foreign.name, unrelated.name])


def test_the_link_is_followed_by_a_directory_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "outbox"
    transport = MaildirTransport(root)
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.path.realpath(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    if not Path("/proc/self/fd").exists():
        pytest.skip("needs /proc to name the synced descriptors")
    monkeypatch.setattr(maildir_module.os, "fsync", spy)
    assert transport.send(EMAIL).outcome is Outcome.ACCEPTED
    assert synced[-1] == str((root / "new").resolve())  # the directory, after the link
    assert synced[0].startswith(str((root / "tmp").resolve()))  # the file, before it
