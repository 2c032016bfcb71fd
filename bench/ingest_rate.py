"""Inbound messages per second: classification alone, and the full `ingest_raw` (store raw,
parse, classify, match, record the reply transaction) on SQLite and PostgreSQL, over a
generated mix of human replies, out-of-office notices and bounces.

    python bench/ingest_rate.py [--messages 2000]
"""

from __future__ import annotations

import argparse
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
            t0 = time.perf_counter()
            statuses = Counter(ingest_raw(app, raw, source="bench").status for raw in raws)
            ingest_s = time.perf_counter() - t0
            app.close()
        results[kind] = {
            "messages": len(raws),
            "classify_per_s": round(len(raws) / classify_s, 1),
            "ingest_per_s": round(len(raws) / ingest_s, 1),
            "kinds": dict(kinds),
            "statuses": dict(statuses),
        }
        console.print(kind, results[kind])
    table = Table(title="inbound messages per second (one process, one core)")
    for col in ("db", "messages", "classify only /s", "full ingest_raw /s", "kinds", "match status"):
        table.add_column(col)
    for kind, r in results.items():
        table.add_row(
            kind,
            str(r["messages"]),
            f"{r['classify_per_s']:.0f}",
            f"{r['ingest_per_s']:.0f}",
            str(r["kinds"]),
            str(r["statuses"]),
        )
    console.print(table)
    console.print(f"written {write_result('ingest_rate', {'results': results})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
