"""Shared pieces of the benchmarks: scratch databases, a workspace built through the real
services, bulk loading of queued steps with SQL, the machine's description, and results."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from replyguard.adapters.db import models as m  # noqa: E402
from replyguard.adapters.db.engine import make_engine, normalize_url  # noqa: E402
from replyguard.adapters.db.migrate import upgrade  # noqa: E402
from replyguard.bootstrap import App  # noqa: E402
from replyguard.domain.clock import FixedClock  # noqa: E402
from replyguard.domain.leads_csv import read_leads  # noqa: E402
from replyguard.service_layer.workspace.campaigns import create_campaign  # noqa: E402
from replyguard.service_layer.workspace.enrollment import EnrollReport, candidate_lead_ids, enroll_leads  # noqa: E402
from replyguard.service_layer.workspace.leads import import_leads  # noqa: E402
from replyguard.settings import Settings  # noqa: E402

PG_ADMIN = os.environ.get("REPLYGUARD_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
START = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)  # Monday 10:00 UTC, inside the window

CAMPAIGN = """
product = "Bench"
[campaign]
name = "Bench"
mailbox = "rep@seller.test"
from_name = "Rep"
owner = "rep@seller.test"
timezone = "UTC"
send_window = { days = ["mon","tue","wed","thu","fri","sat","sun"], start = "00:00", end = "23:59" }
daily_cap = 100000000
[[campaign.steps]]
wait = "0d"
subject = "Hello {{ first_name }}"
body = "Hi {{ first_name }}, first."
[[campaign.steps]]
wait = "2d"
body = "Second."
[[campaign.steps]]
wait = "2d"
body = "Third."
"""


@contextmanager
def scratch_db(kind: str, name: str) -> Iterator[str]:
    """A fresh, empty database URL of `kind` (sqlite or postgresql), removed afterwards."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
            yield f"sqlite:///{tmp}/bench.db"
        return
    dbname = f"rg_bench_{name}_{os.getpid()}"
    admin = create_engine(normalize_url(PG_ADMIN), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{dbname}"'))
    try:
        yield make_url(normalize_url(PG_ADMIN)).set(database=dbname).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)'))
        admin.dispose()


def workspace(url: str, leads: int, *, clock: FixedClock | None = None) -> App:
    """A migrated database with one campaign and `leads` enrolled leads, all through services."""
    engine = make_engine(url, pool_size=10)
    upgrade(engine)
    app = App(engine=engine, clock=clock or FixedClock(START), settings=Settings())
    app.init_database()
    header = "email,first_name,last_name,company,title,timezone,alt_emails,owner\n"
    csv = header + "".join(f"lead{i}@example{i % 97}.test,L{i},,,,,,\n" for i in range(leads))
    with app.uow() as uow:
        create_campaign(uow, CAMPAIGN)
        import_leads(uow, "Bench", list(read_leads(csv.encode())))
        uow.commit()
    with app.uow() as uow:
        enroll_leads(uow, "Bench", candidate_lead_ids(uow, "Bench", None), EnrollReport())
        uow.commit()
    return app


def clone_steps(app: App, lead_ids: list[int], copies: int, offset: int = 0) -> int:
    """Bulk-load queued steps with one INSERT ... SELECT: every step of `lead_ids` is copied
    `copies` times (new position, send key and Message-ID). Returns the steps now queued."""
    cols = [c.name for c in m.Step.__table__.columns if c.name != "id"]
    exprs = {c: f's."{c}"' for c in cols}
    n = f"(g.n + {offset})"
    exprs["position"] = f"s.position + 3 * {n}"
    exprs["send_key"] = f"s.send_key || '.' || {n}"
    exprs["message_id"] = f"'<c' || {n} || '.' || substr(s.message_id, 2)"
    ids = ",".join(str(i) for i in lead_ids)
    quoted = ", ".join(f'"{c}"' for c in cols)
    sql = (
        f"WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {copies}) "
        f"INSERT INTO steps ({quoted}) SELECT {', '.join(exprs[c] for c in cols)} "
        f"FROM steps s, g WHERE s.lead_id IN ({ids}) AND s.position <= 3"
    )
    with app.engine.begin() as conn:
        conn.execute(text(sql))
    with app.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
        return int(conn.execute(text("SELECT count(*) FROM steps WHERE state = 'scheduled'")).scalar_one())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def summary_ms(samples: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples]
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "max_ms": round(max(ms), 3),
    }


def machine() -> dict[str, Any]:
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = 0
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        mem = int(meminfo.read_text().split()[1]) // 1024
    pg = None
    try:
        engine = create_engine(normalize_url(PG_ADMIN))
        with engine.connect() as conn:
            pg = conn.execute(text("SHOW server_version")).scalar()
        engine.dispose()
    except Exception:
        pg = None
    import sqlite3

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_mib": mem,
        "python": platform.python_version(),
        "postgresql": pg,
        "sqlite": sqlite3.sqlite_version,
        "os": platform.platform(),
    }


def write_result(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "at": datetime.now(UTC).isoformat(), "machine": machine(), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    return path
