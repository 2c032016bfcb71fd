"""Reply -> every queued step of the lead cancelled and committed, with 10k, 100k and 1M steps
queued in the table, on SQLite and PostgreSQL, next to a bare one-row UPDATE + COMMIT.

    python bench/reply_cancel.py [--sizes 10000,100000,1000000] [--replies 200]

The queue is bulk-loaded with SQL (INSERT ... SELECT, no enrollment for a million rows); the
measured call is the real `record_reply` service in its own unit of work, committed.

Beside each reply, two references run on the same engine: the bare one-row UPDATE + COMMIT,
and the *floor*: that same UPDATE after as many trivial statements (`SELECT 1`) as the reply
ran, counted by an engine listener, in one unit of work. The floor is what the reply's number of
statements costs with no work in them (round trips, SQLAlchemy's and the driver's path, the
session): the ratio a reply of that many statements could reach at best.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import clone_steps, scratch_db, summary_ms, workspace, write_result
from rich.console import Console
from rich.table import Table
from sqlalchemy import event, text

from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply

SELECT_ONE = text("SELECT 1")


def bench_db(kind: str, sizes: list[int], replies: int, console: Console) -> list[dict[str, object]]:
    fillers, warmup = 1000, 10
    rows: list[dict[str, object]] = []
    with scratch_db(kind, "reply") as url:
        targets_per_round = replies + warmup
        app = workspace(url, fillers + targets_per_round * len(sizes))
        with app.engine.connect() as conn:
            ids = list(conn.execute(text("SELECT id FROM leads ORDER BY id")).scalars())
        filler_ids, target_ids = ids[:fillers], ids[fillers:]
        loaded, offset = len(ids) * 3, 0
        statements: list[str] = []
        event.listen(app.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))

        def floor_tx(selects: int, reason: str, lead_id: int) -> None:
            with app.uow() as uow:
                for _ in range(selects):
                    uow.session.execute(SELECT_ONE)
                uow.session.execute(
                    text("UPDATE leads SET hold_reason = :r WHERE id = :id"), {"r": reason, "id": lead_id}
                )
                uow.commit()

        floor_tx(0, "floor", filler_ids[0])  # its own statements (SQLite's BEGIN IMMEDIATE too)
        base, statements[:] = len(statements), []
        for round_no, size in enumerate(sizes):
            copies = max(0, -(-(size - loaded) // (fillers * 3)))
            t0 = time.perf_counter()
            if copies:
                queued = clone_steps(app, filler_ids, copies, offset)
                offset += copies
            else:
                with app.engine.connect() as conn:
                    queued = conn.execute(
                        text("SELECT count(*) FROM steps WHERE state='scheduled'")
                    ).scalar_one()
            loaded = queued
            console.print(f"{kind}: {queued:,} queued steps (loaded in {time.perf_counter() - t0:.1f} s)")
            batch = target_ids[round_no * targets_per_round : (round_no + 1) * targets_per_round]
            samples, bare, floor = [], [], []
            for i, lead_id in enumerate(batch):
                statements.clear()
                t = time.perf_counter()
                with app.uow() as uow:
                    outcome = record_reply(
                        uow, lead_id, IncomingReply(ReplyKind.HUMAN_REPLY, app.clock.now()), app.settings
                    )
                    uow.commit()
                elapsed = time.perf_counter() - t
                ran = len(statements)  # SQLite's BEGIN IMMEDIATE included, as it is a statement
                assert outcome.cancelled == 3, outcome
                t = time.perf_counter()
                with app.engine.begin() as conn:
                    conn.execute(
                        text("UPDATE leads SET hold_reason = :r WHERE id = :id"),
                        {"r": f"bench {i}", "id": filler_ids[i % fillers]},
                    )
                bare_elapsed = time.perf_counter() - t
                t = time.perf_counter()
                floor_tx(ran - base, f"floor {i}", filler_ids[i % fillers])
                floor_elapsed = time.perf_counter() - t
                if i >= warmup:
                    samples.append(elapsed)
                    bare.append(bare_elapsed)
                    floor.append(floor_elapsed)
            rows.append(
                {
                    "db": kind,
                    "queued_steps": queued,
                    "reply": summary_ms(samples),
                    "bare_commit": summary_ms(bare),
                    "floor": summary_ms(floor),
                    "statements": ran,
                }
            )
        app.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--replies", type=int, default=200)
    parser.add_argument("--db", default="sqlite,postgresql")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    console = Console()
    rows = []
    for kind in args.db.split(","):
        rows += bench_db(kind, sizes, args.replies, console)
    table = Table(title="reply -> queued steps cancelled and committed (record_reply)")
    columns = (
        "db",
        "queued steps",
        "p50 ms",
        "p99 ms",
        "bare commit p50",
        "bare p99",
        "p99 / bare p99",
        "statements",
        "floor p50",
        "floor p99",
        "floor p99 / bare p99",
    )
    for col in columns:
        table.add_column(col, justify="right")
    ratios = {}
    for row in rows:
        reply, bare = row["reply"], row["bare_commit"]
        row["ratio_to_bare_p99"] = round(reply["p99_ms"] / bare["p99_ms"], 2)
        row["floor_ratio_to_bare_p99"] = round(row["floor"]["p99_ms"] / bare["p99_ms"], 2)
        table.add_row(
            str(row["db"]),
            f"{row['queued_steps']:,}",
            f"{reply['p50_ms']:.2f}",
            f"{reply['p99_ms']:.2f}",
            f"{bare['p50_ms']:.2f}",
            f"{bare['p99_ms']:.2f}",
            f"{row['ratio_to_bare_p99']:.1f}x",
            str(row["statements"]),
            f"{row['floor']['p50_ms']:.2f}",
            f"{row['floor']['p99_ms']:.2f}",
            f"{row['floor_ratio_to_bare_p99']:.1f}x",
        )
    for kind in {r["db"] for r in rows}:
        mine = [r for r in rows if r["db"] == kind]
        ratios[kind] = round(mine[-1]["reply"]["p99_ms"] / mine[0]["reply"]["p99_ms"], 2)
    console.print(table)
    console.print(f"p99 largest / smallest: {ratios}")
    path = write_result("reply_cancel", {"rows": rows, "p99_largest_over_smallest": ratios})
    console.print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
