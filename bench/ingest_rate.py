"""Inbound messages per second: classification alone, and the full `ingest_raw` (store raw,
parse, classify, match, record the reply transaction) on SQLite and PostgreSQL, over a
generated mix of human replies, out-of-office notices and bounces.

    python bench/ingest_rate.py [--messages 2000]

Besides wall-clock rates, each row gives messages per CPU second: the process's CPU plus, on
PostgreSQL, the CPU of the database's server processes serving it (read from /proc: the server
runs on this machine). That is the "per core" rate, and unlike the wall-clock one it does not
fall when other jobs share the cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import scratch_db, workspace, write_result
from bench.messages import mix
from rich.console import Console
from rich.table import Table
from sqlalchemy import text

from replyguard.domain.inbound.classify import classify
from replyguard.service_layer.inbound.ingest import ingest_raw


def targets_of(url_app: object) -> list[tuple[str, str | None]]:
    app = url_app
    with app.engine.connect() as conn:  # type: ignore[attr-defined]
        rows = conn.execute(text("SELECT to_address, message_id FROM steps WHERE position = 1 ORDER BY id"))
        return [(r.to_address, r.message_id) for r in rows]


def server_cpu(app: object) -> float:
    """CPU seconds used so far by the PostgreSQL server processes connected to the app's
    database (this machine's /proc; the pool keeps its connections open across the run)."""
    with app.engine.connect() as conn:  # type: ignore[attr-defined]
        pids = conn.execute(
            text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        ).scalars()
        total = 0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--db", default="sqlite,postgresql")
    args = parser.parse_args()
    console = Console()
    results: dict[str, dict[str, float]] = {}
    for kind in args.db.split(","):
        with scratch_db(kind, "ingest") as url:
            app = workspace(url, args.messages)  # one lead per message: every reply matches
            raws = list(mix(targets_of(app), args.messages))
            t0 = time.perf_counter()
            kinds = Counter(classify(raw).kind.value for raw in raws)
            classify_s = time.perf_counter() - t0
            server = server_cpu(app) if kind == "postgresql" else None
            t0, c0 = time.perf_counter(), time.process_time()
            statuses = Counter(ingest_raw(app, raw, source="bench").status for raw in raws)
            ingest_s, client_cpu = time.perf_counter() - t0, time.process_time() - c0
            server_s = server_cpu(app) - server if server is not None else 0.0
            app.close()
        results[kind] = {
            "messages": len(raws),
            "classify_per_s": round(len(raws) / classify_s, 1),
            "ingest_per_s": round(len(raws) / ingest_s, 1),
            "ingest_per_cpu_s": round(len(raws) / (client_cpu + server_s), 1),
            "client_cpu_ms_per_msg": round(client_cpu / len(raws) * 1000, 2),
            "server_cpu_ms_per_msg": round(server_s / len(raws) * 1000, 2),
            "kinds": dict(kinds),
            "statuses": dict(statuses),
        }
        console.print(kind, results[kind])
    table = Table(title="inbound messages per second (one process, one core)")
    cols = ("db", "messages", "classify only /s", "full ingest_raw /s", "per CPU s", "kinds", "match status")
    for col in cols:
        table.add_column(col)
    for kind, r in results.items():
        table.add_row(
            kind,
            str(r["messages"]),
            f"{r['classify_per_s']:.0f}",
            f"{r['ingest_per_s']:.0f}",
            f"{r['ingest_per_cpu_s']:.0f}",
            str(r["kinds"]),
            str(r["statuses"]),
        )
    console.print(table)
    console.print(f"written {write_result('ingest_rate', {'results': results})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
