"""Guarded sends per second against an SMTP server that takes its time over each message, next
to a bare loop with the same latency and the same concurrency, on PostgreSQL (issue 24, item 5).

    python bench/send_latency.py [--steps 1500] [--slots 1,16] [--delay 0.2]

The server is the tests' aiosmtpd server on loopback (tests/support/smtp_servers.py), in this
process, answering the final dot of every message `--delay` seconds late (a remote MTA's
latency). For each `--slots` value:

* guarded: one `replyguard worker` process (`Worker.run_once()` on the product's wiring,
  `bootstrap(worker=True)`) with REPLYGUARD_SEND_SLOTS=slots and the SMTP default batch of 1:
  claim, lead lock + re-check, marker, liveness check before DATA, record, for every email;
* bare: one process with `slots` threads, each claiming one due row with SKIP LOCKED, sending
  it with smtplib over its own connection (RSET between messages), and marking it sent: the
  same latency and concurrency without any of the guarantees.

It also reports the SMTP connections each opened per 1,000 emails.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import smtplib
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import START, scratch_db, workspace, write_result
from rich.console import Console
from rich.table import Table
from sqlalchemy import create_engine, text
from tests.support.smtp_servers import RecordingSmtpServer

RESET = [
    "DELETE FROM outbound_messages",
    "DELETE FROM events WHERE kind NOT IN ('enrolled', 'campaign_created', 'leads_imported')",
    "UPDATE steps SET state = 'scheduled', claim_token = NULL, lease_until = NULL, send_day = NULL,"
    " sent_at = NULL, attempts = 0 WHERE position = 1",
    "UPDATE enrollments SET state = 'active'",
]


def guarded(url: str, smtp: str, slots: int, start: mp.Barrier) -> None:  # type: ignore[valid-type]
    os.environ["REPLYGUARD_SEND_SLOTS"] = str(slots)
    os.environ["REPLYGUARD_PUBLIC_URL"] = "https://bench.test"
    from replyguard.bootstrap import bootstrap
    from replyguard.service_layer.sending.worker import Worker

    try:
        app = bootstrap(url, now=START.isoformat(), transport=smtp, worker=True)
    except TypeError:  # the code before issue 24's item 5 (for its "before" numbers)
        app = bootstrap(url, now=START.isoformat(), transport=smtp)
    worker = Worker(app)
    _ = app.workspace_id
    start.wait()
    cpu = time.process_time()
    worker.run_once()
    if os.environ.get("BENCH_CPU"):
        print(f"worker CPU {time.process_time() - cpu:.2f} s", file=sys.stderr)
    app.close()


def bare(url: str, smtp: str, slots: int, start: mp.Barrier) -> None:  # type: ignore[valid-type]
    engine = create_engine(url, pool_size=slots + 1)
    host, port = smtp.removeprefix("smtp://").split("?")[0].rsplit(":", 1)
    message = b"From: rep@seller.test\r\nSubject: Hello\r\n\r\nHi, first.\r\n"

    def loop() -> None:
        conn = smtplib.SMTP(host, int(port), timeout=30)
        first = True
        while True:
            with engine.begin() as db:
                row = db.execute(
                    text(
                        "SELECT id, to_address FROM steps WHERE state = 'scheduled' AND due_at <= :now"
                        " ORDER BY due_at, id LIMIT 1 FOR UPDATE SKIP LOCKED"
                    ),
                    {"now": START},
                ).one_or_none()
                if row is None:
                    break
                db.execute(text("UPDATE steps SET state = 'claimed' WHERE id = :id"), {"id": row.id})
            if not first:
                conn.rset()
            first = False
            conn.sendmail("rep@seller.test", [row.to_address], message)
            with engine.begin() as db:
                db.execute(
                    text(
                        "UPDATE steps SET state = 'sent', sent_at = :now WHERE id = :id AND state = 'claimed'"
                    ),
                    {"now": START, "id": row.id},
                )
        conn.quit()

    start.wait()
    threads = [threading.Thread(target=loop) for _ in range(slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.dispose()


def timed(target: object, url: str, smtp: str, slots: int) -> float:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    proc = ctx.Process(target=target, args=(url, smtp, slots, barrier))
    proc.start()
    barrier.wait()
    t0 = time.perf_counter()
    proc.join()
    assert proc.exitcode == 0
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--slots", default="1,16")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--skip-bare", action="store_true")
    args = parser.parse_args()
    console = Console()
    rows = []
    with scratch_db("postgresql", "latency") as url, RecordingSmtpServer() as server:
        server.end_delay = args.delay
        smtp = server.url(timeout=30)
        app = workspace(url, args.steps)
        admin = create_engine(url)

        def reset() -> None:
            with admin.begin() as conn:
                for sql in RESET:
                    conn.execute(text(sql))
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM ANALYZE steps"))
            server.connections = 0

        def sent() -> int:
            with admin.connect() as conn:
                return int(conn.execute(text("SELECT count(*) FROM steps WHERE state = 'sent'")).scalar_one())

        for slots in (int(s) for s in args.slots.split(",")):
            row: dict[str, float | int] = {"slots": slots}
            for name, target in (("guarded", guarded), ("bare", bare)):
                if name == "bare" and args.skip_bare:
                    continue
                reset()
                wall = timed(target, url, smtp, slots)
                done = sent()
                row[f"{name}_sent"] = done
                row[f"{name}_per_s"] = round(done / wall, 1)
                row[f"{name}_connections_per_1000"] = round(server.connections * 1000 / max(done, 1), 1)
            if "bare_per_s" in row:
                row["ratio"] = round(float(row["guarded_per_s"]) / float(row["bare_per_s"]), 3)
            console.print(row)
            rows.append(row)
        admin.dispose()
        app.close()
    table = Table(
        title=f"guarded vs bare sends/s, SMTP answering {args.delay * 1000:.0f} ms late (PostgreSQL)"
    )
    for col in ("slots", "guarded/s", "bare/s", "guarded / bare", "connections per 1,000 (guarded, bare)"):
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(
            str(row["slots"]),
            f"{row['guarded_per_s']:.1f}",
            f"{row.get('bare_per_s', 0):.1f}",
            f"{row.get('ratio', 0):.2f}",
            f"{row['guarded_connections_per_1000']:.0f}, {row.get('bare_connections_per_1000', 0):.0f}",
        )
    console.print(table)
    data = {"steps": args.steps, "delay": args.delay, "rows": rows}
    console.print(f"written {write_result('send_latency', data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
