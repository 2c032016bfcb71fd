"""SQL statements per ingested message: what one inbound message costs the database, counted
rather than timed, so the number does not depend on how busy the machine is.

    python bench/ingest_statements.py [--messages 300]

Same generated mix as bench/ingest_rate.py (threaded human replies, out-of-office notices,
bounces), one lead per message, every message matched. Also counted: the reply transaction
alone (`record_reply` of a human reply and its commit), the number docs/benchmarks.md cites.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import scratch_db, workspace, write_result
from bench.ingest_rate import targets_of
from bench.messages import mix
from sqlalchemy import event, select

from replyguard.adapters.db import models as m
from replyguard.domain.states import ReplyKind
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.inbound.replies import IncomingReply, record_reply


class StatementCounter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, *_args: object) -> None:
        self.count += 1


def reply_transaction(kind: str, replies: int = 20) -> float:
    """Statements of one human reply's transaction (SQLite's BEGIN IMMEDIATE included)."""
    with scratch_db(kind, "stmts_reply") as url:
        app = workspace(url, replies)
        with app.uow() as uow:
            leads = list(uow.session.scalars(select(m.Lead.id)))
        counter = StatementCounter()
        event.listen(app.engine, "before_cursor_execute", counter)
        for lead_id in leads:
            with app.uow() as uow:
                reply = IncomingReply(ReplyKind.HUMAN_REPLY, app.clock.now())
                record_reply(uow, lead_id, reply, app.settings)
                uow.commit()
        app.close()
    return round(counter.count / len(leads), 1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300)
    args = parser.parse_args()
    results: dict[str, float] = {}
    for kind in ("sqlite", "postgresql"):
        with scratch_db(kind, "stmts") as url:
            app = workspace(url, args.messages)
            raws = list(mix(targets_of(app), args.messages))
            counter = StatementCounter()
            event.listen(app.engine, "before_cursor_execute", counter)
            for raw in raws:
                ingest_raw(app, raw, source="bench")
            app.close()
        results[kind] = round(counter.count / len(raws), 1)
        print(f"{kind}: {results[kind]} statements per message")
        results[f"{kind}_reply_transaction"] = reply_transaction(kind)
        print(f"{kind}: {results[f'{kind}_reply_transaction']} statements per reply transaction")
    print("written", write_result("ingest_statements", {"messages": args.messages, "per_message": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
