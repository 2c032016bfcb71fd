"""SQL statements per guarded send, counted rather than timed (the number does not depend on how
busy the machine is): what the send path costs the database, and what the last check before
the point of no return costs inside it.

    python bench/send_statements.py [--steps 200]

Each run is the real `Worker.run_once()` (claim, lead lock + re-check, marker, the transport,
record) on a fresh workspace of `--steps` due emails, with a transport that accepts everything
and calls the worker's last check as SMTP and Maildir do. An engine listener counts every
statement sent to the database (`before_cursor_execute`: an executemany is one) and every
COMMIT, a statement run in autocommit counting as a commit too (it is its own transaction);
the transport counts those made during its `before_commit` call (the last check).
Issue 20 folded the mailbox's current cap, window and pause into statements the send path
already made: run it on the code before and after to compare (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import scratch_db, workspace, write_result
from sqlalchemy import Connection, event

from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Outcome, Probe
from replyguard.domain.outgoing import OutgoingEmail
from replyguard.service_layer.sending.worker import Worker


class Counter:
    def __init__(self) -> None:
        self.statements = 0
        self.commits = 0

    def statement(self, conn: Connection, *_args: object) -> None:
        self.statements += 1
        if conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
            # Its own transaction (PostgreSQL's marker): a commit too, made by the server.
            self.commits += 1

    def commit(self, *_args: object) -> None:
        self.commits += 1


class CheckingNull:
    """Accepts everything; runs the worker's last check and counts what it costs."""

    can_probe = False

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        self.sent = 0
        self.check_statements = 0

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        if before_commit is not None:
            before = self.counter.statements
            before_commit()
            self.check_statements += self.counter.statements - before
        self.sent += 1
        return Delivery(Outcome.ACCEPTED, "counted")

    def probe(self, email: OutgoingEmail) -> Probe:
        return Probe.UNKNOWN

    def close(self) -> None:
        return None


def run(kind: str, steps: int, batch: int) -> dict[str, Any]:
    with scratch_db(kind, f"stmts{batch}") as url:
        app = workspace(url, steps)
        app.settings = replace(app.settings, send_batch=batch)
        counter = Counter()
        event.listen(app.engine, "before_cursor_execute", counter.statement)
        event.listen(app.engine, "commit", counter.commit)
        transport = CheckingNull(counter)
        cpu = time.process_time()
        report = Worker(app, transport).run_once()
        cpu = time.process_time() - cpu
        app.close()
    assert report.sent == transport.sent == steps, report
    return {
        "statements_per_email": round(counter.statements / steps, 2),
        "commits_per_email": round(counter.commits / steps, 2),
        "last_check_statements_per_email": round(transport.check_statements / steps, 2),
        # CPU of this process only (the database's is not in it); noisy on a shared machine.
        "worker_cpu_ms_per_email": round(cpu * 1000 / steps, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--kinds", default="sqlite,postgresql")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for kind in args.kinds.split(","):
        for batch in (1, 10):
            row = run(kind, args.steps, batch)
            results[f"{kind} send_batch={batch}"] = row
            print(f"{kind:10} send_batch={batch:<2} {row}")
    print("written", write_result("send_statements", {"steps": args.steps, "runs": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
