"""Guarded sends per second with the null transport on PostgreSQL, 1/2/4 worker processes,
next to a bare `FOR UPDATE SKIP LOCKED` claim-and-complete loop (no safety) in the same run.

    python bench/send_throughput.py [--steps 3000] [--workers 1,2,4] [--batches 1,10]

`--batches` are values of REPLYGUARD_SEND_BATCH for the guarded workers: 1 is the default for
transports that cannot prove an outcome (SMTP, and the null transport used here), 10 the
default for those that can (Maildir); see docs/architecture.md for what a batch costs.

Each worker process runs the real `Worker.run_once()` (claim, lead lock + re-check, marker,
null transport, record); the bare loop claims 20 due rows with SKIP LOCKED, marks them, then
completes each with its own UPDATE + COMMIT: the same batch and commit count without the
lead lock, the re-check, the marker, the events and the outbound row.

The *floor* loop claims like the bare one, then sends each email in the guarded path's shape
at batch 1 with no work in it: a transaction whose lead lock, re-read and last check are
`SELECT 1`, the marker an UPDATE committed in autocommit on a second session before the last
check, the acceptance an UPDATE, then COMMIT — 7 round trips and 2 durable commits per email,
as `bench/send_statements.py` counts for the guarded worker. floor ÷ bare is the best ratio a
send that proves what the guarded one proves, in that many round trips, could reach here.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import START, scratch_db, workspace, write_result
from rich.console import Console
from rich.table import Table
from sqlalchemy import create_engine, event, text

RESET = [
    "DELETE FROM outbound_messages",
    "DELETE FROM events WHERE kind NOT IN ('enrolled', 'campaign_created', 'leads_imported')",
    "UPDATE steps SET state = 'scheduled', claim_token = NULL, lease_until = NULL, send_day = NULL,"
    " sent_at = NULL, attempts = 0 WHERE position = 1",
    "UPDATE enrollments SET state = 'active'",
]


def guarded(url: str, start: mp.Barrier, batch: int = 1, cpu: Any = None) -> None:  # type: ignore[valid-type]
    import os

    os.environ["REPLYGUARD_SEND_BATCH"] = str(batch)
    from replyguard.bootstrap import bootstrap
    from replyguard.service_layer.sending.worker import Worker

    try:  # the worker's own wiring: no pre-ping on its engine (issue 25)
        app = bootstrap(url, now=START.isoformat(), transport="null:", worker=True)
    except TypeError:  # the code before it, for "before" numbers
        app = bootstrap(url, now=START.isoformat(), transport="null:")
    backends: list[int] = []
    event.listen(app.engine, "connect", lambda dbapi, _record: backends.append(dbapi.info.backend_pid))
    worker = Worker(app)
    _ = app.workspace_id
    start.wait()
    client = time.process_time()
    worker.run_once()
    client = time.process_time() - client
    if cpu is not None:  # this process's CPU, and that of the server sessions it opened
        cpu.put((client, sum(_backend_cpu(pid) for pid in backends)))
    app.close()


def _backend_cpu(pid: int) -> float:
    """CPU seconds a PostgreSQL server process has used (this machine's /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _claimed(engine: Any) -> Iterator[int]:
    """Every due step, claimed as the bare loop claims: 20 at a time with SKIP LOCKED, marked
    claimed and committed, until none is left."""
    while ids := _claim(engine):
        yield from ids


def _claim(engine: Any) -> list[int]:
    with engine.begin() as conn:
        ids = list(
            conn.execute(
                text(
                    "SELECT id FROM steps WHERE state = 'scheduled' AND due_at <= :now"
                    " ORDER BY due_at, id LIMIT 20 FOR UPDATE SKIP LOCKED"
                ),
                {"now": START},
            ).scalars()
        )
        if ids:
            conn.execute(text("UPDATE steps SET state = 'claimed' WHERE id = ANY(:ids)"), {"ids": ids})
    return ids


def bare(url: str, start: mp.Barrier) -> None:  # type: ignore[valid-type]
    engine = create_engine(url, pool_size=1)
    start.wait()
    for step_id in _claimed(engine):
        with engine.begin() as conn:
            conn.execute(
                text("UPDATE steps SET state = 'sent', sent_at = :now WHERE id = :id AND state = 'claimed'"),
                {"now": START, "id": step_id},
            )
    engine.dispose()


FLOOR_TRIVIAL = text("SELECT 1")


def floor(url: str, start: mp.Barrier) -> None:  # type: ignore[valid-type]
    engine = create_engine(url, pool_size=2)
    start.wait()
    for step_id in _claimed(engine):
        with engine.begin() as conn:
            conn.execute(FLOOR_TRIVIAL)  # the lead lock
            conn.execute(FLOOR_TRIVIAL)  # the re-read
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as marker:
                marker.execute(
                    text("UPDATE steps SET state = 'sending' WHERE id = :id AND state = 'claimed'"),
                    {"id": step_id},
                )
            conn.execute(FLOOR_TRIVIAL)  # the last check
            conn.execute(
                text("UPDATE steps SET state = 'sent', sent_at = :now WHERE id = :id AND state = 'sending'"),
                {"now": START, "id": step_id},
            )
    engine.dispose()


def timed(target: object, url: str, n: int, *extra: object) -> tuple[float, float, float]:
    """Wall seconds of `n` processes running `target`, and (guarded workers) the CPU seconds
    they and their server sessions used."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n + 1)
    cpu = ctx.Queue() if target is guarded else None
    args = (*extra, cpu) if cpu is not None else extra
    procs = [ctx.Process(target=target, args=(url, barrier, *args)) for _ in range(n)]
    for p in procs:
        p.start()
    barrier.wait()
    t0 = time.perf_counter()
    spent = [cpu.get() for _ in procs] if cpu is not None else []
    for p in procs:
        p.join()
        assert p.exitcode == 0
    wall = time.perf_counter() - t0
    return wall, sum(c for c, _ in spent), sum(s for _, s in spent)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--batches", default="1,10")
    args = parser.parse_args()
    console = Console()
    rows = []
    with scratch_db("postgresql", "send") as url:
        app = workspace(url, args.steps)
        admin = create_engine(url)

        def reset() -> None:
            with admin.begin() as conn:
                for sql in RESET:
                    conn.execute(text(sql))
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM ANALYZE steps"))

        def sent() -> int:
            with admin.connect() as conn:
                return int(conn.execute(text("SELECT count(*) FROM steps WHERE state = 'sent'")).scalar_one())

        for n in (int(w) for w in args.workers.split(",")):
            reset()
            b_wall, _, _ = timed(bare, url, n)
            b_sent = sent()
            reset()
            f_wall, _, _ = timed(floor, url, n)
            f_sent = sent()
            for batch in (int(b) for b in args.batches.split(",")):
                reset()
                g_wall, client_cpu, server_cpu = timed(guarded, url, n, batch)
                g_sent = sent()
                row = {
                    "workers": n,
                    "send_batch": batch,
                    "guarded_sent": g_sent,
                    "guarded_per_s": round(g_sent / g_wall, 1),
                    "bare_done": b_sent,
                    "bare_per_s": round(b_sent / b_wall, 1),
                    "floor_per_s": round(f_sent / f_wall, 1),
                }
                row["ratio"] = round(row["guarded_per_s"] / row["bare_per_s"], 3)
                row["floor_ratio"] = round(row["floor_per_s"] / row["bare_per_s"], 3)
                # CPU per email: the workers' own, and their PostgreSQL sessions' (the wall-clock
                # rates depend on what else the machine runs; these much less).
                row["worker_cpu_ms_per_email"] = round(client_cpu * 1000 / max(g_sent, 1), 3)
                row["server_cpu_ms_per_email"] = round(server_cpu * 1000 / max(g_sent, 1), 3)
                console.print(row)
                rows.append(row)
        admin.dispose()
        app.close()
    table = Table(title="guarded sends/s (null transport, PostgreSQL) vs bare SKIP LOCKED loop")
    for col in (
        "worker processes",
        "send batch",
        "guarded sends/s",
        "bare claim+complete/s",
        "guarded / bare",
        "floor/s",
        "floor / bare",
        "worker CPU ms/email",
        "server CPU ms/email",
    ):
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(
            str(row["workers"]),
            str(row["send_batch"]),
            f"{row['guarded_per_s']:.0f}",
            f"{row['bare_per_s']:.0f}",
            f"{row['ratio']:.2f}",
            f"{row['floor_per_s']:.0f}",
            f"{row['floor_ratio']:.2f}",
            f"{row['worker_cpu_ms_per_email']:.2f}",
            f"{row['server_cpu_ms_per_email']:.2f}",
        )
    console.print(table)
    console.print(f"written {write_result('send_throughput', {'steps': args.steps, 'rows': rows})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
