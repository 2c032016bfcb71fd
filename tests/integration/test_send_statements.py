"""The send path's statements, counted by an engine listener on the real `Worker.run_once()`
(issue 25): a change that adds a statement to the guarded send fails here until the expected
count is updated on purpose (and docs/benchmarks.md says why). `bench/send_statements.py`
prints the same counts per email for larger runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from bench.send_statements import CheckingNull, Counter
from sqlalchemy import event

from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.sending.worker import Worker
from tests.support.scenario import simple_workspace

EMAILS = 20  # one claim's worth (claim_batch), one email per lead

#: (statements, commits, statements of the last checks before DATA) for EMAILS emails: the
#: pass's recovery and resume reads, the step-count ledger's length (one index count, and
#: SQLite's BEGIN DEFERRED of that read), one claim, each batch's re-check, marker and record,
#: and the final claim that finds nothing. The pass's three reads (recovery, ended pauses, the
#: ledger's length) end by COMMIT, not ROLLBACK (`end_read`: psycopg drops a session's prepared
#: statements on ROLLBACK): three commits that write nothing, in the round trip the ROLLBACK took.
EXPECTED = {
    # The marker is one statement in autocommit (counted as a commit: it is its own
    # transaction); an acceptance is one statement with its outbound rows, events and next step.
    ("postgresql", 1): (108, 45, 20),  # 5.4 statements, 2.1 commits per email, and the pass's 3
    ("postgresql", 10): (36, 9, 20),
    ("sqlite", 1): (273, 65, 40),  # the last check is its own BEGIN IMMEDIATE and read
    ("sqlite", 10): (75, 29, 40),
}


@pytest.mark.parametrize("batch", [1, 10])
def test_the_send_path_makes_exactly_the_expected_statements(app: App, clock: FixedClock, batch: int) -> None:
    clock.advance(timedelta(hours=4))  # Monday 10:00 UTC, inside the window
    simple_workspace(app, EMAILS)
    app.settings = replace(app.settings, send_batch=batch)
    counter = Counter()
    event.listen(app.engine, "before_cursor_execute", counter.statement)
    event.listen(app.engine, "commit", counter.commit)
    transport = CheckingNull(counter)
    try:
        report = Worker(app, transport).run_once()
    finally:
        event.remove(app.engine, "before_cursor_execute", counter.statement)
        event.remove(app.engine, "commit", counter.commit)
    assert report.sent == transport.sent == EMAILS, report
    counted = (counter.statements, counter.commits, transport.check_statements)
    assert counted == EXPECTED[(app.engine.dialect.name, batch)]
